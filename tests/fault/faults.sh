# shellcheck shell=bash
# shellcheck disable=SC2046,SC2015  # task file lists split on purpose (no spaces); A && B || C sets a verdict
# The faults of the fault tier (sourced by tests/fault/run.sh, which has the
# jobs, the bounds and the table helpers of tests/fault/lib.sh). Each fault
# adds one row: what the docs promise, what was measured, PASS or FAIL.

task_files() { # NAME RANK...: the err files of those tasks
	local n=$1 r
	shift
	for r in "$@"; do echo "$F_OUT/$n-$r.err"; done
}
# Milliseconds from T0 to the first line matching RE in the files, or "none" (waited SECS).
stale_after() { # SECS RE T0 FILE...
	local t
	t=$(wait_line "$@") || { echo none; return; }
	echo $(((t - $3) / 1000))
}
le() { [[ $1 =~ ^-?[0-9]+$ ]] && (($1 <= $2)); }
# The last line of FILE's stamps before T matched RE (a state at T).
state_at() { # RE T FILE
	awk -v t="$2" '$1 < t && /is stale|pacing resumed/ { l = $0 } END { print l }' "$3.ts" 2>/dev/null | grep -q -- "$1"
}

# A slurmd killed (-9): its node's tasks run free within the bound, the job
# lives, governed again within REJOIN_S of the restart; for a leader the
# next node of the rack leads at once (the connection closes).
fault_slurmd_kill() { # member|leader NODE JOB RANK
	local kind=$1 node=$2 job=$3 rank=$4 k=${2#n} t0 t1 tk fo fa tl rj lead="" ok=1 rack
	rack=rack$(((k - 1) / HM_RACK_HOSTS + 1))
	echo "=== $kind slurmd killed: kill -9 slurmd of $node (job $job's task $rank)"
	[[ $kind == leader && $(rack_leader "$rack") != "$node" ]] && say "$node does not lead $rack ($(rack_leader "$rack") does)"
	t0=$(now_us)
	kill_slurmd "$node"
	tk=$(now_us) # the agent's last renewal came before this
	fo=$(stale_after 5 "$STALE" "$t0" "$(task_files "$job" "$rank")")
	fa=$(valid_ms_after "$(assign_of "$job" "$node")" "$tk")
	if [[ $kind == leader ]]; then
		tl=$(log_after "$HM_DIR/log/slurmctld.log" "rack $rack: leader " "$t0") && tl=$(ms $((tl - t0))) || tl=none
		lead="the next leader elected ${tl} ms after the kill (slurmctld's log); "
		le "$tl" 1000 || ok=0
	fi
	jobs_alive "$job" || ok=0
	sleep 1
	t1=$(now_us)
	hm_slurmd_start "$k"
	rj=$(wait_line "$REJOIN_S" "$RESUMED" "$t1" "$(task_files "$job" "$rank")") && rj=$(((rj - t1) / 1000)) || rj=none
	le "$fa" "$AV_MS" && le "$fo" "$FO_MS" && le "$rj" $((REJOIN_S * 1000)) || ok=0
	local prom="its file valid at most AgentValidity (${AV_MS} ms) longer, the task free at its next burst (${FO_MS} ms); job lives; governed again within ${REJOIN_S} s of the restart"
	[[ $kind == leader ]] && prom+="; the rack's next node leads at once (1 s)"
	row "kill -9 slurmd of a $kind ($node)" "$prom" \
		"${lead}file valid until +${fa} ms after the signal returned, task free after ${fo} ms; job $job running: $(jobs_alive "$job" && echo yes || echo no); governed ${rj} ms after the restart" "$ok"
}

# A slurmd stopped (SIGSTOP, its connections stay open): the same fail-open;
# a silent leader is replaced within AgentValidity + HeartbeatInterval.
fault_slurmd_stop() { # member|leader NODE JOB RANK
	local kind=$1 node=$2 job=$3 rank=$4 k=${2#n} t0 t1 tk fo fa rj lead="" ok=1 rack p tl
	rack=rack$(((k - 1) / HM_RACK_HOSTS + 1))
	p=$(slurmd_pid "$node")
	echo "=== $kind slurmd stopped: kill -STOP slurmd of $node (job $job's task $rank)"
	[[ $kind == leader && $(rack_leader "$rack") != "$node" ]] && say "$node does not lead $rack ($(rack_leader "$rack") does)"
	t0=$(now_us)
	kill -STOP "$p"
	tk=$(now_us) # the agent's last renewal came before this
	fo=$(stale_after 5 "$STALE" "$t0" "$(task_files "$job" "$rank")")
	fa=$(valid_ms_after "$(assign_of "$job" "$node")" "$tk")
	if [[ $kind == leader ]]; then
		wait_until 5 log_after "$HM_DIR/log/slurmctld.log" "rack $rack: leader " "$t0"
		tl=$(log_after "$HM_DIR/log/slurmctld.log" "rack $rack: leader " "$t0") && tl=$(ms $((tl - t0))) || tl=none
		lead="the next leader elected ${tl} ms after SIGSTOP (slurmctld's log; bound $((AV_MS + HB_MS)) ms from its last frame); "
		le "$tl" $((AV_MS + HB_MS)) || ok=0
	fi
	sleep 2
	jobs_alive "$job" || ok=0
	t1=$(now_us)
	kill -CONT "$p"
	rj=$(wait_line "$REJOIN_S" "$RESUMED" "$t1" "$(task_files "$job" "$rank")") && rj=$(((rj - t1) / 1000)) || rj=none
	le "$fa" "$AV_MS" && le "$fo" "$FO_MS" && le "$rj" $((REJOIN_S * 1000)) || ok=0
	local prom="its file valid at most AgentValidity (${AV_MS} ms) longer, the task free at its next burst (${FO_MS} ms); job lives; governed again within ${REJOIN_S} s of SIGCONT"
	[[ $kind == leader ]] && prom+="; the rack's next node leads within AgentValidity + HeartbeatInterval"
	row "SIGSTOP slurmd of a $kind ($node)" "$prom" \
		"${lead}file valid until +${fa} ms after the signal returned, task free after ${fo} ms; job $job running: $(jobs_alive "$job" && echo yes || echo no); governed ${rj} ms after SIGCONT" "$ok"
}

# The coordinator gone (slurmctld frozen or killed): the cross-rack job A runs
# free within the bound (its files lapse, or the leaders' pushes make it free),
# the racks' local jobs (B, C) stay scheduled by their leaders, every step
# lives; back: every agent up and every job governed by the coordinator again
# within REJOIN_S. Nothing here asks slurmctld while it is away.
ctld_outage() { # TITLE HOW(stop|kill)
	local t0 t1 fo rj ok=1 local_ok=1 f p pa stale_local
	p=${HM_PIDS[slurmctld]}
	pa="$(period_of "$(assign_of A n1)")"
	t0=$(now_us)
	if [[ $2 == stop ]]; then kill -STOP "$p"; else kill -KILL "$p"; wait "$p" 2>/dev/null; unset "HM_PIDS[slurmctld]"; fi
	fo=$(wait_free 5 "$t0" "$(assign_of A n1)" "$(assign_of A n5)")
	sleep 2
	# B and E share n2 in rack1: its leader has rounds to re-solve (C, alone in
	# rack2, has none: its leader has nothing to go on and it runs free).
	for f in "$(assign_of B n2)" "$(assign_of B n3)" "$(assign_of E n2)" "$(assign_of E n4)"; do
		(($(valid_until "$f") > $(now_us))) || local_ok=0 # renewed by their leader
	done
	stale_local=$(count_between "$STALE" "$t0" "$(now_us)" $(task_files B 0 1) $(task_files E 0 1))
	sruns_alive A B C D E || ok=0
	t1=$(now_us)
	if [[ $2 == stop ]]; then kill -CONT "$p"; else hm_ctld_start || ok=0; fi
	local up_ms=none
	wait_until "$REJOIN_S" all_up && up_ms=$(ms $(($(now_us) - t1)))
	local per
	per=$(applied_in_turn "$t1")
	rj=${per%% *} per=${per#* }
	jobs_alive A B C D E || ok=0
	# After the return: nodes the coordinator declared lost (their agents were
	# alive: the stall's grace is there to prevent it) and tasks that went free.
	local t2 lost_n stale_after
	t2=$(now_us)
	lost_n=$(log_lines_between "$HM_DIR/log/slurmctld.log" ": agent lost" "$t1" "$t2" |
		sed -n 's/.*node \([^:]*\): agent lost.*/\1/p' | sort -u | tr '\n' ' ')
	stale_after=$(stale_jobs_between "$t1" "$t2" A B C D E)
	# The verdict: what the docs promise (rejoin: every agent back within
	# REJOIN_S, tests/slurm/rejoin.sh's bound); the jobs' applied epochs are
	# measured, not promised. A job free before the cut (period 0) is free by then.
	[[ $pa == 0 ]] || le "$fo" "$FO_MS" || ok=0
	le "$up_ms" $((REJOIN_S * 1000)) && ((local_ok)) || ok=0
	row "$1" "cross-rack jobs free within ${FO_MS} ms; rack-local jobs of a rack with rounds (B, E in rack1) kept scheduled by its leader; no job lost; every agent back within ${REJOIN_S} s" \
		"A (period_us ${pa:-?} before) free after ${fo} ms; B's and E's files renewed (by rack1's leader) 2 s later: $( ((local_ok)) && echo yes || echo no) (their tasks' stale lines: $stale_local); jobs running: $(jobs_alive A B C D E && echo yes || echo no); all agents up ${up_ms} ms, every job's decided epoch applied ${rj} ms after the return (in turn, ms:${per}); after the return: nodes declared lost $(wc -w <<<"$lost_n")${lost_n:+ (${lost_n% })}, tasks' stale lines ${stale_after}" "$ok"
}
# Stale lines of the jobs' tasks in [A, B): "N" or "N (JOB:N ...)".
stale_jobs_between() { # A B JOB...
	local a=$1 b=$2 j n all=0 per=""
	shift 2
	for j; do
		n=$(count_between "$STALE" "$a" "$b" $(task_files "$j" 0 1))
		((n > 0)) && per+=" $j:$n"
		all=$((all + n))
	done
	echo "$all${per:+ (${per# })}"
}
# Each job in turn reports its decided epoch after T1 (epochs come every 2 s:
# all five equal at one instant is not the promise): "MS_ALL per-job list".
applied_in_turn() { # T1
	local j end=$(($1 + REJOIN_S * 1000000)) per="" rj=0
	for j in A B C D E; do
		if wait_until $(((end - $(now_us)) / 1000000 + 1)) named_applied "$j"; then
			per+=" $j:$(ms $(($(now_us) - $1)))"
		else
			per+=" $j:none"
			rj=none
		fi
	done
	[[ $rj == none ]] || rj=$(ms $(($(now_us) - $1)))
	echo "$rj$per"
}
fault_ctld_stop() {
	echo "=== slurmctld stopped (SIGSTOP) for about 3 s"
	ctld_outage "SIGSTOP slurmctld (3 s)" stop
}
fault_ctld_kill() {
	echo "=== slurmctld killed (-9), started again after about 3 s"
	ctld_outage "kill -9 slurmctld, restart" kill
}

# Training processes: one task of D stopped or killed. The node agent and the
# other jobs do not notice; a stopped task resumes; a killed one ends its step
# (Slurm's doing) and the agent removes the job's directories.
others_quiet() { # T0 T1: no stale line in A, B, C meanwhile
	(($(count_between "$STALE" "$1" "$2" $(task_files A 0 1) $(task_files B 0 1) $(task_files C 0 1)) == 0))
}
fault_task_stop() {
	local p t0 ok=1
	p=$(task_pid D n8 1)
	echo "=== training process stopped: kill -STOP D's task on n8 (pid ${p:-?}) for 3 s"
	[[ -n $p ]] || { row "SIGSTOP of a training process" "-" "no pid in D's report file" 0; return; }
	t0=$(now_us)
	kill -STOP "$p"
	sleep 3
	kill -CONT "$p"
	sleep 1
	[[ $(node_state n8) == up ]] || ok=0
	jobs_alive A B C D || ok=0
	others_quiet "$t0" "$(now_us)" || ok=0
	row "SIGSTOP of a training process (3 s)" "the node agent and other jobs unaffected; the job lives" \
		"n8 $(node_state n8); other jobs' tasks stale lines: $(count_between "$STALE" "$t0" "$(now_us)" $(task_files A 0 1) $(task_files B 0 1) $(task_files C 0 1)); D running: $(jobs_alive D && echo yes || echo no)" "$ok"
}
fault_task_kill() {
	local p t0 t_end ok=1
	p=$(task_pid D n8 1)
	echo "=== training process killed: kill -9 D's task on n8 (pid ${p:-?})"
	[[ -n $p ]] || { row "kill -9 of a training process" "-" "no pid in D's report file" 0; return; }
	t0=$(now_us)
	kill -KILL "$p"
	hm_wait_for 30 bash -c "! kill -0 ${F_JOB_PID[D]}"
	t_end=$(now_us)
	F_D_END=$t_end
	sleep 1
	[[ $(node_state n8) == up ]] || ok=0
	jobs_alive A B C || ok=0
	others_quiet "$t0" "$(now_us)" || ok=0
	row "kill -9 of a training process" "its step ends (Slurm); the node agent and other jobs unaffected (its directories: see the hostile directories' row)" \
		"D's srun ended $(ms $((t_end - t0))) ms after the kill; n8 $(node_state n8); other jobs' stale lines: $(count_between "$STALE" "$t0" "$(now_us)" $(task_files A 0 1) $(task_files B 0 1) $(task_files C 0 1))" "$ok"
}

# A clock step on n4 (the clock shim in its slurmd and D's task there): n4's
# agent measures its offset at every beat; beyond ClockSkewMax (default 1 ms)
# the node's steps run free (their files: no period), harmonicsctl nodes shows
# it skewed, slurmd's log says it once; stepped back: paced again. The node
# stays connected, no job is lost, the other nodes do not notice.
node_skewed() { ctl_json nodes | jq -e --arg n "$1" '.nodes[] | select(.node == $n) | .clock_skewed == true' >/dev/null; }
node_clock() { ctl_json nodes | jq -r --arg n "$1" '.nodes[] | select(.node == $n) | .clock_offset_us // "-"'; }
export -f node_skewed
fault_clock_step() { # OFFSET_US forward|backward
	local t0 t1 ok=1 conn sk back off logs free_ms
	echo "=== clock step $2 on n4: CLOCK_REALTIME $1 us (shim) for 4 s"
	logs=$(grep -c "off the coordinator's" "$HM_DIR/log/slurmd-n4.log")
	t0=$(now_us)
	echo "$1" >"$F_SHIFT_FILE"
	if wait_until 5 node_skewed n4; then sk=$(ms $(($(now_us) - t0))); else sk=none; ok=0; fi
	off=$(node_clock n4)
	# When n4's agent saw it: its log line (slurmd's clock there is the shifted one).
	local det
	det=$(log_after "$HM_DIR/log/slurmd-n4.log" "off the coordinator's" $((t0 + $1))) && det=$(ms $((det - $1 - t0))) || det=none
	free_ms=$(wait_free 3 "$t0" "$(assign_of D n4)")
	conn=up
	for _ in $(seq 6); do
		[[ $(node_state n4) == up ]] || conn=$(node_state n4)
		sleep 0.5
	done
	t1=$(now_us)
	echo 0 >"$F_SHIFT_FILE"
	if wait_until 5 bash -c '! node_skewed n4'; then back=$(ms $(($(now_us) - t1))); else back=none; ok=0; fi
	logs=$(($(grep -c "off the coordinator's" "$HM_DIR/log/slurmd-n4.log") - logs))
	[[ $conn == up && $free_ms != none && $logs == 1 && $det != none ]] || ok=0
	jobs_alive A B C D || ok=0
	others_quiet "$t0" "$(now_us)" || ok=0
	row "clock step $2 ($1 us) on n4 (clock shim)" "the node's steps run free once its offset exceeds ClockSkewMax (1 ms), shown in harmonicsctl nodes, logged once; paced again when back; the node stays connected, no job lost, other nodes unaffected" \
		"n4's agent logged it ${det} ms after the step, harmonicsctl showed it skewed after ${sk} ms (offset ${off} us), D's file on n4 free after ${free_ms} ms, slurmd log lines: $logs; within the bound again ${back} ms after the step back; n4 during the step: $conn; jobs running: $(jobs_alive A B C D && echo yes || echo no)" "$ok"
}

# munged stopped: nothing can be sealed or unsealed, so the coordinator reaches
# no agent: the cross-rack job A runs free within the bound (its files lapse, or
# its leaders, which declare the cut on the failed seal, make it free: the rack
# channel is admitted by address, not munge); munged back: governed again.
fault_munged() {
	local t0 t1 fo rj=none pa ok=1
	echo "=== munged stopped for 4 s"
	pa="$(period_of "$(assign_of A n1)")"
	t0=$(now_us)
	munged_stop
	fo=$(wait_free 6 "$t0" "$(assign_of A n1)" "$(assign_of A n5)")
	sleep 2
	sruns_alive A B C D || ok=0
	t1=$(now_us)
	munged_start || { ok=0; fo+=" (munged did not start again)"; }
	wait_until "$REJOIN_S" named_applied A && rj=$(ms $(($(now_us) - t1)))
	jobs_alive A B C D || ok=0
	{ [[ $pa == 0 ]] || le "$fo" "$FO_MS"; } && le "$rj" $((REJOIN_S * 1000)) || ok=0
	row "munged stopped (4 s)" "the cross-rack job free within ${FO_MS} ms; no job lost; governed again within ${REJOIN_S} s" \
		"A (period_us ${pa:-?} before) free after ${fo} ms; jobs running: $(jobs_alive A B C D && echo yes || echo no); A's decided epoch applied ${rj} ms after munged's start" "$ok"
}

# RunDir full: the agent cannot renew assign files, the runtime cannot write
# its reports; steps run free within the bound, nothing hangs; space back:
# governed again.
fill() { dd if=/dev/zero of="$1/.hm-fault-filler" bs=64k status=none 2>/dev/null; true; }
fault_rundir_full() {
	local t0 t1 fo rj ok=1 up
	echo "=== RunDir full (tmpfs)"
	# From B's file on n2 renewed: the row before (munged stopped) may leave an
	# agent reconnecting, and a file lapsed before the fill proves nothing here.
	wait_until 15 file_renewed "$(assign_of B n2)"
	t0=$(now_us)
	fill "$F_RUN"
	local fa tk
	tk=$(now_us) # full: no file is written after this
	fo=$(stale_after 5 "$STALE" "$t0" "$(task_files B 0)")
	fa=$(valid_ms_after "$(assign_of B n2)" "$tk")
	sleep 2
	up=$(ctl_json nodes | jq '[.nodes[] | select(.state == "up")] | length')
	((up == HM_NODES)) || ok=0
	jobs_alive A B C D || ok=0
	t1=$(now_us)
	rm -f "$F_RUN/.hm-fault-filler"
	rj=$(wait_line "$REJOIN_S" "$RESUMED" "$t1" "$(task_files B 0)") && rj=$(((rj - t1) / 1000)) || rj=none
	le "$fa" "$AV_MS" && le "$fo" "$FO_MS" && le "$rj" $((REJOIN_S * 1000)) || ok=0
	row "RunDir full (tmpfs)" "files not renewed: valid at most AgentValidity (${AV_MS} ms) longer, tasks free at their next burst (${FO_MS} ms); nothing hangs, agents stay connected; governed again once space is back" \
		"B's file on n2 valid until +${fa} ms after the fill, its task free after ${fo} ms; agents up: $up/$HM_NODES; jobs running: $(jobs_alive A B C D && echo yes || echo no); governed ${rj} ms after the space was freed" "$ok"
}

# StateSaveLocation full: Slurm itself refuses new jobs then (it cannot write
# their scripts there), so the check is on the running ones: the coordinator
# keeps deciding (its epochs go on, status answers), running jobs stay governed,
# the failed write is logged; space back: the state file is written again.
last_decide() { ctl_json status | jq -r '.status.last_decide_s // 0'; }
fault_state_full() {
	local t0 ok=1 d0 d1 msg m0 m1 dec short
	echo "=== StateSaveLocation full (tmpfs)"
	# A job that ends during the fill: its removal is a change the coordinator
	# must save (decisions need not change in 5 s), and save again once space is back.
	short=$(sbatch --parsable -J statefull -w n7 -N1 -n1 -o /dev/null --comm-sched=harmonics \
		--comm-profile="$F_PROFILE" --wrap "sleep 3" 2>&1)
	wait_until 20 bash -c "[[ \$(squeue -h -j '$short' -o %T) == RUNNING ]]"
	sleep 1.5 # the coordinator has it (a mirror round), and saved it
	m0=$(stat -c %Y "$state_file" 2>/dev/null)
	t0=$(now_us)
	fill "$HM_DIR/state"
	d0=$(last_decide)
	sleep 5 # two epochs
	d1=$(last_decide)
	awk -v a="$d0" -v b="$d1" 'BEGIN { exit !(b > a) }' && dec=yes || { dec=no; ok=0; }
	jobs_alive A B C D E || ok=0
	others_quiet "$t0" "$(now_us)" || ok=0
	msg=$(grep -a -m1 -E '(sched|job_submit)/harmonics.*state.*No space' "$HM_DIR/log/slurmctld.log" | sed 's/^\[[^]]*\] //' | cut -c1-160)
	[[ -n $msg ]] || ok=0
	rm -f "$HM_DIR/state/.hm-fault-filler"
	wait_until 10 bash -c "[[ \$(stat -c %Y $state_file 2>/dev/null) -gt ${m0:-0} ]]" && m1=yes || { m1=no; ok=0; }
	row "StateSaveLocation full (tmpfs)" "the coordinator keeps deciding and answering; running jobs stay governed; the failure logged; the state written again once space is back (Slurm itself refuses new jobs meanwhile)" \
		"decisions went on: $dec (last decision $d0 -> $d1); running jobs' stale lines: $(count_between "$STALE" "$t0" "$(now_us)" $(task_files A 0 1) $(task_files B 0 1) $(task_files C 0 1)); log: ${msg:-none}; state rewritten after: $m1" "$ok"
}

# A corrupt state file at slurmctld's start: kept aside, one ERROR line, the
# coordinator starts empty; running jobs are decided again, epochs go up.
fault_state_corrupt() {
	local e0 e1 t1 ok=1 kept line rj size
	echo "=== corrupt state file: slurmctld stopped, bytes in the middle of harmonics.state overwritten, started"
	e0=$(ctl_json jobs | jq -r --argjson j "${F_JOB_ID[B]}" '.jobs[] | select(.job_id == $j) | .decided_epoch')
	hm_ctld_stop
	size=$(stat -c %s "$state_file" 2>/dev/null || echo 0)
	if ((size < 64)); then
		row "corrupt state file" "-" "no state file to corrupt ($state_file, $size bytes)" 0
		hm_ctld_start
		return
	fi
	printf '\x00\xff#corrupt#\x01{"[' | dd of="$state_file" bs=1 seek=$((size / 2)) conv=notrunc status=none
	t1=$(now_us)
	hm_ctld_start || ok=0
	kept=$(ls "$HM_DIR/state" | grep -c '^harmonics.state.corrupt')
	line=$(grep -a -m1 'ERROR.*harmonics.state.corrupt\|harmonics.state.corrupt' "$HM_DIR/log/slurmctld.log" | sed 's/^\[[^]]*\] //' | cut -c1-160)
	wait_until "$REJOIN_S" named_applied B && rj=$(ms $(($(now_us) - t1))) || { rj=none; ok=0; }
	e1=$(ctl_json jobs | jq -r --argjson j "${F_JOB_ID[B]}" '.jobs[] | select(.job_id == $j) | .decided_epoch')
	((kept >= 1)) && [[ -n $line ]] || ok=0
	[[ $e0 =~ ^[0-9]+$ && $e1 =~ ^[0-9]+$ ]] && ((e1 > e0)) || ok=0
	jobs_alive A B C D || ok=0
	row "corrupt state file (bytes overwritten mid-file)" "kept aside as .corrupt.<time>, one ERROR line, the coordinator starts empty; no job lost; epochs above the old ones" \
		"kept aside: $kept file(s); log: ${line:-none}; B decided and applied again ${rj} ms after the start, epoch $e0 -> $e1; jobs running: $(jobs_alive A B C D && echo yes || echo no)" "$ok"
}

# Job directories on n3, n4, n8 other than the running jobs' (F_LIVE_DIRS).
dirs_left() {
	local d n=0
	for d in "$F_RUN"/n3/job.* "$F_RUN"/n4/job.* "$F_RUN"/n8/job.*; do
		[[ -e $d && " $F_LIVE_DIRS " != *" ${d##*/} "* ]] && n=$((n + 1))
	done
	echo "$n"
}
dirs_none_left() { (($(dirs_left) == 0)); }

# N job directories of the user nobody on n3 (a job array, each step filling
# its own job directory with a deep tree, subdirectories and 64 KiB report
# files): n3's agent keeps beating (B's file on n3 renewed, never lapsing),
# B keeps its schedule, the directories are removed when their jobs end.
fault_hostile() { # N
	local n=$1 jarr t0 t_end sampler ok=1 gaps base left stale
	echo "=== $n hostile job directories on n3 (user nobody, a job array)"
	cat >"$F_OUT/hostile.sh" <<-EOF
		#!/bin/bash
		exec srun --comm-sched=harmonics --comm-profile=$F_PROFILE bash -c '
		d=$F_RUN/\$SLURMD_NODENAME/job.\$SLURM_JOB_ID
		[[ -d \$d ]] || exit 3
		p=\$d/t; for i in \$(seq 40); do p=\$p/d; done; mkdir -p \$p
		for i in \$(seq 16); do mkdir -p \$d/w\$i/x/y/z; done
		head -c 65536 /dev/zero | tr "\\\\0" x >\$d/report.0.0
		for i in \$(seq 7); do cp \$d/report.0.0 \$d/report.0.\$i; done'
	EOF
	chmod 755 "$F_OUT/hostile.sh"
	# B's assign file on n3, sampled every 50 ms: its renewals are n3's beats.
	# Without a process per sample (bash's clock, read and a timed read of an
	# idle pipe for the pause), so that the machine's load delays the sampler
	# less than the agent it watches.
	(
		local f l v pause
		f=$(assign_of B n3)
		exec {pause}<> <(:)
		while :; do
			v=
			while IFS= read -r l; do
				[[ $l == HARMONICS_VALID_UNTIL_US=* ]] && v=${l#*=}
			done <"$f" # read first: the time taken after it bounds the age from above
			printf '%s %s\n' "${EPOCHREALTIME/./}" "$v"
			read -r -t 0.05 -u "$pause"
		done >"$F_OUT/hostile.samples"
	) &
	sampler=$!
	sleep 3 # the baseline
	t0=$(now_us)
	jarr=$(runuser -u nobody -- sbatch --parsable -J hostile -w n3 -N1 -n1 --array=1-"$n" -o /dev/null \
		--chdir=/tmp "$F_OUT/hostile.sh" 2>&1)
	wait_until $((n * 2 + 60)) bash -c "[[ -z \$(squeue -h -n hostile -o %i) ]]" || ok=0
	t_end=$(now_us)
	sleep 3
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null
	# The age of B's file on n3 at each sample: now - (VALID_UNTIL - AgentValidity),
	# the time since the agent last renewed it (each beat's reply renews it), so
	# a slow sampler cannot make it look late. Before the array (baseline) and during.
	ages() { # FROM_US TO_US: "p50 p99 max" in ms
		awk -v a="$1" -v b="$2" -v av="$((AV_MS * 1000))" '$1 >= a && $1 < b && $2 != "" { print ($1 - ($2 - av)) / 1000 }' \
			"$F_OUT/hostile.samples" | sort -n | awk '{ v[NR] = $1 } END { if (!NR) { print "- - -"; exit }
			i = int(NR * 0.99); if (i < 1) i = 1; printf "%d %d %d", v[int((NR + 1) / 2)], v[i], v[NR] }'
	}
	gaps=$(ages "$t0" "$t_end")
	base=$(ages 0 "$t0")
	stale=$(count_between "$STALE" "$t0" "$(now_us)" $(task_files A 0 1) $(task_files B 0 1) $(task_files C 0 1))
	# Ended jobs' directories (the array's, D's): removed after the agent's 30 s grace.
	local rm_s
	F_LIVE_DIRS="job.${F_JOB_ID[A]} job.${F_JOB_ID[B]} job.${F_JOB_ID[C]} job.${F_JOB_ID[E]}"
	jobs_alive D && F_LIVE_DIRS+=" job.${F_JOB_ID[D]}" # --only: D's task not killed
	if wait_until 60 dirs_none_left; then
		rm_s=$(hm_since "$(awk -v t="$t_end" 'BEGIN { printf "%.6f", t / 1e6 }')")
	else
		rm_s=none
	fi
	left=$(dirs_left)
	unset F_LIVE_DIRS
	read -r g50 g99 gmax <<<"$gaps"
	le "${gmax:-x}" $((AV_MS - 1)) || ok=0
	((stale == 0 && left == 0)) || ok=0
	[[ $(node_state n3) == up ]] || ok=0
	jobs_alive A B C || ok=0
	row "$n hostile job directories on n3 (user nobody: deep trees, 64 KiB reports)" "beats on time (B's file on n3 always renewed within AgentValidity), other users' jobs keep their schedules, ended jobs' directories removed at any depth (after the agent's 30 s grace)" \
		"array $jarr ran $(ms $((t_end - t0))) ms; age of B's file on n3 (since its agent renewed it) p50/p99/max ${g50}/${g99}/${gmax} ms, before the array ${base// //} ms (beats ${HB_MS} ms); stale lines in A, B, C: $stale; ended jobs' directories (the array's and D's) all removed ${rm_s} s after the array's end (left: $left); n3 $(node_state n3)" "$ok"
}

# --- partitions (--full): a second cluster, its nodes in network namespaces
# Drop every packet between node K and ADDR (both directions): on the node
# namespace's mgmt0 egress (to ADDR) and on its bridge port in the management
# namespace (from ADDR), an htb whose class 1:20 is a pfifo of limit 0. The
# qdiscs first (they drop nothing), then the filters: drop_between with several
# nodes adds every filter at once (one process each), so that a rack is cut in
# one instant, not node by node (a tc call takes up to a second under load).
drop_sides() { printf '%s\n' "$(tb_node_ns "$1") mgmt0 dst" "${TB_NS}m n$1 src"; } # K
drop_prepare() { # K
	local side
	for side in "$(drop_sides "$1" | head -1)" "$(drop_sides "$1" | tail -1)"; do
		set -- "$1" $side
		tc -n "$2" qdisc add dev "$3" root handle 1: htb default 10 2>/dev/null
		tc -n "$2" class add dev "$3" parent 1: classid 1:10 htb rate 10gbit 2>/dev/null
		tc -n "$2" class add dev "$3" parent 1: classid 1:20 htb rate 10gbit 2>/dev/null
		tc -n "$2" qdisc add dev "$3" parent 1:20 handle 20: pfifo limit 0 2>/dev/null
	done
}
drop_between() { # ADDR K... (after drop_prepare K)
	local addr=$1 k side pids=() p rc=0
	shift
	for k; do
		for side in "$(drop_sides "$k" | head -1)" "$(drop_sides "$k" | tail -1)"; do
			set -- $side
			tc -n "$1" filter add dev "$2" parent 1: protocol ip prio 1 u32 match ip "$3" "$addr/32" flowid 1:20 &
			pids+=($!)
		done
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}
# A rack cut from the coordinator at one instant: every packet between the
# controller and the rack's nodes crosses the controller's veth (root namespace
# side: to the nodes; its "ctl" port on the management bridge: from them), so
# two tc processes (one filter batch each, started together) cut the whole rack.
ctl_sides() { printf '%s\n' "- $TB_ROOT_IF dst" "${TB_NS}m ctl src"; }
ctl_tc() { if [[ $1 == - ]]; then shift; tc "$@"; else local n=$1; shift; tc -n "$n" "$@"; fi; } # NS|- ARGS
rack_cut_prepare() {
	local side
	while read -r side; do
		set -- $side
		ctl_tc "$1" qdisc add dev "$2" root handle 1: htb default 10 2>/dev/null
		ctl_tc "$1" class add dev "$2" parent 1: classid 1:10 htb rate 10gbit 2>/dev/null
		ctl_tc "$1" class add dev "$2" parent 1: classid 1:20 htb rate 10gbit 2>/dev/null
		ctl_tc "$1" qdisc add dev "$2" parent 1:20 handle 20: pfifo limit 0 2>/dev/null
	done < <(ctl_sides)
}
rack_cut() { # K...: the nodes' packets to and from the controller dropped
	local nodes=("$@") side k pids=() p rc=0 batches=()
	while read -r side; do
		set -- $side
		batches+=("$(mktemp)")
		for k in "${nodes[@]}"; do
			echo "filter add dev $2 parent 1: protocol ip prio 1 u32 match ip $3 $(tb_node_mgmt "$k")/32 flowid 1:20"
		done >"${batches[-1]}"
	done < <(ctl_sides)
	set -- "${batches[@]}"
	while read -r side; do
		set -- $side "$@"
		ctl_tc "$1" -batch "$4" &
		pids+=($!)
		shift 4
	done < <(ctl_sides)
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	rm -f "${batches[@]}"
	return $rc
}
rack_heal() {
	local side
	while read -r side; do
		set -- $side
		ctl_tc "$1" qdisc del dev "$2" root 2>/dev/null
	done < <(ctl_sides)
}
rack_dropped() {
	local side
	while read -r side; do
		set -- $side
		ctl_tc "$1" -s qdisc show dev "$2"
	done < <(ctl_sides) |
		awk '/^qdisc pfifo 20:/ { p = 1; next } p && /dropped/ { s = $0; sub(/.*dropped /, "", s); sub(/,.*/, "", s); n += s; p = 0 } END { print n + 0 }'
}
heal() { # K
	tc -n "$(tb_node_ns "$1")" qdisc del dev mgmt0 root 2>/dev/null
	tc -n "${TB_NS}m" qdisc del dev "n$1" root 2>/dev/null
}
dropped() { # K: packets dropped so far on both sides
	{ tc -n "$(tb_node_ns "$1")" -s qdisc show dev mgmt0; tc -n "${TB_NS}m" -s qdisc show dev "n$1"; } |
		awk '/^qdisc pfifo 20:/ { p = 1; next } p && /dropped/ { s = $0; sub(/.*dropped /, "", s); sub(/,.*/, "", s); n += s; p = 0 } END { print n + 0 }'
}

partitions() {
	# shellcheck source=tests/testbed/net.sh
	. "$top/tests/testbed/net.sh"
	stop_watchers
	local d1=${HM_DIR:-}
	if [[ -n $d1 ]]; then # the first cluster (not there with --only=partitions)
		HM_KEEP=1 hm_cluster_down # clears HM_DIR
		umount "$d1/run/harmonics" "$d1/state" 2>/dev/null
		((${HM_KEEP:-0})) || rm -rf "$d1"
	fi
	F_JOB_PID=() F_JOB_ID=()
	TB_RACKS=2 TB_HOSTS=4 TB_NIC=10gbit TB_UPLINK=10gbit
	tb_net_up "$EJ" || { fail "network namespaces up"; return; }
	F_NET=1
	export HM_NODES=$TB_NNODES HM_RACK_HOSTS=$TB_HOSTS HM_CTL_ADDR=$TB_CTL_ADDR \
		HM_NODE_ADDR_PREFIX=$TB_MGMT_PREFIX HM_NODE_NETNS_PREFIX=${TB_NS}n
	unset HM_BEFORE_DAEMONS HM_SLURMD_ENV_NODES
	F_SHIM_NODES=
	hm_tier_cluster_up "8 slurmd in network namespaces" --no-db
	F_OUT=$HM_DIR/out F_RUN=$HM_DIR/run/harmonics
	port0=$((HM_PORT + 9))
	rdv_addr() { local f=${1%%,*}; tb_node_addr "${f#n}"; }
	start_jobs
	check "both racks led" wait_until 10 bash -c '[[ $(rack_leader rack1) == n* && $(rack_leader rack2) == n* ]]'

	local t0 tc t1 k fo lost heard rj ok=1 local_ok=1 f d lost_all up_ms
	# rack1: B and E share n2, so its leader has rounds to bridge the cut with.
	echo "=== rack1 (n1-n4) cut off from the coordinator: packets to and from $TB_CTL_ADDR dropped"
	rack_cut_prepare
	t0=$(now_us)
	rack_cut 1 2 3 4 || ok=0
	tc=$(now_us) # every filter in place: the cut began between t0 and tc
	fo=$(stale_after 5 "$STALE" "$t0" "$(task_files A 0)")
	wait_until 5 log_after "$HM_DIR/log/slurmctld.log" "node n4: agent lost" "$t0"
	# Each node's loss: from the cut's first filter (its last frame came before),
	# and what the coordinator logged as "last heard" (its own measure of the silence).
	lost_all="" heard=0
	for k in 1 2 3 4; do
		wait_until 5 log_after "$HM_DIR/log/slurmctld.log" "node n$k: agent lost" "$t0"
		lost=$(log_after "$HM_DIR/log/slurmctld.log" "node n$k: agent lost" "$t0") && lost=$(ms $((lost - t0))) || { lost=none; ok=0; }
		lost_all+=" n$k:$lost"
		le "$lost" $((AV_MS + HB_MS + (tc - t0) / 1000)) || ok=0
		f=$(grep -a "node n$k: agent lost" "$HM_DIR/log/slurmctld.log" | tail -1 | sed -n 's/.*last heard \([0-9.]*\) s ago.*/\1/p')
		f=$(awk -v s="${f:-99}" 'BEGIN { printf "%.0f", s * 1000 }')
		((f > heard)) && heard=$f
	done
	sleep 3
	for f in "$(assign_of B n2)" "$(assign_of B n3)" "$(assign_of E n2)" "$(assign_of E n4)"; do
		(($(valid_until "$f") > $(now_us))) || local_ok=0 # renewed by the rack's leader
	done
	d=$(rack_dropped)
	sruns_alive A B C D E || ok=0
	t1=$(now_us)
	rack_heal
	# Back: every agent up and every job's decided epoch applied (the coordinator
	# governs again; A ran free through the cut, so its runtime logs no "resumed").
	up_ms=none rj=none
	wait_until "$REJOIN_S" all_up && up_ms=$(ms $(($(now_us) - t1)))
	rj=$(applied_in_turn "$t1")
	local per=${rj#* }
	rj=${rj%% *}
	jobs_alive A B C D E || ok=0
	# The verdict on rejoin: every agent back (the docs' promise, as for slurmctld's
	# outages); the jobs' applied epochs are measured, not promised.
	le "$fo" $((FO_MS + (tc - t0) / 1000)) && le "$up_ms" $((REJOIN_S * 1000)) && ((local_ok && d > 0)) || ok=0
	row "rack1 partitioned from the coordinator (packets dropped, about 5 s)" "the rack's nodes lost within AgentValidity + HeartbeatInterval ($((AV_MS + HB_MS)) ms) of the cut; cross-rack tasks there free within ${FO_MS} ms (both from the cut: bounds from the first filter plus the filters' install time); its local jobs kept scheduled by its leader; no job lost; every agent back within ${REJOIN_S} s" \
		"$d packets dropped; the cut's filters in place within $(ms $((tc - t0))) ms; lost after the cut's start (slurmctld's log, ms):${lost_all}, at most $heard ms after their last frame; A's task on n1 free after ${fo} ms; B's and E's files renewed by the leader 3 s into the cut: $( ((local_ok)) && echo yes || echo no); jobs running: $(jobs_alive A B C D E && echo yes || echo no); after the heal all agents up ${up_ms} ms, every job's decided epoch applied ${rj} ms (in turn, ms:${per})" "$ok"

	ok=1
	echo "=== n7 cut off from its leader n5: packets to and from $(tb_node_mgmt 5) dropped"
	t0=$(now_us)
	drop_prepare 7
	drop_between "$(tb_node_mgmt 5)" 7 || ok=0
	sleep 5
	local st c_stale
	st=$(node_state n7)
	c_stale=$(count_between "$STALE" "$t0" "$(now_us)" $(task_files C 0 1))
	d=$(dropped 7)
	heal 7
	jobs_alive A B C D || ok=0
	[[ $st == up ]] && ((c_stale == 0)) || ok=0
	# While the coordinator is reachable a member sends its leader nothing (it
	# connects during a cut): a dropped count of 0 says the partition was idle.
	row "a member (n7) partitioned from its leader (n5) (packets dropped, 5 s)" "nothing changes while the coordinator is reachable: its jobs stay governed by the coordinator" \
		"$d packets dropped; n7 $st; stale lines of C (n6, n7): $c_stale; jobs running: $(jobs_alive A B C D && echo yes || echo no)" "$ok"
	scancel -n A,B,C,D,E 2>/dev/null
	stop_watchers
}

# Replace the rows of FILE's table whose fault (the first cell, a leading count
# aside) is one of ROWS', and say below the table's first line what was rerun.
write_rows() { # FILE ROWS NAMES
	local file=$1 tmp
	tmp=$(mktemp)
	awk -v rows="$2" -v names="$3" -v when="$(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r)" '
		function key(l, k) { split(l, k, "|"); sub(/^ *[0-9]+ /, "", k[2]); return k[2] }
		BEGIN { n = split(rows, r, "\n"); for (i = 1; i <= n; i++) if (r[i] != "") new[key(r[i])] = r[i] }
		/<!-- fault table begin/ { in_t = 1; print; next }
		/<!-- fault table end/ { in_t = 0 }
		in_t && /^Rows rerun by/ { gone = 1; next }
		gone && /^$/ { gone = 0; next }
		{ gone = 0 }
		in_t && /^Measured by/ { print; print ""; print "Rows rerun by `tests/fault/run.sh --only=" names "` (" when "): " names "."; next }
		in_t && /^\| / && (key($0) in new) { print new[key($0)]; done[key($0)] = 1; next }
		{ print }
		END { for (k in new) if (!(k in done)) printf "fault: no row \"%s\" in the table to replace\n", k > "/dev/stderr" }' \
		"$file" >"$tmp" && cat "$tmp" >"$file"
	rm -f "$tmp"
	echo "fault: rows of $3 written to $file"
}

# Replace the table between the markers of FILE.
write_table() { # FILE TABLE
	local file=$1 tmp
	tmp=$(mktemp)
	awk -v t="$2" -v when="$(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r)" '
		/<!-- fault table begin/ { print; print "Measured by `tests/fault/run.sh --full` (" when "):"; print ""; print t; skip = 1; next }
		/<!-- fault table end/ { skip = 0 }
		!skip' "$file" >"$tmp" && cat "$tmp" >"$file"
	rm -f "$tmp"
	echo "fault: table written to $file"
}
