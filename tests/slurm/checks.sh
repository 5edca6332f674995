# shellcheck shell=bash
# What every Slurm-tier script shares (run.sh, live.sh, leaders.sh, place.sh,
# failopen.sh): its arguments, the root check, PASS/FAIL lines, the summary and
# job queries. Sourced first:
#   . "$(dirname "$0")/checks.sh"
#   hm_tier_begin NAME "why it needs root" "$@"   # sets build; exits 77 unless root
#   ... check "what" COMMAND ...; pass/fail/say ...
#   hm_tier_end [COMMAND ...]                     # exits 0, or 1 after a failure
# It sources cluster.sh and sets here and top; hm_tier_begin sets the EXIT trap
# that tears the cluster down.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/slurm/cluster.sh
. "$here/cluster.sh"

hm_tier_begin() { # NAME WHY_ROOT [BUILD_DIR]
	hm_tier=$1
	build=$(cd "${3:-$top/build}" 2>/dev/null && pwd) || { echo "$1: no build dir ${3:-$top/build}" >&2; exit 1; }
	if ((EUID != 0)); then
		echo "$1: SKIP: $2" >&2
		exit 77
	fi
	hm_t_start=$(date +%s.%N)
	npass=0 nfail=0
	failed=()
	trap 'hm_cluster_down' EXIT
	trap 'exit 130' INT TERM
}

# hm_tier_cluster_up WHAT [--no-db]: the cluster up and PASS "cluster up: WHAT,
# coordinator on :PORT (Ns)", or FAIL and exit 1 keeping its directory.
hm_tier_cluster_up() {
	local what=$1
	shift
	if ! hm_cluster_up "$build" "$@"; then
		fail "cluster up"
		HM_KEEP=1
		exit 1
	fi
	pass "cluster up: $what, coordinator on :$HM_PORT (${HM_UP_S}s)"
}

pass() { npass=$((npass + 1)); echo "PASS: $1"; }
fail() {
	nfail=$((nfail + 1)); failed+=("$1")
	echo "FAIL: $1${2:+: $2}"
}
# check NAME COMMAND...: pass when the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
say() { echo "    $*"; }

# Jobs as scontrol shows them.
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_state() { # job state secs
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[[ $(job_state "$1") == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}
admin_comment() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *AdminComment=//p'; }
job_id_of() { squeue -h -n "$1" -o %i | head -1; }

# Jobs as harmonicsctl shows them: ctl_json [COMMAND...] (default jobs) --json;
# job_q ID JQ_EXPR over its entry;
# applied_now ID [EPOCH]: its applied epoch is its decided one (> EPOCH if given).
ctl_json() { "$HM_CTL" --json --timeout 2s "${@:-jobs}" 2>/dev/null; }
job_q() { ctl_json jobs | jq -r --argjson j "$1" ".jobs[] | select(.job_id == \$j) | $2"; }
applied_now() {
	ctl_json jobs | jq -e --argjson j "$1" --argjson e "${2:--1}" \
		'.jobs[] | select(.job_id == $j) | .applied_epoch != null and .applied_epoch == .decided_epoch and .decided_epoch > $e' >/dev/null
}
now_us() { date +%s%6N; }
ms() { awk -v d="$1" 'BEGIN { printf "%.0f", d / 1000 }'; } # us -> ms

# The summary line. After a failure: the names, the cluster's directory kept,
# and COMMAND's output (default: the last 30 lines of slurmctld's log).
hm_tier_end() {
	echo "=== $hm_tier tier: $npass passed, $nfail failed in $(hm_since "$hm_t_start")s"
	((nfail == 0)) && exit 0
	printf '  failed: %s\n' "${failed[@]}"
	HM_KEEP=1
	if (($#)); then "$@"; else tail -n 30 "$HM_DIR/log/slurmctld.log"; fi
	exit 1
}
