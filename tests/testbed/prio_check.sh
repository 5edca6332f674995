#!/usr/bin/env bash
# Priority classes on the testbed's shaped uplinks are real: a low-class flow
# yields to a high-class one. Two emulated jobs (harmonics-emujob, 2 ranks, one
# per rack) share both rack uplinks; the runtime marks each job's sockets with
# its class's DSCP (HARMONICS_PRIO) and the uplinks' htb serves classes strictly.
#
#   alone       job H alone: its contention-free communication time
#   same class  H while a long job L of the same class runs: ~2x alone (fair share)
#   H over L    H in class 0, L in class 6: H keeps ~its alone time
# Passes when H over L <= 1.3 x alone, same class >= 1.5 x alone, and the
# uplink's counters put L's bytes in class 6's queue and H's in class 0's.
# Root only (namespaces, tc); exit 77 otherwise. Bounded: every rank under timeout.
#
# Usage: tests/testbed/prio_check.sh [BUILD_DIR]   (env: TB_NIC, TB_UPLINK, BYTES=2.5MB)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" 2>/dev/null && pwd) || { echo "prio: no build dir" >&2; exit 1; }
emujob=$build/src/tools/harmonics-emujob
BYTES=${BYTES:-2.5MB}
if ((EUID != 0)); then
	echo "prio: SKIP: needs root (network namespaces, tc)"
	exit 77
fi
[[ -x $emujob ]] || { echo "prio: FAIL: $emujob not built"; exit 1; }

TB_RACKS=2 TB_HOSTS=2
# shellcheck source=tests/testbed/net.sh
. "$here/net.sh"
tmp=$(mktemp -d /tmp/hm-prio.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	tb_net_down
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
tb_net_up "$emujob" || exit 1

# job NAME RANK0_NODE RANK1_NODE PORT ITERATIONS [ENV...]: in the background.
job() {
	local name=$1 n0=$2 n1=$3 port=$4 n=$5 r node
	shift 5
	for r in 1 0; do
		node=$n0
		((r == 1)) && node=$n1
		tb_in_node "$node" env "$@" timeout 60 "$emujob" --ranks 2 --rank $r \
			--rendezvous "$(tb_node_addr "$n0"):$port" --compute 0ms --bytes "$BYTES" \
			--iterations "$n" --warmup 1 --json --quiet --timeout 20s \
			>"$tmp/$name.$r" 2>"$tmp/$name.$r.err" &
		pids+=($!)
	done
}
finish() { # wait for every rank; fail on any error
	local p rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	pids=()
	((rc == 0)) || { echo "prio: FAIL: a rank failed:"; cat "$tmp"/*.err; exit 1; }
}
comm() { jq -r '.comm_ms.mean * 10 | round / 10' "$tmp/$1.0"; }
cls() { echo "HARMONICS_MODE=crux HARMONICS_PERIOD_US=0 HARMONICS_PRIO=$1"; }

# H on n1 <-> n3, L on n2 <-> n4: both cross both uplinks (rack 1 = n1,n2).
job alone 1 3 29701 10
finish
# L runs about 5 s of back-to-back bursts; H starts once L is under way.
# shellcheck disable=SC2046
{ job same_l 2 4 29702 50 $(cls 0); sleep 1; job same_h 1 3 29703 10 $(cls 0); }
finish
before=$(tb_class_bytes "${TB_NS}t1" uplink)
# shellcheck disable=SC2046
{ job prio_l 2 4 29704 50 $(cls 6); sleep 1; job prio_h 1 3 29705 10 $(cls 0); }
finish
after=$(tb_class_bytes "${TB_NS}t1" uplink)

alone=$(comm alone) same=$(comm same_h) hi=$(comm prio_h)
bytes_of() { awk -v c="$1" '$1 == c { print $2 }' <<<"$2"; }
# Bytes the rack-1 uplink sent in class C during "H over L".
delta() { echo $(($(bytes_of "$1" "$after") - $(bytes_of "$1" "$before"))); }
b0=$(delta 0) b6=$(delta 6)
echo "prio: NIC $TB_NIC, uplink $TB_UPLINK, bursts of $BYTES (mean communication per iteration):"
echo "prio:   H alone ${alone} ms; H with L in the same class ${same} ms; H (class 0) over L (class 6) ${hi} ms"
echo "prio:   rack-1 uplink during H over L: class 0 sent $b0 bytes, class 6 sent $b6 bytes"
fail=0
check() { # description awk-condition
	if awk -v a="$alone" -v s="$same" -v h="$hi" -v b0="$b0" -v b6="$b6" "BEGIN { exit !($2) }"; then
		echo "PASS: $1"
	else
		echo "FAIL: $1"
		fail=1
	fi
}
check "same class shares the uplink: $same ms >= 1.5 x alone" "s >= 1.5 * a"
check "a low class yields: H over L $hi ms <= 1.3 x alone" "h <= 1.3 * a"
check "the uplink queued H in class 0 and L in class 6 (each > 10 MB)" "b0 > 1e7 && b6 > 1e7"
exit $fail
