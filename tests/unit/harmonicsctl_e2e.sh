#!/bin/sh
# harmonicsctl end to end against coord_serve (a coordinator outside Slurm):
# tables, --json, errors and exit codes. Needs munged (skips otherwise).
set -u
: "${top_srcdir:=.}"
. "$top_srcdir/tests/unit/coord_serve_e2e.sh"
export HARMONICS_CONF="$tmp/none.conf" # no conf: built-in defaults

# Usage errors: exit 2 and a message naming the problem.
"$ctl" --help | grep -q "status|jobs|racks|nodes|job JOBID" || fail "--help"
"$ctl" frobnicate >"$tmp/o" 2>&1; [ $? -eq 2 ] || fail "bad command exit"
grep -q "unknown command 'frobnicate'" "$tmp/o" || fail "bad command message: $(cat "$tmp/o")"
"$ctl" job abc >"$tmp/o" 2>&1; [ $? -eq 2 ] || fail "bad job id exit"
"$ctl" --port 99999 status >"$tmp/o" 2>&1; [ $? -eq 2 ] || fail "bad port exit"
printf 'ListenPort=7000\nFrob=1\n' >"$tmp/bad.conf"
"$ctl" --conf "$tmp/bad.conf" status >"$tmp/o" 2>&1; [ $? -eq 2 ] || fail "bad conf exit"
grep -q "bad.conf:2: unknown key 'Frob'" "$tmp/o" || fail "bad conf message: $(cat "$tmp/o")"

# Start a coordinator.
mkfifo "$fifo" || exit 99
"$serve" "$tmp/port" <"$fifo" &
pid=$!
exec 3>"$fifo"
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$tmp/port" 2>/dev/null) || fail "coord_serve did not start"

"$ctl" --port "$port" status >"$tmp/o" 2>&1 || fail "status: $(cat "$tmp/o")"
grep -q "Coordinator  127.0.0.1:$port" "$tmp/o" || fail "status address: $(cat "$tmp/o")"
grep -q "2 racks, 8 hosts, 64 GPUs" "$tmp/o" || fail "status cluster: $(cat "$tmp/o")"
grep -q "3 running, 2 scheduled" "$tmp/o" || fail "status jobs: $(cat "$tmp/o")"
# A list of hosts: tried in order, the one that answers is named.
"$ctl" --host 127.0.0.3,127.0.0.1 --port "$port" status >"$tmp/o" 2>&1 || fail "--host list: $(cat "$tmp/o")"
grep -q "Coordinator  127.0.0.1:$port" "$tmp/o" || fail "--host list address: $(cat "$tmp/o")"
"$ctl" --host 127.0.0.1,,x status >"$tmp/o" 2>&1; [ $? -eq 2 ] || fail "bad --host list exit"
grep -q "127.0.0.1,,x" "$tmp/o" || fail "bad --host list message: $(cat "$tmp/o")"

"$ctl" --port "$port" jobs >"$tmp/o" 2>&1 || fail "jobs"
grep -Eq '^12 +root +train +n\[1-2\] +16 +1 +auto +400 +0 +0 ' "$tmp/o" || fail "jobs row 12: $(cat "$tmp/o")"
grep -Eq '^13 +nobody +bert .* 2 +fair +400 +100 +1 ' "$tmp/o" || fail "jobs row 13: $(cat "$tmp/o")"
grep -Eq '^14 .*comm-sched off$' "$tmp/o" || fail "jobs row 14: $(cat "$tmp/o")"

"$ctl" --port "$port" --json jobs >"$tmp/o" 2>&1 || fail "jobs --json"
for k in job_id policy decided_epoch applied_epoch period_us shift_us prio measured_period_us \
	measured_burst_us slot_misses; do
	grep -q "\"$k\"" "$tmp/o" || fail "jobs --json lacks $k: $(cat "$tmp/o")"
done
grep -Eq '"applied_epoch": ?null' "$tmp/o" || fail "applied_epoch not null before any agent: $(cat "$tmp/o")"

"$ctl" --port "$port" nodes >"$tmp/o" 2>&1 || fail "nodes"
grep -Eq '^NODE +STATE +JOBS' "$tmp/o" || fail "nodes header: $(cat "$tmp/o")"
grep -Eq '^n1 +none +1 ' "$tmp/o" || fail "nodes row n1 (no agent, one job): $(cat "$tmp/o")"
"$ctl" --port "$port" --json nodes >"$tmp/o" 2>&1 || fail "nodes --json"
for k in node state steps gpus nics; do
	grep -q "\"$k\"" "$tmp/o" || fail "nodes --json lacks $k: $(cat "$tmp/o")"
done

"$ctl" --port "$port" racks >"$tmp/o" 2>&1 || fail "racks"
# No node agent here: no leader ("-"), state none, term 0.
grep -Eq '^RACK +SWITCH +LEADER +STATE +TERM +HOSTS' "$tmp/o" || fail "racks header: $(cat "$tmp/o")"
grep -Eq '^0 +rack1 +- +none +0 +4 +32 +2 +1 ' "$tmp/o" || fail "racks row: $(cat "$tmp/o")"
"$ctl" --port "$port" --json racks >"$tmp/o" 2>&1 || fail "racks --json"
for k in rack name leader state term last_epoch jobs cross_rack_jobs solve_ms; do
	grep -q "\"$k\"" "$tmp/o" || fail "racks --json lacks $k: $(cat "$tmp/o")"
done
grep -Eq '"leader": ?null' "$tmp/o" || fail "racks --json: leader not null without agents: $(cat "$tmp/o")"
grep -Eq '"solve_ms": ?null' "$tmp/o" || fail "racks --json: solve_ms not null: $(cat "$tmp/o")"

"$ctl" --port "$port" job 13 >"$tmp/o" 2>&1 || fail "job 13"
grep -q "shift 100 ms in a 400 ms period" "$tmp/o" || fail "job 13 slot: $(cat "$tmp/o")"
"$ctl" --port "$port" --json job 12 >"$tmp/o" 2>&1 || fail "job --json"
grep -q '"period_us":400000' "$tmp/o" || grep -q '"period_us": 400000' "$tmp/o" || fail "json: $(cat "$tmp/o")"

"$ctl" --port "$port" job 999 >"$tmp/o" 2>&1; [ $? -eq 1 ] || fail "unknown job exit"
grep -q "job 999 is not known" "$tmp/o" || fail "unknown job message"
# Another user's job is refused for a foreign uid (job 12 belongs to root).
if [ "$(id -u)" = 0 ]; then
	runuser -u nobody -- "$ctl" --port "$port" job 12 >"$tmp/o" 2>&1; rc=$?
	[ $rc -eq 1 ] || fail "foreign job exit $rc: $(cat "$tmp/o")"
	grep -q "uid 65534 may not query job 12" "$tmp/o" || fail "foreign message: $(cat "$tmp/o")"
	runuser -u nobody -- "$ctl" --port "$port" job 13 >/dev/null 2>&1 || fail "own job as nobody"
fi

# Coordinator gone: exit 3, host:port named, quickly.
exec 3>&-
wait "$pid"; pid=""
start=$(date +%s)
"$ctl" --port "$port" --timeout 1s status >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 3 ] || fail "unreachable exit $rc"
grep -q "coordinator 127.0.0.1:$port unreachable" "$tmp/o" || fail "unreachable message: $(cat "$tmp/o")"
[ $(( $(date +%s) - start )) -le 2 ] || fail "unreachable took too long"
echo "harmonicsctl: all checks passed"
