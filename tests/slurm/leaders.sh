#!/usr/bin/env bash
# Rack leaders (issue 12, first part): real slurmd and node agents on the
# one-machine cluster (tests/slurm/cluster.sh: 8 slurmd, rack1 = n[1-4],
# rack2 = n[5-8]).
#
#   All agents start together: each rack elects its lowest-named node (n1, n5),
#   visible in harmonicsctl racks (text and JSON) and in the agents' own logs.
#   The slurmd of rack1's leader stopped: the next node of rack1 in name order
#   leads (every agent of the rack is told), rack2 is untouched; the stopped
#   slurmd restarted: its agent comes back as a member, the leader stays (no
#   flap) over several heartbeats. rack2's leader frozen (SIGSTOP: connection
#   open, silent): n6 leads after AgentValidity, within AgentValidity +
#   HeartbeatInterval; thawed, n5 is a member and n6 keeps the lead.
#
# Prints the takeover times: the signal to the leader's slurmd -> the
# coordinator's election and -> the new leader's agent logging its role.
# Usage: tests/slurm/leaders.sh [BUILD_DIR]   (default: ./build)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root). HM_KEEP=1 keeps
# the cluster's directory (kept on failure).
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin leaders "the leaders tier needs root (Slurm daemons, munge)" "$@"
command -v jq >/dev/null || { echo "leaders: jq not installed (scripts/deps.sh)" >&2; exit 1; }


# Beats every 250 ms, agents valid 1 s: a silent leader would give way within
# AgentValidity + HeartbeatInterval = 1.25 s; a closed connection at once.
HEARTBEAT_MS=250 AGENT_VALID_MS=1000
export HM_CONF_EXTRA="HeartbeatInterval=${HEARTBEAT_MS}ms
AgentValidity=${AGENT_VALID_MS}ms
EpochLength=2s
RackTimeout=500ms"

echo "=== bring-up (no accounting database: not needed here)"
hm_tier_cluster_up "8 slurmd with their node agents" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }
log=$HM_DIR/log

racks_json() { "$HM_CTL" --json --timeout 2s racks 2>/dev/null; }
rack_q() { racks_json | jq -r --arg r "$1" ".racks[] | select(.name == \$r) | $2"; }
node_is() { [[ $("$HM_CTL" --json --timeout 2s nodes 2>/dev/null | jq -r --arg n "$1" '.nodes[] | select(.node == $n) | .state') == "$2" ]]; }
led_by() { [[ $(rack_q "$1" .leader) == "$2" ]]; }
both_led() { [[ $(racks_json | jq -r '[.racks[] | select(.state == "up" and .leader != null)] | length') == 2 ]]; }
# Milliseconds since the Unix epoch of the first line of file $1 matching $2
# (Slurm's log time stamps: [YYYY-MM-DDTHH:MM:SS.mmm], local time).
log_ms() {
	local ts
	ts=$(grep -m1 -- "$2" "$1" 2>/dev/null | sed -n 's/^\[\([0-9T:.-]*\)\].*/\1/p')
	[[ -n $ts ]] && date -d "${ts/T/ } " +%s%3N
}
count() { grep -c -- "$2" "$1" 2>/dev/null; }

echo "=== leaders elected and visible"
check "both racks have a leader within 10 s" hm_wait_for 10 both_led
echo "    \$ harmonicsctl racks"
"$HM_CTL" --timeout 2s racks | sed 's/^/      /'
check "rack1 is led by n1, its lowest-named node" test "$(rack_q rack1 .leader)" = n1
check "rack2 is led by n5, its lowest-named node" test "$(rack_q rack2 .leader)" = n5
check "racks --json: rack, leader, state, last_epoch, jobs, cross_rack_jobs, solve_ms" \
	bash -c "'$HM_CTL' --json racks | jq -e '.racks | length == 2 and all(has(\"rack\") and has(\"leader\") and has(\"state\") and has(\"last_epoch\") and has(\"jobs\") and has(\"cross_rack_jobs\") and has(\"solve_ms\"))' >/dev/null"
check "racks --json: each leader's rack channel (leader_addr 127.0.0.1:PORT)" \
	bash -c "'$HM_CTL' --json racks | jq -e '[.racks[].leader_addr | test(\"^127[.]0[.]0[.]1:[0-9]+$\")] == [true, true]' >/dev/null"
check "the text form shows the leaders" bash -c "'$HM_CTL' racks | grep -Eq '^0 +rack1 +n1 +up ' && '$HM_CTL' racks | grep -Eq '^1 +rack2 +n5 +up '"
# The rack channel (issue 28): bound to the address the agent reaches slurmctld
# from, not every interface; a stranger is closed before it gets a slot, and
# the refusals are logged a few times a minute, not once each.
rport=$(rack_q rack1 .leader_addr | sed 's/.*://')
check "rack1's channel listens on 127.0.0.1 only (127.0.0.2:$rport refused)" \
	bash -c "! timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.2/$rport' 2>/dev/null"
check "8 strangers (from 127.0.0.9) closed at once by rack1's leader, at most 5 lines logged" bash -c "
	for i in 1 2 3 4 5 6 7 8; do
		python3 -c 'import socket, sys
s = socket.socket(); s.bind((\"127.0.0.9\", 0)); s.connect((\"127.0.0.1\", $rport)); s.settimeout(2)
sys.exit(0 if s.recv(1) == b\"\" else 1)' || exit 1
	done
	sleep 0.5
	n=\$(grep -c 'rack channel: refused a connection from 127.0.0.9' $log/slurmd-n1.log)
	((n >= 1 && n <= 5))"
check "n1's agent logged once that it leads rack1" test "$(count "$log/slurmd-n1.log" 'rack rack1: this node leads')" = 1
check "n5's agent logged once that it leads rack2" test "$(count "$log/slurmd-n5.log" 'rack rack2: this node leads')" = 1
check "n2..n4 logged n1 as their leader, n6..n8 n5, once each" bash -c "
	for n in 2 3 4; do [[ \$(grep -c 'rack rack1: member, n1 leads' $log/slurmd-n\$n.log) == 1 ]] || exit 1; done
	for n in 6 7 8; do [[ \$(grep -c 'rack rack2: member, n5 leads' $log/slurmd-n\$n.log) == 1 ]] || exit 1; done"

echo "=== each rack's Local Scheduler runs on its leader's node agent"
PROF="iter=100ms,comm=40%,bytes=500MB"
submit() { # name nodes
	sbatch -J "$1" -w "$2" -N2 -n2 --comm-sched=harmonics --comm-profile="$PROF" \
		-o /dev/null --wrap "sleep 600" | awk '{ print $4 }'
}
jobs_ok() { # every job of ours listed by harmonicsctl with a decision
	[[ $("$HM_CTL" --json --timeout 2s jobs 2>/dev/null |
		jq '[.jobs[] | select(.decided_epoch != null)] | length') == "$1" ]]
}
# Rack $1's rounds: solved by its leader $2 (solver, a solve time), $3 more
# than given solves there, none in slurmctld.
led_rounds() { # rack leader min_solves
	racks_json | jq -e --arg r "$1" --argjson n "$3" '.racks[] | select(.name == $r) |
		.solver == "leader" and .leader_solves > $n and .coordinator_solves == 0 and .solve_ms != null' >/dev/null &&
		grep -q "rack $1: Local Scheduler round .* solved here" "$log/slurmd-$2.log"
}
export -f racks_json jobs_ok led_rounds
export HM_CTL log
echo "    two jobs on n3,n4 (rack1), two on n7,n8 (rack2), one on n4,n8 (both racks)"
for j in "hm-l1 n3,n4" "hm-l2 n3,n4" "hm-l3 n7,n8" "hm-l4 n7,n8" "hm-x n4,n8"; do
	echo "    \$ sbatch -J ${j% *} -w ${j#* } -N2 -n2 --comm-sched=harmonics --comm-profile=$PROF --wrap 'sleep 600'"
	submit $j >/dev/null
done
check "the five jobs run" hm_wait_for 30 bash -c "[[ \$(squeue -h -t R -n hm-l1,hm-l2,hm-l3,hm-l4,hm-x | wc -l) == 5 ]]"
check "harmonicsctl lists the five with a decision" hm_wait_for 15 jobs_ok 5
check "rack1's rounds solved on n1 (its agent logs it), none in slurmctld" hm_wait_for 15 led_rounds rack1 n1 0
check "rack2's rounds solved on n5, none in slurmctld" hm_wait_for 15 led_rounds rack2 n5 0
check "racks --json: rack1 has 3 jobs, 1 of them cross-rack" test "$(rack_q rack1 '"\(.jobs) \(.cross_rack_jobs)"')" = "3 1"
echo "    \$ harmonicsctl racks"
"$HM_CTL" --timeout 2s racks | sed 's/^/      /'
grep -m1 "rack rack1: Local Scheduler round" "$log/slurmd-n1.log" | sed 's/^/      n1: /'
check "no round went unanswered so far" test "$(count "$log/slurmctld.log" 'did not answer round')" = 0

echo "=== rack1's leader (n1) stops: the next node of rack1 in name order leads"
term1=$(rack_q rack1 .term)
echo "    \$ kill -TERM <slurmd -N n1>   (tests/slurm/cluster.sh hm_stop_pid)"
t_stop_ms=$(date +%s%3N)
hm_stop_pid slurmd-n1
t_gone_ms=$(date +%s%3N)
check "rack1 led by n2 (n3, n4 are up too) within 5 s" hm_wait_for 5 led_by rack1 n2
check "rack1's term grew by one ($term1 -> $(rack_q rack1 .term))" test "$(rack_q rack1 .term)" = $((term1 + 1))
check "rack2 untouched: n5, term 1" test "$(rack_q rack2 .leader) $(rack_q rack2 .term)" = "n5 1"
check "n2's agent logs that it leads (term $((term1 + 1)))" hm_wait_for 5 grep -q "rack rack1: this node leads (term $((term1 + 1)))" "$log/slurmd-n2.log"
check "n3 and n4 are told n2 leads" hm_wait_for 5 bash -c "grep -q 'rack rack1: member, n2 leads' $log/slurmd-n3.log && grep -q 'rack rack1: member, n2 leads' $log/slurmd-n4.log"
t_elect_ms=$(log_ms "$log/slurmctld.log" "rack rack1: leader n2")
t_told_ms=$(log_ms "$log/slurmd-n2.log" "rack rack1: this node leads")
say "slurmd n1 gone $((t_gone_ms - t_stop_ms)) ms after SIGTERM; takeover: the coordinator elected n2" \
	"+$((${t_elect_ms:-0} - t_stop_ms)) ms, n2's agent logged its role +$((${t_told_ms:-0} - t_stop_ms)) ms after the SIGTERM"
check "the takeover (n2's agent told) within AgentValidity + HeartbeatInterval of slurmd n1's exit" \
	test -n "$t_told_ms" -a "$((${t_told_ms:-0} - t_gone_ms))" -le $((AGENT_VALID_MS + HEARTBEAT_MS))
check "the coordinator shows n1 lost" hm_wait_for 5 node_is n1 lost
check "rack1's rounds now solved on n2, none in slurmctld" hm_wait_for 10 led_rounds rack1 n2 "$(rack_q rack1 .leader_solves)"
check "no job lost: the five still run with a decision" bash -c "[[ \$(squeue -h -t R -n hm-l1,hm-l2,hm-l3,hm-l4,hm-x | wc -l) == 5 ]] && jobs_ok 5"

echo "=== n1's slurmd restarted: its agent is a member, n2 keeps the lead (no flap)"
echo "    \$ slurmd -D -N n1 -f \$SLURM_CONF"
hm_spawn slurmd-n1 slurmd -D -N n1 -f "$SLURM_CONF"
check "n1's agent up again" hm_wait_for 15 node_is n1 up
check "n1's agent is told n2 leads" hm_wait_for 5 grep -q 'rack rack1: member, n2 leads' "$log/slurmd-n1.log"
lines_n2=$(count "$log/slurmd-n2.log" 'rack rack1: ')
sleep $((8 * HEARTBEAT_MS / 1000)).$((8 * HEARTBEAT_MS % 1000))
check "after 8 heartbeats rack1 is still led by n2, same term ($((term1 + 1)))" \
	test "$(rack_q rack1 .leader) $(rack_q rack1 .term)" = "n2 $((term1 + 1))"
check "n2 logged no further role change" test "$(count "$log/slurmd-n2.log" 'rack rack1: ')" = "$lines_n2"
check "the coordinator elected rack1's leader twice in all" test "$(count "$log/slurmctld.log" 'rack rack1: leader [^ ]*, term')" = 2

echo "=== rack2's leader (n5) freezes (SIGSTOP: connection open, silent): n6 leads after AgentValidity"
pid5=${HM_PIDS[slurmd-n5]}
echo "    \$ kill -STOP <slurmd -N n5>"
t_freeze_ms=$(date +%s%3N)
kill -STOP "$pid5"
check "rack2 led by n6 within 5 s" hm_wait_for 5 led_by rack2 n6
check "n6's agent logs that it leads (term 2)" hm_wait_for 5 grep -q 'rack rack2: this node leads (term 2)' "$log/slurmd-n6.log"
t_elect_ms=$(log_ms "$log/slurmctld.log" "rack rack2: leader n6")
t_told_ms=$(log_ms "$log/slurmd-n6.log" "rack rack2: this node leads")
say "takeover after a freeze: the coordinator elected n6 +$((${t_elect_ms:-0} - t_freeze_ms)) ms," \
	"n6's agent logged its role +$((${t_told_ms:-0} - t_freeze_ms)) ms after the SIGSTOP" \
	"(AgentValidity $AGENT_VALID_MS ms, HeartbeatInterval $HEARTBEAT_MS ms)"
check "the coordinator says why: $(grep -m1 'rack rack2: leader n6' "$log/slurmctld.log" | sed 's/.*(//')" \
	grep -q 'rack rack2: leader n6, term 2 (was n5: its agent silent past AgentValidity)' "$log/slurmctld.log"
check "not before AgentValidity - HeartbeatInterval after the freeze (its last beat)" \
	test -n "$t_elect_ms" -a "$((${t_elect_ms:-0} - t_freeze_ms))" -ge $((AGENT_VALID_MS - HEARTBEAT_MS))
# The bound is AgentValidity + HeartbeatInterval; one more heartbeat of slack
# for the shared 2-core machine (the beat that elects may be processed late).
check "n6's agent told within AgentValidity + 2 x HeartbeatInterval" \
	test -n "$t_told_ms" -a "$((${t_told_ms:-0} - t_freeze_ms))" -le $((AGENT_VALID_MS + 2 * HEARTBEAT_MS))
check "rack2's rounds now solved on n6, none in slurmctld" hm_wait_for 10 led_rounds rack2 n6 "$(rack_q rack2 .leader_solves)"
say "rounds n5 did not answer while frozen (its local jobs ran free for them): $(rack_q rack2 .silent_rounds)"
echo "    \$ kill -CONT <slurmd -N n5>"
kill -CONT "$pid5"
check "n5's agent, thawed, is told n6 leads" hm_wait_for 10 grep -q 'rack rack2: member, n6 leads' "$log/slurmd-n5.log"
sleep $((8 * HEARTBEAT_MS / 1000)).$((8 * HEARTBEAT_MS % 1000))
check "after 8 more heartbeats rack2 is still led by n6, term 2; rack1 by n2, term $((term1 + 1))" \
	test "$(rack_q rack2 .leader) $(rack_q rack2 .term) $(rack_q rack1 .leader) $(rack_q rack1 .term)" = "n6 2 n2 $((term1 + 1))"
echo "    \$ harmonicsctl racks"
"$HM_CTL" --timeout 2s racks | sed 's/^/      /'
check "no job lost: the five still run with a decision" bash -c "[[ \$(squeue -h -t R -n hm-l1,hm-l2,hm-l3,hm-l4,hm-x | wc -l) == 5 ]] && jobs_ok 5"

echo "=== slurmctld (the coordinator) stopped: every rack is cut off; its leader keeps its local jobs scheduled"
run=$HM_DIR/run/harmonics
jl1=$(squeue -h -n hm-l1 -o %i) jl3=$(squeue -h -n hm-l3 -o %i) jx=$(squeue -h -n hm-x -o %i)
key() { sed -n "s/^HARMONICS_$2=//p" "$1" 2>/dev/null; } # file KEY
# hm-l1's batch step on n3 (a member of rack1, led by n2), hm-l3's on n7 (rack2, n6),
# hm-x's on n4: their assign files, which the node agents renew.
f1=$run/n3/job.$jl1/assign f3=$run/n7/job.$jl3/assign fx=$run/n4/job.$jx/assign
check "assign files of hm-l1 (n3), hm-l3 (n7), hm-x (n4) exist, scheduled by harmonics" \
	bash -c "grep -qx HARMONICS_MODE=harmonics $f1 && grep -qx HARMONICS_MODE=harmonics $f3 && grep -qx HARMONICS_MODE=harmonics $fx"
sched1="$(key "$f1" PERIOD_US) $(key "$f1" SHIFT_US)" sched3="$(key "$f3" PERIOD_US) $(key "$f3" SHIFT_US)"
say "before the cut: hm-l1 period, shift, class: $sched1 $(key "$f1" PRIO); hm-l3: $sched3 $(key "$f3" PRIO)"
echo "    \$ kill -TERM <slurmctld>"
t_stop_ms=$(date +%s%3N)
hm_ctld_stop
t_cut_ms=$(date +%s%3N)
for rl in "rack1 n2 n3" "rack2 n6 n7"; do
	set -- $rl
	check "$2 ($1's leader) solves $1 itself, cross-rack jobs free" \
		hm_wait_for 10 grep -q "rack $1 cut off from the coordinator: Local Scheduler solved here" "$log/slurmd-$2.log"
	check "$3 follows its leader $2's decisions" \
		hm_wait_for 10 grep -q "rack $1: the coordinator is out of reach: .* jobs follow the decisions of the rack's leader $2" "$log/slurmd-$3.log"
done
t_lead_ms=$(log_ms "$log/slurmd-n2.log" "rack rack1 cut off from the coordinator: Local Scheduler solved here")
t_memb_ms=$(log_ms "$log/slurmd-n3.log" "jobs follow the decisions of the rack's leader n2")
say "slurmctld gone $((t_cut_ms - t_stop_ms)) ms after SIGTERM; n2 solved rack1 +$((${t_lead_ms:-0} - t_stop_ms)) ms," \
	"n3 applied n2's decisions +$((${t_memb_ms:-0} - t_stop_ms)) ms after the SIGTERM (AgentValidity $AGENT_VALID_MS ms)"
sleep $((3 * AGENT_VALID_MS / 1000)).$((3 * AGENT_VALID_MS % 1000))
now_us=$(($(date +%s%3N) * 1000))
say "3 x AgentValidity into the cut: hm-l1 on n3: period $(key "$f1" PERIOD_US) us, shift $(key "$f1" SHIFT_US) us," \
	"class $(key "$f1" PRIO), epoch $(key "$f1" EPOCH), valid $(( ($(key "$f1" VALID_UNTIL_US) - now_us) / 1000 )) ms more;" \
	"hm-l3 on n7: class $(key "$f3" PRIO); hm-x on n4: mode $(key "$fx" MODE)"
# The pair on n3,n4 (n7,n8) is the rack's alone: re-solved without hm-x it keeps
# its schedule (free running), and the agents keep renewing it. Its class is the
# leader's own: the coordinator's check may have moved it with hm-x in view.
check "hm-l1's assignment on n3 is renewed through the cut (valid past now), same schedule, a class" \
	bash -c "(( \$(sed -n 's/^HARMONICS_VALID_UNTIL_US=//p' $f1) > $now_us )) && grep -qx HARMONICS_MODE=harmonics $f1 &&
		[[ \"\$(sed -n 's/^HARMONICS_PERIOD_US=//p' $f1) \$(sed -n 's/^HARMONICS_SHIFT_US=//p' $f1)\" == '$sched1' ]] &&
		grep -qx 'HARMONICS_PRIO=[0-9]' $f1"
check "hm-l3's on n7 too" \
	bash -c "(( \$(sed -n 's/^HARMONICS_VALID_UNTIL_US=//p' $f3) > $now_us )) && grep -qx HARMONICS_MODE=harmonics $f3 &&
		[[ \"\$(sed -n 's/^HARMONICS_PERIOD_US=//p' $f3) \$(sed -n 's/^HARMONICS_SHIFT_US=//p' $f3)\" == '$sched3' ]] &&
		grep -qx 'HARMONICS_PRIO=[0-9]' $f3"
check "hm-x (across the racks) runs free on n4: HARMONICS_MODE=off" test "$(key "$fx" MODE)" = off
t_rs_ms=$(date +%s%3N)
echo "=== slurmctld (the coordinator) restarted after $(( (t_rs_ms - t_cut_ms) / 1000 )) s: the racks rejoin, their leaders solve again"
echo "    \$ slurmctld -D -f \$SLURM_CONF"
hm_ctld_start
check "both racks have a leader again within 15 s" hm_wait_for 15 both_led
# Until a rack elects (AgentValidity after its first agent is back), slurmctld
# solves it, as any rack without a leader; then its leader does.
for r in rack1 rack2; do
	check "$r's rounds solved on its leader again" \
		hm_wait_for 15 bash -c "racks_json | jq -e '.racks[] | select(.name == \"$r\") | .solver == \"leader\" and .leader_solves > 0' >/dev/null"
done
check "the five jobs are decided again" hm_wait_for 15 jobs_ok 5
# Members still connected to their leader are told to reconnect at once; those
# whose own back-off came first are back already (tests/slurm/rejoin.sh
# measures a long cut, where it matters).
check "the leaders of the cut stopped bridging it and told the members still on their channel to reconnect" \
	hm_wait_for 20 bash -c "grep -Eq 'rack rack1: the coordinator is back after [0-9]+ cut rounds.*; [0-9]+ members told to reconnect now' $log/slurmd-n2.log &&
		grep -Eq 'rack rack2: the coordinator is back after [0-9]+ cut rounds.*; [0-9]+ members told to reconnect now' $log/slurmd-n6.log"
say "racks led and decisions back $(($(date +%s%3N) - t_rs_ms)) ms after slurmctld's start;" \
	"rounds slurmctld solved before the leaders were elected: rack1 $(rack_q rack1 .coordinator_solves), rack2 $(rack_q rack2 .coordinator_solves)"
echo "    \$ harmonicsctl racks"
"$HM_CTL" --timeout 2s racks | sed 's/^/      /'
scancel -n hm-l1,hm-l2,hm-l3,hm-l4,hm-x

hm_tier_end grep 'rack ' "$log/slurmctld.log"
