#!/usr/bin/env bash
# How fast racks rejoin after a cut from the coordinator (issue 12): the
# one-machine cluster (tests/slurm/cluster.sh, two racks), five jobs as in
# leaders.sh, slurmctld stopped for CUT_S seconds (default 15) and started
# again; checks that every agent is connected again, and both racks' rounds
# are solved by their leaders, within REJOIN_BOUND_S (default 10 s: the
# leader retries the coordinator twice per epoch and calls its members back at
# once; the agents' back-off alone took 19 s after a 40 s cut), and prints both
# times. In the slurm tier (about 40 s); docs/architecture.md's figures:
# CUT_S=40 tests/slurm/rejoin.sh [BUILD_DIR]   (root)
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin rejoin "the rejoin measurement needs root (Slurm daemons, munge)" "$@"
command -v jq >/dev/null || { echo "rejoin: jq not installed (scripts/deps.sh)" >&2; exit 1; }
CUT_S=${CUT_S:-15}
REJOIN_BOUND_S=${REJOIN_BOUND_S:-10}

# The leaders tier's timing: beats 250 ms, agents valid 1 s, epochs 2 s.
export HM_CONF_EXTRA="HeartbeatInterval=250ms
AgentValidity=1000ms
EpochLength=2s
RackTimeout=500ms"

hm_tier_cluster_up "8 slurmd with their node agents" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }

racks_json() { "$HM_CTL" --json --timeout 2s racks 2>/dev/null; }
both_led() { [[ $(racks_json | jq -r '[.racks[] | select(.state == "up" and .leader != null)] | length') == 2 ]]; }
all_up() { [[ $("$HM_CTL" --json --timeout 2s nodes 2>/dev/null | jq '[.nodes[] | select(.state == "up")] | length') == 8 ]]; }
led_solved() { racks_json | jq -e '[.racks[] | select(.solver == "leader" and .leader_solves > 0)] | length == 2' >/dev/null; }

check "both racks have a leader within 10 s" hm_wait_for 10 both_led
PROF="iter=100ms,comm=40%,bytes=500MB"
for j in "hm-l1 n3,n4" "hm-l2 n3,n4" "hm-l3 n7,n8" "hm-l4 n7,n8" "hm-x n4,n8"; do
	sbatch -J "${j% *}" -w "${j#* }" -N2 -n2 --comm-sched=harmonics --comm-profile="$PROF" \
		-o /dev/null --wrap "sleep 600" >/dev/null
done
check "the five jobs run" hm_wait_for 30 bash -c "[[ \$(squeue -h -t R -n hm-l1,hm-l2,hm-l3,hm-l4,hm-x | wc -l) == 5 ]]"
check "both racks' rounds solved by their leaders" hm_wait_for 15 led_solved
echo "=== slurmctld stopped for $CUT_S s"
hm_ctld_stop
sleep "$CUT_S"
t0=$(date +%s%3N)
hm_ctld_start
check "every agent connected again within $REJOIN_BOUND_S s" hm_wait_for "$REJOIN_BOUND_S" all_up
t_up=$(date +%s%3N)
check "both racks solved by their leaders again within $REJOIN_BOUND_S s" hm_wait_for "$REJOIN_BOUND_S" led_solved
t_led=$(date +%s%3N)
say "cut $CUT_S s: all 8 agents back $((t_up - t0)) ms, both racks solved by their leaders $((t_led - t0)) ms after slurmctld's start"
scancel -n hm-l1,hm-l2,hm-l3,hm-l4,hm-x
hm_tier_end true
