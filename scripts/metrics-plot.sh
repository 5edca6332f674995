#!/usr/bin/env bash
# The coordinator's main metrics over a short run of the engine outside Slurm
# (tests/coord/metrics_run: the two-rack fixture, harmonics policy, six jobs on
# overlapping node pairs arriving every 2 s, then ending), drawn with gnuplot.
#   scripts/metrics-plot.sh [BUILD_DIR] OUT.svg [TABLE.md]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
out=${2:?usage: metrics-plot.sh [BUILD_DIR] OUT.svg [TABLE.md]}
table=${3:-}
make -s -C "$build" tests/coord/metrics_run
data=$(mktemp)
trap 'rm -f "$data"' EXIT
top_srcdir=$top "$build/tests/coord/metrics_run" 34 >"$data"
gnuplot <<GP
set terminal svg size 820,420 font "sans,11"
set output "$out"
set title "harmonics_* series of a test run (tests/coord/metrics_run)"
set xlabel "time (s)"
set ylabel "jobs, decisions"
set y2label "predicted utilisation of the busiest link"
set y2range [0:1.5]
set ytics nomirror
set y2tics
set key top left
set grid
plot "$data" using 1:(\$2+\$3+\$4) every ::1 with steps lw 2 title "harmonics_jobs (sum)", \
     "" using 1:5 every ::1 with steps lw 2 title "harmonics_decisions_total", \
     "" using 1:7 every ::1 axes x1y2 with steps lw 2 dt 2 title "max harmonics_link_predicted_utilisation_ratio"
GP
if [[ -n $table ]]; then
	{
		echo "# Metrics of a test run"
		echo
		echo "Written by \`scripts/metrics-plot.sh\` from \`tests/coord/metrics_run\`"
		echo "(docs/metrics.md): one row per round of the engine, read back from"
		echo "the /metrics text. The harmonics policy ranked these jobs (class, no"
		echo "stagger) rather than giving them slots."
		echo
		echo "| t (s) | jobs slot | jobs class | jobs free | decisions_total | decision seconds (sum) | busiest link utilisation |"
		echo "|---|---|---|---|---|---|---|"
		awk 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$data"
	} >"$table"
fi
echo "metrics-plot: wrote $out${table:+ and $table}"
