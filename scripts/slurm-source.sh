#!/usr/bin/env bash
# Obtains and configures the Slurm source of exactly the installed slurm-wlm
# version (Debian patches applied), the way a Debian admin would: a deb-src
# entry derived from the machine's own apt sources, then `apt-get source`.
# Idempotent: a tree already configured for this version is reused.
# Prints the configured build directory (for configure --with-slurm-source=).
#
# Usage: scripts/slurm-source.sh [--cache DIR] [--quiet]
# Env:   HARMONICS_SLURM_CACHE (default /var/cache/harmonics)
set -euo pipefail

cache=${HARMONICS_SLURM_CACHE:-/var/cache/harmonics}
quiet=0
while (($#)); do
	case $1 in
	--cache) cache=$2; shift 2 ;;
	--quiet | -q) quiet=1; shift ;;
	-h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "slurm-source: unknown argument '$1' (accepted: --cache DIR, --quiet)" >&2; exit 2 ;;
	esac
done

say() { ((quiet)) || echo "slurm-source: $*" >&2; }
die() { echo "slurm-source: $*" >&2; exit 1; }

# The running Slurm: the version of the installed daemon package.
pkgver=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null) ||
	die "slurmctld is not installed (install slurmctld, or run scripts/deps.sh)"
[[ -n $pkgver ]] || die "cannot read the installed slurmctld version"
upver=${pkgver%%-*}          # 22.05.8-4+deb12u3 -> 22.05.8
upver=${upver#*:}            # drop an epoch if any
base="$cache/slurm-$pkgver"
src="$base/src"
build="$base/build"
stamp="$build/.harmonics-configured"

if [[ -f $stamp && -f $build/config.h ]]; then
	say "reusing $build (slurm-wlm $pkgver)"
	echo "$build"
	exit 0
fi

((EUID == 0)) || die "needs root (apt-get update, writing $cache); not configured yet: $build"
command -v dpkg-source >/dev/null || die "dpkg-source missing: install dpkg-dev"

# deb-src entry derived from the machine's own deb822 sources (no written mirror).
if ! apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -qx Sources; then
	sources=/etc/apt/sources.list.d/debian.sources
	[[ -f $sources ]] || die "no $sources to derive a deb-src entry from; add a deb-src line for slurm-wlm by hand"
	sed 's/^Types: deb$/Types: deb-src/' "$sources" >/etc/apt/sources.list.d/harmonics-src.sources
	say "added /etc/apt/sources.list.d/harmonics-src.sources (deb-src twin of $sources)"
	apt-get update -q >/dev/null || die "apt-get update failed"
fi

mkdir -p "$base"
rm -rf "$src.tmp" && mkdir -p "$src.tmp"
say "fetching slurm-wlm=$pkgver source"
(cd "$src.tmp" && apt-get source -q slurm-wlm="$pkgver" >apt-source.log 2>&1) || {
	tail -5 "$src.tmp/apt-source.log" >&2
	die "apt-get source slurm-wlm=$pkgver failed"
}
# dpkg-source unpacked it and applied debian/patches.
dir=$(find "$src.tmp" -mindepth 1 -maxdepth 1 -type d -name "slurm-wlm-*" | head -1)
[[ -n $dir && -f $dir/configure ]] || die "unpacked source not found under $src.tmp"
rm -rf "$src" && mv "$dir" "$src" && rm -rf "$src.tmp"

say "configuring in $build (about 20 s)"
rm -rf "$build" && mkdir -p "$build"
(cd "$build" && "$src/configure" --prefix=/usr --libdir=/usr/lib/x86_64-linux-gnu \
	--sysconfdir=/etc/slurm --with-munge --enable-multiple-slurmd >configure.log 2>&1) || {
	tail -5 "$build/configure.log" >&2
	die "Slurm configure failed (log: $build/configure.log)"
}
ln -sfn "$src" "$build/source"
echo "$pkgver $upver" >"$stamp"
say "configured slurm $upver in $build"
echo "$build"
