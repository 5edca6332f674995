#!/usr/bin/env bash
# Writes docs/eval/hard-measured.md, section (f) of docs/evaluation.md (which
# scripts/evaluate.sh includes): the hard cases of issue 14 with the bound,
# one run each: two jobs on one uplink, the contended mixed-period testbeds
# (2:1 and 4:1), the fragmented hour on the 847-host Clos, random small
# contended instances (tests/bench/bench_random), simulator speed
# (tests/bench/bench_sim) and decision time at 131,072 GPUs, then the targets.
# About an hour on a shared 2-core machine (optimal on the Clos is most of it).
#
#   scripts/evaluate-hard.sh [BUILD_DIR]      (default: build/, built if needed)
# Environment: HM_EVAL_MIXED (default "1 2 3 4 5"), HM_EVAL_CLOS_SEEDS (the
# Clos hour's further seeds, crux and harmonics; default 2-12), HM_EVAL_QUICK=1
# (mixed-1, 60 Clos jobs on seed 1 only, short simulator benchmark),
# HM_EVAL_TIMEOUT (s per run, 900), HM_EVAL_TMP and HM_EVAL_REUSE
# (scripts/eval-lib.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
mixed_seeds=${HM_EVAL_MIXED:-1 2 3 4 5}
quick=${HM_EVAL_QUICK:-0}
tmo=${HM_EVAL_TIMEOUT:-900}
out=$top/docs/eval/hard-measured.md

if [[ ! -x $build/src/tools/harmonics-bench || ! -x $build/src/tools/harmonics-sim ]]; then
	"$top/scripts/build.sh" "$build"
fi
make -s -C "$build" tests/bench/bench_random tests/bench/bench_sim
sim=$build/src/tools/harmonics-sim
bench=$build/src/tools/harmonics-bench
policies=fair,optimal,cassini,crux,harmonics
# shellcheck source=scripts/eval-lib.sh
. "$top/scripts/eval-lib.sh"
eval_tmp

up_topo="racks=2,hosts=2,gpus=1,nic=100G,uplink=100G"
for j in 0.02 0.05; do
	echo "evaluate-hard: uplink pair, jitter $j" >&2
	run "up$j" "$up_topo" "trace:$top/docs/eval/uplink-pair.csv" 1 "$j" 1
done
[[ $quick == 1 ]] && mixed_seeds="1"
mx_topo="racks=4,hosts=6,gpus=1,nic=50G,oversub="
for m in $mixed_seeds; do
	for o in 2 4; do
		echo "evaluate-hard: mixed-$m, $o:1" >&2
		run "m$m-$o" "$mx_topo$o" "trace:$top/docs/eval/mixed-$m.csv" "$m" 0.02 1
		spread "$top/docs/eval/mixed-$m.csv" >"$tmp/m$m-$o-alone.trace"
		policies=fair run "m$m-$o-alone" "$mx_topo$o" "trace:$tmp/m$m-$o-alone.trace" "$m" 0.02 1
	done
done
if [[ $quick == 1 ]]; then
	cl_work="jobs=60,arrival=poisson:16s,gpus=8/16/32/48/64/96/128/192/256,models=all,iters=1000-6000,compute_scale=0.15"
else
	cl_work="jobs=300,arrival=poisson:16s,gpus=8/16/32/48/64/96/128/192/256,models=all,iters=1000-6000,compute_scale=0.15"
fi
echo "evaluate-hard: clos847, fragmented" >&2
run clos "file:$top/docs/eval/clos847.conf" "gen:$cl_work" 1 0.02 1
# The same hour on more seeds, crux and harmonics only: is seed 1 typical?
clos_seeds=${HM_EVAL_CLOS_SEEDS:-2 3 4 5 6 7 8 9 10 11 12}
[[ $quick == 1 ]] && clos_seeds=""
clos_list=1
for s in $clos_seeds; do
	clos_list+=", $s"
	echo "evaluate-hard: clos847, seed $s" >&2
	policies=crux,harmonics run "clos-s$s" "file:$top/docs/eval/clos847.conf" "gen:$cl_work" "$s" 0.02 1
done
echo "evaluate-hard: random small instances" >&2
rnd_cmd=("$build/tests/bench/bench_random" --instances 60)
[[ ${HM_EVAL_REUSE:-0} == 1 && -s $tmp/random.txt ]] || "${rnd_cmd[@]}" >"$tmp/random.txt"
echo "evaluate-hard: simulator speed" >&2
sim_cmd=("$build/tests/bench/bench_sim")
[[ $quick == 1 ]] && sim_cmd+=(--quick)
[[ ${HM_EVAL_REUSE:-0} == 1 && -s $tmp/bench_sim.txt ]] || "${sim_cmd[@]}" >"$tmp/bench_sim.txt"

echo "evaluate-hard: decision time at 131,072 GPUs" >&2
bench_cmd=("$bench" --sizes 131072 --policy harmonics,cassini,crux --seeds 2 --repeats 5 --json)
[[ ${HM_EVAL_REUSE:-0} == 1 && -s $tmp/bench.json ]] || "${bench_cmd[@]}" >"$tmp/bench.json"
bench_csv
h131=$(bval harmonics 131072 5)

# Issue 14 figures from the runs above.
# opt_worst FILES... -> "RATIO NAME": the largest optimal / best other policy
opt_worst() {
	local f
	for f in "$@"; do
		awk -F, -v n="$(basename "$f" .csv)" '$1 == "optimal" { o = $5 }
		$1 != "optimal" && $1 != "TIMEOUT" && NF >= 15 { if (!b || $5 < b) b = $5 }
		END { if (o && b) printf "%.4f %s\n", o / b, n }' "$f"
	done | sort -rn | head -1
}
# bound_min FILES... -> the smallest mean JCT / bound over every run (>= 1: holds)
bound_min() { awk -F, 'NF >= 16 && $16 > 0 { r = $5 / $16; if (!m || r < m) m = r } END { printf "%.4f", m }' "$@"; }
# bmin FILE -> the lowest bound over a scenario's runs (each run bounds itself,
# with its own start times)
bmin() { awk -F, 'NF >= 16 && $16 > 0 && (!m || $16 < m) { m = $16 } END { printf "%.6f", m }' "$1"; }
# share POLICY FILE [ALONE_FILE] -> (fair - policy) / (fair - lowest bound, or alone)
share() {
	local f b
	f=$(value fair 5 "$2")
	if [[ -n ${3:-} ]]; then b=$(value fair 5 "$3"); else b=$(bmin "$2"); fi
	awk -v f="$f" -v b="$b" -v h="$(value "$1" 5 "$2")" 'BEGIN { if (f == "nan" || h == "nan" || f <= b) print "n/a"; else printf "%.0f%%", 100 * (f - h) / (f - b) }'
}
# mixed_rows -> one row per mixed testbed and uplink ratio
mixed_rows() {
	local m o f p
	for m in $mixed_seeds; do
		for o in 2 4; do
			f=$tmp/m$m-$o.csv
			printf "| mixed-%s, %s:1 | %.1f | %.1f | %.1f |" "$m" "$o" "$(value fair 5 "$f")" \
				"$(value fair 5 "$tmp/m$m-$o-alone.csv")" "$(bmin "$f")"
			for p in optimal cassini crux harmonics; do printf " %.1f |" "$(value $p 5 "$f")"; done
			printf " %s | %s / %s | %s / %s |\n" "$(ratio "$(value harmonics 5 "$f")" "$(value crux 5 "$f")")" \
				"$(share harmonics "$f")" "$(share crux "$f")" \
				"$(share harmonics "$f" "$tmp/m$m-$o-alone.csv")" "$(share crux "$f" "$tmp/m$m-$o-alone.csv")"
		done
	done
}
# mixed_hc_worst -> the worst harmonics / crux mean JCT; mixed_share_least -> the
# least share of the possible gain (bound) harmonics takes, over the testbeds
mixed_hc_worst() {
	local m o
	for m in $mixed_seeds; do for o in 2 4; do
		echo "$(ratio "$(value harmonics 5 "$tmp/m$m-$o.csv")" "$(value crux 5 "$tmp/m$m-$o.csv")")"
	done; done | sort -n | tail -1
}
mixed_share_least() {
	local m o
	for m in $mixed_seeds; do for o in 2 4; do
		echo "$(share harmonics "$tmp/m$m-$o.csv" | tr -d %)"
	done; done | sort -n | head -1
}
# pct_range < numbers -> "least-most%"
pct_range() { sort -n | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%s-%s%%", a, b }'; }
# mixed_share_range POLICY -> least-most share of the possible gain (bound) over the testbeds
mixed_share_range() {
	local m o
	for m in $mixed_seeds; do for o in 2 4; do
		echo "$(share "$1" "$tmp/m$m-$o.csv" | tr -d %)"
	done; done | pct_range
}
# mixed_unreachable -> "N of M": testbeds where 5% below crux's mean JCT is
# below the bound, so no schedule reaches it
mixed_unreachable() {
	local m o n=0 k=0
	for m in $mixed_seeds; do for o in 2 4; do
		k=$((k + 1))
		awk -v c="$(value crux 5 "$tmp/m$m-$o.csv")" -v b="$(bmin "$tmp/m$m-$o.csv")" \
			'BEGIN { exit !(c != "nan" && 0.95 * c < b) }' && n=$((n + 1))
	done; done
	echo "$n of $k"
}
# mixed_gain_range RATIO -> least-most possible gain (fair - bound) / fair at RATIO:1
mixed_gain_range() {
	local m
	for m in $mixed_seeds; do
		awk -v f="$(value fair 5 "$tmp/m$m-$1.csv")" -v b="$(bmin "$tmp/m$m-$1.csv")" \
			'BEGIN { printf "%.1f\n", 100 * (f - b) / f }'
	done | pct_range
}
mixed_files=()
for m in $mixed_seeds; do mixed_files+=("$tmp/m$m-2.csv" "$tmp/m$m-4.csv"); done
all_files=("$tmp/up0.02.csv" "$tmp/up0.05.csv" "${mixed_files[@]}" "$tmp/clos.csv")
opt_w=$(opt_worst "${all_files[@]}")
rnd_line() { grep "^$1" "$tmp/random.txt" | head -1; }
# CPU seconds of the headline's scattered run (1 h of 1,024 GPUs; 120 s when quick)
sim1h=$(awk '/^scattered/ && !d { d = 1; match($0, /cpu= *[0-9.]+/); v = substr($0, RSTART, RLENGTH); gsub(/[^0-9.]/, "", v); print v }' "$tmp/bench_sim.txt")
# clos_file SEED -> the Clos run of that seed (seed 1: the run with every policy)
clos_file() { if [[ $1 == 1 ]]; then echo "$tmp/clos.csv"; else echo "$tmp/clos-s$1.csv"; fi; }
# clos_seed_rows -> per seed: crux's and harmonics' mean and p99 JCT, and their ratios
clos_seed_rows() {
	local s f
	for s in 1 $clos_seeds; do
		f=$(clos_file "$s")
		printf "| %s | %.1f | %.1f | %s | %.1f | %.1f | %s |\n" "$s" \
			"$(value crux 5 "$f")" "$(value harmonics 5 "$f")" \
			"$(ratio "$(value harmonics 5 "$f")" "$(value crux 5 "$f")")" \
			"$(value crux 6 "$f")" "$(value harmonics 6 "$f")" \
			"$(ratio "$(value harmonics 6 "$f")" "$(value crux 6 "$f")")"
	done
}
# clos_seed_summary COL -> harmonics / crux over the seeds in column COL (5 mean
# JCT, 6 p99): geometric mean, seeds above crux
clos_seed_summary() {
	local s f
	for s in 1 $clos_seeds; do
		f=$(clos_file "$s")
		echo "$(value harmonics "$1" "$f") $(value crux "$1" "$f")"
	done | awk '$1 != "nan" && $2 != "nan" && $2 > 0 { g += log($1 / $2); n++; a += $1 > $2 * (1 + 1e-9) }
		END { if (n) printf "geometric mean %.4f, above crux on %d of %d seeds", exp(g / n), a, n; else printf "n/a" }'
}
clos_mean_seeds=$(clos_seed_summary 5) clos_p99_seeds=$(clos_seed_summary 6)
clos_wall() { awk -F, -v p="$1" '$1 == p { printf "%.1f", $17; f = 1 } END { if (!f) printf "n/a" }' "$tmp/clos.csv"; }

{
	cat <<EOF
## (f) Hard cases (issue 14)

Generated by \`scripts/evaluate-hard.sh\` on $(date -u +%Y-%m-%d) ($(uname -m), $(nproc) cores,
a shared machine: wall-clock times vary). One simulator run per policy as in
(a)-(c) (\`--bound\` adds the bound: a lower bound on mean JCT
from link capacities, docs/algorithms.md; "share of possible gain" is
(fair - policy) / (fair - bound), with the lowest bound of the scenario's runs:
each run bounds itself with its own start times).

### Two identical jobs on one uplink

\`docs/eval/uplink-pair.csv\` on \`--topo-gen $up_topo\`, jitter 0.02 and 0.05.

\`\`\`
$(cat "$tmp/up0.02.cmd")
\`\`\`

$(table "$tmp/up0.02.csv")

$(table "$tmp/up0.05.csv")

### Contended mixed-period testbeds

\`docs/eval/mixed-N.csv\` (scripts/eval-scenarios.sh) on \`--topo-gen ${mx_topo}2\` and
\`oversub=4\`, seed N; "alone" is fair with the same jobs 10,000 s apart. Mean JCT (s);
the shares are harmonics / crux, against the bound and against alone.

\`\`\`
$(cat "$tmp/m${mixed_seeds%% *}-2.cmd")
\`\`\`

| scenario | fair | alone | bound | optimal | cassini | crux | harmonics | harmonics / crux | share (bound) | share (alone) |
|---|---|---|---|---|---|---|---|---|---|---|
$(mixed_rows)

### Fragmented production hour on the 847-host Clos

\`docs/eval/clos847.conf\` (8 GPUs and one 100 Gbit/s NIC per host, ToR uplinks 4:1),
jobs of 8-256 GPUs arriving and leaving; the default placement spreads them over racks.

\`\`\`
$(cat "$tmp/clos.cmd")
\`\`\`

$(table "$tmp/clos.csv")

$(if [[ -n $clos_seeds ]]; then
	cat <<EOS
The same hour on seeds $clos_list (\`--seed N\`), crux and harmonics: JCT (s), and harmonics / crux.

| seed | crux mean | harmonics mean | ratio | crux p99 | harmonics p99 | ratio |
|---|---|---|---|---|---|---|
$(clos_seed_rows)

Mean JCT: $clos_mean_seeds. p99 JCT: $clos_p99_seeds.
EOS
fi)

### Random small contended instances

\`tests/bench/bench_random\` (tests/unit/random_instances.h: 2-3 racks of 2-4 hosts,
2:1 or 4:1, 2-6 jobs of 2-4 hosts across racks, jitter 0.02 or 0.05; seeded).
Per instance, mean JCT of optimal, cassini, crux, harmonics over fair's, the
bound over fair's, harmonics' p99 JCT over fair's:

\`\`\`
$(echo "${rnd_cmd[*]}" | sed "s|$top/||g")
$(grep -v '^  job' "$tmp/random.txt")
\`\`\`

### Decision time at 131,072 GPUs

Medians of 2 seeds x 5 repeats, one core.

\`\`\`
$(echo "${bench_cmd[*]}" | sed "s|$top/||g")
\`\`\`

| policy | GPUs | jobs | decision (s, wall) | CPU (s) | peak RSS (MiB) | finished |
|---|---|---|---|---|---|---|
$(awk -F, '{ printf "| %s | %s | %s | %.6f | %.6f | %.1f | %s |\n", $1, $2, $3, $4, $5, $6 / 1048576, $7 }' "$tmp/bench.csv")

### Simulator speed

\`\`\`
$(echo "${sim_cmd[*]}" | sed "s|$top/||g")
$(cat "$tmp/bench_sim.txt")
\`\`\`

### Targets (issue 14), measured in the runs above

| target | measured | met |
|---|---|---|
| optimal's mean JCT no more than 1% above the best other policy's on every scenario above | worst $(echo "$opt_w" | awk '{ print $1 " (" $2 ")" }') | $(yesno "${opt_w%% *}" 1.01) |
| the bound below every run (smallest mean JCT / bound over all runs) | $(bound_min "${all_files[@]}") | $(awk -v r="$(bound_min "${all_files[@]}")" 'BEGIN { print (r >= 1 - 1e-9) ? "yes" : "no" }') |
| random instances: harmonics' mean JCT never more than 0.5% above fair's | $(rnd_line "harmonics mean JCT") | $(rnd_line "harmonics mean JCT" | grep -q "above 1.005: 0$" && echo yes || echo no) |
| random instances: harmonics' p99 next to fair's, worst per-job slowdown | $(rnd_line "harmonics p99"); $(rnd_line "worst per-job") | (report) |
| mixed periods: harmonics >= 5% lower mean JCT than crux on every testbed (worst harmonics / crux) | $(mixed_hc_worst) | $(yesno "$(mixed_hc_worst)" 0.95) |
| (context) mixed periods: testbeds where 5% below crux is below the bound (no schedule reaches it) | $(mixed_unreachable) | (context) |
| mixed periods: harmonics takes >= half the possible gain (bound) on every testbed (least) | $(mixed_share_least)% | $(awk -v r="$(mixed_share_least)" 'BEGIN { print (r != "n/a" && r >= 50) ? "yes" : "no" }') |
| (context) mixed periods: share of the possible gain (bound) optimal takes, the reach of the decision space the policies share | $(mixed_share_range optimal) | (context) |
| (context) mixed periods: the same for crux | $(mixed_share_range crux) | (context) |
| (context) mixed periods: the possible gain, (fair - bound) / fair, at 2:1 and at 4:1 | $(mixed_gain_range 2), $(mixed_gain_range 4) | (context) |
| clos847: harmonics' mean JCT <= crux's | $(ratio "$(value harmonics 5 "$tmp/clos.csv")" "$(value crux 5 "$tmp/clos.csv")") | $(yesno "$(ratio "$(value harmonics 5 "$tmp/clos.csv")" "$(value crux 5 "$tmp/clos.csv")")" 1) |
| clos847: harmonics' p99 JCT <= crux's | $(ratio "$(value harmonics 6 "$tmp/clos.csv")" "$(value crux 6 "$tmp/clos.csv")") | $(yesno "$(ratio "$(value harmonics 6 "$tmp/clos.csv")" "$(value crux 6 "$tmp/clos.csv")")" 1) |
| (context) clos847 on seeds $clos_list, harmonics / crux: mean JCT; p99 JCT | $clos_mean_seeds; $clos_p99_seeds | (context) |
| clos847: harmonics takes >= 80% of the possible gain (bound) | $(share harmonics "$tmp/clos.csv") | $(awk -v r="$(share harmonics "$tmp/clos.csv" | tr -d %)" 'BEGIN { print (r != "n/a" && r >= 80) ? "yes" : "no" }') |
| clos847: under a minute per policy (wall; optimal, which searches for its budget of 1 s at every decision by design, is shown but not judged) | fair $(clos_wall fair), cassini $(clos_wall cassini), crux $(clos_wall crux), harmonics $(clos_wall harmonics) s; optimal $(clos_wall optimal | sed "s|^n/a$|not finished in ${tmo}|") s | $(for p in fair cassini crux harmonics; do clos_wall $p; echo; done | awk '$1 == "n/a" || $1 >= 60 { n = 1 } END { print n ? "no" : "yes" }') |
| 1 h of 1,024 GPUs, scattered, under 10 s on one core (CPU) | ${sim1h} s | $(awk -v r="$sim1h" 'BEGIN { print (r != "" && r < 10) ? "yes" : "no" }') |
| one decision at 131,072 GPUs under 100 ms on one core (CPU) | ${h131} s | $(awk -v r="$h131" 'BEGIN{print (r != "nan" && r < 0.1) ? "yes" : "no"}') |
| at 131,072 GPUs >= 91x faster than cassini and crux (wall, medians) | cassini $(ratio "$(bval cassini 131072 4)" "$(bval harmonics 131072 4)")x, crux $(ratio "$(bval crux 131072 4)" "$(bval harmonics 131072 4)")x | $(awk -v a="$(ratio "$(bval cassini 131072 4)" "$(bval harmonics 131072 4)")" -v b="$(ratio "$(bval crux 131072 4)" "$(bval harmonics 131072 4)")" 'BEGIN { print (a != "n/a" && b != "n/a" && a >= 91 && b >= 91) ? "yes" : "no" }') |
EOF
} >"$out"
echo "evaluate-hard: wrote $out" >&2
