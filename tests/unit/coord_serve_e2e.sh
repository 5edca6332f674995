# shellcheck shell=sh
# Sourced by the end-to-end scripts against coord_serve (a coordinator outside
# Slurm): paths, a temporary directory with the fifo that feeds coord_serve, the
# cleanup that stops it, fail(), and the skip when munged is not running.
: "${top_builddir:=.}" "${top_srcdir:=.}"
ctl="$top_builddir/src/tools/harmonicsctl"
serve="$top_builddir/tests/unit/coord_serve"
tmp=$(mktemp -d) || exit 99
fifo="$tmp/in"
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# No slurm.conf: harmonicsctl's default address is 127.0.0.1, whatever the machine's
# own slurm.conf says (its SlurmctldHost lines would come first).
export SLURM_CONF="$tmp/no-slurm.conf"

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	echo "SKIP: munged is not running (scripts/munge-up.sh starts it)"; exit 77
fi
