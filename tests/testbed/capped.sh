#!/bin/bash
# capped.sh DIR SHARE NAME CMD...: run CMD in the CPU cgroup DIR/NAME (under
# srun: NAME.JOBID.RANK), limited to SHARE of one core (a 10 ms period). DIR
# is the testbed's parent cgroup (tb_cpu_up in case.sh): cgroup v1's cpu
# hierarchy (cpu.cfs_quota_us) or a v2 group with the cpu controller (cpu.max).
#
# Why: a PyTorch rank of the testbed computes on the machine's shared cores,
# so its speed depended on how many other ranks computed at that moment (2
# cores, 4 ranks: compute CV 0.3 on a quiet machine). A fixed share gives each
# rank the fixed speed of the dedicated accelerator it stands for; the jobs
# still contend only where they would on a cluster, on the links.
set -u
dir=$1 share=$2 name=$3
shift 3
[[ -d $dir && $share =~ ^0?\.[0-9]+$|^1$ && $name =~ ^[A-Za-z0-9._-]+$ ]] || {
	echo "capped.sh: usage: DIR SHARE(0-1] NAME CMD...; got '$dir' '$share' '$name'" >&2
	exit 2
}
g=$dir/$name${SLURM_JOB_ID:+.$SLURM_JOB_ID.${SLURM_PROCID:-0}}
quota=$(awk -v s="$share" 'BEGIN { printf "%d", s * 10000 }')
mkdir -p "$g" || exit 1
if [[ -e $g/cpu.cfs_quota_us ]]; then
	echo 10000 >"$g/cpu.cfs_period_us" && echo "$quota" >"$g/cpu.cfs_quota_us"
else
	echo "$quota 10000" >"$g/cpu.max"
fi || { echo "capped.sh: cannot limit $g to $share of a core" >&2; exit 1; }
echo $$ >"$g/cgroup.procs" || exit 1
exec "$@"
