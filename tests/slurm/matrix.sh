#!/usr/bin/env bash
# Build-and-load matrix: the four slurmctld and slurmd plugins (select, sched, job_submit, SPANK) built against each Slurm release
# (scripts/slurm-tree.sh VERSION: a configured release tree, cached), each in its
# own build dir, and each .so checked against that release:
#   - plugin_version is the release's SLURM_VERSION_NUMBER (plugin.c refuses any
#     other), the select plugin_id is the one Slurm takes for cons_tres there;
#   - every symbol the release's loader resolves is exported (select_p_* of its
#     select interface, sched_p_* of its scheduler interface; the SPANK symbols);
#   - every undefined symbol is either in a library the .so needs (glibc, munge,
#     json-c ...) or defined by that release's slurmctld, slurmd or libslurmfull
#     sources (ctags over src/common, src/interfaces, src/slurmctld ...); for the
#     installed release, also exported by its real libslurmfull.so and slurmctld.
#
# Usage: tests/slurm/matrix.sh [BUILD_DIR] [RELEASE ...]
#   RELEASE: 22.05 23.11 ... (default: every release slurm-tree.sh --list names,
#   or $HM_MATRIX_RELEASES). Build dirs: $HM_MATRIX_DIR/RELEASE (default
#   BUILD_DIR/releases), configured once per tree and rebuilt incrementally;
#   BUILD_DIR itself for the release it is configured with.
# Exit: 0 all passed, 1 a check failed (a release tree that cannot be made too).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "matrix: no build dir ${1:-$top/build}" >&2; exit 1; }
shift $(($# > 0 ? 1 : 0))
releases=("$@")
if ((${#releases[@]} == 0)); then
	# shellcheck disable=SC2206
	releases=(${HM_MATRIX_RELEASES:-$("$top/scripts/slurm-tree.sh" --list)})
fi
jobs=${HM_JOBS:-$(nproc)}
mdir=${HM_MATRIX_DIR:-$build/releases}
t_start=$(date +%s)
npass=0 nfail=0 nskip=0
failed=()
pass() { npass=$((npass + 1)); echo "PASS: $1"; }
fail() { nfail=$((nfail + 1)); failed+=("$1"); echo "FAIL: $1${2:+: $2}"; }
say() { echo "    $*"; }

# The 32-bit value of a defined dynamic symbol (little-endian ELF).
so_u32() { # so symbol
	local addr hex
	addr=$(nm -D --defined-only "$1" | awk -v s="$2" '$3 == s { print $1; exit }')
	[[ -n $addr ]] || return 1
	hex=$(objdump -s --start-address=$((16#$addr)) --stop-address=$((16#$addr + 4)) "$1" |
		awk '/^ [0-9a-f]+ [0-9a-f]{8}/ { print $2; exit }')
	[[ ${#hex} == 8 ]] || return 1
	echo $((16#${hex:6:2}${hex:4:2}${hex:2:2}${hex:0:2}))
}

# The names in a release's `static const char *NAME[] = { "a", "b" };` table.
sym_table() { # file table-name
	sed -n "/$2\[\] = {/,/};/p" "$1" | grep -o '"[a-z_0-9]*"' | tr -d '"'
}

# Symbols a release defines for plugins: global functions and variables of the
# code slurmctld, slurmd, slurmstepd and libslurmfull are built from, and the
# slurm_* twins of slurm_xlator.h (strong_alias).
release_defs() { # srcdir out
	local d dirs=()
	for d in common interfaces api conmgr stepmgr slurmctld slurmd/common slurmd/slurmd \
		slurmd/slurmstepd curl; do
		[[ -d $1/src/$d ]] && dirs+=("$1/src/$d")
	done
	{
		ctags -R -x --languages=C --kinds-C=fv --extras=-F "${dirs[@]}" 2>/dev/null | awk '{ print $1 }'
		grep -rhoE --include='*.c' 'strong_alias\([[:space:]]*[a-z_0-9]+,[[:space:]]*[a-z_0-9]+[[:space:]]*\)' \
			"${dirs[@]}" | sed -E 's/.*,[[:space:]]*([a-z_0-9]+)[[:space:]]*\)/\1/'
	} | sort -u >"$2"
}

# Undefined symbols of a .so that none of its needed libraries defines.
so_slurm_undefs() { # so out
	local lib libs
	libs=$(ldd "$1" 2>/dev/null | awk '$3 ~ /^\// { print $3 }')
	{
		for lib in $libs; do nm -D --defined-only "$lib" 2>/dev/null | awk '{ print $3 }'; done |
			sed 's/@.*//' | sort -u >"$2.libs"
		nm -D --undefined-only "$1" | awk '{ print $2 }' | grep -v '@' | sed 's/@.*//' | sort -u |
			comm -23 - "$2.libs" | grep -v '^_\(_gmon_start__\|ITM_\|Jv_\)' | grep -v '^_ITM' |
			grep -v '^__cxa_finalize$'
	} >"$2"
	rm -f "$2.libs"
}

check_release() { # release
	local rel=$1 tree src bdir vnum vstr so name want got missing undef t0 id_want
	t0=$(date +%s)
	echo "=== Slurm $rel"
	if ! tree=$("$top/scripts/slurm-tree.sh" --quiet "$rel"); then
		fail "$rel: configured release tree (scripts/slurm-tree.sh $rel)"
		return
	fi
	src=$(readlink -f "$tree/source" 2>/dev/null || sed -n 's/^abs_top_srcdir = //p' "$tree/Makefile")
	vnum=$(($(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$tree/slurm/slurm_version.h")))
	vstr=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$tree/config.h" | head -1)
	say "tree $tree (Slurm $vstr, SLURM_VERSION_NUMBER $(printf '0x%06x' "$vnum")) ($(($(date +%s) - t0)) s)"

	bdir=$mdir/$rel
	# BUILD_DIR itself when it is configured with this tree (the installed release).
	if [[ $(sed -n 's/^SLURM_SOURCE = //p' "$build/Makefile" 2>/dev/null) == "$tree" ]]; then
		bdir=$build
	fi
	mkdir -p "$bdir"
	if [[ $bdir != "$build" && ( ! -f $bdir/config.status ||
		$(cat "$bdir/.hm-tree" 2>/dev/null) != "$tree $vstr" || $top/configure -nt $bdir/config.status ) ]]; then
		# One cache for every release: only the Slurm checks differ (none cached).
		(cd "$bdir" && "$top/configure" -q --cache-file="$mdir/config.cache" --enable-developer \
			--with-slurm-source="$tree" >configure.out 2>&1) || {
			fail "$rel: configure --with-slurm-source=$tree" "$(tail -3 "$bdir/configure.out")"
			return
		}
		echo "$tree $vstr" >"$bdir/.hm-tree"
	fi
	if make -C "$bdir" -s -j"$jobs" src/plugins/sched/sched_harmonics.la \
		src/plugins/jobsubmit/job_submit_harmonics.la \
		src/plugins/select/select_harmonics_cons_tres.la src/plugins/spank/harmonics.la \
		>"$bdir/make.out" 2>&1; then
		pass "$rel: the four plugins build against Slurm $vstr's headers ($(($(date +%s) - t0)) s)"
	else
		fail "$rel: build" "$(grep -m5 -E 'error|Error' "$bdir/make.out")"
		return
	fi

	release_defs "$src" "$bdir/slurm-defs.txt"
	# The installed release: its real binaries too.
	local inst=""
	if [[ $(slurmctld -V 2>/dev/null | awk '{ print $2 }') == "$vstr" ]]; then
		inst=$bdir/slurm-exports.txt
		for f in "$(command -v slurmctld)" "$(command -v slurmd)" /usr/lib/*/slurm-wlm/libslurmfull.so \
			/usr/lib/slurm/libslurmfull.so /usr/lib64/slurm/libslurmfull.so; do
			[[ -f $f ]] && nm -D --defined-only "$f" | awk '{ print $3 }'
		done | sed 's/@.*//' | sort -u >"$inst"
	fi

	local sel=$src/src/interfaces/select.c sch=$src/src/interfaces/sched_plugin.c
	local jsub=$src/src/interfaces/job_submit.c
	[[ -f $sel ]] || sel=$src/src/common/select.c
	[[ -f $sch ]] || sch=$src/src/slurmctld/sched_plugin.c
	[[ -f $jsub ]] || jsub=$src/src/slurmctld/job_submit.c
	if ((vnum >= 0x190500)); then id_want=109; elif ((vnum >= 0x170200)); then id_want=180; else id_want=110; fi

	for name in select/select_harmonics_cons_tres sched/sched_harmonics jobsubmit/job_submit_harmonics \
		spank/harmonics; do
		local so=$bdir/src/plugins/${name%%/*}/.libs/${name#*/}.so short=${name#*/}
		[[ -f $so ]] || { fail "$rel: $short.so built" "$so missing"; continue; }
		got=$(so_u32 "$so" plugin_version)
		if [[ $got == "$vnum" ]]; then
			pass "$rel: $short.so plugin_version = $(printf '0x%06x' "$got")"
		else
			fail "$rel: $short.so plugin_version" "got ${got:-none}, want $vnum"
		fi
		case $short in
		select_harmonics_cons_tres)
			got=$(so_u32 "$so" plugin_id)
			if [[ $got == "$id_want" ]]; then pass "$rel: $short.so plugin_id = $got"
			else fail "$rel: $short.so plugin_id" "got ${got:-none}, want $id_want"; fi
			want=$(sym_table "$sel" node_select_syms) ;;
		sched_harmonics) want="plugin_name plugin_type plugin_version $(sym_table "$sch" syms)" ;;
		job_submit_harmonics) want="plugin_name plugin_type plugin_version $(sym_table "$jsub" syms)" ;;
		harmonics) # the callbacks its version script exports (spank.c looks each up)
			want=$(sed -n 's/^ *\([a-z_]*\);$/\1/p' "$top/src/plugins/spank/harmonics_spank.sym") ;;
		esac
		missing=$(comm -23 <(tr ' ' '\n' <<<"$want" | grep . | sort -u) \
			<(nm -D --defined-only "$so" | awk '{ print $3 }' | sort -u) | tr '\n' ' ')
		if [[ -z $missing ]]; then
			pass "$rel: $short.so exports the $(wc -w <<<"$want") symbols the loader resolves"
		else
			fail "$rel: $short.so exports what the loader resolves" "missing: $missing"
		fi
		so_slurm_undefs "$so" "$bdir/$short.undef"
		undef=$(comm -23 "$bdir/$short.undef" "$bdir/slurm-defs.txt" | tr '\n' ' ')
		if [[ -z $undef ]]; then
			pass "$rel: $short.so: its $(wc -l <"$bdir/$short.undef") Slurm symbols are defined by Slurm $vstr"
		else
			fail "$rel: $short.so: undefined symbols Slurm $vstr does not define" "$undef"
		fi
		if [[ -n $inst ]]; then
			undef=$(comm -23 "$bdir/$short.undef" "$inst" | tr '\n' ' ')
			if [[ -z $undef ]]; then pass "$rel: $short.so: the installed slurmctld/slurmd/libslurmfull export them all"
			else fail "$rel: $short.so: not exported by the installed Slurm" "$undef"; fi
		fi
	done
	say "Slurm $rel: $(($(date +%s) - t0)) s"
}

for r in "${releases[@]}"; do
	check_release "$r"
done
echo "=== matrix: $npass passed, $nfail failed in $(($(date +%s) - t_start))s (${releases[*]})"
((nfail == 0)) && exit 0
printf '  failed: %s\n' "${failed[@]}"
exit 1
