#!/usr/bin/env bash
# Slurm test tier, placement (docs/placement.md): select/harmonics_cons_tres on
# a real one-machine cluster of 4 racks x 3 nodes (tests/slurm/cluster.sh with
# HM_NODES=12 HM_RACK_HOSTS=3), uplinks as fast as a NIC (UplinkSpeed=100Gbps).
#
# A communication-heavy job runs across racks 1 and 2 (n1 n2 | n4 n5), two jobs
# without --comm-sched fill two nodes each of racks 3 and 4 (n7 n8, n10 n11): one
# free node is left in every rack (n3 n6 n9 n12). Then, one at a time:
#   - a 2-node job without --comm-sched: cons_tres' choice (racks 1 and 2);
#   - the same with --comm-sched: racks 3 and 4, the decision in AdminComment;
#   - the same through backfill (a job of every node blocks the queue): racks 3
#     and 4, the plan (WILL_RUN) and the start (RUN_NOW) deciding alike;
#   - sched/backfill instead of sched/harmonics (no coordinator): the
#     --comm-sched job lands where the plain one did, cons_tres' choice.
#
# Usage: tests/slurm/place.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

export HM_NODES=12 HM_RACK_HOSTS=3 HM_CONF_EXTRA="UplinkSpeed=100Gbps"
# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin placement "the Slurm tier needs root (daemons, munge)" "$@"

# The job's nodes, one per line, sorted (n3, n6, ...).
nodes_of() { scontrol show hostnames "$(squeue -h -j "$1" -o %N)" 2>/dev/null | sort -V | tr '\n' ' '; }
gone() { # job secs: it left the node table (cancelled and cleaned up)
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ -z $(squeue -h -j "$1" -t R,CG 2>/dev/null) ]] && return 0
		sleep 0.1
	done
	return 1
}
HEAVY="iter=250ms,comm=60%,bytes=2GB"

echo "=== bring-up: 4 racks x 3 nodes"
hm_tier_cluster_up "$HM_NODES slurmd in 4 racks" --no-db
log=$HM_DIR/log/slurmctld.log

heavy=$(sbatch --parsable -w "n[1-2,4-5]" --exclusive --comm-sched=harmonics \
	--comm-profile="$HEAVY" -o /dev/null --wrap "sleep 300")
fill3=$(sbatch --parsable -w "n[7-8]" --exclusive -o /dev/null --wrap "sleep 300")
fill4=$(sbatch --parsable -w "n[10-11]" --exclusive -o /dev/null --wrap "sleep 300")
for j in "$heavy" "$fill3" "$fill4"; do wait_state "$j" RUNNING 20; done
# The coordinator has the heavy job once its decision is in AdminComment; the
# live view follows within a round (1 s).
for _ in $(seq 150); do [[ $(admin_comment "$heavy") == *harmonics:e* ]] && break; sleep 0.1; done
sleep 2
check "heavy job across racks 1 and 2 ($(nodes_of "$heavy")), scheduled: $(admin_comment "$heavy")" \
	bash -c "[[ '$(nodes_of "$heavy")' == 'n1 n2 n4 n5 ' && '$(admin_comment "$heavy")' == *harmonics:e* ]]"

echo "=== a job without --comm-sched: cons_tres' choice"
plain=$(sbatch --parsable -N2 --exclusive -o /dev/null --wrap "sleep 300")
wait_state "$plain" RUNNING 20
plain_nodes=$(nodes_of "$plain")
check "plain 2-node job on racks 1 and 2 (cons_tres + topology/tree): $plain_nodes" \
	bash -c "[[ '$plain_nodes' == 'n3 n6 ' ]]"
check "the select wrapper left it alone (no placement log line, no placed entry)" \
	bash -c "! grep -q 'JobId=$plain placed' '$log' && [[ '$(admin_comment "$plain")' != *placed@* ]]"
scancel "$plain"
gone "$plain" 30

echo "=== the same job with --comm-sched: racks 3 and 4"
comm=$(sbatch --parsable -N2 --exclusive --comm-sched=harmonics --comm-profile="$HEAVY" \
	-o /dev/null --wrap "sleep 300")
wait_state "$comm" RUNNING 20
comm_nodes=$(nodes_of "$comm")
comment=$(admin_comment "$comm")
check "--comm-sched 2-node job placed on racks 3 and 4, off the heavy job's uplinks: $comm_nodes" \
	bash -c "[[ '$comm_nodes' == 'n9 n12 ' ]]"
ct_score=$(sed -n 's/.*harmonics:placed@[^ ]* score=0\.0000 cons_tres=\([0-9.]*\) racks=2 candidates=[0-9]*;.*/\1/p' <<<"$comment")
check "AdminComment records the decision, score 0, and cons_tres' choice's worse one: $comment" \
	awk -v s="$ct_score" 'BEGIN { exit !(s != "" && s + 0 > 0.01) }'
line=$(grep -m1 "JobId=$comm placed by" "$log")
has_time() { [[ $line == *" us, "*" of them in cons_tres"* ]]; }
check "slurmctld's log has the decision and its time: ${line#*select/harmonics_cons_tres: }" has_time
scancel "$comm"
gone "$comm" 30

echo "=== backfill plans with the same choice"
# A job of every node waits at the head of the queue: the main scheduler stops
# there, so the next job can only start through backfill (WILL_RUN, then RUN_NOW).
# Backfill reads bf_interval when it wakes: a restart makes it 1 s at once.
echo "SchedulerParameters=bf_interval=1" >>"$SLURM_CONF"
hm_ctld_stop
hm_ctld_start
wait_state "$heavy" RUNNING 20
# The coordinator recovers the heavy job; the view follows within a round.
sleep 2
blocker=$(sbatch --parsable -N12 --exclusive -o /dev/null --wrap "sleep 1")
bf=$(sbatch --parsable -N2 -t 5 --exclusive --comm-sched=harmonics --comm-profile="$HEAVY" \
	-o /dev/null --wrap "sleep 300")
wait_state "$bf" RUNNING 30
bf_nodes=$(nodes_of "$bf")
# Slurm 24.05 on logs no "Started JobId=" for backfill starts (only for hetjobs):
# there the next check (its WILL_RUN and RUN_NOW placements) shows the path.
sv=$(slurmctld -V | awk '{print $2}')
started_log="Started JobId=$bf in"
(((10#${sv%%.*} * 100 + 10#$(cut -d. -f2 <<<"$sv")) >= 2405)) && started_log="JobId=$bf placed by"
check "backfill started the --comm-sched job on racks 3 and 4: $bf_nodes" \
	bash -c "[[ '$bf_nodes' == 'n9 n12 ' ]] && grep -q '$started_log' '$log'"
check "backfill's plan (WILL_RUN) and the start (RUN_NOW) both chose it" \
	bash -c "(( \$(grep -c 'JobId=$bf placed by' '$log') >= 2 ))"
scancel "$bf" "$blocker"
gone "$bf" 30

echo "=== no coordinator (sched/backfill): cons_tres' placement"
hm_ctld_stop
sed -i 's|^SchedulerType=.*|SchedulerType=sched/backfill|; /^JobSubmitPlugins=/d' "$SLURM_CONF"
hm_spawn slurmctld slurmctld -D -f "$SLURM_CONF"
hm_wait_for 30 scontrol ping || fail "slurmctld with sched/backfill answers"
check "the heavy job survived the restart" wait_state "$heavy" RUNNING 20
# Every node registered again: a job submitted sooner is placed among the nodes
# that had (26.05 placed it on n3 n9 with n6 still not responding).
responding() { [[ -z $(sinfo -h -N -o '%N %t' | awk '$2 !~ /^(idle|alloc|mix)$/') ]]; }
hm_wait_for 30 responding || fail "every node responds after slurmctld's restart"
off=$(sbatch --parsable -N2 --exclusive --comm-sched=harmonics --comm-profile="$HEAVY" \
	-o /dev/null --wrap "sleep 300")
wait_state "$off" RUNNING 60
off_nodes=$(nodes_of "$off")
check "--comm-sched job without a coordinator where cons_tres put the plain one: $off_nodes" \
	bash -c "[[ '$off_nodes' == '$plain_nodes' ]]"
check "the wrapper said why (verbose): no sched_harmonics.so" \
	grep -q "select/harmonics_cons_tres: no sched_harmonics.so with hm_sched_live_acquire_v1 loaded" "$log"
check "no placed entry in its AdminComment" bash -c "[[ '$(admin_comment "$off")' != *placed@* ]]"

hm_tier_end tail -n 40 "$log"
