#!/bin/bash
#SBATCH --comm-sched=harmonics
#SBATCH --comm-profile=iter=250ms,comm=40%,bytes=1.2GB
# Test job: the tasks' LD_PRELOAD in the batch step and in a nested srun step,
# and whether the NCCL runtime is loaded there (grep inherits the environment).
show='echo "LD_PRELOAD=${LD_PRELOAD:-} HARMONICS_COMM_PRELOAD=${HARMONICS_COMM_PRELOAD:-}"
	grep -q "libharmonics-nccl\.so" /proc/self/maps && echo loaded=yes || echo loaded=no'
bash -c "$show" | sed 's/^/batch /'
srun -N1 -n1 bash -c "$show" | sed 's/^/step /'
