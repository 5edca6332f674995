#!/bin/bash
# The NCCL interposer under LD_PRELOAD against the STAND-IN NCCL/CUDA library:
# it exports exactly the collective, group and communicator-creation entry points
# of the nccl.h it was built against (plus destroy/abort); then four runs: pacing
# off; pacing on with priority class 1 (TC/SL exported); pacing on with the user's
# own NCCL_IB_TC (kept); pacing on, communicators created only with a config (the
# class goes into trafficClass, no variable is exported). Skips (77) when the
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
# Every entry point of nccl.h that takes a stream, creates a communicator or
# closes a group is exported (wrapped); nothing else but destroy/abort.
hdr=$(sed -n 's/^NCCL_CPPFLAGS = .*-\(isystem \|I\)\([^ ]*\).*/\2/p' "$b/Makefile" 2>/dev/null)/nccl.h
if [ -f "$hdr" ]; then
	want=$(awk '/^ncclResult_t +nccl[A-Za-z]+\(/ { p = 1; s = "" }
		p { s = s $0; if ($0 ~ /;/) { print s; p = 0 } }' "$hdr" |
		grep -E 'cudaStream_t|ncclComm(Init[A-Za-z]*|Split|Shrink)\(|ncclGroup(Start|End|SimulateEnd)\(' |
		sed 's/^ncclResult_t *\(nccl[A-Za-z]*\)(.*/\1/' | sort -u)
	want=$(printf '%s\nncclCommAbort\nncclCommDestroy\n' "$want" | sort -u)
	got=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort -u)
	if [ "$want" != "$got" ]; then
		echo "FAIL: exported symbols differ from nccl.h's entry points ($hdr):"
		diff <(echo "$want") <(echo "$got")
		rc=1
	else
		echo "ok: exports the $(echo "$got" | wc -l) entry points of $hdr:" $got
	fi
else
	echo "note: nccl.h not found from $b/Makefile; export check skipped"
fi
echo "== pacing off"
clean_env HM_TEST_PACING=off HM_TEST_EXPECT_TC=unset HM_TEST_EXPECT_SL=unset \
	LD_PRELOAD="$pre" "$t" || rc=1
echo "== pacing on, priority class 1 -> NCCL_IB_TC=136 (AF41), NCCL_IB_SL=2 (SL 0 is unmarked traffic's)"
paced HM_TEST_EXPECT_TC=136 HM_TEST_EXPECT_SL=2 LD_PRELOAD="$pre" "$t" || rc=1
echo "== pacing on, user NCCL_IB_TC=99 is kept"
paced NCCL_IB_TC=99 HM_TEST_EXPECT_TC=99 HM_TEST_EXPECT_SL=2 LD_PRELOAD="$pre" "$t" || rc=1
echo "== pacing on, only communicators with a config: trafficClass, no NCCL_IB_TC/SL"
paced HM_TEST_CONFIG_ONLY=1 LD_PRELOAD="$pre" "$t" || rc=1
exit $rc
