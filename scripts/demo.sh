#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs the main job on the
# built-in default scenario: every policy side by side in the simulator; then,
# as root, the one-machine Slurm cluster with the plugins (scripts/demo-slurm.sh).
#   scripts/demo.sh [harmonics-sim options]   e.g. --plot /tmp/demo.svg
set -euo pipefail

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
