#!/bin/sh
# The coordinator's /metrics end to end against coord_serve (a coordinator
# outside Slurm): the text exposition validated by promtool (when installed:
# scripts/deps.sh installs it), the families and labels, the listener's
# answers to other paths and methods, and harmonicsctl job --explain.
# Needs munged (skips otherwise).
set -u
: "${top_srcdir:=.}"
. "$top_srcdir/tests/unit/coord_serve_e2e.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
export HARMONICS_CONF="$tmp/none.conf"

mkfifo "$fifo" || exit 99
"$serve" "$tmp/port" "$tmp/mport" <"$fifo" &
pid=$!
exec 3>"$fifo"
i=0
while [ ! -s "$tmp/mport" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$tmp/port" 2>/dev/null) || fail "coord_serve did not start"
mport=$(cat "$tmp/mport" 2>/dev/null) || fail "coord_serve did not serve metrics"
url="http://127.0.0.1:$mport/metrics"

curl -sf -m 5 -D "$tmp/h" -o "$tmp/m" "$url" || fail "GET /metrics"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$tmp/h" || fail "content type: $(cat "$tmp/h")"
for f in harmonics_build_info harmonics_jobs harmonics_decisions_total \
	harmonics_decision_duration_seconds_bucket harmonics_placements_total \
	harmonics_link_capacity_bytes_per_second harmonics_link_predicted_utilisation_ratio \
	harmonics_rack_predicted_utilisation_ratio harmonics_agents harmonics_agent_up \
	harmonics_rack_leader_elections_total; do
	grep -q "^$f[ {]" "$tmp/m" || fail "no $f in: $(cat "$tmp/m")"
done
grep -q '^harmonics_build_info{version="[^"]*",slurm_version="none",policy="script"} 1$' "$tmp/m" ||
	fail "build info: $(grep build_info "$tmp/m")"
grep -q '^harmonics_jobs{mode="auto",state="slot"} 2$' "$tmp/m" || fail "jobs slot: $(grep '^harmonics_jobs' "$tmp/m")"
grep -q '^harmonics_jobs{mode="off",state="free"} 1$' "$tmp/m" || fail "jobs off: $(grep '^harmonics_jobs' "$tmp/m")"
grep -q '^harmonics_decisions_total 1$' "$tmp/m" || fail "decisions: $(grep decisions_total "$tmp/m")"
grep -q '^harmonics_decision_duration_seconds_count 1$' "$tmp/m" || fail "histogram count"
grep -q '^harmonics_decision_duration_seconds_bucket{le="+Inf"} 1$' "$tmp/m" || fail "histogram +Inf"
grep -q '^harmonics_agents{state="none"} 8$' "$tmp/m" || fail "agents: $(grep '^harmonics_agents' "$tmp/m")"
grep -q '^harmonics_link_jobs{link="n2:nic0->rack1",level="0",direction="up",rack="rack1"} 2$' "$tmp/m" ||
	fail "link jobs: $(grep '^harmonics_link_jobs' "$tmp/m")"
if command -v promtool >/dev/null; then
	promtool check metrics <"$tmp/m" >"$tmp/p" 2>&1 || fail "promtool: $(cat "$tmp/p")"
else
	echo "note: promtool not installed (scripts/deps.sh installs prometheus): format not linted"
fi

# Every series the Grafana dashboard queries is one Harmonics exports (the
# coordinator's families here, the agents' as test_agent_metrics writes them).
agent="harmonics_job_bursts_total harmonics_job_hold_seconds_total harmonics_job_iterations_total
harmonics_job_iteration_seconds_total harmonics_job_tasks"
for s in $(grep -o 'harmonics_[a-z_]*' "$top_srcdir/contrib/grafana/harmonics.json" | sort -u); do
	s=${s%_bucket}
	grep -q "^# TYPE $s " "$tmp/m" || echo "$agent" | grep -qw "$s" ||
		fail "the dashboard queries $s, which nothing exports"
done

# Only GET/HEAD /metrics; a request that never ends is cut.
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/")
[ "$code" = 404 ] || fail "GET / answered $code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST "$url")
[ "$code" = 405 ] || fail "POST answered $code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -I "$url")
[ "$code" = 200 ] || fail "HEAD answered $code"
# A new round is published on a byte from the test.
echo x >&3
i=0
while ! curl -sf -m 5 "$url" | grep -q '^harmonics_decisions_total 1$' && [ $i -lt 50 ]; do
	sleep 0.1; i=$((i + 1)); done

# job --explain: job 12 (n[1-2]) shares n2's NIC with job 15 (n[2-3], GPUs 0-3).
"$ctl" --port "$port" job 12 --explain >"$tmp/o" 2>&1 || fail "explain: $(cat "$tmp/o")"
grep -q '^Decision     slot: script staggers it' "$tmp/o" || fail "explain decision: $(cat "$tmp/o")"
grep -q '^Links        4 crossed, 2 shared with other jobs' "$tmp/o" || fail "explain links: $(cat "$tmp/o")"
grep -Eq '^  n2:nic0->rack1 +up +100 +1.07 +0.55 +0.50  15$' "$tmp/o" || fail "explain shared NIC: $(cat "$tmp/o")"
grep -Eq '^  n1:nic0->rack1 +up .* 1.00  -$' "$tmp/o" || fail "explain own NIC: $(cat "$tmp/o")"
grep -q 'share 0.50 of its bottleneck, bursts 2.00x slower' "$tmp/o" || fail "explain share: $(cat "$tmp/o")"
grep -q '^GPUs         n1:0-7 n2:0-7' "$tmp/o" || fail "explain GPUs: $(cat "$tmp/o")"
grep -Eq '^Burst        modelled 180 ms alone: declared \(0 bursts measured\)$' "$tmp/o" ||
	fail "explain burst: $(cat "$tmp/o")"
"$ctl" --port "$port" job 15 --explain >"$tmp/o" 2>&1 || fail "explain 15"
grep -q '^GPUs         n2:0-3 n3:0-3' "$tmp/o" || fail "explain GPU indexes: $(cat "$tmp/o")"
"$ctl" --port "$port" job 14 --explain >"$tmp/o" 2>&1 || fail "explain 14"
grep -q '^Decision     free: runs unpaced: comm-sched off' "$tmp/o" || fail "explain off: $(cat "$tmp/o")"
"$ctl" --port "$port" --json job 12 --explain >"$tmp/o" 2>&1 || fail "explain --json"
for k in decision reason predicted_share predicted_slowdown links shared_links other_jobs gpus \
	burst_declared_us burst_modelled_us burst_factor burst_samples; do
	grep -q "\"$k\"" "$tmp/o" || fail "explain --json lacks $k: $(cat "$tmp/o")"
done
"$ctl" --port "$port" job 99 --explain >"$tmp/o" 2>&1; [ $? -eq 1 ] || fail "explain unknown job exit"
"$ctl" --port "$port" jobs --explain >"$tmp/o" 2>&1; [ $? -eq 2 ] || fail "--explain without job"
echo "ok: /metrics ($(wc -l <"$tmp/m") lines) and job --explain"
