#!/usr/bin/env bash
# Slurm test tier: a real one-machine cluster (tests/slurm/cluster.sh) with the
# Harmonics plugins; real sbatch/srun jobs with and without --comm-sched.
#
# Usage: tests/slurm/run.sh [BUILD_DIR]   (default: ./build)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root).
# HM_KEEP=1 keeps the private cluster directory for inspection.
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin slurm "the Slurm tier needs root (daemons, munge, private MariaDB)" "$@"

elapsed() { hm_since "$1"; }

# Wait for a job state (scontrol), up to $3 seconds.
wait_comment() { # job secs
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ $(admin_comment "$1") == *harmonics:e* ]] && return 0
		sleep 0.1
	done
	return 1
}
sacct_comment() { sacct -n -X -P -j "$1" --format=AdminComment 2>/dev/null | head -1; }
# Jobs slurmctld knows (MinJobAge keeps finished ones): a rejected submission adds none.
njobs() { scontrol -o show jobs 2>/dev/null | grep -c '^JobId='; }
# All nodes of a job inside one rack (n1-n4 or n5-n8)?
one_rack() {
	local hosts
	hosts=$(scontrol show hostnames "$(squeue -h -j "$1" -o %N)" | sed 's/^n//')
	[[ -n $hosts ]] || return 1
	! grep -qv '^[1-4]$' <<<"$hosts" || ! grep -qv '^[5-8]$' <<<"$hosts"
}
export -f one_rack
PROFILE="iter=250ms,comm=40%,bytes=1.2GB"

echo "=== bring-up"
hm_tier_cluster_up "8 slurmd idle, slurmdbd"
out=$HM_DIR/out

echo "=== plugins load, log their versions"
check "$HM_HOST_TYPE logs its and Slurm's version" \
	grep -q "$HM_HOST_TYPE: harmonics .*built for Slurm $(slurmctld -V | awk '{print $2}')" "$HM_DIR/log/slurmctld.log"
check "select wrapper logs its and Slurm's version (verbose)" \
	grep -q "select/harmonics_cons_tres: harmonics .* built for Slurm" "$HM_DIR/log/slurmctld.log"
check "coordinator topology from slurmctld's topology/tree switches" \
	grep -q "$HM_HOST_TYPE: topology from slurmctld's 3 topology/tree switches" "$HM_DIR/log/slurmctld.log"
check "backfill kept (sched/backfill, or wrapped by sched/harmonics)" \
	grep -q "sched/harmonics: backfill kept\|$HM_HOST_TYPE: .*SchedulerType=sched/backfill" "$HM_DIR/log/slurmctld.log"
check "topology/tree: rack1, rack2, spine" \
	bash -c '[[ $(scontrol show topology | grep -c "SwitchName=\(rack1\|rack2\|spine\)") == 3 ]]'
check "select wrapper is the select plugin" \
	bash -c 'scontrol show config | grep -q "SelectType *= select/harmonics_cons_tres"'

echo "=== what Slurm allows only with cons_tres works with the select wrapper"
# scontrol refuses CoreCnt unless the select plugin_id is cons_tres' (22.05),
# slurmctld asks the plugin (23.11, 24.11) or running_cons_tres() (25.05 on).
core_resv() {
	scontrol create reservation ReservationName=hm_cores StartTime=now Duration=5 \
		Users=root Nodes=n8 CoreCnt=2 >"$out/resv.txt" 2>&1 &&
		scontrol show reservation hm_cores >>"$out/resv.txt" 2>&1 &&
		grep -q "CoreCnt=2" "$out/resv.txt"
	local rc=$?
	scontrol delete ReservationName=hm_cores >/dev/null 2>&1
	((rc == 0)) || cat "$out/resv.txt"
	return $rc
}
check "scontrol create reservation CoreCnt=2 Nodes=n8 (a core reservation)" core_resv

echo "=== options in --help"
for c in sbatch salloc srun; do
	check "$c --help lists --comm-sched, --no-comm-sched, --comm-profile" \
		bash -c "$c --help 2>&1 | grep -q -- '--comm-sched=MODE' && $c --help 2>&1 | grep -q -- '--no-comm-sched' && $c --help 2>&1 | grep -q -- '--comm-profile'"
done
check "--comm-sched=help prints the help page and submits nothing" \
	bash -c 'n=$(scontrol -o show jobs | grep -c ^JobId=); sbatch --comm-sched=help --wrap true >'"$out"'/help.txt 2>&1 &&
		grep -q "harmonics  two-tier" '"$out"'/help.txt && [[ $(scontrol -o show jobs | grep -c ^JobId=) == $n ]]'

echo "=== bad options are rejected at submission (nothing submitted)"
bad_case() { # name expect-substring command...
	local name=$1 want=$2 before after rc msg
	shift 2
	before=$(njobs)
	msg=$("$@" 2>&1)
	rc=$?
	after=$(njobs)
	echo "    \$ ${*:1:3} ...  ->  rc=$rc: $(grep -m1 harmonics <<<"$msg")"
	if ((rc != 0)) && [[ $msg == *"$want"* && $msg == *accepted* ]] && ((before == after)); then
		pass "$name"
	else
		fail "$name" "rc=$rc jobs $before->$after: $msg"
	fi
}
bad_case "sbatch --comm-sched=bogus" "'bogus'" sbatch --comm-sched=bogus --wrap true
bad_case "srun --comm-sched=bogus" "'bogus'" srun --comm-sched=bogus true
bad_case "salloc --comm-sched=fastest" "'fastest'" salloc --comm-sched=fastest true
bad_case "sbatch --comm-profile=iter=abc,..." "abc" sbatch --comm-sched=auto --comm-profile=iter=abc,comm=40%,bytes=1GB --wrap true
bad_case "sbatch --comm-profile=no-such-model" "no-such-model" sbatch --comm-profile=no-such-model --wrap true
bad_case "env HARMONICS_COMM_SCHED=nope sbatch" "HARMONICS_COMM_SCHED" env HARMONICS_COMM_SCHED=nope sbatch --wrap true
bad_case "#SBATCH --comm-sched=wrong in a script" "'wrong'" sbatch "$here/jobs/bad_directive.sh"

echo "=== options reach the tasks"
srun -N2 --comm-sched=harmonics --comm-profile="$PROFILE" -o "$out/step-%t.env" env
check "srun --comm-sched: both tasks see HARMONICS_COMM_SCHED=harmonics" \
	bash -c "grep -qx HARMONICS_COMM_SCHED=harmonics $out/step-0.env && grep -qx HARMONICS_COMM_SCHED=harmonics $out/step-1.env"
check "srun --comm-sched: assignment exported (HARMONICS_PERIOD_US, SHIFT_US, ORIGIN_US, PRIO, EPOCH)" \
	bash -c "for v in PERIOD_US SHIFT_US ORIGIN_US PRIO EPOCH VALID_UNTIL_US; do grep -q \"^HARMONICS_\$v=[0-9]\" $out/step-0.env || exit 1; done;
		grep -q '^HARMONICS_MODE=[a-z]' $out/step-0.env && ! grep -qx HARMONICS_MODE=off $out/step-0.env"
check "srun --comm-sched: the profile reaches the tasks" grep -qx "HARMONICS_COMM_PROFILE=$PROFILE" "$out/step-0.env"
check "SPANK plugin logs its and Slurm's version in slurmd's log" \
	bash -c "cat $HM_DIR/log/slurmd-n*.log | grep -q 'harmonics: SPANK plugin .* built for Slurm'"
srun -N1 -o "$out/plain.env" env
check "srun without --comm-sched: no assignment, HARMONICS_MODE=off" \
	bash -c "! grep -q '^HARMONICS_PERIOD_US=' $out/plain.env && grep -qx HARMONICS_MODE=off $out/plain.env"
# The cluster runs Policy=harmonics: off, auto and harmonics are what it accepts.
HARMONICS_COMM_SCHED=auto srun -N1 --comm-sched=harmonics -o "$out/prec1.env" env
HARMONICS_COMM_SCHED=auto srun -N1 -o "$out/prec2.env" env
HARMONICS_COMM_SCHED=auto srun -N1 --no-comm-sched -o "$out/prec3.env" env
check "precedence: command line over environment" grep -qx HARMONICS_COMM_SCHED=harmonics "$out/prec1.env"
check "precedence: environment when no option" grep -qx HARMONICS_COMM_SCHED=auto "$out/prec2.env"
check "precedence: --no-comm-sched over environment" grep -qx HARMONICS_COMM_SCHED=off "$out/prec3.env"
hm_write_plugstack "default_mode=auto"
srun -N1 -o "$out/prec4.env" env
HARMONICS_COMM_SCHED=harmonics srun -N1 -o "$out/prec5.env" env
hm_write_plugstack ""
check "plugstack.conf default_mode=auto applies when nothing is asked" grep -qx HARMONICS_COMM_SCHED=auto "$out/prec4.env"
check "precedence: environment over plugstack.conf default" grep -qx HARMONICS_COMM_SCHED=harmonics "$out/prec5.env"
# Another policy than the cluster's is refused at submission, naming what is accepted.
sbatch --comm-sched=cassini --wrap true >"$out/pol.out" 2>&1
rc=$?
check "sbatch --comm-sched=cassini on a harmonics cluster refused (rc $rc): $(head -1 "$out/pol.out")" \
	bash -c "[[ $rc -ne 0 ]] && grep -q 'accepted here: off, auto, harmonics' '$out/pol.out'"
HARMONICS_COMM_SCHED=crux srun -N1 true >"$out/pol2.out" 2>&1
rc=$?
check "srun with HARMONICS_COMM_SCHED=crux refused (rc $rc): $(head -1 "$out/pol2.out")" \
	bash -c "[[ $rc -ne 0 ]] && grep -q 'HARMONICS_COMM_SCHED=crux: this cluster schedules with harmonics' '$out/pol2.out'"

echo "=== the NCCL runtime in --comm-sched tasks: appended to the user's LD_PRELOAD"
# The build's runtime (plugstack preload=PATH; the default is the installed one),
# the installed one with HM_INSTALLED=1.
rt=$build/src/pace/.libs/libharmonics-nccl.so
[[ ${HM_INSTALLED:-0} == 1 ]] && rt=$(dirname "$HM_SYS_PLUGINDIR")/libharmonics-nccl.so
if [[ ! -f $rt ]]; then
	say "SKIP: $rt not built (no nccl.h at configure time)"
else
	# srun ARGS... running a task that prints its LD_PRELOAD, the user's switch and
	# whether the runtime is mapped (grep inherits the task's environment).
	preload_step() { # out-file srun-args...
		local f=$1
		shift
		srun -N1 "$@" -o "$f" bash -c 'echo "LD_PRELOAD=${LD_PRELOAD:-}"
			echo "HARMONICS_COMM_PRELOAD=${HARMONICS_COMM_PRELOAD:-}"
			echo "NCCL_PROFILER_PLUGIN=${NCCL_PROFILER_PLUGIN:-}"
			echo "HARMONICS_NCCL_PROFILER_CHAIN=${HARMONICS_NCCL_PROFILER_CHAIN:-}"
			grep -q "libharmonics-nccl\.so" /proc/self/maps && echo loaded=yes || echo loaded=no'
	}
	# One line per task with LD_PRELOAD and loaded=, for the output.
	seen() { tr '\n' ' ' <"$1"; }
	user=libm.so.6 # a real library: the user's own preload must keep working
	check "srun --help lists --no-comm-preload" bash -c "srun --help 2>&1 | grep -q -- '--no-comm-preload'"
	hm_write_plugstack "preload=$rt"
	LD_PRELOAD=$user preload_step "$out/pre-user.out" --comm-sched=harmonics --comm-profile="$PROFILE"
	check "--comm-sched: appended to the user's LD_PRELOAD and loaded: $(seen "$out/pre-user.out")" \
		bash -c "grep -qx 'LD_PRELOAD=$user:$rt' $out/pre-user.out && grep -qx loaded=yes $out/pre-user.out"
	env -u LD_PRELOAD srun -N1 -n2 --comm-sched=harmonics --comm-profile="$PROFILE" -o "$out/pre-none-%t.out" \
		bash -c 'echo "LD_PRELOAD=${LD_PRELOAD:-}"; grep -q "libharmonics-nccl\.so" /proc/self/maps && echo loaded=yes'
	check "--comm-sched without a user LD_PRELOAD: the runtime alone, in both tasks: $(seen "$out/pre-none-1.out")" \
		bash -c "for t in 0 1; do grep -qx 'LD_PRELOAD=$rt' $out/pre-none-\$t.out && grep -qx loaded=yes $out/pre-none-\$t.out || exit 1; done"
	# NCCL's profiler plugin: ours (beside the interposer), the user's chained behind it.
	prof=$(dirname "$rt")/libnccl-profiler-harmonics.so
	NCCL_PROFILER_PLUGIN=/opt/site/libmine.so preload_step "$out/pre-prof.out" --comm-sched=harmonics --comm-profile="$PROFILE"
	check "--comm-sched: NCCL_PROFILER_PLUGIN is ours, the user's chained (HARMONICS_NCCL_PROFILER_CHAIN): $(seen "$out/pre-prof.out")" \
		bash -c "grep -qx 'NCCL_PROFILER_PLUGIN=$prof' $out/pre-prof.out && grep -qx 'HARMONICS_NCCL_PROFILER_CHAIN=/opt/site/libmine.so' $out/pre-prof.out"
	NCCL_PROFILER_PLUGIN=none preload_step "$out/pre-prof-none.out" --comm-sched=harmonics --comm-profile="$PROFILE"
	check "NCCL_PROFILER_PLUGIN=none (no profiler) is kept: $(seen "$out/pre-prof-none.out")" \
		bash -c "grep -qx 'NCCL_PROFILER_PLUGIN=none' $out/pre-prof-none.out && grep -qx 'HARMONICS_NCCL_PROFILER_CHAIN=' $out/pre-prof-none.out"
	LD_PRELOAD=$user preload_step "$out/pre-plain.out"
	check "plain job: the user's LD_PRELOAD untouched, runtime not loaded: $(seen "$out/pre-plain.out")" \
		bash -c "grep -qx 'LD_PRELOAD=$user' $out/pre-plain.out && grep -qx loaded=no $out/pre-plain.out && grep -qx 'NCCL_PROFILER_PLUGIN=' $out/pre-plain.out"
	LD_PRELOAD=$user preload_step "$out/pre-optout.out" --comm-sched=harmonics --comm-profile="$PROFILE" --no-comm-preload
	check "--no-comm-preload: untouched, not loaded, nested steps told (HARMONICS_COMM_PRELOAD=no): $(seen "$out/pre-optout.out")" \
		bash -c "grep -qx 'LD_PRELOAD=$user' $out/pre-optout.out && grep -qx loaded=no $out/pre-optout.out && grep -qx HARMONICS_COMM_PRELOAD=no $out/pre-optout.out"
	LD_PRELOAD=$user HARMONICS_COMM_PRELOAD=no preload_step "$out/pre-optenv.out" --comm-sched=harmonics --comm-profile="$PROFILE"
	check "HARMONICS_COMM_PRELOAD=no: untouched: $(seen "$out/pre-optenv.out")" \
		bash -c "grep -qx 'LD_PRELOAD=$user' $out/pre-optenv.out && grep -qx loaded=no $out/pre-optenv.out"
	LD_PRELOAD="$user:$rt" preload_step "$out/pre-twice.out" --comm-sched=harmonics --comm-profile="$PROFILE"
	check "already in LD_PRELOAD: not added twice: $(seen "$out/pre-twice.out")" grep -qx "LD_PRELOAD=$user:$rt" "$out/pre-twice.out"
	# Batch: the batch step gets it, its nested srun step does not add it again;
	# with --no-comm-preload neither gets it.
	jpre=$(LD_PRELOAD=$user sbatch --parsable -N1 -o "$out/pre-batch-%j.out" "$here/jobs/preload_env.sh")
	jpreno=$(LD_PRELOAD=$user sbatch --parsable -N1 --no-comm-preload -o "$out/pre-batch-%j.out" "$here/jobs/preload_env.sh")
	wait_state "$jpre" COMPLETED 60
	wait_state "$jpreno" COMPLETED 60
	check "batch job: batch step and nested srun step each have it once: $(seen "$out/pre-batch-$jpre.out")" \
		bash -c "grep -qx 'batch LD_PRELOAD=$user:$rt HARMONICS_COMM_PRELOAD=' $out/pre-batch-$jpre.out &&
			grep -qx 'step LD_PRELOAD=$user:$rt HARMONICS_COMM_PRELOAD=' $out/pre-batch-$jpre.out &&
			[[ \$(grep -c 'loaded=yes' $out/pre-batch-$jpre.out) == 2 ]]"
	check "sbatch --no-comm-preload: neither the batch step nor its srun step: $(seen "$out/pre-batch-$jpreno.out")" \
		bash -c "grep -qx 'batch LD_PRELOAD=$user HARMONICS_COMM_PRELOAD=no' $out/pre-batch-$jpreno.out &&
			grep -qx 'step LD_PRELOAD=$user HARMONICS_COMM_PRELOAD=no' $out/pre-batch-$jpreno.out &&
			[[ \$(grep -c 'loaded=no' $out/pre-batch-$jpreno.out) == 2 ]]"
	hm_write_plugstack "preload=no"
	LD_PRELOAD=$user preload_step "$out/pre-adminno.out" --comm-sched=harmonics --comm-profile="$PROFILE"
	check "plugstack.conf preload=no: untouched: $(seen "$out/pre-adminno.out")" \
		bash -c "grep -qx 'LD_PRELOAD=$user' $out/pre-adminno.out && grep -qx loaded=no $out/pre-adminno.out"
	hm_write_plugstack "preload=maybe"
	srun -N1 true >"$out/pre-bad.out" 2>&1
	rc=$?
	hm_write_plugstack "preload=$rt"
	check "plugstack.conf preload=maybe refused, naming what is accepted (rc $rc): $(grep -m1 -o 'preload=maybe.*' "$out/pre-bad.out")" \
		bash -c "(($rc != 0)) && grep -qF 'preload=maybe (accepted: yes, no, or an absolute path' $out/pre-bad.out"
	bad_case "HARMONICS_COMM_PRELOAD=maybe srun --comm-sched" "HARMONICS_COMM_PRELOAD" \
		env HARMONICS_COMM_PRELOAD=maybe srun -N1 --comm-sched=harmonics --comm-profile="$PROFILE" true
	hm_write_plugstack ""
fi

echo "=== harmonics-emujob under srun: a real ring all-reduce between two tasks"
# Both nodes are this machine: rank 0 listens on loopback, on one of the 16
# ports hm_pick_ports found free (the daemons take the first 12, the mute
# probe below HM_PORT + 12, the last).
emu_port=$((HM_PORT + 11))
timeout 90 srun -N2 -n2 --comm-sched=harmonics --comm-profile="$PROFILE" \
	-o "$out/emu-%t.out" -e "$out/emu-%t.err" "$build/src/tools/harmonics-emujob" \
	--rendezvous "127.0.0.1:$emu_port" --compute 20ms --bytes 1MB --iterations 20 \
	--json --quiet --timeout 20s
rc=$?
check "emujob under srun -N2 -n2 --comm-sched=harmonics exits 0 (rc $rc)" test "$rc" -eq 0
check "emujob: rank 0 reports 2 ranks and 20 iterations" \
	jq -e '.ranks == 2 and .iterations == 20' "$out/emu-0.out"
check "emujob: the pacing runtime in the tasks holds the SPANK assignment" \
	jq -e '.pace.active == true' "$out/emu-0.out"
check "emujob: no pacing warning in the tasks' stderr" \
	bash -c "! grep -q harmonics-pace $out/emu-0.err $out/emu-1.err"

echo "=== batch jobs: decisions in scontrol while running, in sacct after"
# A job on n1 leaves rack1 with 3 free nodes, rack2 with 4: a single rack fits,
# so the wrapper's candidates are single racks (tests/slurm/place.sh covers
# the choice among them).
jblock=$(sbatch --parsable -w n1 --exclusive -o /dev/null --wrap "sleep 40")
wait_state "$jblock" RUNNING 20
jid=$(sbatch --parsable -N2 -o "$out/batch-%j.out" "$here/jobs/batch_env.sh")
jplain=$(sbatch --parsable -N1 -o "$out/plain-%j.out" --wrap "sleep 3")
if [[ -n $jid ]] && wait_state "$jid" RUNNING 20 && wait_comment "$jid" 15; then
	pass "sbatch #SBATCH --comm-sched: AdminComment while running: $(admin_comment "$jid")"
else
	fail "AdminComment while running" "job $jid state $(job_state "$jid") comment '$(admin_comment "$jid")'"
fi
nl=$(squeue -h -j "$jid" -o %N)
check "the 2-node --comm-sched job was placed inside one rack (select wrapper): $nl" one_rack "$jid"
check "select wrapper logged its choice, in one rack" \
	grep -q "JobId=$jid placed by .*, 1 racks," "$HM_DIR/log/slurmctld.log"
scancel "$jblock"
wait_state "$jid" COMPLETED 60
check "batch job COMPLETED" bash -c "[[ \$(sacct -n -X -j $jid -o State | tr -d ' ') == COMPLETED ]]"
check "batch step and its srun saw the assignment" \
	bash -c "grep -q '^batch HARMONICS_PERIOD_US=[0-9]' $out/batch-$jid.out && grep -q '^step HARMONICS_PERIOD_US=[0-9]' $out/batch-$jid.out"
sc=""
for _ in $(seq 50); do sc=$(sacct_comment "$jid"); [[ $sc == *harmonics:e* ]] && break; sleep 0.2; done
if [[ $sc == *harmonics:e* ]]; then pass "sacct AdminComment after the job: $sc"; else fail "sacct AdminComment" "'$sc'"; fi
wait_state "$jplain" COMPLETED 30
check "job without --comm-sched: no harmonics AdminComment" bash -c "[[ \$(sacct -n -X -P -j $jplain -o AdminComment) != *harmonics* ]]"
echo "    sacct --format=JobID,JobName,State,AdminComment:"
sacct -X -j "$jid,$jplain" --format=JobID,JobName%12,State,AdminComment%90 | sed 's/^/    /'

echo "=== the coordinator's socket refuses forged and foreign requests"
jrun=$(sbatch --parsable -N1 --comm-sched=auto --comm-profile="$PROFILE" -o /dev/null --wrap "sleep 60")
wait_state "$jrun" RUNNING 20 && wait_comment "$jrun" 15
req="{\"op\":\"register\",\"job_id\":$jrun,\"step_id\":0,\"node\":\"n1\"}"
r_owner=$(printf '%s' "$req" | "$HM_PROBE" send 127.0.0.1 "$HM_PORT" --munge)
check "owner's (root's) request answered: $r_owner" bash -c "[[ '$r_owner' == *'\"ok\":true'* ]]"
r_garbage=$(printf '%s' "$req" | "$HM_PROBE" send 127.0.0.1 "$HM_PORT" --garbage)
check "plain JSON without a credential refused: $r_garbage" bash -c "[[ '$r_garbage' != *'\"ok\":true'* && '$r_garbage' != *assignment* ]]"
r_forged=$(printf '%s' "$req" | "$HM_PROBE" send 127.0.0.1 "$HM_PORT" --tamper)
check "forged (tampered) credential refused: $r_forged" bash -c "[[ '$r_forged' != *'\"ok\":true'* && '$r_forged' != *assignment* ]]"
r_foreign=$(printf '%s' "$req" | runuser -u nobody -- "$HM_PROBE" send 127.0.0.1 "$HM_PORT" --munge)
check "foreign uid (nobody) refused for root's job: $r_foreign" bash -c "[[ '$r_foreign' == *'\"ok\":false'* ]]"
r_status=$(printf '{"op":"status"}' | runuser -u nobody -- "$HM_PROBE" send 127.0.0.1 "$HM_PORT" --munge)
check "status open to any authenticated uid" bash -c "[[ '$r_status' == *'\"ok\":true'* ]]"
sleep 0.5
check "refusals are logged by slurmctld" bash -c "grep -c '$HM_HOST_TYPE: .*refus' $HM_DIR/log/slurmctld.log | awk '\$1 >= 3 {ok=1} END {exit !ok}'"

echo "=== unreachable coordinator: the step runs unscheduled within the bound"
mute_port=$((HM_PORT + 12))
"$HM_PROBE" mute "$mute_port" 30 >"$out/mute.out" 2>&1 &
mute_pid=$!
hm_wait_for 5 grep -q ready "$out/mute.out"
hm_write_plugstack "port=$mute_port timeout_ms=1500"
t0=$(date +%s.%N)
srun -N1 --comm-sched=auto -o "$out/mute-step.out" -e "$out/mute-step.err" bash -c 'echo HARMONICS_MODE=$HARMONICS_MODE'
rc=$?
dt=$(elapsed "$t0")
hm_write_plugstack ""
kill "$mute_pid" 2>/dev/null; wait "$mute_pid" 2>/dev/null
echo "    srun took ${dt}s with timeout_ms=1500; job output says: $(cat "$out/mute-step.err")"
check "step ran (rc 0) unscheduled (HARMONICS_MODE=off)" bash -c "(($rc == 0)) && grep -qx HARMONICS_MODE=off $out/mute-step.out" 
check "within the bound (< 1.5 s + 4 s launch slack)" awk -v d="$dt" 'BEGIN { exit !(d < 5.5) }'
check "said so exactly once in the job's output" bash -c "[[ \$(grep -c 'running unscheduled' $out/mute-step.err) == 1 ]]"

echo "=== FailOpen=no: a silent coordinator fails the step instead"
# Its own harmonics.conf (plugstack conf=): slurmctld's stays as it is.
closed_conf=$HM_DIR/etc/harmonics-failclosed.conf
sed '/^FailOpen=/d' "$HM_DIR/etc/harmonics.conf" >"$closed_conf"
echo "FailOpen=no" >>"$closed_conf"
"$HM_PROBE" mute "$mute_port" 30 >"$out/mute2.out" 2>&1 &
mute_pid=$!
hm_wait_for 5 grep -q ready "$out/mute2.out"
hm_write_plugstack "port=$mute_port timeout_ms=1500 conf=$closed_conf"
t0=$(date +%s.%N)
timeout 60 srun -N1 -J hm-failclosed --comm-sched=auto -o "$out/closed-step.out" -e "$out/closed-step.err" echo ran
rc=$?
dt=$(elapsed "$t0")
hm_write_plugstack ""
kill "$mute_pid" 2>/dev/null; wait "$mute_pid" 2>/dev/null
echo "    srun exited $rc after ${dt}s"
check "step failed (srun rc $rc, not 0 and not the 60 s timeout)" bash -c "(($rc != 0 && $rc != 124))"
check "the task never ran" bash -c "! grep -qx ran $out/closed-step.out 2>/dev/null"
check "the job's output says why: $(grep -m1 'the step fails' "$out/closed-step.err" 2>/dev/null)" \
	grep -q "FailOpen=no: the step fails" "$out/closed-step.err"
st=""
for _ in $(seq 50); do
	st=$(sacct -n -P --name=hm-failclosed -o JobID,State,ExitCode 2>/dev/null | grep '\.0|' | head -1)
	[[ $st == *FAILED* ]] && break
	sleep 0.2
done
check "sacct records the step FAILED: $st" bash -c "[[ '$st' == *'|FAILED|1:0' ]]"
check "slurmd's log says why: FailOpen=no: failing the step" \
	bash -c "cat $HM_DIR/log/slurmd-n*.log | grep -q 'did not answer within 1500 ms.*FailOpen=no: failing the step'"

echo "=== scontrol reconfigure reloads harmonics.conf and keeps decisions"
conf=$HM_DIR/etc/harmonics.conf
c_before=$(admin_comment "$jrun")
# Slurm 24.05 on: reconfigure restarts slurmctld's plugins (fini, then init), so
# the coordinator comes up again from its state file rather than reconfiguring.
sv=$(slurmctld -V | awk '{print $2}')
plugins_restart=$(((10#${sv%%.*} * 100 + 10#$(cut -d. -f2 <<<"$sv")) >= 2405))
re_log="$HM_HOST_TYPE: reconfigured from"
((plugins_restart)) && re_log="$HM_HOST_TYPE: coordinator up"
n_re=$(grep -c "$re_log" "$HM_DIR/log/slurmctld.log")
sed -i 's/^EpochLength=.*/EpochLength=20s/' "$conf"
scontrol reconfigure
hm_wait_for 10 bash -c "(( \$(grep -c '$re_log' $HM_DIR/log/slurmctld.log) > $n_re ))"
check "reconfigure logged ($re_log)" bash -c "(( \$(grep -c '$re_log' $HM_DIR/log/slurmctld.log) > $n_re ))"
check "new EpochLength in effect (coordinator status says 20 s)" \
	bash -c "printf '{\"op\":\"status\"}' | '$HM_PROBE' send 127.0.0.1 $HM_PORT --munge | grep -q '\"epoch_s\":20'"
sleep 1
check "AdminComment unchanged after reconfigure" bash -c "[[ '$(admin_comment "$jrun")' == '$c_before' ]]"
cp "$conf" "$conf.good"
echo "Bogus=1" >>"$conf"
scontrol reconfigure
if ((plugins_restart)); then
	# The plugin starts afresh on a bad file: disabled (fail-open) until fixed.
	hm_wait_for 10 grep -q "$HM_HOST_TYPE: disabled: $conf:[0-9]*: unknown key 'Bogus'" "$HM_DIR/log/slurmctld.log"
	check "a bad harmonics.conf on reconfigure disables Harmonics with file:line, slurmctld runs: $(grep -m1 -o 'disabled: .*harmonics.conf:[0-9]*: [^(]*' "$HM_DIR/log/slurmctld.log")" \
		bash -c "grep -q \"$HM_HOST_TYPE: disabled: $conf:[0-9]*: unknown key 'Bogus'\" '$HM_DIR/log/slurmctld.log' && scontrol ping >/dev/null"
	mv "$conf.good" "$conf"
	n_re=$(grep -c "$re_log" "$HM_DIR/log/slurmctld.log")
	scontrol reconfigure
	hm_wait_for 10 bash -c "(( \$(grep -c '$re_log' $HM_DIR/log/slurmctld.log) > $n_re ))"
	check "the fixed file and scontrol reconfigure enable it again" \
		bash -c "(( \$(grep -c '$re_log' $HM_DIR/log/slurmctld.log) > $n_re ))"
else
	hm_wait_for 10 grep -q "keeping the previous configuration" "$HM_DIR/log/slurmctld.log"
	check "a bad harmonics.conf on reconfigure is refused with file:line, previous kept: $(grep -m1 -o 'reconfigure: .*harmonics.conf:[0-9]*: [^;]*' "$HM_DIR/log/slurmctld.log")" \
		grep -q "reconfigure: $conf:[0-9]*: .*Bogus.*keeping the previous configuration" "$HM_DIR/log/slurmctld.log"
	mv "$conf.good" "$conf"
fi

echo "=== slurmctld restart mid-job loses no job and no decision"
# What a new step of the job would get: the coordinator's answer to "register".
assign_of() { printf '{"op":"register","job_id":%s,"step_id":1,"node":"n1"}' "$1" |
	"$HM_PROBE" send 127.0.0.1 "$HM_PORT" --munge | grep -o '"epoch":[0-9]*,\|"shift_us":[0-9]*\|"period_us":[0-9]*' | tr -d ',' | sort | tr '\n' ' '; }
a_before=$(assign_of "$jrun")
c_before=$(admin_comment "$jrun")
hm_ctld_stop
check "state file written" test -s "$HM_DIR/state/harmonics.state"
# From here on PrivateData=jobs (the coordinator reads it at start): harmonicsctl below.
echo "PrivateData=jobs" >>"$SLURM_CONF"
# A bad harmonics.conf at start leaves slurmctld running with Harmonics
# disabled: tests/slurm/failopen.sh.
t0=$(date +%s.%N)
hm_ctld_start
echo "    slurmctld back in $(elapsed "$t0")s"
check "job still RUNNING after restart" wait_state "$jrun" RUNNING 20
check "decisions recovered from the state file" grep -q "$HM_HOST_TYPE: decisions recovered" "$HM_DIR/log/slurmctld.log"
sleep 2
check "AdminComment unchanged after restart" bash -c "[[ '$(admin_comment "$jrun")' == '$c_before' ]]"
a_after=$(assign_of "$jrun")
check "a new step gets the same decision after the restart ($a_after)" \
	bash -c "[[ '$a_before' == *epoch* && '$a_before' == '$a_after' ]]"
scancel "$jrun"

echo "=== harmonicsctl through the same socket"
if [[ -z $HM_CTL ]]; then
	fail "harmonicsctl built" "no $build/src/tools/harmonicsctl"
else
	jctl=$(sbatch --parsable -N1 --comm-sched=harmonics --comm-profile="$PROFILE" -o /dev/null --wrap "sleep 30")
	wait_state "$jctl" RUNNING 20 && wait_comment "$jctl" 15
	"$HM_CTL" status >"$out/ctl-status.txt" 2>&1
	check "harmonicsctl status" test $? -eq 0
	sed 's/^/    /' "$out/ctl-status.txt"
	"$HM_CTL" jobs >"$out/ctl-jobs.txt" 2>&1
	check "harmonicsctl jobs lists job $jctl" grep -qw "$jctl" "$out/ctl-jobs.txt"
	sed 's/^/    /' "$out/ctl-jobs.txt"
	check "harmonicsctl --json job $jctl (owner)" bash -c "'$HM_CTL' --json job $jctl | grep -q '\"ok\":true'"
	runuser -u nobody -- "$HM_CTL" job "$jctl" >"$out/ctl-foreign.txt" 2>&1
	rc=$?
	check "harmonicsctl job $jctl as nobody refused (exit 1): $(head -1 "$out/ctl-foreign.txt")" test "$rc" -eq 1
	# PrivateData=jobs (since the restart), as squeue: a plain user lists its own
	# jobs only, an operator (AdminLevel=Operator in slurmdbd) every one, an
	# account's coordinator that account's.
	sees() { # user [job]: 0 when harmonicsctl jobs (exit 0) lists job ($jctl), 1 when not, 2 on failure
		local o
		o=$(runuser -u "$1" -- "$HM_CTL" jobs 2>&1) || return 2
		grep -q "^${2:-$jctl} " <<<"$o"
	}
	sq() { runuser -u "$1" -- squeue -h -j "${2:-$jctl}" -o %i 2>/dev/null; } # squeue's answer
	sees nobody
	rc=$? s=$(sq nobody)
	check "PrivateData=jobs: harmonicsctl jobs as nobody does not list root's job $jctl (rc $rc), nor squeue ('$s')" \
		bash -c "[[ $rc == 1 && -z '$s' ]]"
	sees daemon
	rc=$?
	check "PrivateData=jobs: as daemon (no AdminLevel yet) neither (rc $rc)" test "$rc" -eq 1
	sacctmgr -i add user daemon Account=root AdminLevel=Operator >"$out/sacctmgr-op.txt" 2>&1
	check "sacctmgr add user daemon AdminLevel=Operator" \
		bash -c "sacctmgr -n -P show user daemon format=AdminLevel | grep -qx Operator"
	t0=$(date +%s.%N)
	for _ in $(seq 40); do sees daemon && break; sleep 0.25; done # slurmdbd pushes it to slurmctld
	sees daemon
	rc=$? s=$(sq daemon)
	check "PrivateData=jobs: operator daemon lists job $jctl (rc $rc, $(elapsed "$t0") s after sacctmgr), as squeue ('$s')" \
		bash -c "[[ $rc == 0 && '$s' == $jctl ]]"
	sees nobody
	rc=$?
	check "PrivateData=jobs: nobody still does not (rc $rc)" test "$rc" -eq 1
	# A coordinator of account hmacct (bin) lists root's job in hmacct, not root's
	# job $jctl in account root; "job" answers it the same.
	{
		sacctmgr -i add account hmacct
		sacctmgr -i add user root,bin Account=hmacct
		sacctmgr -i add coordinator Account=hmacct Names=bin
	} >"$out/sacctmgr-coord.txt" 2>&1
	check "sacctmgr add coordinator Account=hmacct Names=bin" \
		bash -c "sacctmgr -n -P show user bin withcoord format=Coordinators | grep -qw hmacct"
	jacct=$(sbatch --parsable -N1 -A hmacct --comm-sched=harmonics --comm-profile="$PROFILE" -o /dev/null --wrap "sleep 30")
	wait_state "$jacct" RUNNING 20 && wait_comment "$jacct" 15
	t0=$(date +%s.%N)
	for _ in $(seq 40); do sees bin "$jacct" && break; sleep 0.25; done # slurmdbd pushes it
	sees bin "$jacct"
	rc=$? s=$(sq bin "$jacct")
	check "PrivateData=jobs: coordinator bin lists root's job $jacct of account hmacct (rc $rc, $(elapsed "$t0") s after sacctmgr), as squeue ('$s')" \
		bash -c "[[ $rc == 0 && '$s' == $jacct ]]"
	sees bin "$jctl"
	rc=$? s=$(sq bin "$jctl")
	check "PrivateData=jobs: coordinator bin does not list root's job $jctl of account root (rc $rc), nor squeue ('$s')" \
		bash -c "[[ $rc == 1 && -z '$s' ]]"
	runuser -u bin -- "$HM_CTL" job "$jacct" >"$out/ctl-coord.txt" 2>&1
	rc=$?
	check "harmonicsctl job $jacct as its account's coordinator bin (rc $rc), Account shown" \
		bash -c "[[ $rc == 0 ]] && grep -q '^Account *hmacct$' '$out/ctl-coord.txt'"
	runuser -u bin -- "$HM_CTL" job "$jctl" >"$out/ctl-coord2.txt" 2>&1
	rc=$?
	check "harmonicsctl job $jctl (account root) as bin refused (rc $rc): $(head -1 "$out/ctl-coord2.txt")" \
		test "$rc" -eq 1
	sees nobody "$jacct"
	rc=$?
	check "PrivateData=jobs: nobody does not list job $jacct (rc $rc)" test "$rc" -eq 1
	scancel "$jctl" "$jacct"
fi

hm_tier_end
