#!/bin/bash
# What a run of the STAND-IN job (tests/pace/nccl_job.c) must show, from its
# files in DIR: out.R (its stdout), err.R (stderr), trace.R (HARMONICS_NCCL_TRACE),
# report.R (HARMONICS_REPORT_FILE), for ranks 0..NRANKS-1. Shared by
# tests/pace/nccl_job_local.sh and tests/slurm/nccl_standin.sh.
#
#   nccl_job_check.sh DIR NRANKS ITERS
#
# Prints PASS/FAIL lines and the measured numbers; exit 0 all passed, 1 not.
set -u
dir=$1 n=$2 iters=$3
nfail=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+: $2}"; nfail=$((nfail + 1)); }
ranks=$(seq 0 $((n - 1)))
val() { sed -n "s/.*\b$2=\([-0-9.]*\).*/\1/p" "$dir/out.$1" | tail -1; }

# 3. Only the cross-node communicator is held.
ok=1
for r in $ranks; do
	grep -q 'comm key=[0-9a-f]* nranks=2 local=2 reach=node-local .*paced=0' "$dir/trace.$r" || ok=0
	grep -q 'comm key=[0-9a-f]* nranks=2 local=1 reach=cross-node .*paced=1' "$dir/trace.$r" || ok=0
	[[ $(val "$r" TP_HOSTS) == 0 && $(val "$r" DP_HOSTS) -ge $iters ]] || ok=0
	echo "    rank $r: TP stream host functions $(val "$r" TP_HOSTS), DP stream $(val "$r" DP_HOSTS); iteration $(val "$r" ITER_MEAN_MS) ms"
done
((ok)) && pass "TP (node-local) never held, DP (cross-node) held: reach from the peer files" ||
	fail "only the cross-node stream held" "$(grep -h '^[0-9]* comm' "$dir"/trace.* | head -8)"

# 4. One slot for all ranks of a collective, under skew. The documented
# exceptions plan from a rank's own ready time: a communicator's first burst (no
# previous one to plan from: from_us=0), and a rank more than period - guard
# (90 ms here) behind the shared slot (then the ranks start at most a guard
# apart); a loaded machine can push a skewed rank that far. Counted apart.
holds=$(grep -h ' hold key=' "$dir"/trace.* | sed 's/.*key=\([0-9a-f]*\) seq=\([0-9]*\) ready_us=\([-0-9]*\) slot_us=\([-0-9]*\) own_us=\([-0-9]*\) after_us=[-0-9]* from_us=\([-0-9]*\).*/\1 \2 \4 \5 \3 \6/')
summary=$(awk -v behind_us=90000 '{ k = $1 " " $2; n[k]++; s[k] = s[k] " " $3; o[k] = o[k] " " $4; r[k] = r[k] " " $5; if ($6 == 0) first[k] = 1 }
	END {
		for (k in n) {
			if (n[k] < 2) continue
			split(s[k], a, " "); split(o[k], b, " "); split(r[k], c, " ")
			pairs++; same = 1; ownsame = 1; lo = a[1]; late = 0
			for (i = 2; i <= n[k]; i++) { if (a[i] != a[1]) same = 0; if (b[i] != b[1]) ownsame = 0; if (a[i] < lo) lo = a[i] }
			for (i = 1; i <= n[k]; i++) if (c[i] - lo > behind_us) late = 1
			agree += same; owndiff += !ownsame; excused += !same && (late || first[k])
		}
		printf "%d %d %d %d\n", pairs, agree, owndiff, excused
	}' <<<"$holds")
read -r pairs agree owndiff excused <<<"$summary"
echo "    held collectives seen on both DP ranks: $pairs; same slot on both: $agree; where each rank's own ready time would have chosen different slots: $owndiff; different slots planned from a rank's own ready time by design (first burst, or a rank more than 90 ms behind): $excused"
if ((pairs >= n / 2 * (iters - 2) && agree + excused == pairs && 2 * agree >= pairs && owndiff > 0)); then
	pass "every rank applied the same slot ($agree/$pairs; $excused by design from a rank's own ready time), skew split the ranks' own choices $owndiff times"
elif ((pairs >= n / 2 * (iters - 2) && agree + excused == pairs)); then
	fail "skew did not split the ranks' own choices (the test proves nothing)" "$summary"
else
	fail "same slot on all ranks" "$summary"
	awk '{ k = $1 " " $2; if (k in s && s[k] != $3) print "    differ: " l[k] " | " $0; s[k] = $3; l[k] = $0 }' <<<"$holds"
fi

# 2. A function the loaded NCCL lacks fails open: its error, one line, pacing goes on.
ok=1
for r in $ranks; do
	[[ $(val "$r" MISSING_RC) == 2 ]] || ok=0
	[[ $(grep -c 'no real ncclGroupSimulateEnd' "$dir/err.$r") == 1 ]] || ok=0
	last=$(grep ' hold key=' "$dir/trace.$r" | sed -n 's/.*seq=\([0-9]*\).*/\1/p' | sort -n | tail -1)
	((${last:-0} > iters / 2 + 1)) || ok=0
done
((ok)) && pass "missing ncclGroupSimulateEnd: ncclSystemError, one line per rank, holds go on" ||
	fail "missing symbol fails open" "$(cat "$dir"/err.* | head -5)"

# 5. A class change reaches the communicators created after it; the report says the class.
# The stand-in has no Ethernet port, so trafficClass carries the class's InfiniBand
# SL: the default ClassSL is class + 1 (class 1 -> 2, class 3 -> 4).
ok=1
for r in $ranks; do
	[[ $(val "$r" TC_DP) == 2 && $(val "$r" TC_DP2) == 4 ]] || ok=0
	grep -qx 'NCCL_CLASS=3' "$dir/report.$r" || ok=0
done
echo "    rank 0: $(grep -h TC_DP "$dir/out.0"), report $(grep -h NCCL_CLASS "$dir/report.0")"
((ok)) && pass "class 1 -> 3 in the assignment file: the new DP communicator got trafficClass 3, NCCL_CLASS=3 reported" ||
	fail "class change reaches new communicators" "$(grep -h 'TC_DP\|NCCL_CLASS' "$dir"/out.* "$dir"/report.* | head)"

# 6. Capture is left alone.
ok=1
for r in $ranks; do
	[[ $(val "$r" CAPTURED_KERNELS) == 1 && $(val "$r" CAPTURED_HOSTS) == 0 ]] || ok=0
done
((ok)) && pass "a captured collective: in the graph, no host function of the interposer's" ||
	fail "capture left alone" "$(grep -h CAPTURED "$dir"/out.*)"
((nfail == 0))
