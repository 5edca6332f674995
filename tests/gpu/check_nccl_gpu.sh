#!/bin/bash
# GPU check of the NCCL interposer, for a machine with a GPU (the `device` tool).
# Builds libharmonics-nccl.so there straight from the sources (no autotools, so it
# needs only gcc, CUDA and NCCL), builds tests/gpu/nccl_paced.c against the real
# libnccl/libcudart, then runs it under LD_PRELOAD (the same checks as the
# stand-in job of tests/slurm/nccl_standin.sh, as far as one machine allows):
#   1. HARMONICS_MODE=off: pure forwarding, no report file may appear;
#   2. paced, reach as detected: one node, so every communicator is node-local
#      and never held (report PACED=0, trace reach=node-local paced=0);
#   3. paced, HARMONICS_NCCL_REACH=cross (period 100 ms): all-reduces end on
#      slots, the host is never held, the report shows the measured profile;
#      with one GPU a captured all-reduce's graph has as many nodes as with
#      pacing off (nothing inserted into a capture);
#   4. class 1 -> 3 in the assignment file between two ncclCommInitRank: on
#      NCCL >= 2.26 the second communicator carries class 3 (trace), before
#      that the first class stays.
# Skew between ranks needs ranks on two GPUs of two nodes: stand-in only.
# Usage: tests/gpu/check_nccl_gpu.sh   (from anywhere; CUDA_HOME, NCCL_HOME optional)
# Exit: 0 pass, 1 fail, 77 no GPU.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU visible (nvidia-smi -L failed)"
	exit 77
fi
# CUDA: CUDA_HOME, else the toolkit around nvcc, else /usr/local/cuda.
if [ -z "${CUDA_HOME:-}" ] && command -v nvcc >/dev/null; then
	CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# NCCL: NCCL_HOME, else CUDA_HOME, else the system's, else the nvidia-nccl wheel's
# (images that ship NCCL only inside their Python environment).
nccl_wheel=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
for d in "${NCCL_HOME:-}" "$CUDA_HOME" /usr /usr/local "$nccl_wheel"; do
	if [ -n "$d" ] && [ -f "$d/include/nccl.h" ]; then
		NCCL_HOME=$d
		break
	fi
done
NCCL_HOME=${NCCL_HOME:-$CUDA_HOME}
first_file() { # the first of its arguments (expanded globs) that is a file
	for f in "$@"; do
		if [ -f "$f" ]; then
			echo "$f"
			return
		fi
	done
}
nccl_lib=$(first_file "$NCCL_HOME"/lib64/libnccl.so* "$NCCL_HOME"/lib/libnccl.so* \
	"$NCCL_HOME"/lib/x86_64-linux-gnu/libnccl.so*)
cudart_lib=$(first_file "$CUDA_HOME"/lib64/libcudart.so* "$CUDA_HOME"/lib/libcudart.so* \
	"$CUDA_HOME"/targets/*/lib/libcudart.so*)
nvidia-smi -L
out=$(mktemp -d /tmp/hm_gpu.XXXXXX)
trap 'rm -rf "$out"' EXIT
inc=(-I"$root/src/pace" -I"$root/src/pace/nccl" -I"$root/src/libharmonics/core"
	-isystem "$NCCL_HOME/include" -isystem "$CUDA_HOME/include")
if [ -z "$nccl_lib" ] || [ -z "$cudart_lib" ]; then
	echo "gpu-check: FAIL: libnccl ('${nccl_lib}') or libcudart ('${cudart_lib}') not found" \
		"under NCCL_HOME=$NCCL_HOME, CUDA_HOME=$CUDA_HOME"
	exit 1
fi
echo "gpu-check: CUDA_HOME=$CUDA_HOME NCCL_HOME=$NCCL_HOME ($nccl_lib, $cudart_lib)"
# Whole paths, so a wheel's libnccl.so.2 without its libnccl.so link still links.
# shellcheck disable=SC2054 # the commas belong to -Wl
lib=("$nccl_lib" "$cudart_lib" -Wl,-rpath,"$(dirname "$nccl_lib"):$(dirname "$cudart_lib")")
set -e
gcc -std=gnu11 -O2 -fPIC -shared -Wall -Wextra -Werror "${inc[@]}" \
	-Wl,-z,defs -Wl,--version-script="$root/src/pace/nccl/libharmonics-nccl.sym" \
	-o "$out/libharmonics-nccl.so" \
	"$root"/src/pace/nccl/nccl_class.c "$root"/src/pace/nccl/nccl_comm.c \
	"$root"/src/pace/nccl/nccl_hold.c "$root"/src/pace/nccl/nccl_interpose.c \
	"$root"/src/pace/nccl/nccl_real.c \
	"$root"/src/pace/pace.c "$root"/src/pace/pace_assign.c "$root"/src/pace/pace_report.c \
	"$root"/src/libharmonics/core/hm_error.c "$root"/src/libharmonics/core/hm_parse.c \
	-ldl -lpthread -lm
gcc -std=gnu11 -O2 -Wall -Wextra "${inc[@]}" -o "$out/nccl_paced" "$root/tests/gpu/nccl_paced.c" \
	"${lib[@]}"
set +e
echo "gpu-check: built $out/libharmonics-nccl.so"

rc=0
echo "== pacing off (pure forwarding)"
HARMONICS_MODE=off HARMONICS_REPORT_FILE="$out/report.off" LD_PRELOAD="$out/libharmonics-nccl.so" \
	timeout 120 "$out/nccl_paced" off || rc=1
if [ -e "$out/report.off" ]; then
	echo "gpu-check: FAIL: a report was written with pacing off"
	rc=1
fi

nodes() { sed -n 's/^gpu-check: GRAPH_NODES=//p' "$1"; }
HARMONICS_MODE=off LD_PRELOAD="$out/libharmonics-nccl.so" timeout 120 "$out/nccl_paced" off \
	>"$out/graph.off" 2>&1

# A file, as the node agent writes it: the class change rewrites it.
origin=$(date +%s%6N)
assign() { # prio
	printf '%s\n' HARMONICS_MODE=harmonics HARMONICS_EPOCH=1 HARMONICS_PERIOD_US=100000 \
		HARMONICS_SHIFT_US=30000 "HARMONICS_ORIGIN_US=$origin" HARMONICS_GUARD_US=5000 \
		"HARMONICS_PRIO=$1" >"$out/assign"
}
paced() { # name args...
	local name=$1
	shift
	env -u HARMONICS_MODE HARMONICS_ASSIGN_FILE="$out/assign" \
		HARMONICS_REPORT_FILE="$out/report.$name" HARMONICS_NCCL_TRACE="$out/trace.$name" \
		LD_PRELOAD="$out/libharmonics-nccl.so" "$@"
}

echo "== pacing on, one node: every communicator node-local, never held"
assign 1
paced local timeout 120 "$out/nccl_paced" off || rc=1
sed 's/^/gpu-check: trace /' "$out/trace.local"
if ! grep -q 'reach=node-local .*paced=0' "$out/trace.local" ||
	! grep -qx 'PACED=0' "$out/report.local"; then
	echo "gpu-check: FAIL: a node-local communicator was held"
	rc=1
fi

echo "== pacing on, HARMONICS_NCCL_REACH=cross: period 100 ms, shift 30 ms, class 1"
HARMONICS_NCCL_REACH=cross paced on timeout 120 "$out/nccl_paced" on >"$out/graph.on" || rc=1
cat "$out/graph.on"
if [ -f "$out/report.on" ]; then
	sed 's/^/gpu-check: report /' "$out/report.on"
	paced=$(sed -n 's/^PACED=//p' "$out/report.on")
	period=$(sed -n 's/^PERIOD_US=//p' "$out/report.on")
	if [ "${paced:-0}" -lt 25 ] || [ "${period:-0}" -lt 90000 ] || [ "${period:-0}" -gt 130000 ]; then
		echo "gpu-check: FAIL: report PACED=$paced PERIOD_US=$period (want >= 25, ~100000)"
		rc=1
	fi
else
	echo "gpu-check: FAIL: no report file with pacing on"
	rc=1
fi
if [ -n "$(nodes "$out/graph.off")" ]; then
	echo "gpu-check: graph nodes off $(nodes "$out/graph.off"), on $(nodes "$out/graph.on")"
	if [ "$(nodes "$out/graph.off")" != "$(nodes "$out/graph.on")" ] ||
		! grep -q 'capture stream=.*left alone' "$out/trace.on"; then
		echo "gpu-check: FAIL: the interposer changed a captured graph"
		rc=1
	fi
fi

echo "== class 1 -> 3 between two communicators"
assign 1
paced class timeout 60 "$out/nccl_paced" class || rc=1
sed 's/^/gpu-check: trace /' "$out/trace.class"
ver=$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$NCCL_HOME/include/nccl.h")
want=1
[ "${ver:-0}" -ge 22600 ] && want=3
if [ "$(grep -c 'comm key=.* class=1 ' "$out/trace.class")" -lt 1 ] ||
	[ "$(grep -c "comm key=.* class=$want " "$out/trace.class")" -lt 1 ]; then
	echo "gpu-check: FAIL: NCCL $ver: want classes 1 then $want in the trace"
	rc=1
fi
[ $rc = 0 ] && echo "gpu-check: PASS" || echo "gpu-check: FAIL"
exit $rc
