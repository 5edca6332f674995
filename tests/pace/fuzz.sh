#!/bin/bash
# Fuzz the pacing parsers (libFuzzer + ASan/UBSan) for a bounded time each: the
# assignment file (and the slot plan over what it accepts), and the node agent's
# reader of report files.
#   tests/pace/fuzz.sh [SECONDS]   (default 30 per target; 0 = build only).
# Exit 77 without clang/libFuzzer.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-30}
out=$(mktemp -d /tmp/fuzz_pace.XXXXXX)
trap 'rm -rf "$out"' EXIT
# shellcheck source=scripts/fuzz-lib.sh
. "$top/scripts/fuzz-lib.sh"
fuzz_need_libfuzzer fuzz-pace
cc=(clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-I"$top/src/pace" -I"$top/src/libharmonics/core")
common=("$top/src/libharmonics/core/hm_parse.c" "$top/src/libharmonics/core/hm_error.c" -lm)
"${cc[@]}" "$top/tests/pace/fuzz_pace_assign.c" "$top/src/pace/pace_assign.c" "${common[@]}" \
	-o "$out/fuzz_pace_assign"
"${cc[@]}" "$top/tests/pace/fuzz_pace_report.c" "$top/src/pace/pace_report_read.c" \
	"${common[@]}" -o "$out/fuzz_pace_report"
((secs > 0)) || exit 0
mkdir -p "$out/assign" "$out/report"
printf 'HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=240000\nHARMONICS_SHIFT_US=120000\nHARMONICS_ORIGIN_US=1700000000000000\nHARMONICS_GUARD_US=10000\nHARMONICS_PRIO=1\nHARMONICS_EPOCH=3\nHARMONICS_VALID_UNTIL_US=1800000000000000\n' >"$out/assign/full"
printf '# off\nHARMONICS_MODE=off\n' >"$out/assign/off"
printf 'HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=100000\nHARMONICS_SHIFT_US=10000\nHARMONICS_ORIGIN_US=1700000000000000\nHARMONICS_GUARD_US=5000\nHARMONICS_EPOCH=7\nHARMONICS_VALID_UNTIL_US=1800000000000000\nHARMONICS_NEXT_EFFECTIVE_US=1700000001030000\nHARMONICS_NEXT_MODE=harmonics\nHARMONICS_NEXT_PERIOD_US=150000\nHARMONICS_NEXT_SHIFT_US=40000\nHARMONICS_NEXT_ORIGIN_US=1700000000000000\nHARMONICS_NEXT_GUARD_US=5000\nHARMONICS_NEXT_PRIO=3\nHARMONICS_NEXT_EPOCH=8\n' >"$out/assign/next"
printf 'HARMONICS_MODE=fair\nHARMONICS_PERIOD_US=0\nHARMONICS_GUARD_US=10000\nHARMONICS_EPOCH=4\nHARMONICS_NEXT_EFFECTIVE_US=1700000001000000\nHARMONICS_NEXT_MODE=cassini\nHARMONICS_NEXT_PERIOD_US=0\nHARMONICS_NEXT_SHIFT_US=70000\nHARMONICS_NEXT_EPOCH=5\n' >"$out/assign/delay"
printf 'HARMONICS_REPORT_VERSION=2\nJOB_ID=42\nRANK=3\nMODE=harmonics\nEPOCH=8\nACTIVE=1\nPERIOD_ASSIGNED_US=100000\nSHIFT_US=0\nITERATIONS=10\nBURSTS=10\nPACED=10\nLATE=0\nSKIPPED=0\nUNPACED=0\nPERIOD_US=100000\nBURST_OFFSET_US=1\nBURST_US=2\nWAIT_US=3\nSLOT_ERROR_US=0.5\nSLOT_ERROR_MAX_US=1.0\nUPDATED_US=1700000000000000\nITER_N=10\nITER_SUM_US=1000000\nITER_SQ_SUM_US2=100500000000\nCOMPUTE_N=10\nCOMPUTE_SUM_US=500000\nBURST_N=10\nBURST_SUM_US=250000\nSLOT_MISSES=2\nAPPLIED_EPOCH=7\nPID=4242\nCOMPUTE_SQ_SUM_US2=26000000000\n' >"$out/report/v2"
cd "$out"
for t in assign report; do
	echo "--- fuzz_pace_$t, $secs s"
	"./fuzz_pace_$t" -max_total_time="$secs" -max_len=4096 -timeout=10 \
		-artifact_prefix="$top/tests/pace/" -print_final_stats=1 "$t" 2>&1 | tail -n 5
done
