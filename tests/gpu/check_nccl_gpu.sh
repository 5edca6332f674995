#!/bin/bash
# GPU check of the NCCL interposer, for a machine with a GPU (the `device` tool).
# Builds libharmonics-nccl.so there straight from the sources (no autotools, so it
# needs only gcc, CUDA and NCCL), builds tests/gpu/nccl_paced.c against the real
# libnccl/libcudart, then runs it twice under LD_PRELOAD:
#   1. HARMONICS_MODE=off: pure forwarding, no report file may appear;
#   2. paced (period 100 ms): all-reduces end on slots, the host is never held,
#      and the report file shows the measured profile (PACED, PERIOD_US, BURST_US).
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
	"$root"/src/pace/nccl/nccl_class.c "$root"/src/pace/nccl/nccl_hold.c "$root"/src/pace/nccl/nccl_interpose.c \
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

echo "== pacing on: period 100 ms, shift 30 ms, priority class 1"
origin=$(date +%s%6N)
HARMONICS_MODE=harmonics HARMONICS_PERIOD_US=100000 HARMONICS_SHIFT_US=30000 \
	HARMONICS_ORIGIN_US="$origin" HARMONICS_GUARD_US=5000 HARMONICS_PRIO=1 \
	HARMONICS_REPORT_FILE="$out/report.on" LD_PRELOAD="$out/libharmonics-nccl.so" \
	timeout 120 "$out/nccl_paced" on || rc=1
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
[ $rc = 0 ] && echo "gpu-check: PASS" || echo "gpu-check: FAIL"
exit $rc
