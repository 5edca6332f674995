#!/usr/bin/env bash
# Builds and installs a Slurm release into a private prefix, for running a
# one-machine cluster of that release (tests/slurm/cluster.sh with
# HM_SLURM_PREFIX): the release's sources as unpacked by scripts/slurm-tree.sh,
# configured again in their own build directory with --prefix=PREFIX (the
# tree slurm-tree.sh configures has Debian's /usr prefix, which suits building
# plugins but not running: slurmd executes SBINDIR/slurmstepd, compiled in),
# then `nice make -j2; make install`. Idempotent: an install made from the same
# tarball with the same configure flags is reused; concurrent runs for one
# release wait for each other (flock). Prints the prefix.
#
# The prefix also holds the configured build tree (PREFIX/build), which
# `configure --with-slurm-source=PREFIX/build` builds Harmonics' plugins
# against, so they match the installed daemons exactly.
#
# Usage: scripts/slurm-install.sh [--cache DIR] [--jobs N] [--quiet] VERSION
#   VERSION: 23.11, 24.11, 25.11, 26.05 (or the full 26.05.3); 22.05 is
#            Debian's installed Slurm, not built here
# Env:   HARMONICS_SLURM_CACHE (default /var/cache/harmonics), and
#        HARMONICS_SLURM_VENDOR as for slurm-tree.sh
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${HARMONICS_SLURM_CACHE:-/var/cache/harmonics}
jobs=2 quiet=0 want=""
while (($#)); do
	case $1 in
	--cache) cache=$2; shift 2 ;;
	--jobs | -j) jobs=$2; shift 2 ;;
	--quiet | -q) quiet=1; shift ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "slurm-install: unknown argument '$1' (accepted: --cache DIR, --jobs N, --quiet, VERSION)" >&2; exit 2 ;;
	*) [[ -z $want ]] || { echo "slurm-install: one VERSION only (got '$want' and '$1')" >&2; exit 2; }
	   want=$1; shift ;;
	esac
done

say() { ((quiet)) || echo "slurm-install: $*" >&2; }
die() { echo "slurm-install: $*" >&2; exit 1; }

[[ -n $want ]] || die "which release? (usage: slurm-install.sh VERSION)"
[[ $jobs =~ ^[1-9][0-9]?$ ]] || die "bad --jobs '$jobs' (accepted: 1 to 99)"
[[ $want != 22.05* ]] ||
	die "22.05 is Debian's installed Slurm (packages slurmctld, slurmd); nothing to build"

# The unpacked sources (and a tarball checksum) come from slurm-tree.sh.
tree=$(HARMONICS_SLURM_CACHE=$cache "$top/scripts/slurm-tree.sh" --quiet "$want") ||
	die "no configured tree of Slurm $want (scripts/slurm-tree.sh $want failed)"
src=$(readlink -f "$tree/source")
ver=$(read -r v _ <"$tree/.harmonics-configured"; echo "$v")
sum=$(read -r _ s <"$tree/.harmonics-configured"; echo "$s")
[[ -x $src/configure ]] || die "no Slurm sources at $src"

prefix="$cache/slurm-$ver"
build="$prefix/build"
stamp="$prefix/.harmonics-installed"
# What the cluster uses: munge auth and creds, slurmdbd with its MySQL/MariaDB
# storage, several slurmd on one host. Configure finds hwloc and json-c itself.
# Shared libraries only and no -ggdb3: half the compiles, each cheaper (on two
# cores the default build takes about twice as long).
flags=(--prefix="$prefix" --sysconfdir="$prefix/etc" --with-munge
	--enable-multiple-slurmd --disable-dependency-tracking --disable-static
	--disable-debug "CFLAGS=-O1 -g1")
key="$ver $sum ${flags[*]}"

command -v mariadb_config >/dev/null || command -v mysql_config >/dev/null ||
	die "no mariadb_config/mysql_config: slurmdbd's storage plugin needs libmariadb-dev (scripts/deps.sh)"

mkdir -p "$cache" 2>/dev/null || die "cannot create $cache (set HARMONICS_SLURM_CACHE)"
exec 9>"$cache/slurm-$ver.lock"
flock 9
if [[ -f $stamp && $(cat "$stamp") == "$key" && -x $prefix/sbin/slurmctld ]]; then
	say "reusing $prefix (Slurm $ver)"
	echo "$prefix"
	exit 0
fi

t0=$SECONDS
# An interrupted build resumes (make is incremental) when its configure had
# these flags and this tarball; anything else starts afresh.
if [[ -f $build/config.status && $(cat "$build/.harmonics-configure" 2>/dev/null) == "$key" ]]; then
	say "resuming the build in $build"
else
	rm -rf "$prefix" && mkdir -p "$build"
	say "configuring Slurm $ver for $prefix"
	(cd "$build" && nice "$src/configure" "${flags[@]}" >configure.log 2>&1) || {
		tail -5 "$build/configure.log" >&2
		die "Slurm $ver configure failed (log: $build/configure.log)"
	}
	echo "$key" >"$build/.harmonics-configure"
fi
grep -q '^#define HAVE_MYSQL 1' "$build/config.h" ||
	die "Slurm $ver configured without MySQL (slurmdbd could not store); see $build/configure.log"
say "building Slurm $ver (make -j$jobs, log: $build/make.log)"
(cd "$build" && nice make -j"$jobs" >make.log 2>&1) || {
	tail -20 "$build/make.log" >&2
	die "Slurm $ver build failed (log: $build/make.log)"
}
(cd "$build" && nice make install >install.log 2>&1) || {
	tail -20 "$build/install.log" >&2
	die "Slurm $ver install failed (log: $build/install.log)"
}
ln -sfn "$src" "$build/source"
echo "$key" >"$stamp"
say "installed Slurm $ver in $prefix in $((SECONDS - t0)) s"
echo "$prefix"
