#!/usr/bin/env bash
# Real NCCL jobs' pacing (issue 25 items 3-6) through Slurm on the one-machine
# cluster (tests/slurm/cluster.sh), over the STAND-IN NCCL/CUDA library (no GPU
# here; tests/pace/standin.h): a 2-node --comm-sched step of 4 tasks
# (tests/pace/nccl_job.c), a tensor-parallel communicator within each node and
# a data-parallel one across the nodes. The job script never names Harmonics:
# the SPANK plugin preloads the runtime (plugstack preload=PATH, the build's).
# The test gives the tasks its own assignment file (100 ms slots, class 1, then
# class 3), not the coordinator's, so that the slots are known. Checked by
# tests/pace/nccl_job_check.sh: only the cross-node stream is held; every rank
# applies the same slot under skew (node 2's ranks 70 ms late every other
# iteration); a function the loaded NCCL lacks fails open; the class change
# reaches the communicator created after it and the report says the class;
# a captured collective gets nothing inserted.
#
# Then the coordinator's side (issue 25 items 1 and 5): a --comm-sched job whose
# step opts out of the runtime (--no-comm-preload) reports no applied epoch, so
# harmonicsctl and its AdminComment say "unpaced" after UnpacedAfter (3 s here);
# a report of that stand-in run (NCCL_CLASS=3, written by the interposer) put
# into the job's directory on its node (the path is the test's doing: the run
# above wrote it to DIR) reaches the coordinator through the node agent: paced
# again, its class in force 3 beside the decided one, in harmonicsctl and in
# AdminComment.
#
# Usage: tests/slurm/nccl_standin.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin nccl "the Slurm tier needs root (daemons, munge)" "$@"

rt=$build/src/pace/.libs/libharmonics-nccl.so
if [[ ! -f $rt ]]; then
	echo "nccl: SKIP: $rt not built (no nccl.h at configure time)"
	exit 77
fi
# The stand-in job is a check program: built here when make check has not run.
make -s -C "$build" tests/pace/nccl_job >/dev/null || { echo "nccl: cannot build tests/pace/nccl_job" >&2; exit 1; }
job=$build/tests/pace/nccl_job
[[ -f $build/tests/pace/.libs/nccl_job ]] && job=$build/tests/pace/.libs/nccl_job
ITERS=12 COMPUTE_MS=50 SKEW_MS=70
PROF="iter=100ms,comm=10%,bytes=100MB"

echo "=== bring-up"
export HM_CONF_EXTRA="UnpacedAfter=3s"
hm_tier_cluster_up "8 slurmd with their node agents" --no-db
hm_write_plugstack "preload=$rt"
dir=$HM_DIR/out/nccl
mkdir -p "$dir"
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

echo "=== a 2-node step: TP within each node, DP across (4 tasks, $ITERS iterations)"
# The task drops the coordinator's assignment (variables and file) for the test's.
cmd=(srun -J hm-nccl -w n1,n5 -N2 -n4 --ntasks-per-node=2 --comm-sched=harmonics
	--comm-profile="$PROF" -o "$dir/out.%t" -e "$dir/err.%t"
	bash -c 'for v in $(compgen -e | grep "^HARMONICS_"); do unset "$v"; done
		grep -q "libharmonics-nccl\.so" /proc/self/maps || echo "runtime not preloaded" >&2
		export HARMONICS_ASSIGN_FILE=$0/assign HARMONICS_REPORT_FILE=$0/report.%r \
			HARMONICS_NCCL_TRACE=$0/trace.%r STANDIN_NCCL_VERSION=22809
		exec "$1" "$0" "$2" "$3" "$4"' "$dir" "$job" $ITERS $COMPUTE_MS $SKEW_MS)
say "\$ env -u LD_PRELOAD LD_LIBRARY_PATH=... ${cmd[*]:0:9} bash -c '...' $dir nccl_job $ITERS $COMPUTE_MS $SKEW_MS"
t0=$(date +%s.%N)
env -u LD_PRELOAD LD_LIBRARY_PATH="$build/src/pace/.libs:$build/tests/pace/localnccl/.libs" \
	"${cmd[@]}" >"$dir/srun.out" 2>&1
rc=$?
say "srun exit $rc in $(hm_since "$t0")s"
check "the step ran, every task done (rc $rc)" test "$rc" = 0
check "the runtime was in every task without the job naming it" \
	bash -c "! grep -q 'runtime not preloaded' '$dir'/err.* && ls '$dir'/trace.0 '$dir'/trace.3 >/dev/null"
if bash "$top/tests/pace/nccl_job_check.sh" "$dir" 4 $ITERS >"$dir/check.out" 2>&1; then
	sed -n '/^    /p' "$dir/check.out"
	while read -r l; do pass "${l#PASS: }"; done < <(grep '^PASS: ' "$dir/check.out")
else
	cat "$dir/check.out"
	while read -r l; do pass "${l#PASS: }"; done < <(grep '^PASS: ' "$dir/check.out")
	while read -r l; do fail "${l#FAIL: }"; done < <(grep '^FAIL: ' "$dir/check.out")
fi

echo "=== the coordinator: a step without the runtime is unpaced; the class its traffic carries"
command -v jq >/dev/null || { echo "nccl: jq not installed (scripts/deps.sh)" >&2; exit 1; }
job_q() { "$HM_CTL" --json --timeout 2s jobs 2>/dev/null | jq -r --argjson j "$1" ".jobs[] | select(.job_id == \$j) | $2"; }
comment_has() { admin_comment "$1" | grep -q -- "$2"; }
is_unpaced() { [[ $(job_q "$1" .unpaced) == true ]]; }
paced_in_class() { [[ $(job_q "$1" .unpaced) == false && $(job_q "$1" .class_in_force) == "$2" ]]; }
cmd=(srun -J hm-inforce -w n1 -N1 -n1 --comm-sched=harmonics --no-comm-preload --comm-profile="$PROF" sleep 30)
say "\$ ${cmd[*]} &"
t0=$(date +%s.%N)
"${cmd[@]}" >"$dir/inforce.out" 2>&1 &
spid=$!
hm_wait_for 10 bash -c '[[ -n $(squeue -h -n hm-inforce -t R -o %i) ]]'
jid=$(squeue -h -n hm-inforce -o %i | head -1)
check "job $jid: harmonicsctl says unpaced within UnpacedAfter + 5 s" \
	hm_wait_for 8 is_unpaced "$jid"
say "unpaced after $(hm_since "$t0")s; \$ harmonicsctl jobs: $("$HM_CTL" jobs 2>/dev/null | grep "^$jid ")"
check "its harmonicsctl jobs row says unpaced" bash -c "'$HM_CTL' jobs | grep -q '^$jid .* unpaced\$'"
check "its AdminComment says unpaced" hm_wait_for 5 comment_has "$jid" " unpaced;"
jdir=$HM_DIR/run/harmonics/n1/job.$jid
if hm_wait_for 5 test -d "$jdir"; then
	sed -e "s/^JOB_ID=.*/JOB_ID=$jid/" -e "s/^PID=.*/PID=$$/" -e "s/^UPDATED_US=.*/UPDATED_US=$(date +%s%6N)/" \
		"$dir/report.0" >"$jdir/report.0.0.tmp" && mv "$jdir/report.0.0.tmp" "$jdir/report.0.0"
fi
check "with the stand-in's report (NCCL_CLASS=3): paced again, class in force 3" \
	hm_wait_for 8 paced_in_class "$jid" 3
prio=$(job_q "$jid" .prio)
say "decided class $prio, in force $(job_q "$jid" .class_in_force); \$ harmonicsctl jobs: $("$HM_CTL" jobs 2>/dev/null | grep "^$jid ")"
if [[ $prio != 3 ]]; then
	check "harmonicsctl jobs shows PRIO $prio/3 (decided/in force)" \
		bash -c "'$HM_CTL' jobs | awk -v j=$jid '\$1 == j { print \$10 }' | grep -qx '$prio/3'"
	check "its AdminComment says paced class=3" hm_wait_for 5 comment_has "$jid" " paced class=3;"
fi
say "AdminComment=$(admin_comment "$jid")"
scancel "$jid" 2>/dev/null
wait "$spid" 2>/dev/null
hm_tier_end
