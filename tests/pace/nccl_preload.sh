#!/bin/sh
# The NCCL interposer under LD_PRELOAD against the STAND-IN NCCL/CUDA library,
# three runs: pacing off; pacing on with priority class 1 (TC/SL exported);
# pacing on with the user's own NCCL_IB_TC (kept). Skips (77) when the
# interposer was not built (no nccl.h at configure time).
set -u
b=${top_builddir:-.}
so="$b/src/pace/.libs/libharmonics-nccl.so"
t="$b/tests/pace/test_nccl_interposer"
if [ ! -f "$so" ] || [ ! -x "$t" ]; then
	echo "SKIP: $so or $t not built (configure found no nccl.h/cuda_runtime_api.h)"
	exit 77
fi
LD_LIBRARY_PATH="$b/src/pace/.libs:$b/tests/pace/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# Run the real binary, not libtool's shell wrapper: LD_PRELOAD must reach only it.
[ -f "$b/tests/pace/.libs/test_nccl_interposer" ] && t="$b/tests/pace/.libs/test_nccl_interposer"
# A sanitizer build: the ASan runtime must come first in the preload list.
pre="$so"
if readelf -d "$so" 2>/dev/null | grep -q 'libasan'; then
	asan=$(${CC:-gcc} -print-file-name=libasan.so 2>/dev/null)
	[ -f "$asan" ] && pre="$asan $so"
fi
clean_env() {
	env -u HARMONICS_MODE -u HARMONICS_PERIOD_US -u HARMONICS_SHIFT_US \
		-u HARMONICS_ORIGIN_US -u HARMONICS_GUARD_US -u HARMONICS_PRIO \
		-u HARMONICS_ASSIGN_FILE -u HARMONICS_REPORT_FILE -u HARMONICS_VALID_UNTIL_US \
		-u NCCL_IB_TC -u NCCL_IB_SL "$@"
}
paced() {
	clean_env HARMONICS_MODE=harmonics HARMONICS_PERIOD_US=200000 HARMONICS_SHIFT_US=50000 \
		HARMONICS_ORIGIN_US="$(date +%s%6N)" HARMONICS_GUARD_US=10000 HARMONICS_PRIO=1 \
		HM_TEST_PACING=on "$@"
}
rc=0
echo "== pacing off"
clean_env HM_TEST_PACING=off HM_TEST_EXPECT_TC=unset HM_TEST_EXPECT_SL=unset \
	LD_PRELOAD="$pre" "$t" || rc=1
echo "== pacing on, priority class 1 -> NCCL_IB_TC=136 (AF41), NCCL_IB_SL=1"
paced HM_TEST_EXPECT_TC=136 HM_TEST_EXPECT_SL=1 LD_PRELOAD="$pre" "$t" || rc=1
echo "== pacing on, user NCCL_IB_TC=99 is kept"
paced NCCL_IB_TC=99 HM_TEST_EXPECT_TC=99 HM_TEST_EXPECT_SL=1 LD_PRELOAD="$pre" "$t" || rc=1
exit $rc
