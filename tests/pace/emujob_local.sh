#!/bin/sh
# harmonics-emujob on loopback (make check): 3 ranks unpaced with a checked
# all-reduce and valid JSON; 2 ranks paced, every burst on a slot of the
# assignment (the barrier hands all ranks rank 0's slot id) and a report per rank;
# 2 ranks across an update of the assignment file (both switch at its time);
# bad options exit 2 with a message naming the value. Bounded by timeout.
set -u
b=${top_builddir:-.}
ej="$b/src/tools/harmonics-emujob"
tmp=$(mktemp -d /tmp/emujob_local.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset HARMONICS_MODE HARMONICS_PERIOD_US HARMONICS_SHIFT_US HARMONICS_ORIGIN_US \
	HARMONICS_GUARD_US HARMONICS_ASSIGN_FILE HARMONICS_REPORT_FILE HARMONICS_VALID_UNTIL_US \
	SLURM_NTASKS SLURM_PROCID SLURM_JOB_ID SLURM_STEP_NODELIST SLURM_JOB_NODELIST

# 1. Unpaced, 3 ranks, JSON.
timeout 60 "$ej" --local 3 --compute 5ms --bytes 300KB --iterations 5 --warmup 1 --json \
	>"$tmp/out.json" || fail "unpaced --local 3 run failed"
grep -q '"ranks":3' "$tmp/out.json" || fail "no ranks in JSON: $(cat "$tmp/out.json")"
grep -q '"active":false' "$tmp/out.json" || fail "pacing active without an assignment"
[ "$(grep -c '"iter_ms":[0-9]' "$tmp/out.json")" = 5 ] || fail "expected 5 per-iteration entries"
if command -v python3 >/dev/null; then
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["iter_ms"]["mean"] > 4' \
		"$tmp/out.json" || fail "JSON does not parse or iter_ms.mean is wrong"
fi

# 2. Paced, 2 ranks: period 60 ms, shift 20 ms; every burst starts on a slot.
origin=$(date +%s%6N)
HARMONICS_MODE=harmonics HARMONICS_PERIOD_US=60000 HARMONICS_SHIFT_US=20000 \
	HARMONICS_ORIGIN_US="$origin" HARMONICS_GUARD_US=5000 HARMONICS_REPORT_FILE="$tmp/rep.%r" \
	timeout 60 "$ej" --local 2 --compute 15ms --bytes 200KB --iterations 10 --warmup 1 \
	>"$tmp/paced.txt" || fail "paced run failed"
cat "$tmp/paced.txt"
grep -q '^summary pace active=1 paced=11 ' "$tmp/paced.txt" || fail "not every burst was paced"
# Slot ids are the slots' start times (us): on the grid origin + 20 ms + k * 60 ms,
# strictly increasing, and the iterations together span their slots: the sum of
# iteration times is (last slot - first slot) / 60 ms + 1 periods, within 40 ms.
awk -v o="$origin" '/^iter / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	if (v["slot"] < 0) { print "no slot"; exit 1 }
	if ((v["slot"] - o - 20000) % 60000 != 0) { print "slot " v["slot"] " off the grid"; exit 1 }
	if (n > 0 && v["slot"] <= last) { print "slot did not advance"; exit 1 }
	if (n++ == 0) first = v["slot"]; last = v["slot"]; sum += v["iter_ms"] }
	END { k = (last - first) / 60000 + 1; d = sum - k * 60; if (d < -40 || d > 40) {
		print "iterations span " sum " ms for " k " slots of 60 ms"; exit 1 } }' \
	"$tmp/paced.txt" || fail "paced iterations are not aligned to the slots"
for r in 0 1; do
	grep -q '^PACED=11$' "$tmp/rep.$r" || fail "report of rank $r: $(cat "$tmp/rep.$r" 2>&1)"
done

# 3. An update while running: the job starts on C (epoch 1: 60 ms, shift 20 ms); once
# it has paced bursts, the assignment file gains N (epoch 2: 80 ms, shift 50 ms)
# switching at T. Rank 0 plans, both ranks wait for its slot ids: slots on C's grid
# before T, on N's from T on, epochs 1 then 2, and both ranks report applied epoch 2
# and the same number of paced bursts. The update is written after the start (not
# before it), so a slow start on a loaded machine cannot skip C.
now=$(date +%s%6N)
cur="HARMONICS_MODE=harmonics
HARMONICS_PERIOD_US=60000
HARMONICS_SHIFT_US=20000
HARMONICS_ORIGIN_US=$now
HARMONICS_GUARD_US=5000
HARMONICS_EPOCH=1
HARMONICS_VALID_UNTIL_US=$((now + 120000000))"
echo "$cur" >"$tmp/assign"
HARMONICS_ASSIGN_FILE="$tmp/assign" HARMONICS_REPORT_FILE="$tmp/sw.%r" \
	timeout 60 "$ej" --local 2 --compute 15ms --bytes 200KB --iterations 100 --warmup 1 \
	>"$tmp/switch.txt" &
ejpid=$!
i=0
while [ $i -lt 400 ]; do # up to 40 s for two paced bursts on rank 0
	p=$(sed -n 's/^PACED=//p' "$tmp/sw.0" 2>/dev/null)
	[ "${p:-0}" -ge 2 ] && break
	i=$((i + 1))
	sleep 0.1
done
T=$(($(date +%s%6N) + 500000))
printf '%s\nHARMONICS_NEXT_EFFECTIVE_US=%s\nHARMONICS_NEXT_MODE=harmonics\nHARMONICS_NEXT_PERIOD_US=80000\nHARMONICS_NEXT_SHIFT_US=50000\nHARMONICS_NEXT_ORIGIN_US=%s\nHARMONICS_NEXT_GUARD_US=5000\nHARMONICS_NEXT_EPOCH=2\n' \
	"$cur" "$T" "$now" >"$tmp/assign.new" && mv "$tmp/assign.new" "$tmp/assign"
wait "$ejpid" || fail "run across an update failed"
awk -v o="$now" -v t="$T" '/^iter / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	s = v["slot"]; if (s < 0) { print "no slot"; exit 1 }
	if (s < t) { if ((s - o - 20000) % 60000 || v["epoch"] != 1) { print "C: " $0; exit 1 }; c++ }
	else { if ((s - o - 50000) % 80000 || v["epoch"] != 2) { print "N: " $0; exit 1 }; n++ } }
	END { if (c < 2 || n < 2) { print "before " c " after " n; exit 1 } }' "$tmp/switch.txt" ||
	fail "slots do not follow the switch (origin $now, T $T): $(cat "$tmp/switch.txt")"
for r in 0 1; do
	grep -q '^APPLIED_EPOCH=2$' "$tmp/sw.$r" || fail "rank $r did not apply epoch 2: $(cat "$tmp/sw.$r")"
	grep -q '^PACED=101$' "$tmp/sw.$r" || fail "rank $r paced: $(grep PACED "$tmp/sw.$r")"
done
grep "^summary pace" "$tmp/switch.txt"
echo "ok: ranks switched from epoch 1 to 2 at T together"

# 4. --dry-run resolves a scaled catalogue model and the class's DSCP; a run marks
# its sockets with that DSCP (IP_TOS), and says so.
d=$("$ej" --model bert-base --scale 0.5 --bytes-scale 0.1 --dry-run) || fail "--dry-run failed"
echo "$d" | grep -q '"bytes":22000000' || fail "--dry-run bytes (bert-base 440 MB x 0.5 x 0.1): $d"
echo "$d" | grep -q '"dscp":null' || fail "--dry-run without an assignment has a DSCP: $d"
d=$(HARMONICS_MODE=crux HARMONICS_PERIOD_US=0 HARMONICS_PRIO=2 "$ej" --dry-run)
echo "$d" | grep -q '"prio":2,"dscp":26' || fail "--dry-run class 2 is not DSCP 26: $d"
HARMONICS_MODE=crux HARMONICS_PERIOD_US=0 HARMONICS_PRIO=6 timeout 60 "$ej" --local 2 \
	--compute 1ms --bytes 100KB --iterations 2 --json --quiet >"$tmp/prio.json" || fail "class 6 run failed"
grep -q '"dscp":8' "$tmp/prio.json" || fail "class 6 run did not mark DSCP 8: $(cat "$tmp/prio.json")"
echo "ok: --dry-run and the class's DSCP"

# 4b. --stop-file: a run of at most 1,000,000 iterations ends, every rank at the
# same iteration (rank 0 tells them at the barrier), once the file exists; its
# JSON counts the iterations it measured.
HARMONICS_REPORT_FILE="$tmp/st.%r" timeout 60 "$ej" --local 2 --compute 5ms --bytes 100KB \
	--iterations 1000000 --warmup 1 --stop-file "$tmp/stop" --json >"$tmp/stop.json" &
ejpid=$!
i=0
while [ $i -lt 400 ]; do # up to 40 s for rank 0's first report (every second) with iterations
	it=$(sed -n 's/^ITERATIONS=//p' "$tmp/st.0" 2>/dev/null)
	[ "${it:-0}" -ge 2 ] && break
	i=$((i + 1))
	sleep 0.1
done
: >"$tmp/stop"
wait "$ejpid" || fail "--stop-file run failed (or ran on: timeout)"
n=$(sed -n 's/^ *"iterations":\([0-9]*\),*$/\1/p' "$tmp/stop.json" | head -1)
if [ "${n:-0}" -le 0 ] || [ "$n" -ge 1000000 ]; then fail "--stop-file: $n iterations measured"; fi
[ "$(grep -c '"iter_ms":[0-9]' "$tmp/stop.json")" = "$n" ] || fail "--stop-file: not $n per-iteration entries"
echo "ok: --stop-file ended the run after $n iterations"

# 5. Strict options.
for bad in "--bytes 3parsecs" "--ranks 0" "--compute-mode lazy" "--model nosuch" "--frob" \
	"--ranks 2 --rank 2 --rendezvous 127.0.0.1:1" "--local 2 --rendezvous 127.0.0.1:1" \
	"--bytes 1MB --bytes-scale 0.5" "--model resnet50 --bytes-scale 0" "--stop-file="; do
	# shellcheck disable=SC2086
	"$ej" $bad >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc = 2 ] || fail "'$bad' exited $rc, expected 2"
	grep -q "harmonics-emujob: " "$tmp/err" || fail "'$bad' gave no message"
	echo "ok: '$bad' -> $(cat "$tmp/err")"
done
"$ej" --help | grep -q -- '--rendezvous' || fail "--help lacks --rendezvous"

# 6. A rank whose peers never come fails within its timeout instead of hanging.
timeout 20 "$ej" --ranks 2 --rank 1 --rendezvous 127.0.0.1:9 --timeout 1s >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "missing peer: exit $rc, expected 1"
grep -q "cannot connect" "$tmp/err" || fail "missing peer message: $(cat "$tmp/err")"
echo "PASS"
