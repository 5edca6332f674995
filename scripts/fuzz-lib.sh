# shellcheck shell=bash
# Sourced by the fuzz scripts (scripts/fuzz.sh, tests/pace/fuzz.sh,
# tests/agent/fuzz.sh): exit 77 with NAME's skip line when clang's libFuzzer
# runtime is missing (apt-get install clang).
fuzz_need_libfuzzer() { # NAME
	if ! command -v clang >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' |
		clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
		echo "$1: clang with libFuzzer not available; skipped"
		exit 77
	fi
}
