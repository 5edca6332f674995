#!/usr/bin/env bash
# Slurm's own regression tests for reservations, backfill and job arrays, run on
# the one-machine cluster (tests/slurm/cluster.sh) in up to three runs, each on a
# fresh cluster:
#   plain      plain Slurm: select/cons_tres, sched/backfill, no job_submit plugin,
#              no SPANK plugin, Harmonics' plugins not in PluginDir;
#   harmonics  the Harmonics plugins configured (job_submit/harmonics hosting the
#              coordinator, select/harmonics_cons_tres, harmonics.so and the node
#              agents), the tests' jobs as submitted (no --comm-sched);
#   comm       the same cluster, and every job the tests submit is a --comm-sched
#              job (HARMONICS_COMM_SCHED=auto and a profile in their environment):
#              decided by the coordinator, placed by the select wrapper, its steps
#              registered (the run fails if no job was scheduled so).
# It fails when a test that passes on plain Slurm does not pass in a Harmonics
# run (fails, times out or is skipped); a test that fails or is skipped on plain
# Slurm too is reported, not failed.
#
# The tests are those of the installed release's source (scripts/slurm-source.sh:
# Debian's 22.05.8 has testsuite/expect and testsuite/python), copied into a
# private directory per run; Slurm's own harness decides pass, fail and skip
# (a test needing what this cluster lacks skips itself). Every run gets the same
# two settings the tests ask for: SchedulerParameters=bf_interval=5 (test7.22
# waits 3 and 5 backfill intervals) and MinJobAge=60 (test28.12 skips above 60).
# The copy's check_config_select treats select/harmonics_cons_tres as cons_tres
# (it compares SelectType literally, where Slurm itself asks the plugin_id;
# HM_REGRESS_ALIAS=0 leaves it as shipped: test3.11's core reservation subtests
# then skip with Harmonics). A pseudo-test "corecnt" creates a CoreCnt=2
# reservation with scontrol in every run.
#
# Usage: tests/slurm/regress.sh [--short|--full] [BUILD_DIR]
#   --short (default; scripts/check.sh slurm) the runs plain and comm, a subset
#           that takes seconds per test, without the accounting database;
#   --full  the three runs, every test of the three areas, with slurmdbd
#           (test3.11, 55 reservation subtests, takes about 3.5 min per run,
#           test8.12 about 7; test28.12 waits 65 s)
# Env: HM_REGRESS_FORM (short or full: the option's default), HM_REGRESS_TESTS
#      (test names replacing the set: corecnt testN.M py:PATH), HM_REGRESS_MODES
#      (the runs, default "plain comm", --full "plain harmonics comm"), HM_REGRESS_TIMEOUT
#      (seconds per test, default 300, --full 900), HM_REGRESS_SRC (a Slurm source tree with
#      testsuite/), HM_KEEP=1 (keep the clusters' and the tests' directories).
# Exit: 0 no test regressed with Harmonics, 1 one did (or a cluster did not come
# up), 77 skipped (not root, no expect/pytest-3, no testsuite).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
form=${HM_REGRESS_FORM:-short}
while (($#)); do
	case $1 in
	--short | --full) form=${1#--}; shift ;;
	-h | --help) sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "regress: unknown option '$1' (accepted: --short, --full, BUILD_DIR)" >&2; exit 2 ;;
	*) break ;;
	esac
done
build=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "regress: no build dir ${1:-$top/build}" >&2; exit 1; }
skip() { echo "regress: SKIP: $*" >&2; exit 77; }
((EUID == 0)) || skip "needs root (Slurm daemons, munge, private MariaDB)"
command -v expect >/dev/null || skip "expect is not installed (scripts/deps.sh)"
command -v pytest-3 >/dev/null || skip "pytest-3 is not installed (python3-pytest; scripts/deps.sh)"

# Reservations (test3.x, test8.x), backfill (test7.22), job arrays (test28.x, the
# array of hetjobs refused by backfill in test38.13, sacct's array records in
# test12.9) and the python testsuite's files for the same areas.
short_set="corecnt test3.14 test7.22 test28.1 test28.3 test28.5
	py:tests/features/job_arrays/test_basics.py"
full_set="corecnt test3.11 test3.14 test3.15 test8.12 test8.13 test8.14 test7.22
	test28.1 test28.2 test28.3 test28.4 test28.5 test28.6 test28.7 test28.8 test28.9
	test28.10 test28.11 test28.12 test28.13 test38.13 test12.9
	py:tests/features/job_arrays/test_basics.py py:tests/features/reservations/test_flags.py"
if [[ -n ${HM_REGRESS_TESTS:-} ]]; then
	read -r -a tests <<<"$HM_REGRESS_TESTS"
elif [[ $form == full ]]; then
	read -r -d '' -a tests <<<"$full_set"
else
	read -r -d '' -a tests <<<"$short_set"
fi
modes_default="plain comm"
[[ $form == full ]] && modes_default="plain harmonics comm"
[[ $form == short || $form == full ]] || { echo "regress: HM_REGRESS_FORM=$form (accepted: short, full)" >&2; exit 2; }
read -r -a modes <<<"${HM_REGRESS_MODES:-$modes_default}"
# Only test12.9 (sacct) needs the accounting database: the short form runs without.
nodb=
[[ $form == short && -z ${HM_REGRESS_TESTS:-} ]] && nodb=--no-db
for m in "${modes[@]}"; do
	case $m in plain | harmonics | comm) ;; *) echo "regress: mode '$m' (accepted: plain, harmonics, comm)" >&2; exit 2 ;; esac
done
# test8.12 (FLEX reservations) waits for 100 s jobs: about 7 min on a loaded machine.
tmo_default=300
[[ $form == full ]] && tmo_default=900
tmo=${HM_REGRESS_TIMEOUT:-$tmo_default}
[[ $tmo =~ ^[1-9][0-9]*$ ]] || { echo "regress: HM_REGRESS_TIMEOUT=$tmo (accepted: seconds, a positive integer)" >&2; exit 2; }

# The installed release's source tree and its configured build tree (a private
# Slurm, HM_SLURM_PREFIX, needs its own: from 23.02 the tarballs have no testsuite).
[[ -n ${HM_SLURM_PREFIX:-} && -z ${HM_REGRESS_SRC:-} ]] &&
	skip "HM_SLURM_PREFIX=$HM_SLURM_PREFIX: set HM_REGRESS_SRC to a source tree of that release with testsuite/expect"
if [[ -n ${HM_REGRESS_SRC:-} ]]; then
	src=$HM_REGRESS_SRC sbuild=$HM_REGRESS_SRC
else
	sbuild=$("$top/scripts/slurm-source.sh" --quiet) || skip "no Slurm source of the installed release (scripts/slurm-source.sh)"
	src=$(dirname "$sbuild")/src
fi
[[ -f $src/testsuite/expect/globals && -d $src/testsuite/python/lib ]] ||
	skip "$src has no testsuite/expect and testsuite/python (Slurm releases from 23.02 ship neither in their tarballs)"

# shellcheck source=tests/slurm/cluster.sh
. "$here/cluster.sh"
work=$(mktemp -d /tmp/hm-regress.XXXXXX)
chmod 755 "$work"
t_start=$(date +%s.%N)

# slurm.conf of both runs, before the daemons start (HM_BEFORE_DAEMONS).
conf_common() {
	sed -i 's/^MinJobAge=.*/MinJobAge=60/' "$SLURM_CONF"
	echo "SchedulerParameters=bf_interval=5" >>"$SLURM_CONF"
}
conf_plain() { # plain Slurm: Slurm's own plugins only, Harmonics' not in PluginDir
	conf_common
	: >"$HM_DIR/etc/plugstack-none.conf"
	sed -i -e 's|^SelectType=.*|SelectType=select/cons_tres|' -e '/^JobSubmitPlugins=/d' \
		-e 's|^SchedulerType=.*|SchedulerType=sched/backfill|' -e "s|^PluginDir=.*|PluginDir=$HM_SYS_PLUGINDIR|" \
		-e "s|^PlugStackConfig=.*|PlugStackConfig=$HM_DIR/etc/plugstack-none.conf|" "$SLURM_CONF"
}

# A private copy of Slurm's testsuite pointing at this cluster.  setup_suite DIR
setup_suite() {
	local d=$1 gl
	mkdir -p "$d"
	cp -a "$src/testsuite/expect" "$src/testsuite/python" "$d/" || return 1
	cat >"$d/testsuite.conf" <<-CONF
		SlurmSourceDir=$src
		SlurmBuildDir=$sbuild
		SlurmInstallDir=${HM_SLURM_PREFIX:-/usr}
		SlurmConfigDir=$HM_DIR/etc
	CONF
	cat >"$d/expect/globals.local" <<-'CONF'
		set testsuite_colorize false
		set testsuite_cleanup_on_failure true
	CONF
	[[ ${HM_REGRESS_ALIAS:-1} == 0 ]] && return 0
	# The harness compares SelectType literally; Slurm asks the plugin_id, which
	# is cons_tres' to Slurm for the wrapper (README, support matrix).
	gl=$d/expect/globals
	sed -i '/^proc check_config_select/,/^}/s|^\tset select_type \[get_config_param "SelectType"\]$|&\n\tif {$select_type eq "select/harmonics_cons_tres"} { set select_type "select/cons_tres" }|' "$gl"
	grep -q 'select/harmonics_cons_tres' "$gl" || { echo "regress: cannot patch check_config_select in $gl" >&2; return 1; }
}

# No jobs or reservations left over from the previous test, and every node
# idle and responding: tests size their jobs by the nodes sinfo shows "idle"
# at their start (test7.22: -N idle-1, then expects no room to backfill), so a
# node still completing, or "idle*" (test3.14 drains two nodes and resumes
# them, not responding until slurmctld's next ping), failed them at random, on
# plain Slurm as with Harmonics (n2 and n3 "idle*" in both runs of one CI).
not_idle() { sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 != "idle"'; }
all_idle() { [[ -z $(not_idle) ]]; }
tidy() {
	local r
	scancel --quiet --user=root 2>/dev/null
	hm_wait_s 30 bash -c '[[ -z $(squeue -h -t R,CG,PD -o %i 2>/dev/null) ]]'
	for r in $(scontrol -o show reservation 2>/dev/null | sed -n 's/^ReservationName=\([^ ]*\).*/\1/p'); do
		scontrol delete ReservationName="$r" >/dev/null 2>&1
	done
	hm_wait_s 30 all_idle || echo "regress: nodes not idle 30 s after the test: $(not_idle | tr '\n' ' ')"
}

# The CoreCnt reservation: scontrol accepts it only for cons_tres' plugin_id.
corecnt() {
	scontrol create reservation ReservationName=hm_regress_cores StartTime=now Duration=5 \
		Users=root Nodes=n8 CoreCnt=2 &&
		scontrol show reservation hm_regress_cores | grep -q 'CoreCnt=2' &&
		scontrol delete ReservationName=hm_regress_cores
}

# result NAME STATUS SECONDS DETAIL: a line of the run's results.tsv.
result() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$res"; }

run_expect() { # TEST
	local t=$1 log=$logs/$1.log t0 rc st detail
	t0=$(date +%s.%N)
	(cd "$suite/expect" && timeout -k 10 "$tmo" expect -f "./$t" </dev/null >"$log" 2>&1)
	rc=$?
	case $rc in
	0) st=pass ;;
	255) st=skip ;;
	124 | 137) st=fail ;;
	*) st=fail ;;
	esac
	# "Subtests passed : 8 (...)" etc. and the reason a test stopped.
	# and the reason skip or fail gave (logged as "Warning MESSAGE (skip@...").
	detail=$(awk '/Subtests (passed|skipped|failed) *:/ {s = s $2 "=" $4 " "}
		/INCOMPLETE:/ {sub(/.*INCOMPLETE: */, ""); r = $0}
		/\((skip|fail)@globals:/ && !r {x = $0; sub(/^\[[^]]*\] [A-Za-z]+ +/, "", x); sub(/ \((skip|fail)@.*/, "", x); r = x}
		END {printf "%s%s", s, r}' "$log")
	((rc == 124 || rc == 137)) && detail="timed out after ${tmo}s $detail"
	result "$t" "$st" "$(hm_since "$t0")" "$detail"
}

run_python() { # py:PATH
	local f=${1#py:} x t0
	x=$logs/$(basename "$f" .py).xml
	t0=$(date +%s.%N)
	(cd "$suite/python" && SLURM_TESTSUITE_CONF=$suite/testsuite.conf timeout -k 10 "$tmo" \
		pytest-3 -p no:cacheprovider -q --junitxml="$x" "$f" </dev/null >"${x%.xml}.log" 2>&1)
	if [[ ! -s $x ]]; then
		result "$1" fail "$(hm_since "$t0")" "no junit report (log ${x%.xml}.log)"
		return
	fi
	# One line per test case: its name, pass/fail/skip, seconds, the message.
	/usr/bin/python3 - "$x" "$1" >>"$res" <<-'PY'
		import sys, xml.etree.ElementTree as ET
		for tc in ET.parse(sys.argv[1]).iter("testcase"):
		    st, msg = "pass", ""
		    for tag, name in (("failure", "fail"), ("error", "fail"), ("skipped", "skip")):
		        e = tc.find(tag)
		        if e is not None:
		            st, msg = name, (e.get("message") or "").splitlines()[0][:100] if e.get("message") else ""
		            break
		    print(f"{sys.argv[2]}::{tc.get('name')}\t{st}\t{float(tc.get('time', 0)):.1f}\t{msg}")
	PY
}

mode_down() {
	local t0
	t0=$(date +%s.%N)
	hm_cluster_down
	echo "regress: $mode cluster down in $(hm_since "$t0")s"
}

run_mode() { # MODE: one cluster, every test; results in $work/MODE/results.tsv
	local t t0
	mode=$1 # global: the EXIT trap names it
	suite=$work/$mode/suite logs=$work/$mode/logs res=$work/$mode/results.tsv
	mkdir -p "$logs"
	: >"$res"
	if [[ $mode == plain ]]; then
		export HM_CTLD_NO_COORD=1 HM_BEFORE_DAEMONS=conf_plain
	else
		unset HM_CTLD_NO_COORD
		export HM_BEFORE_DAEMONS=conf_common
	fi
	trap mode_down EXIT
	trap 'exit 130' INT TERM # the EXIT trap then tears the cluster down
	hm_cluster_up "$build" $nodb || { echo "regress: $mode cluster did not come up" >&2; HM_KEEP=1; return 1; }
	# comm: every job the tests submit is a --comm-sched job (the options'
	# environment twins, read by sbatch, salloc and srun), scheduled and placed.
	[[ $mode == comm ]] && export HARMONICS_COMM_SCHED=auto HARMONICS_COMM_PROFILE=iter=250ms,comm=40%,bytes=1.2GB
	echo "regress: $mode cluster up in ${HM_UP_S}s: $(scontrol show config |
		awk '/^(SelectType|SchedulerType|JobSubmitPlugins|PlugStackConfig) / {printf "%s=%s ", $1, $3}')"
	setup_suite "$suite" || return 1
	for t in "${tests[@]}"; do
		case $t in
		corecnt) t0=$(date +%s.%N)
			if corecnt >"$logs/corecnt.log" 2>&1; then st=pass; else st=fail; fi
			result corecnt "$st" "$(hm_since "$t0")" "scontrol create reservation CoreCnt=2 Nodes=n8" ;;
		py:*) run_python "$t" ;;
		test*) run_expect "$t" ;;
		*) result "$t" fail 0 "unknown test name (accepted: corecnt, testN.M, py:PATH)" ;;
		esac
		tail -n 1 "$res" | awk -F'\t' -v m="$mode" '{printf "regress: %-9s %-60s %-4s %6ss %s\n", m, $1, $2, $3, $4}'
		tidy
	done
	[[ $mode == comm ]] || return 0
	# The comm run did what it says: its jobs' steps registered with the
	# coordinator as scheduled (slurmctld's log names each job once per step).
	local n
	n=$(sed -n 's/.*: job \([0-9]*\) step .* registered: scheduled$/\1/p' "$HM_DIR/log/slurmctld.log" | sort -u | wc -l)
	echo "regress: comm: $n jobs had steps scheduled by Harmonics (registered: scheduled)"
	# (a chosen set whose jobs never start, such as test28.1's, schedules none)
	((n > 0)) || [[ -n ${HM_REGRESS_TESTS:-} ]] || { echo "regress: comm: no job was scheduled by Harmonics" >&2; return 1; }
}

rc=0
for m in "${modes[@]}"; do
	mkdir -p "$work/$m"
	: >"$work/$m/results.tsv"
	t0=$(date +%s.%N)
	(run_mode "$m") || rc=1
	echo "regress: $m run took $(hm_since "$t0")s"
done

# The table: each test's status and seconds in every run; a regression is a
# test that passes on plain Slurm and not in a run with Harmonics.
what="$form form"
[[ -n ${HM_REGRESS_TESTS:-} ]] && what="chosen tests"
echo "=== Slurm's own regression tests, plain Slurm vs Harmonics ($what, Slurm $(slurmctld -V | awk '{print $2}'))"
files=()
for m in "${modes[@]}"; do files+=("$work/$m/results.tsv"); done
awk -F'\t' -v modes="${modes[*]}" -v cnt="$work/regressed" '
	BEGIN { nm = split(modes, mode, " "); for (a = 1; a < ARGC; a++) idx[ARGV[a]] = a }
	{ k = idx[FILENAME]
	  if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
	  st[$1, k] = $2; sec[$1, k] = $3 }
	END {
		printf "%-62s", "test"; for (k = 1; k <= nm; k++) printf " %-14s", mode[k]; print " verdict"
		for (i = 1; i <= n; i++) {
			t = order[i]; printf "%-62s", t; v = "same"; base = ""
			for (k = 1; k <= nm; k++) {
				s = ((t, k) in st) ? st[t, k] : "-"
				printf " %-14s", s " " (((t, k) in sec) ? sec[t, k] "s" : "")
				if (mode[k] == "plain") base = s
			}
			for (k = 1; k <= nm; k++) {
				s = ((t, k) in st) ? st[t, k] : "-"
				if (mode[k] == "plain" || base == "") continue
				if (base == "pass" && s != "pass") { v = "REGRESSION (" mode[k] ")"; bad++ }
				else if (base != "pass" && s == "pass" && v == "same") v = "passes only with Harmonics"
			}
			if (base == "") v = "-"; else if (base != "pass" && v == "same") v = base " in all runs"
			print " " v
		}
		print bad + 0 > cnt
	}' "${files[@]}"
regressed=$(cat "$work/regressed")
for m in "${modes[@]}"; do
	echo "--- $m: $(awk -F'\t' '{n[$2]++} END {printf "%d passed, %d failed, %d skipped", n["pass"], n["fail"], n["skip"]}' \
		"$work/$m/results.tsv")"
	awk -F'\t' '$2 != "pass" && $4 != "" {printf "    %s %s: %s\n", $1, $2, $4}' "$work/$m/results.tsv"
done
((regressed == 0)) || rc=1
echo "regress: $regressed regressions with Harmonics; total $(hm_since "$t_start")s"
if [[ ${HM_KEEP:-0} == 1 || $rc != 0 ]]; then
	echo "regress: logs kept in $work/MODE/logs"
else
	rm -rf "$work"
fi
exit $rc
