#!/usr/bin/env bash
# Bootstraps, configures and builds Harmonics in a build directory.
# Idempotent: regenerates and reconfigures only when inputs changed.
#
#   scripts/build.sh [BUILD_DIR] [-- extra configure args]
# Environment: HM_CONFIGURE_ARGS (extra configure args), HM_JOBS (make -j, default nproc).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-$top/build}
shift $(($# > 0 ? 1 : 0)) || true
[[ ${1:-} == -- ]] && shift
extra=("$@")
jobs=${HM_JOBS:-$(nproc)}

cd "$top"
if [[ ! -x configure || configure.ac -nt configure ]]; then
	echo "build: autogen"
	./autogen.sh >/dev/null 2>&1 || { ./autogen.sh; exit 1; }
fi

args=(--enable-developer)
# The sched/select plugins need the configured source tree of the running Slurm.
if [[ -x scripts/slurm-source.sh ]] && command -v slurmctld >/dev/null 2>&1; then
	if src=$(scripts/slurm-source.sh); then
		args+=("--with-slurm-source=$src")
	else
		echo "build: no Slurm source tree; sched/select plugins will not be built" >&2
	fi
fi
# shellcheck disable=SC2206
args+=(${HM_CONFIGURE_ARGS:-} "${extra[@]}")

mkdir -p "$builddir"
cd "$builddir"
stamp=.hm-configure-args
if [[ ! -f config.status || ! -f $stamp || "$(cat $stamp)" != "${args[*]}" || $top/configure -nt config.status ]]; then
	echo "build: configure ${args[*]}"
	"$top/configure" -q "${args[@]}"
	echo "${args[*]}" >$stamp
fi
echo "build: make -j$jobs in $builddir"
make -s -j"$jobs" >/dev/null
echo "build: ok"
