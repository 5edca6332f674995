#!/usr/bin/env bash
# Builds the parser fuzzer with clang (libFuzzer + ASan/UBSan) and runs it for a
# bounded time from the seed corpus of test fixtures. Prints what it ran.
#   scripts/fuzz.sh [SECONDS]    (default 60; 0 = build only)
# Exit 77 when clang's fuzzer runtime is missing (apt-get install clang).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
out=$top/build/fuzz
mkdir -p "$out/corpus" "$out/crashes"

# shellcheck source=scripts/fuzz-lib.sh
. "$top/scripts/fuzz-lib.sh"
fuzz_need_libfuzzer fuzz

src=("$top"/src/libharmonics/*/*.c "$top"/src/libharmonics/policy/harmonics/*.c "$top"/src/common/*.c)
libinc=()
for d in "$top"/src/libharmonics/*/ "$top"/src/libharmonics/policy/harmonics/; do libinc+=(-I"$d"); done
[[ -f $top/build/config.h ]] || { echo "fuzz: run scripts/build.sh first"; exit 1; }
# shellcheck disable=SC2046
clang -g -O1 -std=gnu11 -Wno-unknown-warning-option -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	"${libinc[@]}" -I"$top/src/common" -I"$top/build" \
	$(pkg-config --cflags json-c hwloc) "$top/tests/fuzz/fuzz_parsers.c" "${src[@]}" \
	$(pkg-config --libs json-c hwloc) -lmunge -lm -lpthread -o "$out/fuzz_parsers"
((secs > 0)) || exit 0

# Seeds: every fixture, prefixed with the selector byte of the parser it suits.
seed() { printf "\\$(printf %03o "$1")" >"$out/corpus/$2"; cat "$3" >>"$out/corpus/$2"; }
i=0
for f in "$top"/tests/fixtures/*/*.conf "$top"/tests/fixtures/cli/topology.conf; do
	[[ -f $f ]] && seed 0 "conf$((i++))" "$f"
done
for f in "$top"/tests/fixtures/*/*.csv; do
	[[ -f $f ]] || continue
	seed 1 "csvt$i" "$f"
	seed 2 "csvw$((i++))" "$f"
done
for f in "$top"/tests/fixtures/topo/*.yaml; do
	[[ -f $f ]] && seed 6 "yaml$((i++))" "$f"
done
[[ -f $top/etc/harmonics.conf.example ]] && seed 4 conf-example "$top/etc/harmonics.conf.example"
printf '\003n[01-16],gpu[1-4,7]' >"$out/corpus/hostlist"
printf '\005racks=4,hosts=8,gpus=8,oversub=2' >"$out/corpus/gen"

cd "$out"
./fuzz_parsers -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$out/crashes/" -print_final_stats=1 corpus 2>&1 | tail -n 12
