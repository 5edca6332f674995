#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs the main job on the
# built-in default scenario: every policy side by side in the simulator; then,
# as root, the one-machine Slurm cluster with the plugins (scripts/demo-slurm.sh).
# With --live, then the quick emulated testbed (scripts/testbed.sh --quick, about
# 12 minutes): real jobs through Slurm on shaped links, measured per policy next
# to the simulator's prediction, with a plot (/tmp/harmonics-testbed.svg).
#   scripts/demo.sh [--live] [harmonics-sim options]   e.g. --plot /tmp/demo.svg
set -euo pipefail

live=0
if [[ ${1:-} == --live ]]; then
	live=1
	shift
fi

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/deps.sh
scripts/build.sh "$top/build"

echo
echo "== Simulator: the built-in testbed scenario under every policy (harmonics-sim --help)"
echo "   (optimal gets 1 s per decision here; it says when its budget cut a search short)"
build/src/tools/harmonics-sim --policy all --budget 1 "$@"

if [[ -x scripts/demo-slurm.sh ]]; then
	echo
	if ((EUID == 0)); then
		echo "== Slurm: a one-machine cluster with the Harmonics plugins"
		scripts/demo-slurm.sh "$top/build"
	else
		echo "== Slurm demo skipped: it starts daemons and needs root"
	fi
fi

if ((live)); then
	echo
	if ((EUID == 0)); then
		echo "== Live: the emulated testbed, real jobs through Slurm on shaped links (docs/testbed.md)"
		scripts/testbed.sh --build "$top/build" --quick --plot /tmp/harmonics-testbed.svg
	else
		echo "== Live testbed skipped: it starts daemons and network namespaces and needs root"
	fi
fi
