#!/bin/bash
#SBATCH --comm-sched=wrong
# Test job: must be refused at submission.
echo "this must never run"
