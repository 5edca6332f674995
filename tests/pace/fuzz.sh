#!/bin/bash
# Fuzz the assignment-file parser (libFuzzer + ASan/UBSan) for a bounded time.
#   tests/pace/fuzz.sh [SECONDS]   (default 30; 0 = build only). Exit 77 without clang/libFuzzer.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-30}
out=$(mktemp -d /tmp/fuzz_pace.XXXXXX)
trap 'rm -rf "$out"' EXIT
if ! command -v clang >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' |
	clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
	echo "fuzz-pace: clang with libFuzzer not available; skipped"
	exit 77
fi
clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$top/src/pace" -I"$top/src/libharmonics" "$top/tests/pace/fuzz_pace_assign.c" \
	"$top/src/pace/pace_assign.c" "$top/src/libharmonics/hm_parse.c" \
	"$top/src/libharmonics/hm_error.c" -lm -o "$out/fuzz_pace_assign"
((secs > 0)) || exit 0
mkdir -p "$out/corpus"
printf 'HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=240000\nHARMONICS_SHIFT_US=120000\nHARMONICS_ORIGIN_US=1700000000000000\nHARMONICS_GUARD_US=10000\nHARMONICS_PRIO=1\nHARMONICS_EPOCH=3\nHARMONICS_VALID_UNTIL_US=1800000000000000\n' >"$out/corpus/full"
printf '# off\nHARMONICS_MODE=off\n' >"$out/corpus/off"
printf 'HARMONICS_MODE=harmonics\nHARMONICS_PERIOD_US=100000\nHARMONICS_SHIFT_US=10000\nHARMONICS_ORIGIN_US=1700000000000000\nHARMONICS_GUARD_US=5000\nHARMONICS_EPOCH=7\nHARMONICS_VALID_UNTIL_US=1800000000000000\nHARMONICS_NEXT_EFFECTIVE_US=1700000001030000\nHARMONICS_NEXT_MODE=harmonics\nHARMONICS_NEXT_PERIOD_US=150000\nHARMONICS_NEXT_SHIFT_US=40000\nHARMONICS_NEXT_ORIGIN_US=1700000000000000\nHARMONICS_NEXT_GUARD_US=5000\nHARMONICS_NEXT_PRIO=3\nHARMONICS_NEXT_EPOCH=8\n' >"$out/corpus/next"
printf 'HARMONICS_MODE=fair\nHARMONICS_PERIOD_US=0\nHARMONICS_GUARD_US=10000\nHARMONICS_EPOCH=4\nHARMONICS_NEXT_EFFECTIVE_US=1700000001000000\nHARMONICS_NEXT_MODE=cassini\nHARMONICS_NEXT_PERIOD_US=0\nHARMONICS_NEXT_SHIFT_US=70000\nHARMONICS_NEXT_EPOCH=5\n' >"$out/corpus/delay"
cd "$out"
./fuzz_pace_assign -max_total_time="$secs" -max_len=4096 -timeout=10 \
	-artifact_prefix="$top/tests/pace/" -print_final_stats=1 corpus 2>&1 | tail -n 8
