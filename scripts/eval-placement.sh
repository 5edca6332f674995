#!/usr/bin/env bash
# Placement x policy on a cluster that fills up and drains (docs/placement.md):
# harmonics-sim --placement all with fair and harmonics, per seed, then one
# Markdown row per policy/placement: mean and p99 JCT, mean queue wait (start -
# arrival), share of jobs exposed to contention (slowdown over 1%), mean JCT
# against packed + fair. Writes a Markdown section on stdout; scripts/evaluate.sh
# includes it from docs/eval/placement-measured.md:
#
#   scripts/eval-placement.sh [BUILD_DIR] [SEEDS] >docs/eval/placement-measured.md
#   (default build, seeds "1 2 3")
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
seeds=${2:-1 2 3}
sim=$build/src/tools/harmonics-sim
[[ -x $sim ]] || { echo "eval-placement: no $sim (build first)" >&2; exit 1; }
command -v jq >/dev/null || { echo "eval-placement: needs jq" >&2; exit 1; }

# 1,024 GPUs, uplinks 8:1; multi-GPU jobs of every catalogue model with GPUs
# about 3x faster than the catalogue's, arriving faster than they finish.
topo="racks=16,hosts=8,gpus=8,nic=25G,oversub=8"
work="jobs=600,arrival=poisson:1s,gpus=multi,models=all,iters=200-2000,compute_scale=0.3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

t0=$(date +%s)
for s in $seeds; do
	"$sim" --topo-gen "$topo" --generate "$work" --policy fair,harmonics --placement all \
		--jitter 0 --seed "$s" --json --per-job -q >"$tmp/seed$s.json"
done
cat <<EOF
## (e) Placement x policy on a cluster that fills up

Measured on $(date -u +%Y-%m-%d) ($(uname -m), $(nproc) cores) in $(($(date +%s) - t0)) s by
\`scripts/eval-placement.sh\` (docs/placement.md): harmonics-sim
\`--topo-gen $topo --generate $work --policy fair,harmonics --placement all --jitter 0\`,
seeds $seeds, means over the seeds. JCT includes the queue wait (start -
arrival); a job is exposed when its mean iteration is over 1% slower than alone.

| policy/placement | mean JCT s | p99 JCT s | mean queue wait s | jobs exposed | mean JCT / packed+fair |
|---|---|---|---|---|---|
EOF
jq -rs '
  [ .[] | .policies[] | . as $p | ($p.jobs | map(select(.placed))) as $j |
    { name: $p.name, jct: $p.mean_jct_s, p99: $p.p99_jct_s,
      wait: ($j | map(.start_s - .arrival_s) | add / length),
      exposed: (($j | map(select(.slowdown > 1.01)) | length) / ($j | length)) } ]
  | group_by(.name) | map({ name: .[0].name, jct: (map(.jct) | add / length),
      p99: (map(.p99) | add / length), wait: (map(.wait) | add / length),
      exposed: (map(.exposed) | add / length) })
  | (map(select(.name == "fair/packed"))[0].jct) as $base
  | sort_by(.name | split("/") | [.[1], .[0]]) | .[]
  | "| \(.name) | \(.jct | round) | \(.p99 | round) | \(.wait * 10 | round / 10) | \(.exposed * 1000 | round / 10)% | \(.jct / $base * 1000 | round / 1000) |"
' "$tmp"/seed*.json
