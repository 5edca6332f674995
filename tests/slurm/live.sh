#!/usr/bin/env bash
# Live loop tier (issue 11): real slurmd, slurmstepd, node agents and
# harmonics-emujob steps on the one-machine cluster (tests/slurm/cluster.sh).
#
#   A (n1,n5: two racks) starts alone and runs free; B (n2,n6, the same uplinks,
#   more compute per byte) arrives: A's decision changes (slot, shift or class:
#   whichever the policy picks) and its running step takes it without a restart,
#   within two epochs. Then: slurmd of n1 stopped (A runs fail-open within the
#   bound) and restarted (A rejoins); slurmctld stopped (every step runs
#   fail-open) and restarted (they rejoin). Meanwhile C, a job of
#   the user nobody on n3: its assignment file is refused to another user
#   (daemon), its measured period in harmonicsctl is checked against the
#   emujob's own mean.
#
# Per burst, the emujob's epoch says what governed it: the assignment's epoch
# (held to a slot or let run free by it: "governed"), or -1 when nothing did
# (stale or no assignment: "fail-open").
# Prints (not asserts) the update latency (decision -> first burst on the new
# epoch) and the fail-open time (stop -> first fail-open burst), with the commands.
# Usage: tests/slurm/live.sh [BUILD_DIR]   (default: ./build)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root). HM_KEEP=1 keeps
# the cluster's directory (kept on failure).
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin live "the live tier needs root (Slurm daemons, munge, other users)" "$@"
for t in jq runuser; do
	command -v "$t" >/dev/null || { echo "live: $t not installed (scripts/deps.sh)" >&2; exit 1; }
done

# Short timings so that the whole tier takes well under a minute: beats every
# 250 ms, files valid 1 s after the coordinator's last frame, switches 500 ms
# ahead, launch-time assignments valid 1 s (the files must carry the steps).
# Epochs of 4 s: a held job's first window then holds enough iterations that its
# first slot wait keeps the mean within 1.1 x its period (with 3 s windows of
# 400 ms iterations it did not, the policy took the measured spread and the
# pair flipped to free running and back: the policy's business, not this test's).
# Uplinks of 100 Gbit/s make A and B contend across the racks.
HEARTBEAT_MS=250 AGENT_VALID_MS=1000 LEAD_MS=500 EPOCH_S=4
export HM_CONF_EXTRA="HeartbeatInterval=${HEARTBEAT_MS}ms
AgentValidity=${AGENT_VALID_MS}ms
UpdateLead=${LEAD_MS}ms
EpochLength=${EPOCH_S}s
AssignmentValidity=1s
UplinkSpeed=100Gbps"

EJ=$build/src/tools/harmonics-emujob
# A and B run until the test is done with them (the stop file, at the end), at
# most 6,000 iterations (10 min or more; at load 36 the tier took 4.2 min,
# A 2,720 iterations): a fixed count (300) ended A before the
# slurmctld outage when the machine's load was above about 15.
# A: 60 ms compute per 300 MB; B: 90 ms per 100 MB, first in both class orders
# the policy tries (Smith's: shorter burst x period; Crux's: higher intensity),
# so that whatever it picks for the pair, A's decision is the one that changes.
PROF_A="iter=100ms,comm=40%,bytes=300MB"
PROF_B="iter=100ms,comm=10%,bytes=100MB"
PROF_C="iter=150ms,comm=10%,bytes=1MB"

echo "=== bring-up (no accounting database: not needed here)"
hm_tier_cluster_up "8 slurmd with their node agents" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }
out=$HM_DIR/out
run=$HM_DIR/run/harmonics
# Rank 0 of each job listens on loopback on a port of the range hm_pick_ports
# found free (the daemons take HM_PORT-3 .. HM_PORT+8).
port_a=$((HM_PORT + 9)) port_b=$((HM_PORT + 10)) port_c=$((HM_PORT + 11))

node_state() { "$HM_CTL" --json --timeout 2s nodes 2>/dev/null | jq -r --arg n "$1" '.nodes[] | select(.node == $n) | .state'; }
report_pid() { sed -n 's/^PID=//p' "$run/$1/job.$2/report.0.$3" 2>/dev/null; }
# Rank 0's per-iteration records with the time each burst was planned (the
# latest rank's ready time: what rank 0 plans the slot from), the time rank 0
# began it (after its wait, if any), its slot and the epoch that governed it on
# rank 0 (-1: none, fail-open).
bursts() {
	jq -c '.per_iteration[] | {plan_us: (.start_us + (.ready_ms * 1000 | floor)),
		begin_us: (.start_us + ((.compute_ms + .wait_ms) * 1000 | round)), slot, epoch}' "$1"
}
# First burst planned after $2 (us) that ran fail-open (epoch -1) / was governed (epoch >= 0).
first_burst() { # file after_us free|governed
	local sel='.epoch == -1'
	[[ $3 == governed ]] && sel='.epoch >= 0'
	bursts "$1" | jq -s -r --argjson t "$2" "[.[] | select(.plan_us > \$t and ($sel))] | first | .plan_us // empty"
}
# Every burst planned in [$2, $3) (us) was governed by epoch $4 or a later one
# (default: any), and there were some.
all_governed() { # file from_us to_us [min_epoch]
	bursts "$1" | jq -s -e --argjson a "$2" --argjson b "$3" --argjson e "${4:-0}" \
		'[.[] | select(.plan_us >= $a and .plan_us < $b)] | length > 0 and all(.epoch >= $e)' >/dev/null
}
valid_until() { sed -n 's/^HARMONICS_VALID_UNTIL_US=//p' "$1" 2>/dev/null; }

# Wait up to $1 s until file $2 has at least $3 lines matching $4.
wait_lines() { hm_wait_for "$1" bash -c "(( \$(grep -c -- '$4' '$2' 2>/dev/null || true) >= $3 ))"; }
export -f ctl_json job_q applied_now node_state bursts
job_running() { [[ $(squeue -h -j "$1" -t R -o %i 2>/dev/null) == "$1" ]]; }

echo "=== C: a job of the user nobody on n3 (local channel permissions, measured period)"
mkdir -p "$out/nobody" && chown nobody "$out/nobody"
cmd_c=(srun -J hm-c -w n3 -N1 -n2 --chdir=/tmp --comm-sched=harmonics --comm-profile="$PROF_C"
	"$EJ" --rendezvous "127.0.0.1:$port_c" --compute 135ms --bytes 1MB --iterations 50 --json --quiet --timeout 20s)
echo "    \$ runuser -u nobody -- ${cmd_c[*]}"
runuser -u nobody -- "${cmd_c[@]}" >"$out/nobody/c.json" 2>"$out/nobody/c.err" &
pid_c=$!

echo "=== A alone (n1,n5), then B (n2,n6) on the same uplinks: A's running step takes its new decision"
cmd_a=(srun -J hm-a -w "n1,n5" -N2 -n2 --comm-sched=harmonics --comm-profile="$PROF_A" -o "$out/a.json" -e "$out/a-%t.err"
	"$EJ" --rendezvous "127.0.0.1:$port_a" --compute 60ms --compute-jitter 0.05 --bytes 1MB
	--iterations "${HM_LIVE_ITERS_A:-6000}" --stop-file "$out/stop" --warmup 0 --json --timeout 20s)
cmd_b=(srun -J hm-b -w "n2,n6" -N2 -n2 --comm-sched=harmonics --comm-profile="$PROF_B" -o "$out/b.json" -e "$out/b-%t.err"
	"$EJ" --rendezvous "127.0.0.1:$port_b" --compute 90ms --compute-jitter 0.05 --bytes 1MB
	--iterations "${HM_LIVE_ITERS_B:-6000}" --stop-file "$out/stop" --warmup 0 --json --timeout 20s)
echo "    \$ ${cmd_a[*]}"
"${cmd_a[@]}" &
pid_a=$!
hm_wait_for 20 bash -c '[[ -n $(squeue -h -n hm-a,hm-c -t R -o %i | sed -n 2p) ]]'
ja=$(job_id_of hm-a) jc=$(job_id_of hm-c)
# harmonicsctl's measured period for C while it runs (the last epoch's window),
# polled from now on: C (~7 s) may end before the checks below reach it.
(
	while kill -0 "$pid_c" 2>/dev/null; do
		v=$(job_q "$jc" .measured_period_us 2>/dev/null)
		[[ $v =~ ^[0-9.]+$ ]] && echo "$v" >"$out/c-period"
		sleep 0.3
	done
) &
pid_poll_c=$!
e1=-1
if [[ -n $ja ]] && hm_wait_for 15 applied_now "$ja"; then
	e1=$(job_q "$ja" .decided_epoch)
	pass "A (job $ja) alone: its steps report the decided epoch $e1: $(job_q "$ja" '"period_us=\(.period_us) prio=\(.prio)"')"
else
	fail "A alone: its steps report the decided epoch" "job '$ja': $(ctl_json | jq -c .jobs)"
fi
dec1=$(job_q "$ja" '"\(.period_us) \(.shift_us) \(.prio)"')
prio1=${dec1##* }
check "A alone runs free (harmonicsctl period_us 0)" test "${dec1%% *}" = 0
hm_wait_for 10 bash -c "[[ -s $run/n1/job.$ja/report.0.0 && -s $run/n5/job.$ja/report.0.1 ]]"
pids1="$(report_pid n1 "$ja" 0) $(report_pid n5 "$ja" 1)"
say "A's tasks (report files' PID): $pids1"

echo "    \$ ${cmd_b[*]}"
t_b=$(now_us)
"${cmd_b[@]}" &
pid_b=$!
# The decision that B's arrival makes for A, as harmonicsctl shows it: a new
# epoch whose slot period, shift or class differs (which of them is the policy's
# business; that the running step takes it is this test's).
e2=-1
for _ in $(seq $((EPOCH_S * 20 + 100))); do
	dec=$(ctl_json | jq -c --argjson j "$ja" '.jobs[] | select(.job_id == $j)')
	e2=$(jq -r '.decided_epoch // -1' <<<"$dec" 2>/dev/null)
	[[ $e2 =~ ^[0-9]+$ ]] && ((e2 > e1)) &&
		[[ $(jq -r '"\(.period_us) \(.shift_us) \(.prio)"' <<<"$dec") != "$dec1" ]] && break
	e2=-1
	sleep 0.1
done
jb=$(job_id_of hm-b)
if ((e2 > e1)); then
	t_dec=$(jq .assignment.decided_us <<<"$dec") t_switch=$(jq .switch_at_us <<<"$dec")
	read -r period2 shift2 prio2 < <(jq -r '"\(.period_us) \(.shift_us) \(.prio)"' <<<"$dec")
	pass "B (job $jb) arrived: A's decision changes, epoch $e1 -> $e2: period_us ${dec1%% *} -> $period2, shift_us $(cut -d' ' -f2 <<<"$dec1") -> $shift2, prio $prio1 -> $prio2, switch at +$(ms $((t_switch - t_dec))) ms"
else
	fail "B's arrival changes A's decision (period_us, shift_us or prio; was $dec1)" "$(ctl_json | jq -c .jobs)"
	t_dec=0 t_switch=0
fi
t_applied=0
for _ in $(seq $((EPOCH_S * 20 + 50))); do
	applied_now "$ja" "$e1" && { t_applied=$(now_us); break; }
	sleep 0.1
done
if ((t_applied > 0 && t_applied - t_dec <= 2 * EPOCH_S * 1000000)); then
	pass "A's running step reports epoch $e2 applied within two epochs ($(ms $((t_applied - t_dec))) ms after the decision, by harmonicsctl)"
else
	fail "A's running step reports the new epoch within two epochs" "$(job_q "$ja" '"decided \(.decided_epoch) applied \(.applied_epoch)"')"
fi
pids2="$(report_pid n1 "$ja" 0) $(report_pid n5 "$ja" 1)"
check "A was not restarted: same step $ja.0 running, same task PIDs ($pids2)" \
	bash -c "[[ '$pids1' == '$pids2' && '$pids1' =~ ^[0-9]+\ [0-9]+\$ ]] && squeue -h -s -j $ja -o %i | grep -qx '$ja.0'"
check "A's AdminComment records the applied epoch (harmonics:a$e2@)" \
	hm_wait_for 10 bash -c "[[ \$(scontrol show job $ja | grep AdminComment=) == *'harmonics:a$e2@'* ]]"
say "AdminComment of A: $(admin_comment "$ja")"
say "AdminComment of B: $(admin_comment "$jb")"

echo "=== local channel: another user can neither read nor replace nobody's assignment"
fc=$run/n3/job.$jc/assign
if [[ -n $jc ]] && hm_wait_for 10 test -s "$fc"; then
	ls -ld "$(dirname "$fc")" "$fc" | sed 's/^/    /'
	check "the owner (nobody) reads its assignment" \
		bash -c "runuser -u nobody -- cat '$fc' | grep -qx 'HARMONICS_JOB_ID=$jc'"
	msg=$(runuser -u daemon -- cat "$fc" 2>&1)
	check "daemon cannot read it: $msg" bash -c "[[ '$msg' == *'Permission denied'* && '$msg' != *HARMONICS_* ]]"
	msg=$(runuser -u daemon -- ls "$(dirname "$fc")" 2>&1)
	check "daemon cannot list the job directory: $msg" bash -c "[[ '$msg' == *'Permission denied'* ]]"
	msg=$(runuser -u daemon -- bash -c "printf 'HARMONICS_MODE=off\n' >'$fc'" 2>&1)
	check "daemon cannot overwrite it: $msg" bash -c "[[ '$msg' == *'Permission denied'* ]]"
	msg=$(runuser -u daemon -- bash -c "printf 'HARMONICS_MODE=off\n' >/tmp/hm-live-$$.assign && mv -f /tmp/hm-live-$$.assign '$fc'" 2>&1)
	rm -f "/tmp/hm-live-$$.assign"
	check "daemon cannot replace it (rename over it): $msg" bash -c "[[ '$msg' == *'Permission denied'* ]]"
	check "the file is still the agent's (no HARMONICS_MODE=off)" \
		bash -c "head -1 '$fc' | grep -q 'node agent' && ! grep -qx HARMONICS_MODE=off '$fc'"
	msg=$(runuser -u daemon -- cat "$run/n1/job.$ja/assign" 2>&1)
	check "daemon cannot read root's job A either: $msg" bash -c "[[ '$msg' == *'Permission denied'* ]]"
else
	fail "nobody's job C (job '$jc') has its assignment file" "$(ls -lR "$run/n3" 2>&1 | head)"
fi
wait "$pid_c"
rc_c=$?
wait "$pid_poll_c"
mp_c=$(cat "$out/c-period" 2>/dev/null || echo null)
check "C (nobody's) exits 0 (rc $rc_c)" test "$rc_c" -eq 0
mean_c=$(jq '.iter_ms.mean' "$out/nobody/c.json" 2>/dev/null)
say "C: harmonicsctl measured_period_us $mp_c, the emujob's mean iteration ${mean_c} ms"
check "harmonicsctl's measured period of C within 10% of the emujob's mean iteration" \
	awk -v m="$mp_c" -v e="$mean_c" 'BEGIN { exit !(m + 0 > 0 && e + 0 > 0 && (m / 1000 - e) / e <= 0.1 && (e - m / 1000) / e <= 0.1) }'
check "C's pacing active to the end (a step 8x longer than AssignmentValidity=1s), no stale warning" \
	bash -c "jq -e '.pace.active == true' '$out/nobody/c.json' >/dev/null && ! grep -q stale '$out/nobody/c.err'"

echo "=== a step longer than AssignmentValidity=1s keeps pacing (the agent renews its file)"
t_b_run=$(( $(now_us) - t_b ))
check "B has run $(ms $t_b_run) ms, its tasks printed no stale warning" \
	bash -c "(( $t_b_run > 3000000 )) && ! grep -q stale $out/b-0.err $out/b-1.err"
# PACED counts bursts held to a slot: only a decision with a period holds any.
rep_b=$run/n2/job.$jb/report.0.0
check "B's rank 0 report: pacing active (ACTIVE=1; $(grep -s -m1 '^PERIOD_ASSIGNED_US=' "$rep_b"), $(grep -s -m1 '^PACED=' "$rep_b"): PACED > 0 when the period is)" \
	bash -c "grep -qx ACTIVE=1 $rep_b && { grep -qx PERIOD_ASSIGNED_US=0 $rep_b || grep -q '^PACED=[1-9]' $rep_b; }"

echo "=== slurmd of n1 stopped: A's step there runs fail-open within the bound; restarted: it rejoins"
echo "    \$ kill -TERM <slurmd -N n1>   (tests/slurm/cluster.sh hm_stop_pid)"
t_stop1=$(now_us)
hm_stop_pid slurmd-n1
t_gone1=$(now_us)
vu1=$(valid_until "$run/n1/job.$ja/assign")
say "slurmd n1 gone $(ms $((t_gone1 - t_stop1))) ms after SIGTERM; A's file on n1 valid until +$(ms $((vu1 - t_stop1))) ms"
check "A's file on n1 is no longer renewed (valid until <= slurmd gone + AgentValidity)" \
	test "$((vu1 - t_gone1))" -le "$((AGENT_VALID_MS * 1000))"
wait_lines 10 "$out/a-0.err" 1 'is stale'
check "A's rank 0 (n1) says it runs fail-open: $(grep -m1 'is stale' "$out/a-0.err")" grep -q 'is stale' "$out/a-0.err"
check "the coordinator shows n1 lost" hm_wait_for 5 bash -c "[[ \$('$HM_CTL' --json nodes | jq -r '.nodes[] | select(.node == \"n1\") | .state') == lost ]]"
check "job A survives (running)" job_running "$ja"
# Let a few bursts run fail-open before the restart (the checks above can take
# less than one iteration: the fail-open span would then hold no burst).
sleep 0.5
echo "    \$ slurmd -D -N n1 -f \$SLURM_CONF"
t_rs1=$(now_us)
hm_spawn slurmd-n1 slurmd -D -N n1 -f "$SLURM_CONF"
wait_lines 20 "$out/a-0.err" 1 'pacing resumed'
check "A's rank 0 rejoins: $(grep -m1 'pacing resumed' "$out/a-0.err")" grep -q 'pacing resumed' "$out/a-0.err"
check "n1's agent up again, A's applied epoch is its decided one" \
	hm_wait_for 10 bash -c "[[ \$(node_state n1) == up ]] && applied_now $ja"
say "slurmd n1 back, A's applied epoch reported again $(ms $(( $(now_us) - t_rs1 ))) ms after the restart"

echo "=== slurmctld (the coordinator) stopped: every step runs fail-open; restarted: they rejoin"
echo "    \$ kill -TERM <slurmctld>   (tests/slurm/cluster.sh hm_ctld_stop)"
t_stop2=$(now_us)
hm_ctld_stop
t_gone2=$(now_us)
vu2a=$(valid_until "$run/n1/job.$ja/assign") vu2b=$(valid_until "$run/n2/job.$jb/assign")
say "slurmctld gone $(ms $((t_gone2 - t_stop2))) ms after SIGTERM"
check "A's and B's files are no longer renewed (valid until <= slurmctld gone + AgentValidity)" \
	test "$((vu2a - t_gone2))" -le "$((AGENT_VALID_MS * 1000))" -a "$((vu2b - t_gone2))" -le "$((AGENT_VALID_MS * 1000))"
for f in a-0:2 a-1:1 b-0:1 b-1:1; do
	wait_lines 10 "$out/${f%:*}.err" "${f#*:}" 'is stale'
	check "task ${f%:*} runs fail-open: $(grep 'is stale' "$out/${f%:*}.err" | tail -1)" \
		bash -c "(( \$(grep -c 'is stale' $out/${f%:*}.err) >= ${f#*:} ))"
done
t0=$(date +%s.%N)
timeout 20 "$HM_CTL" --timeout 1s status >/dev/null 2>&1
rc=$?
check "harmonicsctl answers 'unreachable' (exit 3, got $rc) in $(hm_since "$t0")s, nothing hangs" test "$rc" -eq 3
check "jobs A and B keep running" bash -c "kill -0 $pid_a && kill -0 $pid_b"
echo "    \$ slurmctld -D -f \$SLURM_CONF"
t_rs2=$(now_us)
hm_ctld_start
say "slurmctld answers $(ms $(( $(now_us) - t_rs2 ))) ms after its start"
for f in a-0:2 a-1:1 b-0:1 b-1:1; do
	wait_lines 30 "$out/${f%:*}.err" "${f#*:}" 'pacing resumed'
	check "task ${f%:*} rejoins: $(grep 'pacing resumed' "$out/${f%:*}.err" | tail -1)" \
		bash -c "(( \$(grep -c 'pacing resumed' $out/${f%:*}.err) >= ${f#*:} ))"
done
check "A and B: applied epochs reported again, equal to the decided ones" \
	hm_wait_for 15 bash -c "applied_now $ja && applied_now $jb"
say "coordinator back, the steps' applied epochs reported again $(ms $(( $(now_us) - t_rs2 ))) ms after slurmctld's start"

echo "=== the jobs are told to stop (the stop file): they end at their next iteration"
: >"$out/stop"
wait "$pid_a"
rc_a=$?
wait "$pid_b"
rc_b=$?
check "A exits 0 (rc $rc_a) after $(jq '.iterations' "$out/a.json" 2>/dev/null) iterations" test "$rc_a" -eq 0
check "B exits 0 (rc $rc_b)" test "$rc_b" -eq 0

echo "=== what the jobs printed: the switch, the outages, the latencies"
# The per-iteration epoch= and slot= of A around its switch (rank 0's own output).
bursts "$out/a.json" | jq -s -r --argjson e "$e2" \
	'(map(.epoch == $e) | index(true) // 0) as $i | .[([$i - 3, 0] | max):$i + 3][] |
	 "    A: burst planned at \(.plan_us) slot=\(.slot // -1) epoch=\(.epoch)"'
# A's first burst on e2: when it began (its slot, or its ready time when free) and when it was planned.
read -r first_e2 plan_e2 < <(bursts "$out/a.json" | jq -s -r --argjson e "$e2" \
	'[.[] | select(.epoch == $e)] | .[0] // empty | "\(.begin_us) \(.plan_us)"')
check "A's own output: epoch $e1 then epoch $e2 in one run" \
	bash -c "bursts $out/a.json | jq -s -e '(map(.epoch) | index($e1)) < (map(.epoch) | index($e2))' >/dev/null"
check "A's first burst on epoch $e2 began at or after the switch time (+$(ms $((${first_e2:-0} - t_switch))) ms)" \
	bash -c "[[ -n '$first_e2' ]] && (( $first_e2 >= $t_switch ))"
check "A governed by epoch $e2 or later on every burst from the switch to the slurmd stop" \
	all_governed "$out/a.json" "${plan_e2:-0}" "$t_stop1" "$e2"
check "B governed on every burst until the coordinator stopped ($(ms $((t_stop2 - t_b))) ms, 1 s validity)" \
	all_governed "$out/b.json" "$((t_b + 1500000))" "$t_stop2"
echo "    latency (decision -> first burst on the new epoch):"
if [[ -n $first_e2 ]]; then
	say "  A: decided $t_dec us, switch time +$(ms $((t_switch - t_dec))) ms (UpdateLead ${LEAD_MS} ms)," \
		"first burst on epoch $e2 +$(ms $((first_e2 - t_dec))) ms, reported applied (harmonicsctl) +$(ms $((t_applied - t_dec))) ms"
fi
echo "    fail-open (stop -> first fail-open burst; bound: AgentValidity ${AGENT_VALID_MS} ms after the last renewal, then the next burst):"
# The runtime's side of the bound: every burst planned after the file's
# validity ended ran fail-open, nothing governing it (until the restart), and
# there was one; the agent's side is checked above (the file was not renewed
# after the stop).
fail_open() { # name file t_stop t_restart valid_until_us
	local f r last
	f=$(first_burst "$2" "$3" free)
	r=$(first_burst "$2" "$4" governed)
	last=$(bursts "$2" | jq -s -r --argjson t "$3" '[.[] | select(.plan_us <= $t)] | last | .epoch // -1')
	check "$1: governed up to the stop (the last burst before it had epoch $last)" test "$last" -ge 0
	if [[ -z $f ]]; then
		fail "$1: a fail-open burst after the stop" "none in $2"
		return
	fi
	if [[ -n $r ]]; then
		say "  $1: first fail-open burst +$(ms $((f - $3))) ms after the stop (its file's validity ended +$(ms $(($5 - $3))) ms);" \
			"governed again +$(ms $((r - $4))) ms after the restart"
	fi
	check "$1: every burst planned after the file's validity ended ran fail-open (epoch -1) until the restart" \
		bash -c "bursts $2 | jq -s -e --argjson a $5 --argjson b $4 \
			'[.[] | select(.plan_us > \$a and .plan_us < \$b)] | length > 0 and all(.epoch == -1)' >/dev/null"
	check "$1: governed again after the restart" test -n "$r"
}
fail_open "A, slurmd n1 stopped" "$out/a.json" "$t_stop1" "$t_rs1" "$vu1"
fail_open "A, slurmctld stopped" "$out/a.json" "$t_stop2" "$t_rs2" "$vu2a"
fail_open "B, slurmctld stopped" "$out/b.json" "$t_stop2" "$t_rs2" "$vu2b"

echo "    AdminComment at the end (scontrol show job):"
for j in "$ja" "$jb" "$jc"; do say "  job $j: $(admin_comment "$j")"; done

hm_tier_end
