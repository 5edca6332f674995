#!/usr/bin/env bash
# Sets everything up (packages, build) and runs every test tier:
#   unit      cmocka unit tests (make check), munged running
#   cli       harmonics-sim and friends end to end (tests/cli/run.sh)
#   sanitize  the unit tests again under ASan/UBSan (separate build dir)
#   distcheck make distcheck (the release tarball builds and passes its tests)
#   fuzz      every parser under libFuzzer with ASan/UBSan for a bounded time: the
#             configuration, topology, trace and wire parsers (scripts/fuzz.sh), the
#             runtime's assign and report files (tests/pace/fuzz.sh), the node
#             agent's messages (tests/agent/fuzz.sh)
#   pace      pacing runtime tiers that need root (tests/pace/run.sh, tests/emulation/run.sh)
#   slurm     a real one-machine Slurm cluster (tests/slurm/run.sh), the live loop
#             on it: node agents, running steps, outages (tests/slurm/live.sh),
#             contention-aware placement on 4 racks x 3 nodes (tests/slurm/place.sh),
#             rack leaders: election, takeover, no flap (tests/slurm/leaders.sh),
#             racks rejoining after a cut (tests/slurm/rejoin.sh), and Harmonics
#             disabled, never Slurm stopped, by a bad harmonics.conf or a busy port
#             (tests/slurm/failopen.sh), heterogeneous jobs and a daemonized
#             slurmd (tests/slurm/hetjob.sh); a PyTorch job's running step following a new
#             decision, its period in harmonicsctl (tests/slurm/torch_live.sh); run
#             like a site: stand-in GPUs in gres.conf, /metrics, textfiles, --explain
#             (tests/slurm/site.sh); a backup slurmctld taking over, its coordinator
#             from StateSaveLocation, the agents back (tests/slurm/backup.sh);
#             Slurm's own regression tests for reservations, backfill and job
#             arrays on plain Slurm and with Harmonics, none passing only without
#             (tests/slurm/regress.sh, short form; HM_REGRESS_FORM=full: all)
#   packages  make deb, the packages' layout and Slurm pinning, installed with
#             dpkg -i, tests/slurm/run.sh against the installed files, purged
#             (tests/packages/run.sh)
#   fault     faults injected into the one-machine cluster under paced jobs, each
#             checked against the documented bound (tests/fault/run.sh --short;
#             --full is the whole matrix and regenerates docs/reliability.md)
#   releases  the Slurm plugins built against every Slurm release with a source here
#             (22.05 to 26.05, scripts/slurm-tree.sh), each .so checked for that
#             release: plugin_version, plugin_id, loader symbols, undefined symbols
#             (tests/slurm/matrix.sh; HM_MATRIX_RELEASES picks some)
#   runtime   Slurm 26.05 built from source into a private prefix (cached), the
#             plugins built against it, and the core checks on a cluster of it:
#             run.sh, live.sh, place.sh, leaders.sh, hetjob.sh, topo_planes.sh (runtime.sh;
#             HM_RUNTIME_CHECKS picks some, HM_RUNTIME_RELEASE another release)
#   testbed   priority classes on shaped links, and a short emulated testbed through
#             Slurm against the simulator, with emulated and real PyTorch jobs
#             (tests/testbed/run.sh; scripts/testbed.sh)
# Usage: scripts/check.sh [TIER ...]   (default: all tiers)
# Ends with one line "check: N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
all=(unit cli sanitize fuzz distcheck pace slurm packages fault releases runtime testbed)
tiers=("$@")
((${#tiers[@]})) || tiers=("${all[@]}")

passed=0 failed=0 skipped=0
failed_names=()
log_dir=$top/build/check-logs

run_tier() { # name command...
	local name=$1 rc start
	shift
	start=$(date +%s)
	echo "=== tier $name"
	"$@"
	rc=$?
	local dur=$(($(date +%s) - start))
	case $rc in
	0) passed=$((passed + 1)); echo "=== tier $name: passed (${dur}s)" ;;
	77) skipped=$((skipped + 1)); echo "=== tier $name: skipped (${dur}s)" ;;
	*) failed=$((failed + 1)); failed_names+=("$name"); echo "=== tier $name: FAILED rc=$rc (${dur}s)" ;;
	esac
}

# Prints the logs automake's harness keeps for failed tests.
show_failed_logs() { # builddir
	local f
	for f in $(grep -rl --include='*.trs' -E ':test-result: (FAIL|ERROR)' "$1" 2>/dev/null); do
		echo "--- ${f%.trs}.log"
		tail -n 60 "${f%.trs}.log"
	done
}

# make check in a build dir with munged up; prints the summary lines matching
# PATTERN and, on failure, the failed tests' logs.  make_check DIR LOG PATTERN
make_check() {
	local dir=$1 log=$log_dir/$2.log rc
	scripts/munge-up.sh || return 1
	make -C "$dir" -s -j"$(nproc)" check >"$log" 2>&1
	rc=$?
	grep -E "$3" "$log"
	((rc == 0)) || { show_failed_logs "$dir"; tail -n 30 "$log"; }
	return $rc
}

tier_unit() {
	make_check build unit '^(# |PASS|FAIL|ERROR|SKIP|XFAIL)'
}

tier_cli() {
	tests/cli/run.sh "$top/build"
}

tier_sanitize() {
	HM_CONFIGURE_ARGS="--enable-sanitizers" scripts/build.sh "$top/build-asan" >/dev/null || return 1
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		make_check build-asan sanitize '^(# |FAIL|ERROR)'
}

tier_distcheck() {
	make -C build -s distcheck >"$log_dir/distcheck.log" 2>&1
	local rc=$?
	tail -n 5 "$log_dir/distcheck.log"
	((rc == 0)) || tail -n 60 "$log_dir/distcheck.log"
	return $rc
}

tier_fuzz() { # the parser fuzzer, then the runtime's and the agent's, shorter
	local rc=0 r s
	for s in "scripts/fuzz.sh ${HM_FUZZ_SECONDS:-60}" "tests/pace/fuzz.sh ${HM_FUZZ_SUB_SECONDS:-10}" \
		"tests/agent/fuzz.sh ${HM_FUZZ_SUB_SECONDS:-10}"; do
		# shellcheck disable=SC2086
		$s
		r=$?
		((r == 77)) && return 77 # no libFuzzer: the whole tier is skipped
		((r == 0)) || rc=$r
	done
	return $rc
}

tier_scripts() { # run each existing script; 77 when none exists
	local any=0 rc=0 s
	for s in "$@"; do
		[[ -x $s ]] || continue
		any=1
		"$s" "$top/build"
		local r=$?
		((r == 77)) && continue
		((r == 0)) || rc=$r
	done
	((any)) || return 77
	return $rc
}

echo "=== setup"
scripts/deps.sh || exit 1
scripts/build.sh "$top/build" || exit 1
mkdir -p "$log_dir"

for t in "${tiers[@]}"; do
	case $t in
	unit) run_tier unit tier_unit ;;
	cli) run_tier cli tier_cli ;;
	sanitize) run_tier sanitize tier_sanitize ;;
	distcheck) run_tier distcheck tier_distcheck ;;
	fuzz) run_tier fuzz tier_fuzz ;;
	pace) run_tier pace tier_scripts tests/pace/run.sh tests/emulation/run.sh ;;
	slurm) run_tier slurm tier_scripts tests/slurm/run.sh tests/slurm/live.sh tests/slurm/place.sh tests/slurm/leaders.sh \
		tests/slurm/rejoin.sh tests/slurm/failopen.sh tests/slurm/hetjob.sh tests/slurm/torch_live.sh \
		tests/slurm/nccl_standin.sh tests/slurm/site.sh tests/slurm/backup.sh tests/load/ctld_load_short.sh \
		tests/slurm/regress.sh ;;
	packages) run_tier packages tier_scripts tests/packages/run.sh ;;
	fault) run_tier fault tier_scripts tests/fault/run.sh ;;
	releases) run_tier releases tier_scripts tests/slurm/matrix.sh ;;
	runtime) run_tier runtime tier_scripts tests/slurm/runtime.sh ;;
	testbed) run_tier testbed tier_scripts tests/testbed/run.sh ;;
	*) echo "check: unknown tier '$t'; accepted: ${all[*]}" >&2; exit 2 ;;
	esac
done

((failed)) && echo "check: failed tiers: ${failed_names[*]}"
echo "check: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
