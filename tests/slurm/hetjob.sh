#!/usr/bin/env bash
# Heterogeneous jobs on a Harmonics cluster, and the node agent in a slurmd that
# daemonizes (issue 27 items 3 and 4), on the one-machine cluster
# (tests/slurm/cluster.sh, no accounting database) in its default configuration:
# JobSubmitPlugins=harmonics hosts the coordinator, SchedulerType=sched/backfill.
#
#   1. The host: slurmctld runs sched/backfill, job_submit/harmonics logs the
#      coordinator up; every slurmd runs without -D (daemonized) and configless
#      (--conf-server: no slurm.conf or harmonics.conf given to it); harmonics.so
#      wrote the coordinator's settings into its conf cache, and its node
#      agent, started after the fork with them, is up.
#   2. sbatch hetjobs (components separated by ':'): without --comm-sched, with
#      it on the first component (Slurm passes it on to the second) and on the
#      second only: accepted, run (one step over both components), complete; a
#      component with --comm-sched gets the coordinator's decision in its own
#      AdminComment, one without gets none; tasks register under their
#      component's job id on their own nodes (HARMONICS_JOB_ID).
#   3. salloc hetjob, --comm-sched on the second component: runs a step over
#      both, the component is decided.
#   4. sched/harmonics (HM_HOST=sched, the design card's configuration) refuses
#      hetjobs with Slurm's own message: its documented limit.
#
# Usage: tests/slurm/hetjob.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

# Hetjobs start in backfill rounds: every second rather than 30 s.
export HM_SLURMD_DAEMONIZE=${HM_SLURMD_DAEMONIZE:-1} HM_CONFIGLESS=${HM_CONFIGLESS:-1} HM_HOST=job_submit \
	HM_SLURM_EXTRA="SchedulerParameters=bf_interval=1"
# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin hetjob "the Slurm tier needs root (daemons, munge)" "$@"
command -v jq >/dev/null || { echo "hetjob: jq not installed (scripts/deps.sh)" >&2; exit 1; }

PROF="iter=250ms,comm=40%,bytes=1.2GB"
log() { cat "$HM_DIR/log/slurmctld.log"; }
# A component's AdminComment: scontrol shows the component record alone by its job id.
# (a hetjob's leader id shows every component: only the first record is its own)
comment_of() { scontrol show job "$1" 2>/dev/null | awk '/^JobId=/ { n++ } n == 1' | sed -n 's/^ *AdminComment=//p'; }
decided() { [[ $(comment_of "$1") == *" p=harmonics "* ]]; }
# The component job ids of hetjob $1, in offset order.
components() { scontrol show job "$1" 2>/dev/null | sed -n 's/^JobId=\([0-9]*\) HetJobId=.*/\1/p'; }
# Every component COMPLETED (scontrol keeps finished jobs for MinJobAge).
all_completed() {
	local c
	for c in "$@"; do
		[[ $(scontrol show job "$c" 2>/dev/null | grep -m1 -o 'JobState=[A-Z]*') == JobState=COMPLETED ]] || return 1
	done
}
agents_up() { [[ $("$HM_CTL" --json --timeout 2s nodes 2>/dev/null | jq '[.nodes[] | select(.state == "up")] | length') == "$HM_NODES" ]]; }

echo "=== 1. the coordinator in job_submit/harmonics, slurmd daemonized"
hm_tier_cluster_up "8 slurmd (daemonized: $HM_SLURMD_DAEMONIZE), JobSubmitPlugins=harmonics" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }
check "SchedulerType is sched/backfill" bash -c "scontrol show config | grep -q '^SchedulerType *= sched/backfill'"
check "job_submit/harmonics logs its and Slurm's version" \
	grep -q "job_submit/harmonics: harmonics .*built for Slurm $(slurmctld -V | awk '{print $2}')" "$HM_DIR/log/slurmctld.log"
check "job_submit/harmonics: coordinator up, topology from slurmctld's switches" \
	bash -c "grep -q 'job_submit/harmonics: coordinator up: policy harmonics' '$HM_DIR/log/slurmctld.log' &&
		grep -q \"job_submit/harmonics: topology from slurmctld's 3 topology/tree switches\" '$HM_DIR/log/slurmctld.log'"
check "select/harmonics_cons_tres finds the live view in job_submit_harmonics.so" \
	hm_wait_for 10 bash -c "! grep -q 'no sched_harmonics.so with' '$HM_DIR/log/slurmctld.log' || grep -q 'live view from' '$HM_DIR/log/slurmctld.log'"
if [[ $HM_SLURMD_DAEMONIZE == 1 ]]; then
	daemonized() {
		local i pid
		for ((i = 1; i <= HM_NODES; i++)); do
			pid=${HM_PIDS[slurmd-n$i]}
			# Not a child of this shell: it forked away (its parent is init or a subreaper).
			[[ $(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) != "$$" ]] || return 1
			grep -q '^slurmd$' "/proc/$pid/comm" || return 1
		done
	}
	check "every slurmd runs daemonized (no -D)" daemonized
	# Up to 23.11 slurmd forks after loading its plugins; from 24.05 before.
	check "slurmd's log: the node agent starts in the daemon (after the fork, or at once where slurmd forked first)" \
		grep -qE "harmonics: (slurmd daemonizes: the node agent starts after the fork|slurmd daemonized before loading its plugins: the node agent starts in the daemon)" "$HM_DIR/log/slurmd-n1.log"
fi
if [[ $HM_CONFIGLESS == 1 ]]; then
	cache_ok() {
		local i c
		for ((i = 1; i <= HM_NODES; i++)); do
			c=$HM_DIR/spool/n$i/conf-cache
			[[ -s $c/slurm.conf ]] && grep -q '^# Written by harmonics.so in slurmd from the coordinator' "$c/harmonics.conf" || return 1
		done
	}
	check "configless: each slurmd's conf cache holds slurm.conf from slurmctld and harmonics.conf from the coordinator" cache_ok
	check "slurmd's log: harmonics.conf written with the coordinator's settings" \
		grep -q "harmonics: $HM_DIR/spool/n1/conf-cache/harmonics.conf written with the coordinator's settings" "$HM_DIR/log/slurmd-n1.log"
	check "the node agent runs with the coordinator's RunDir ($HM_DIR/run/harmonics, not the default)" \
		hm_wait_for 10 grep -q "$HM_DIR/run/harmonics" "$HM_DIR/log/slurmd-n1.log"
fi
check "the $HM_NODES node agents are up" hm_wait_for 20 agents_up

echo "=== 2. sbatch hetjobs"
out=$HM_DIR/out
cat >"$out/het.sh" <<'EOF'
#!/bin/bash
srun --het-group=0,1 bash -c 'echo "task $SLURM_PROCID mode ${HARMONICS_MODE:-none} job ${HARMONICS_JOB_ID:-none}"'
sleep 3
echo done
EOF
chmod +x "$out/het.sh"
# sbatch_het NAME "OPTS0" "OPTS1": submit; the hetjob id goes into $NAME.
sbatch_het() {
	local name=$1 o0=$2 o1=$3 id
	# shellcheck disable=SC2086
	id=$(sbatch --parsable -o "$out/$name.out" $o0 : $o1 "$out/het.sh" 2>"$out/$name.err")
	printf -v "$name" '%s' "$id"
}
CS="--comm-sched=harmonics --comm-profile=$PROF"
sbatch_het plain "-N1" "-N1"
sbatch_het first "-N1 $CS" "-N2"
sbatch_het last "-N1" "-N1 $CS"
for v in plain first last; do
	check "sbatch hetjob ($v) accepted: ${!v:-refused: $(cat "$out/$v.err")}" test -n "${!v}"
done
for v in plain first last; do
	[[ -n ${!v} ]] || continue
	check "hetjob $v runs (both components RUNNING)" \
		hm_wait_for 30 bash -c "[[ \$(squeue -h -j ${!v} -t R -o %A | wc -l) == 2 ]]"
done
mapfile -t plain_c < <(components "$plain")
mapfile -t first_c < <(components "$first")
mapfile -t last_c < <(components "$last")
say "component job ids: plain ${plain_c[*]}, first ${first_c[*]}, last ${last_c[*]}"
check "each hetjob has 2 component records" \
	test "${#plain_c[@]}${#first_c[@]}${#last_c[@]}" == 222
check "hetjob last: component 1 (--comm-sched) is decided in its own AdminComment" \
	hm_wait_for 15 decided "${last_c[1]:-x}"
say "AdminComment of ${last_c[1]:-}: $(comment_of "${last_c[1]:-x}")"
check "hetjob last: component 0 (no --comm-sched) has no Harmonics entry" \
	bash -c "[[ -n '${last_c[0]:-}' && '$(comment_of "${last_c[0]:-x}")' != *harmonics:* ]]"
# Slurm hands a component's SPANK job environment on to the components after it.
check "hetjob first: --comm-sched on component 0 reaches component 1 too: both decided" \
	hm_wait_for 15 bash -c "$(declare -f comment_of decided); decided '${first_c[0]:-x}' && decided '${first_c[1]:-x}'"
check "hetjob plain: no Harmonics entry" \
	bash -c "[[ -n '${plain_c[1]:-}' && '$(comment_of "${plain_c[0]:-x}")$(comment_of "${plain_c[1]:-x}")' != *harmonics:* ]]"
check "hetjob plain completes" hm_wait_for 40 all_completed "${plain_c[@]}"
check "hetjob first completes" hm_wait_for 40 all_completed "${first_c[@]}"
check "hetjob last completes" hm_wait_for 40 all_completed "${last_c[@]}"
# Every task registered under its component's job id, on its own node.
regs_ok() { # component
	local want got
	want=$(scontrol show hostnames "$(scontrol show job "$1" | sed -n 's/^ *NodeList=//p' | head -n1)" | sort | tr '\n' ' ')
	got=$(grep -o "job $1 step 0 on [a-z0-9]* registered" "$HM_DIR/log/slurmctld.log" | awk '{print $6}' | sort | tr '\n' ' ')
	say "component $1: nodes $want, step 0 registered on $got"
	[[ -n $want && $want == "$got" ]]
}
check "hetjob first: component 1's 2 tasks registered on its own nodes (not component 0's)" regs_ok "${first_c[1]:-x}"
check "hetjob first: every task has its component's HARMONICS_JOB_ID" \
	bash -c "[[ \$(grep -c 'mode harmonics job ${first_c[0]:-x}\$' '$out/first.out') == 1 &&
		\$(grep -c 'mode harmonics job ${first_c[1]:-x}\$' '$out/first.out') == 2 ]] && grep -qx done '$out/first.out'"
# The batch script's srun carries component 0's (empty) options: component 1's
# task asks the coordinator all the same.
check "hetjob last: component 1's task is scheduled, component 0's runs unscheduled" \
	bash -c "grep -q 'mode harmonics job ${last_c[1]:-x}\$' '$out/last.out' &&
		grep -q 'mode [a-z]* job none\$' '$out/last.out' && grep -qx done '$out/last.out'"
check "hetjob plain: 2 tasks, unscheduled" \
	bash -c "[[ \$(grep -c 'mode [a-z]* job none\$' '$out/plain.out') == 2 ]] && ! grep -q 'mode harmonics' '$out/plain.out'"
say "last.out: $(grep task "$out/last.out" | sort | tr '\n' '|')"

echo "=== 3. salloc hetjob"
# shellcheck disable=SC2086
salloc_out=$(timeout 90 salloc -N1 : -N1 $CS bash -c \
	'srun --het-group=0,1 bash -c "echo task \$SLURM_PROCID mode \${HARMONICS_MODE:-none} job \${HARMONICS_JOB_ID:-none}";
	 scontrol show job "${SLURM_JOB_ID_HET_GROUP_1:-x}" | sed -n "s/^ *AdminComment=/comment=/p"' 2>&1)
say "salloc: $(tr '\n' '|' <<<"$salloc_out" | cut -c1-400)"
check "salloc hetjob ran a step over both components, the --comm-sched one scheduled" \
	bash -c "grep -q '^task [01] mode harmonics job [0-9]' <<<'$salloc_out' && [[ \$(grep -c '^task [01] ' <<<'$salloc_out') == 2 ]]"
check "salloc hetjob: the --comm-sched component is decided" grep -q "comment=.* p=harmonics " <<<"$salloc_out"
check "slurmctld and every slurmd still run" bash -c "scontrol ping >/dev/null && [[ \$(sinfo -h -N -t idle,alloc,mix -o %N | sort -u | wc -l) == $HM_NODES ]]"

echo "=== 4. sched/harmonics refuses hetjobs (its documented limit)"
hm_ctld_stop
sed -i 's|^SchedulerType=.*|SchedulerType=sched/harmonics|; /^JobSubmitPlugins=/d' "$SLURM_CONF"
hm_ctld_start
refused=$(sbatch --parsable -N1 : -N1 --wrap true 2>&1)
say "sbatch under sched/harmonics: $refused"
check "a hetjob is refused under SchedulerType=sched/harmonics (slurmctld: rejected as sched/backfill is not configured)" \
	bash -c "[[ '$refused' == *'not supported'* ]] && grep -q 'HET_JOB from uid=[0-9]* rejected as sched/backfill is not configured' '$HM_DIR/log/slurmctld.log'"
check "sched/harmonics hosts the coordinator" \
	hm_wait_for 10 grep -q "sched/harmonics: coordinator up" "$HM_DIR/log/slurmctld.log"

hm_tier_end
