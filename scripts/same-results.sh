#!/usr/bin/env bash
# Runs harmonics-sim and harmonics-bench on the docs/eval scenarios and writes
# their outputs, less the columns that time the machine, to OUTDIR, so that a
# change meant to alter no behaviour can be checked with `diff -r` of two runs.
#
#   scripts/same-results.sh BUILD_DIR OUTDIR [--quick]
#
# --quick: seed 1 only and no Clos hour (about a minute); otherwise seeds 1-3
# and the Clos hour's first 40 minutes (several minutes on 2 cores).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: same-results.sh BUILD_DIR OUTDIR [--quick]}
out=${2:?usage: same-results.sh BUILD_DIR OUTDIR [--quick]}
quick=0
[[ ${3:-} == --quick ]] && quick=1
sim=$build/src/tools/harmonics-sim
bench=$build/src/tools/harmonics-bench
ev=$top/docs/eval
mkdir -p "$out"

# csv NAME ARGS...: every policy; the decision-time columns (12, 13) and the
# budget-cut flag (15, which depends on them) are blanked.
csv() {
	local name=$1
	shift
	"$sim" "$@" --policy all --epoch 30 --bound --csv --quiet |
		awk -F, 'BEGIN { OFS = "," } { if (NR > 1) { $12 = "-"; $13 = "-"; $15 = "-" } print }' \
			>"$out/$name.csv"
}

tb="racks=3,hosts=8,gpus=2,nic=10G,oversub=2"
tb4="racks=3,hosts=8,gpus=2,nic=10G,oversub=4"
mx2="racks=4,hosts=6,gpus=1,nic=50G,oversub=2"
mx4="racks=4,hosts=6,gpus=1,nic=50G,oversub=4"
seeds="1 2 3"
((quick)) && seeds=1
for s in $seeds; do
	for t in testbed-trace testbed-pairs testbed-heavy-pairs; do
		csv "$t-2-s$s" --topo-gen "$tb" --trace "$ev/$t.csv" --seed "$s" --jitter 0.02 --budget 1
		csv "$t-4-s$s" --topo-gen "$tb4" --trace "$ev/$t.csv" --seed "$s" --jitter 0.02 --budget 1
	done
	csv "uplink-pair-s$s" --topo-gen racks=2,hosts=2,gpus=1,nic=100G,uplink=100G \
		--trace "$ev/uplink-pair.csv" --seed "$s" --jitter 0.02 --budget 1
	for m in 1 2 3 4 5; do
		csv "mixed-$m-2-s$s" --topo-gen "$mx2" --trace "$ev/mixed-$m.csv" --seed "$s" --jitter 0.02 --budget 1
		csv "mixed-$m-4-s$s" --topo-gen "$mx4" --trace "$ev/mixed-$m.csv" --seed "$s" --jitter 0.02 --budget 1
	done
done
csv production --topo-gen racks=25,hosts=8,gpus=8,nic=25G,oversub=4,racks_per_pod=5,aggs=2,cores=2 \
	--generate jobs=400,arrival=poisson:0.5s,gpus=multi,models=all,duration=600 --seed 1 \
	--jitter 0.02 --budget 0.05
if ((!quick)); then
	"$sim" --topology "$ev/clos847.conf" --policy fair,crux,harmonics --seed 1 --epoch 30 --csv --quiet \
		--generate jobs=300,arrival=poisson:16s,gpus=8/16/32/48/64/96/128/192/256,models=all,iters=1000-6000,compute_scale=0.15,duration=2400 |
		awk -F, 'BEGIN { OFS = "," } { if (NR > 1) { $12 = "-"; $13 = "-"; $15 = "-" } print }' >"$out/clos847.csv"
fi
# harmonics-bench: its quality figures; the timings are the machine's.
"$bench" --quick --json | python3 -c '
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if not any(t in k for t in ("time", "_s", "_ms", "_us", "cpu", "speedup"))}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
json.dump(strip(json.load(sys.stdin)), sys.stdout, indent=1, sort_keys=True)' >"$out/bench.json"
echo "same-results: $(find "$out" -type f | wc -l) files in $out"
