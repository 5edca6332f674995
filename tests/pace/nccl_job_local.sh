#!/bin/bash
# The STAND-IN 2-D parallel job (tests/pace/nccl_job.c) without Slurm: four
# processes posing as two nodes of two tasks each (the SLURM_* variables a
# step gives its tasks), the interposer preloaded, an assignment file of 100 ms
# slots. tests/pace/nccl_job_check.sh says what must hold; the Slurm tier runs
# the same job through srun (tests/slurm/nccl_standin.sh). About 3 s.
# Skips (77) when the interposer was not built.
set -u
b=${top_builddir:-.}
s=${top_srcdir:-$(dirname "$0")/../..}
so="$b/src/pace/.libs/libharmonics-nccl.so"
job="$b/tests/pace/nccl_job"
if [ ! -f "$so" ] || [ ! -x "$job" ]; then
	echo "SKIP: $so or $job not built (configure found no nccl.h/cuda_runtime_api.h)"
	exit 77
fi
[ -f "$b/tests/pace/.libs/nccl_job" ] && job="$b/tests/pace/.libs/nccl_job"
LD_LIBRARY_PATH="$b/src/pace/.libs:$b/tests/pace/localnccl/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
pre="$so"
if readelf -d "$so" 2>/dev/null | grep -q 'libasan'; then
	asan=$(${CC:-gcc} -print-file-name=libasan.so 2>/dev/null)
	[ -f "$asan" ] && pre="$asan $so"
fi
dir=$(mktemp -d)
[ -n "${HM_KEEP:-}" ] && echo "kept $dir" || trap 'rm -rf "$dir"' EXIT
ITERS=12 COMPUTE_MS=50 SKEW_MS=70
cat >"$dir/assign" <<EOF
HARMONICS_MODE=test
HARMONICS_JOB_ID=1
HARMONICS_EPOCH=1
HARMONICS_PERIOD_US=100000
HARMONICS_SHIFT_US=0
HARMONICS_ORIGIN_US=$(date +%s%6N)
HARMONICS_GUARD_US=10000
HARMONICS_PRIO=1
EOF
pids=()
for r in 0 1 2 3; do
	env -u HARMONICS_MODE -u HARMONICS_PERIOD_US -u NCCL_IB_TC -u NCCL_IB_SL \
		SLURM_PROCID=$r SLURM_NTASKS=4 SLURM_NNODES=2 SLURM_STEP_NUM_NODES=2 \
		SLURM_NODEID=$((r / 2)) SLURM_LOCALID=$((r % 2)) SLURMD_NODENAME=n$((r / 2 + 1)) \
		SLURM_STEP_ID=0 STANDIN_NCCL_VERSION=22809 \
		HARMONICS_ASSIGN_FILE="$dir/assign" HARMONICS_REPORT_FILE="$dir/report.%r" \
		HARMONICS_NCCL_TRACE="$dir/trace.%r" LD_PRELOAD="$pre" \
		"$job" "$dir" $ITERS $COMPUTE_MS $SKEW_MS >"$dir/out.$r" 2>"$dir/err.$r" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
((rc == 0)) || { echo "FAIL: a task of the stand-in job failed"; cat "$dir"/err.*; }
bash "$s/tests/pace/nccl_job_check.sh" "$dir" 4 $ITERS || rc=1
exit $rc
