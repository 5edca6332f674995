#!/usr/bin/env bash
# Runtime tier: the Harmonics plugins in a real cluster of the newest Slurm
# release, not only Debian's 22.05. Slurm RELEASE is built and installed into a
# private prefix (scripts/slurm-install.sh, cached), Harmonics' four Slurm
# plugins are built against that install's own configured tree
# (configure --with-slurm-source=PREFIX/build, in BUILD_DIR/runtime/RELEASE),
# and the core real-cluster checks run on a one-machine cluster of it
# (tests/slurm/cluster.sh with HM_SLURM_PREFIX and HM_PLUGIN_BUILD): the
# daemons, commands and Slurm's plugins from the prefix, Harmonics' plugins from
# that build, its node agent and tools from BUILD_DIR (they do not use Slurm).
#
# Usage: tests/slurm/runtime.sh [BUILD_DIR]   (root; exit 0, 1 failed, 77 skipped)
# Env: HM_RUNTIME_RELEASE (default 26.05), HM_RUNTIME_CHECKS (the check
#      scripts, default "run.sh live.sh place.sh leaders.sh hetjob.sh
#      topo_planes.sh"; topo_planes.sh: topology.yaml with two topologies; hetjob.sh
#      with daemonized, configless slurmd),
#      HM_JOBS (make -j, default the number of CPUs)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "runtime: no build dir ${1:-$top/build}" >&2; exit 1; }
rel=${HM_RUNTIME_RELEASE:-26.05}
read -r -a checks <<<"${HM_RUNTIME_CHECKS:-run.sh live.sh place.sh leaders.sh hetjob.sh topo_planes.sh}"
jobs=${HM_JOBS:-$(nproc)}
if ((EUID != 0)); then
	echo "runtime: SKIP: the runtime tier needs root (Slurm daemons, munge, private MariaDB)" >&2
	exit 77
fi
t_start=$(date +%s)
since() { echo "$(($(date +%s) - $1)) s"; }

echo "=== Slurm $rel installed into a private prefix (scripts/slurm-install.sh)"
t0=$(date +%s)
prefix=$("$top/scripts/slurm-install.sh" --jobs "$jobs" "$rel") || { echo "FAIL: Slurm $rel built and installed"; exit 1; }
echo "PASS: Slurm $rel in $prefix: $("$prefix/sbin/slurmctld" -V) ($(since "$t0"))"

echo "=== Harmonics' plugins built against it"
t0=$(date +%s)
bdir=$build/runtime/$rel
tree=$prefix/build
vstr=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$tree/config.h" | head -1)
mkdir -p "$bdir" "$build/releases"
if [[ ! -f $bdir/config.status || $(cat "$bdir/.hm-tree" 2>/dev/null) != "$tree $vstr" ||
	$top/configure -nt $bdir/config.status ]]; then
	# The releases tier's configure cache, when it has one: only Slurm's checks differ.
	(cd "$bdir" && "$top/configure" -q --cache-file="$build/releases/config.cache" --enable-developer \
		--with-slurm-source="$tree" >configure.out 2>&1) || {
		echo "FAIL: configure --with-slurm-source=$tree"; tail -5 "$bdir/configure.out"; exit 1; }
	echo "$tree $vstr" >"$bdir/.hm-tree"
fi
if ! nice make -C "$bdir" -s -j"$jobs" src/plugins/sched/sched_harmonics.la \
	src/plugins/jobsubmit/job_submit_harmonics.la src/plugins/select/select_harmonics_cons_tres.la \
	src/plugins/spank/harmonics.la >"$bdir/make.out" 2>&1; then
	echo "FAIL: the four plugins build against Slurm $vstr"; grep -m5 -E 'error|Error' "$bdir/make.out"; exit 1
fi
echo "PASS: the four plugins built against Slurm $vstr in $bdir ($(since "$t0"))"

echo "=== the core checks on a Slurm $vstr cluster: ${checks[*]}"
rc=0 results=()
for c in "${checks[@]}"; do
	t0=$(date +%s)
	echo "=== runtime $rel: $c"
	env HM_SLURM_PREFIX="$prefix" HM_PLUGIN_BUILD="$bdir" "$here/$c" "$build"
	r=$?
	results+=("$c: $(case $r in 0) echo passed ;; 77) echo skipped ;; *) echo "FAILED rc=$r" ;; esac) ($(since "$t0"))")
	((r == 0 || r == 77)) || rc=1
done
echo "=== runtime tier on Slurm $vstr ($(since "$t_start")):"
printf '    %s\n' "${results[@]}"
exit $rc
