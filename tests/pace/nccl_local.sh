#!/bin/bash
# The NCCL interposer when NCCL is loaded RTLD_LOCAL (tests/pace/test_nccl_local.c):
# the STAND-IN libnccl.so.2 is a dependency of an extension dlopen'ed RTLD_LOCAL,
# invisible to dlsym(RTLD_NEXT). Four runs: pacing off (no assignment); pacing on
# (an assignment: holds at the slots); cudaLaunchHostFunc failing (pacing off for
# the process after one attempt, one line); no NCCL in the process at all
# (libnccl.so.2 loaded by its standard name). In each, a function the loaded NCCL
# lacks returns ncclSystemError with exactly one line for the process.
# Skips (77) when the interposer was not built (no nccl.h at configure time).
set -u
b=${top_builddir:-.}
so="$b/src/pace/.libs/libharmonics-nccl.so"
t="$b/tests/pace/test_nccl_local"
if [ ! -f "$so" ] || [ ! -x "$t" ]; then
	echo "SKIP: $so or $t not built (configure found no nccl.h/cuda_runtime_api.h)"
	exit 77
fi
[ -f "$b/tests/pace/.libs/test_nccl_local" ] && t="$b/tests/pace/.libs/test_nccl_local"
# The extension and the stand-in libnccl.so.2 are found by name, as a Python
# extension's are (its directory, then the library path).
LD_LIBRARY_PATH="$b/src/pace/.libs:$b/tests/pace/.libs:$b/tests/pace/localnccl/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
pre="$so"
if readelf -d "$so" 2>/dev/null | grep -q 'libasan'; then
	asan=$(${CC:-gcc} -print-file-name=libasan.so 2>/dev/null)
	[ -f "$asan" ] && pre="$asan $so"
fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT
rc=0
# run NAME EXPECT_PACING_OFF_LINES ENV...: the test, then the interposer's lines.
run() {
	local name=$1 want_off=$2 n_missing n_off
	shift 2
	echo "== $name"
	env -u HARMONICS_MODE -u HARMONICS_PERIOD_US -u HARMONICS_SHIFT_US \
		-u HARMONICS_ORIGIN_US -u HARMONICS_GUARD_US -u HARMONICS_PRIO \
		-u HARMONICS_ASSIGN_FILE -u HARMONICS_REPORT_FILE -u HARMONICS_VALID_UNTIL_US \
		-u STANDIN_LAUNCH_FAIL NCCL_IB_TC=99 NCCL_IB_SL=3 "$@" LD_PRELOAD="$pre" "$t" 2>"$err" || rc=1
	sed 's/^/    stderr: /' "$err"
	n_missing=$(grep -c '^harmonics-nccl: no real ' "$err")
	n_off=$(grep -c 'pacing off for this process' "$err")
	want_missing=1
	[ "$name" = names ] && want_missing=0
	if [ "$n_missing" != "$want_missing" ] || [ "$n_off" != "$want_off" ]; then
		echo "FAIL: $name: $n_missing 'no real' line(s) (want $want_missing), $n_off 'pacing off' line(s) (want $want_off)"
		rc=1
	else
		echo "ok: $name: $n_missing 'no real' line(s), $n_off 'pacing off' line(s)"
	fi
	if grep -v '^harmonics-nccl: \(no real \|cannot enqueue a host function\)' "$err" | grep -q 'harmonics'; then
		echo "FAIL: $name: other interposer messages"
		rc=1
	fi
}
paced() {
	echo HARMONICS_MODE=harmonics HARMONICS_PERIOD_US=200000 HARMONICS_SHIFT_US=50000 \
		HARMONICS_ORIGIN_US="$(date +%s%6N)" HARMONICS_GUARD_US=10000 HARMONICS_PRIO=1
}
run off 0 HM_TEST_MODE=off
# shellcheck disable=SC2046
run on 0 HM_TEST_MODE=on $(paced)
# shellcheck disable=SC2046
run launch_fail 1 HM_TEST_MODE=launch_fail STANDIN_LAUNCH_FAIL=1 $(paced)
run names 0 HM_TEST_MODE=names
exit $rc
