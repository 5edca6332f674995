#!/usr/bin/env bash
# Packages tier: `make deb`, the packages' layout and Slurm pinning, installed
# with dpkg -i, the Slurm tier's core checks (tests/slurm/run.sh) against the
# installed plugins, node agent and harmonicsctl (HM_INSTALLED=1), then the
# packages purged so that the other tiers keep using the build tree.
#
# Usage: tests/packages/run.sh [BUILD_DIR]   (default: ./build)
# HM_PKG_REUSE=1 installs the .debs already in BUILD_DIR/pkg/deb (a rerun
# after `make deb`) instead of building them again.
# Exit: 0 passed, 1 a check failed, 77 skipped (not root, no dpkg-buildpackage).
# Measured on the shared 2-core test machine: 29 min, of which make deb 25 min
# (4.6 min of CPU) and run.sh on the installed files 113 s.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 1
((EUID == 0)) || { echo "packages: SKIP: installing packages needs root" >&2; exit 77; }
command -v dpkg-buildpackage >/dev/null || { echo "packages: SKIP: no dpkg-buildpackage (scripts/deps.sh)" >&2; exit 77; }
npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "PASS: $1"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $1${2:+: $2}"; }
check() { local n=$1; shift; if "$@"; then pass "$n"; else fail "$n"; fi; }
log=$build/pkg/packages.log
pkgs=()

purge() {
	((${#pkgs[@]})) || return 0
	dpkg --purge "${pkgs[@]}" >>"$log" 2>&1 || { echo "packages: dpkg --purge ${pkgs[*]} failed (log: $log)"; return 1; }
	pkgs=()
}
trap 'purge' EXIT

t0=$(date +%s)
mkdir -p "$build/pkg"
if [[ ${HM_PKG_REUSE:-0} == 1 ]] && compgen -G "$build/pkg/deb/*.deb" >/dev/null; then
	echo "packages: reusing $build/pkg/deb/*.deb (HM_PKG_REUSE=1)"
elif ! make -C "$build" -s deb >"$build/pkg/deb.log" 2>&1; then
	tail -n 40 "$build/pkg/deb.log"
	fail "make deb" "log: $build/pkg/deb.log"
	exit 1
fi
debs=($(ls "$build"/pkg/deb/*.deb | grep -v -- "-dbgsym_"))
pass "make deb: ${#debs[@]} packages in $(($(date +%s) - t0))s"
deb_of() { ls "$build"/pkg/deb/"$1"_*.deb 2>/dev/null | head -1; }
for p in harmonics-slurmctld-plugins harmonics-spank libharmonics-pace2 libharmonics-pace-dev python3-harmonics harmonics-tools; do
	[[ -n $(deb_of "$p") ]] || fail "package $p built"
done

# Layout: each file in the package for where it is installed.
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has_file() { dpkg-deb -c "$(deb_of "$1")" | awk '{print $6}' | grep -qx "./$2"; }
check "slurmctld plugins in Debian's PluginDir" has_file harmonics-slurmctld-plugins "usr/lib/$ma/slurm-wlm/sched_harmonics.so"
check "select plugin with them" has_file harmonics-slurmctld-plugins "usr/lib/$ma/slurm-wlm/select_harmonics_cons_tres.so"
check "SPANK plugin in the SPANK package" has_file harmonics-spank "usr/lib/$ma/slurm-wlm/harmonics.so"
check "node agent with it" has_file harmonics-spank "usr/lib/$ma/harmonics/harmonics_agent.so"
check "plugstack snippet under /usr/share/harmonics" has_file harmonics-spank "usr/share/harmonics/plugstack.conf.d/harmonics.conf"
check "no SPANK plugin in the slurmctld package" bash -c "! dpkg-deb -c '$(deb_of harmonics-slurmctld-plugins)' | grep -q '/harmonics\.so$'"
check "runtime library" has_file libharmonics-pace2 "usr/lib/$ma/libharmonics-pace.so.2"
check "-dev: headers" has_file libharmonics-pace-dev "usr/include/hm_pace.h"
check "python package" has_file python3-harmonics "usr/lib/python3/dist-packages/harmonics/torch.py"
check "tools and man pages" has_file harmonics-tools "usr/share/man/man5/harmonics.conf.5.gz"

# Pinning: exact version for sched/select, major.minor for SPANK.
sv=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
mm=$(sed 's/^[0-9]*://; s/^\([0-9]*\.[0-9]*\).*/\1/' <<<"$sv")
dep() { dpkg-deb -f "$(deb_of "$1")" Depends; }
check "slurmctld plugins depend on Slurm $sv exactly: $(dep harmonics-slurmctld-plugins)" \
	bash -c "grep -qF 'slurm-wlm-basic-plugins (= $sv)' <<<'$(dep harmonics-slurmctld-plugins)'"
check "SPANK package on Slurm $mm: $(dep harmonics-spank)" \
	bash -c "grep -qF 'slurm-wlm-basic-plugins (>= $mm)' <<<'$(dep harmonics-spank)' && grep -qF 'slurm-wlm-basic-plugins (<< ' <<<'$(dep harmonics-spank)'"

# Installed, not enabled.
for d in "${debs[@]}"; do pkgs+=("$(dpkg-deb -f "$d" Package)"); done
if dpkg -i "${debs[@]}" >"$log" 2>&1 || apt-get install -f -y -q >>"$log" 2>&1; then
	pass "dpkg -i ${pkgs[*]}"
else
	tail -n 20 "$log"
	fail "dpkg -i" "log: $log"
	exit 1
fi
check "plugstack snippet not enabled on install" bash -c "! grep -rqs harmonics /etc/slurm/plugstack.conf.d/"
check "installed harmonicsctl runs" bash -c "harmonicsctl --help | grep -q 'format conf|yaml'"
check "installed python package imports (Debian's python3)" bash -c "cd / && /usr/bin/python3 -c 'import harmonics'"

echo "=== tests/slurm/run.sh on the installed files"
HM_INSTALLED=1 "$top/tests/slurm/run.sh" "$build"
rc=$?
check "slurm tier's core checks on the installed packages (rc $rc)" test "$rc" -eq 0
purge || fail "dpkg --purge"
check "packages removed" bash -c "! dpkg-query -W -f='\${db:Status-Status}\n' harmonics-spank 2>/dev/null | grep -qx installed"
echo "packages: $npass passed, $nfail failed ($(($(date +%s) - t0))s)"
((nfail == 0))
