#!/bin/bash
# libnccl-profiler-harmonics.so as NCCL loads it, driven by test_nccl_profiler's
# STAND-IN driver (no NCCL, no GPU): it exports exactly ncclProfiler_v5 and
# ncclProfiler_v4; then one run per case, each in a process of its own since the
# plugin loads its chained plugin once: measure (no chain), chain (the STAND-IN
# chained plugin, libnccl-profiler-standin.so), missing (a chained plugin that
# cannot be loaded: one line, measurement goes on), off (no assignment: a pure
# forwarder to the chained plugin).
set -u
b=${top_builddir:-.}
so="$b/src/pace/.libs/libnccl-profiler-harmonics.so"
standin="$b/tests/pace/.libs/libnccl-profiler-standin.so"
t="$b/tests/pace/test_nccl_profiler"
for f in "$so" "$standin" "$t"; do
	[ -e "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
LD_LIBRARY_PATH="$b/src/pace/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
got=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort | tr '\n' ' ')
if [ "$got" != "ncclProfiler_v4 ncclProfiler_v5 " ]; then
	echo "FAIL: exports '$got', want exactly ncclProfiler_v4 and ncclProfiler_v5"
	rc=1
else
	echo "ok: exports $got"
fi
clean_env() {
	env -u HARMONICS_MODE -u HARMONICS_PERIOD_US -u HARMONICS_ASSIGN_FILE \
		-u HARMONICS_REPORT_FILE -u HARMONICS_NCCL_PROFILER_CHAIN -u NCCL_PROFILER_PLUGIN \
		HM_PROF_PLUGIN="$so" HARMONICS_NCCL_GAP_US=1000 "$@"
}
measuring() {
	clean_env HARMONICS_ASSIGN_FILE="$tmp/assign" HARMONICS_REPORT_FILE="$tmp/report" "$@"
}
echo "== measure: two communicators, the cross-node one fed to the runtime and its report"
measuring HM_PROF_CASE=measure "$t" || rc=1
echo "== chain: every call forwarded to the STAND-IN chained plugin"
measuring HM_PROF_CASE=chain HARMONICS_NCCL_PROFILER_CHAIN="$standin" "$t" || rc=1
echo "== missing chained plugin: one line, measurement goes on"
measuring HM_PROF_CASE=missing HARMONICS_NCCL_PROFILER_CHAIN="$tmp/libnccl-profiler-gone.so" \
	"$t" 2>"$tmp/err" || rc=1
cat "$tmp/err"
n=$(grep -c '^harmonics-profiler: ' "$tmp/err")
if [ "$n" != 1 ] || ! grep -q "HARMONICS_NCCL_PROFILER_CHAIN=$tmp/libnccl-profiler-gone.so cannot be loaded" "$tmp/err"; then
	echo "FAIL: want exactly one 'cannot be loaded' line from the plugin, got $n"
	rc=1
fi
echo "== off (no assignment): a pure forwarder"
clean_env HM_PROF_CASE=off HARMONICS_NCCL_PROFILER_CHAIN="$standin" "$t" || rc=1
exit $rc
