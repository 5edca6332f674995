#!/usr/bin/env bash
# Testbed tier for scripts/check.sh (root; exit 77 otherwise), a few minutes:
#  1. prio_check.sh: on the shaped uplinks a low class yields to a high one;
#  2. a short testbed (scripts/testbed.sh): the mixed-periods scenario under fair
#     and harmonics through Slurm, once each, and its simulation. Fails when a
#     case fails, when the simulated mean iteration is off the measured one by
#     more than 15% (the fidelity goal is 10% on medians of 3+ repetitions; one
#     run on a shared 2-core machine varies by about 5%), or when harmonics'
#     measured mean iteration is not below fair's.
# Usage: tests/testbed/run.sh [BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "testbed: no build dir" >&2; exit 1; }
if ((EUID != 0)); then
	echo "testbed: SKIP: needs root (network namespaces, tc, Slurm daemons)"
	exit 77
fi
rc=0
timeout 120 "$here/prio_check.sh" "$build" || rc=1
out=$(mktemp /tmp/hm-testbed-tier.XXXXXX)
trap 'rm -f "$out"' EXIT
if timeout 400 "$top/scripts/testbed.sh" --build "$build" --quick --reps 1 --scenarios mixed \
	--policies fair,harmonics --max-error 0.15 --json "$out"; then
	if jq -e '.scenarios[0].policies | (map({(.name): .measured_mean_iter_s}) | add) as $m |
		$m.harmonics < $m.fair' "$out" >/dev/null; then
		echo "PASS: mixed periods: harmonics' measured mean iteration is below fair's"
	else
		echo "FAIL: mixed periods: harmonics' measured mean iteration is not below fair's"
		rc=1
	fi
else
	echo "FAIL: the short testbed failed or missed the 15% bound"
	rc=1
fi
exit $rc
