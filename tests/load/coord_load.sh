#!/usr/bin/env bash
# The coordinator under load and attack (issue 28 item 6): runs
# tests/load/coord_load with a private munged of HM_MUNGE_THREADS threads
# (default 8; the system's keeps its own) in a private mount namespace.
#
#   tests/load/coord_load.sh --short            # CI: 64 agents, 500 jobs, 3 s
#   tests/load/coord_load.sh [coord_load options]   # by hand: 1,024 agents, 10,000 jobs
# Environment: HM_BUILD (default build). Root; exit 77 (skip) otherwise.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${HM_BUILD:-$top/build}
bin=$build/tests/load/coord_load
threads=${HM_MUNGE_THREADS:-8}
if ((EUID != 0)); then
	echo "SKIP: coord_load needs root (setuid users, a private munged)"
	exit 77
fi
[[ -x $bin ]] || make -C "$build" -s tests/load/coord_load
args=()
if [[ ${1:-} == --short ]]; then
	shift
	args=(--agents 64 --jobs 500 --hostile 16 --flood 16 --duration-s 3 --epoch-ms 1000)
fi
args+=("$@")
mkdir -p /run/munge
exec unshare -m --propagation private bash -c '
	set -uo pipefail
	bin=$1 threads=$2
	shift 2
	mount -t tmpfs -o mode=0755 tmpfs /run/munge && chown munge:munge /run/munge || exit 1
	d=$(mktemp -d /run/munge/run.XXXXXX) && chown munge:munge "$d" || exit 1
	runuser -u munge -- /usr/sbin/munged --num-threads="$threads" \
		--pid-file="$d/munged.pid" --log-file="$d/munged.log" --seed-file="$d/seed" || {
		cat "$d/munged.log" >&2
		exit 1
	}
	for _ in $(seq 50); do
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
		sleep 0.1
	done
	echo "coord_load.sh: private munged, $threads threads"
	rc=0
	"$bin" "$@" || rc=$?
	kill "$(cat "$d/munged.pid")" 2>/dev/null
	exit $rc' coord_load "$bin" "$threads" "${args[@]}"
