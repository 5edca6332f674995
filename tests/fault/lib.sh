# shellcheck shell=bash
# What the fault tier's faults share (sourced by tests/fault/run.sh after
# tests/slurm/checks.sh, whose now_us, ms, ctl_json and applied_now it uses):
# time stamps of the tasks' own log lines, the paced jobs, the bounds the docs
# promise and the results table.
#
# Each task's stderr (srun -e) is followed by a watcher that stamps every line
# with the time it appeared (us), into FILE.ts: the runtime logs "is stale ...
# not pacing (fail-open)" at its first burst after its assignment's validity
# ended and "valid again ... pacing resumed" at its first burst after a renewal
# (src/pace/pace.c), so the stamps are the runtime's own fail-open and rejoin
# times, within one iteration (100 ms) plus the watcher's poll (0.1 s).

declare -a F_WATCHERS=()
# Stamp the lines of FILE into FILE.ts as they appear.
watch_err() { # FILE
	: >>"$1"
	(
		tail -F -n +1 -s 0.1 "$1" 2>/dev/null | while IFS= read -r l; do
			printf '%s %s\n' "$(now_us)" "$l"
		done >>"$1.ts"
	) &
	F_WATCHERS+=($!)
}
stop_watchers() {
	local p
	for p in "${F_WATCHERS[@]}"; do
		pkill -P "$p" 2>/dev/null # its tail and loop, by parent id
		kill "$p" 2>/dev/null
	done
	F_WATCHERS=()
}

# The first time (us) after T that a line matching RE appeared in any of FILES' stamps.
first_after() { # RE T FILE...
	local re=$1 t=$2
	shift 2
	local f
	for f in "$@"; do cat "$f.ts" 2>/dev/null; done |
		awk -v t="$t" -v re="$re" '$1 > t && $0 ~ re { if (m == "" || $1 < m) m = $1 } END { if (m != "") print m }'
}
# Lines matching RE that appeared in [A, B) in FILES' stamps.
count_between() { # RE A B FILE...
	local re=$1 a=$2 b=$3
	shift 3
	local f
	for f in "$@"; do cat "$f.ts" 2>/dev/null; done |
		awk -v a="$a" -v b="$b" -v re="$re" '$1 >= a && $1 < b && $0 ~ re { n++ } END { print n + 0 }'
}
# Wait up to SECS for a line matching RE after T; print its time (us) or nothing.
wait_line() { # SECS RE T FILE...
	local secs=$1 re=$2 t=$3 i v
	shift 3
	for ((i = 0; i < secs * 10; i++)); do
		v=$(first_after "$re" "$t" "$@")
		[[ -n $v ]] && { echo "$v"; return 0; }
		sleep 0.1
	done
	return 1
}
STALE='is stale'
RESUMED='pacing resumed'

# Wall-clock waits (hm_wait_for counts polls: slow commands stretch it).
wait_until() { # SECS COMMAND...: poll every 0.1 s until it succeeds or SECS passed
	local end=$(($(now_us) + $1 * 1000000))
	shift
	while (($(now_us) < end)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
# The time (us) of the first line of a daemon's log after T0 matching RE.
log_after() { # FILE RE T0
	local ts
	while IFS= read -r ts; do
		ts=$(date -u -d "$ts" +%s%6N 2>/dev/null) || continue
		((ts > $3)) && { echo "$ts"; return 0; }
	done < <(grep -a -- "$2" "$1" | sed -n 's/^\[\([0-9T:.-]*\)\].*/\1/p')
	return 1
}
# The lines of a daemon's log matching RE stamped in [A, B).
log_lines_between() { # FILE RE A B
	local l ts
	grep -a -- "$2" "$1" | while IFS= read -r l; do
		ts=$(sed -n 's/^\[\([0-9T:.-]*\)\].*/\1/p' <<<"$l")
		ts=$(date -u -d "$ts" +%s%6N 2>/dev/null) || continue
		((ts >= $3 && ts < $4)) && echo "$l"
	done
}
# Milliseconds from T0 to the VALID_UNTIL of FILE: the agent's side of the bound
# (its last renewal before the fault + AgentValidity).
valid_ms_after() { # FILE T0
	local v
	v=$(valid_until "$1")
	[[ -n $v ]] && echo $(((v - $2) / 1000)) || echo none
}

# The results table: one row per fault (| fault | promised | measured | result |).
F_TABLE=
row() { # FAULT PROMISE MEASURED OK(0/1)
	local verdict=PASS
	(($4)) || verdict=FAIL
	F_TABLE+="| $1 | $2 | $3 | $verdict |"$'\n'
	if (($4)); then pass "$1: $3"; else fail "$1" "$3 (promised: $2)"; fi
}

# Paced jobs: harmonics-emujob steps under srun, one task per node, each
# task's stderr stamped. job_start NAME NODES PORT [RDV_ADDR] [USER]
declare -A F_JOB_PID=() F_JOB_ID=()
job_start() {
	local name=$1 nodes=$2 port=$3 addr=${4:-127.0.0.1} user=${5:-root} pre=()
	[[ $user == root ]] || pre=(runuser -u "$user" --)
	# The clock shim goes into the tasks on the nodes named in F_SHIM_NODES.
	"${pre[@]}" srun -J "$name" -w "$nodes" -N2 -n2 --chdir=/tmp --comm-sched=harmonics \
		--comm-profile="$F_PROFILE" -o "$F_OUT/$name-%t.out" -e "$F_OUT/$name-%t.err" \
		bash -c "[[ \" $F_SHIM_NODES \" == *\" \$SLURMD_NODENAME \"* ]] &&
			export LD_PRELOAD=$F_SHIM HM_TIMESHIFT_FILE=$F_SHIFT_FILE
			exec $EJ --rendezvous $addr:$port --compute 60ms --bytes 1MB --iterations 1000000 --warmup 0 --timeout 30s" \
		>"$F_OUT/$name.srun" 2>&1 &
	F_JOB_PID[$name]=$!
	watch_err "$F_OUT/$name-0.err"
	watch_err "$F_OUT/$name-1.err"
}
# Only the sruns (no Slurm call): while slurmctld is frozen squeue waits its
# MessageTimeout, and without munged it fails.
sruns_alive() { # NAME...
	local n
	for n in "$@"; do kill -0 "${F_JOB_PID[$n]}" 2>/dev/null || return 1; done
}
job_id_of() { squeue -h -n "$1" -o %i | head -1; }
job_running() { [[ -n $1 && $(squeue -h -j "$1" -t R -o %i 2>/dev/null) == "$1" ]]; }
# Every job named runs (by Slurm) and its srun is alive.
jobs_alive() { # NAME...
	local n
	for n in "$@"; do
		job_running "${F_JOB_ID[$n]:-}" && kill -0 "${F_JOB_PID[$n]}" 2>/dev/null || return 1
	done
}
# The task of job NAME on rank R: its pid (from its report file), its assign file.
task_pid() { sed -n 's/^PID=//p' "$F_RUN/$2/job.${F_JOB_ID[$1]}/report.0.$3" 2>/dev/null; } # NAME NODE RANK
assign_of() { echo "$F_RUN/$2/job.${F_JOB_ID[$1]}/assign"; }                              # NAME NODE
valid_until() { sed -n 's/^HARMONICS_VALID_UNTIL_US=//p' "$1" 2>/dev/null; }
# The file was renewed and has not lapsed yet.
file_renewed() { local v; v=$(valid_until "$1"); [[ -n $v ]] && (($(now_us) < v)); } # FILE
period_of() { sed -n 's/^HARMONICS_PERIOD_US=//p' "$1" 2>/dev/null; }
# The file lets its steps run free now: lapsed, off, or no period.
file_free() { # FILE
	local v p
	v=$(valid_until "$1") p=$(period_of "$1")
	[[ -z $v ]] || (($(now_us) > v)) || [[ -z $p || $p == 0 ]]
}
# Milliseconds from T0 until every file lets its steps run free (polled), or "none".
wait_free() { # SECS T0 FILE...
	local secs=$1 t0=$2 i f all
	shift 2
	for ((i = 0; i < secs * 20; i++)); do
		all=1
		for f in "$@"; do file_free "$f" || { all=0; break; }; done
		((all)) && { echo $((($(now_us) - t0) / 1000)); return 0; }
		sleep 0.05
	done
	echo none
}

# Daemons.
slurmd_pid() { echo "${HM_PIDS[slurmd-$1]:-}"; }
kill_slurmd() { # NODE: SIGKILL, reaped
	local p
	p=$(slurmd_pid "$1")
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unset "HM_PIDS[slurmd-$1]"
}
node_state() { ctl_json nodes | jq -r --arg n "$1" '.nodes[] | select(.node == $n) | .state'; }
rack_leader() { ctl_json racks | jq -r --arg r "$1" '.racks[] | select(.name == $r) | .leader // "-"'; }
all_up() { [[ $(ctl_json nodes | jq '[.nodes[] | select(.state == "up")] | length') == "$HM_NODES" ]]; }
# Job NAME's steps report the decided epoch (the coordinator's view).
named_applied() { applied_now "${F_JOB_ID[$1]:-}"; }
export -f ctl_json node_state rack_leader all_up applied_now
