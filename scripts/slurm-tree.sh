#!/usr/bin/env bash
# Unpacks and configures a Slurm release tree for building the Harmonics plugins
# against that release (configure --with-slurm-source=DIR): the sources in
# /work/shared/vendor/slurm (or $HARMONICS_SLURM_VENDOR), configured with the
# same --prefix/--sysconfdir/--libdir as Debian's Slurm (PluginDir
# /usr/lib/<triplet>/slurm-wlm). 22.05 is Debian's own, through
# scripts/slurm-source.sh. Idempotent: a tree configured from the same tarball
# is reused; concurrent runs for one release wait for each other (flock).
# Prints the configured build directory.
#
# Usage: scripts/slurm-tree.sh [--cache DIR] [--quiet] [--list] VERSION
#   VERSION: 22.05, 23.11, 24.11, 25.11, 26.05 (or the full 23.11.11)
#   --list:  print the versions this machine has sources for, one a line
# Env:   HARMONICS_SLURM_CACHE (default /var/cache/harmonics),
#        HARMONICS_SLURM_VENDOR (default /work/shared/vendor/slurm)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${HARMONICS_SLURM_CACHE:-/var/cache/harmonics}
vendor=${HARMONICS_SLURM_VENDOR:-/work/shared/vendor/slurm}
quiet=0 list=0 want=""
while (($#)); do
	case $1 in
	--cache) cache=$2; shift 2 ;;
	--quiet | -q) quiet=1; shift ;;
	--list) list=1; shift ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "slurm-tree: unknown argument '$1' (accepted: --cache DIR, --quiet, --list, VERSION)" >&2; exit 2 ;;
	*) [[ -z $want ]] || { echo "slurm-tree: one VERSION only (got '$want' and '$1')" >&2; exit 2; }
	   want=$1; shift ;;
	esac
done

say() { ((quiet)) || echo "slurm-tree: $*" >&2; }
die() { echo "slurm-tree: $*" >&2; exit 1; }

# slurm-23-11-11-1.tar.xz -> 23.11.11
tar_version() { local b=${1##*/}; b=${b#slurm-}; b=${b%-*.tar.xz}; echo "${b//-/.}"; }

if ((list)); then
	echo 22.05
	for t in "$vendor"/slurm-*.tar.xz; do
		[[ -f $t ]] && tar_version "$t" | cut -d. -f1,2
	done
	exit 0
fi
[[ -n $want ]] || die "which release? (usage: slurm-tree.sh VERSION; --list names them)"
[[ $want =~ ^[0-9]{2}\.[0-9]{2}(\.[0-9]+)?$ ]] ||
	die "bad VERSION '$want' (accepted: MAJOR.MINOR or MAJOR.MINOR.MICRO, e.g. 24.11)"

if [[ $want == 22.05* ]]; then # Debian's: its source package, patches applied
	args=()
	((quiet)) && args+=(--quiet)
	exec "$top/scripts/slurm-source.sh" --cache "$cache" "${args[@]}"
fi

tarball=""
for t in "$vendor"/slurm-*.tar.xz; do
	[[ -f $t ]] || continue
	v=$(tar_version "$t")
	if [[ $v == "$want" || ${v%.*} == "$want" ]]; then tarball=$t; fi
done
[[ -n $tarball ]] || die "no source of Slurm $want in $vendor (have: $(
	"$0" --list | tr '\n' ' '))"
ver=$(tar_version "$tarball")
base="$cache/slurm-tree-$ver"
src="$base/src"
build="$base/build"
stamp="$build/.harmonics-configured"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)

mkdir -p "$cache" 2>/dev/null || die "cannot create $cache (set HARMONICS_SLURM_CACHE)"
exec 9>"$cache/slurm-tree-$ver.lock"
flock 9
if [[ -f $stamp && -f $build/config.h && $(cat "$stamp") == "$ver $sum" ]]; then
	say "reusing $build (Slurm $ver)"
	echo "$build"
	exit 0
fi

say "unpacking $tarball"
rm -rf "$base" && mkdir -p "$base"
tar -C "$base" -xJf "$tarball"
dir=$(find "$base" -mindepth 1 -maxdepth 1 -type d -name 'slurm-*' | head -1)
[[ -n $dir && -f $dir/configure ]] || die "no configure in the unpacked $tarball"
mv "$dir" "$src"

say "configuring Slurm $ver in $build"
mkdir -p "$build"
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
(cd "$build" && "$src/configure" --prefix=/usr --libdir="/usr/lib/$triplet" \
	--sysconfdir=/etc/slurm --with-munge --enable-multiple-slurmd \
	--disable-dependency-tracking >configure.log 2>&1) || {
	tail -5 "$build/configure.log" >&2
	die "Slurm $ver configure failed (log: $build/configure.log)"
}
ln -sfn "$src" "$build/source"
echo "$ver $sum" >"$stamp"
say "configured Slurm $ver in $build"
echo "$build"
