#!/bin/bash
#SBATCH --comm-sched=harmonics
#SBATCH --comm-profile=iter=250ms,comm=40%,bytes=1.2GB
# Test job: prints the Harmonics variables seen by the batch step and by an srun step.
env | grep '^HARMONICS_' | sed 's/^/batch /'
srun -N1 -n1 env | grep '^HARMONICS_' | sed 's/^/step /'
sleep 4
