#!/usr/bin/env bash
# A backup controller (issue 29 item 6) on the one-machine cluster
# (tests/slurm/cluster.sh): two SlurmctldHost lines, the primary on 127.0.0.1
# (the machine's own name) and the backup "hmbackup" on 127.0.0.2, each bound
# to its own address (CommunicationParameters=NoCtldInAddrAny) on the same
# SlurmctldPort. The backup runs in its own UTS and mount namespaces (unshare:
# its host name hmbackup, a private /etc/hosts naming it 127.0.0.2), so that
# slurmctld takes it for the second SlurmctldHost, and its own run/ for
# SlurmctldPidFile); both share StateSaveLocation. harmonics.conf leaves
# ListenAddress and CoordinatorHost unset: each coordinator binds its own
# controller's SlurmctldHost address (127.0.0.1 or 127.0.0.2, not both), and the
# node agents, the steps and harmonicsctl try slurm.conf's SlurmctldHost
# addresses in order (docs/admin-guide.md "Backup controller").
#   - while the primary runs, the backup's job_submit/harmonics waits: no
#     coordinator there, the primary's (127.0.0.1 only) decides a --comm-sched
#     job, the 8 agents are connected to 127.0.0.1;
#   - the primary killed (SIGKILL: a crash, no state written at exit), the
#     backup takes control after SlurmctldTimeout, its coordinator starts from
#     the StateFile in StateSaveLocation (the job keeps its decision) and
#     listens on 127.0.0.2 only; the 8 agents follow it there (their slurmd
#     logs say so) and a new step registers there;
#   - the primary started again takes control back: the backup's coordinator
#     stops, the primary's listens on 127.0.0.1 again, the agents and a new
#     step come back to it.
# Prints the times: kill -> backup in control -> coordinator answering -> all
# agents up again (and coordinator answering -> all agents: the agents' follow
# time), the same for the failback. HM_HOST=sched runs it with sched/harmonics.
# In the slurm tier (scripts/check.sh; about 40 s plus teardown).
# Usage: tests/slurm/backup.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin backup "the Slurm tier needs root (daemons, munge, namespaces)" "$@"
for t in jq unshare; do
	command -v "$t" >/dev/null || { echo "backup: $t not installed" >&2; exit 1; }
done
[[ $(getent hosts "$(hostname -s)" | awk '{print $1}') == 127.0.0.1 ]] ||
	{ echo "backup: SKIP: $(hostname -s) does not resolve to 127.0.0.1 (NoCtldInAddrAny binds there)"; exit 77; }

CTLD_TIMEOUT_S=5
export HM_SLURM_EXTRA="SlurmctldHost=hmbackup(127.0.0.2)
CommunicationParameters=NoCtldInAddrAny
SlurmctldTimeout=$CTLD_TIMEOUT_S"
export HM_CONF_EXTRA="HeartbeatInterval=250ms
AgentValidity=1s
EpochLength=4s
ListenAddress="

# harmonicsctl tries slurm.conf's SlurmctldHost addresses; ctl_at asks one address only.
ctl() { "$HM_CTL" --json --timeout 1s "$@" 2>/dev/null; }
ctl_at() { "$HM_CTL" --json --timeout 1s -H "$1" "${@:2}" 2>/dev/null; }
agents_up() { [[ $(ctl nodes | jq '[.nodes[] | select(.state == "up")] | length') == 8 ]]; }
# Job $1's decision, and whether $2 is the same decision as $1 (epoch not lower).
decision() { ctl job "$1" | jq -c '.job | {decided_epoch, class: .prio, period_us, shift_us}'; }
same_decision() {
	jq -en --argjson a "$1" --argjson b "${2:-null}" '$b != null and $a.class == $b.class and
		$a.period_us == $b.period_us and $a.shift_us == $b.shift_us and
		$b.decided_epoch >= $a.decided_epoch' >/dev/null
}
# FILE has PATTERN N times.
logged() { [[ $(grep -c -- "$2" "$1") == "$3" ]]; }
# The agents' slurmd logs: how many times an agent connected to the coordinator at $1.
agents_at() { cat "$HM_DIR"/log/slurmd-n*.log | grep -c "connected to the coordinator $1:$HM_PORT "; }
# A new --comm-sched step of job $1 registers (its tasks get an assignment); $2: output prefix.
# A step with --comm-sched registers (both tasks got HARMONICS_EPOCH). $1: a job
# id (a step in it) or "new" (a job of its own: after the failback, 22.05's
# primary refused further steps of the job the backup had run one in,
# "Memory required by task is not available"; a Slurm matter, not what is
# checked here). srun's error, if any, is printed.
step_registers() {
	local -a where=(--jobid="$1" --overlap -w n1,n5)
	# n2, n3: one rack, no link of job 1's, so job 1's decision stays.
	[[ $1 == new ]] && where=(-J hm-bk-new -t 1 -w n2,n3 --comm-profile="iter=100ms,comm=20%,bytes=100MB")
	if ! srun "${where[@]}" -N2 --comm-sched=harmonics -o "$2-%t.env" env \
		>/dev/null 2>"$2.err"; then
		echo "    srun failed: $(tr '\n' ' ' <"$2.err" | cut -c1-300)"
		return 1
	fi
	grep -q '^HARMONICS_EPOCH=[0-9]' "$2-0.env" && grep -q '^HARMONICS_EPOCH=[0-9]' "$2-1.env"
}
export -f ctl ctl_at agents_up agents_at logged

echo "=== bring-up: the primary slurmctld, then the backup (hmbackup, 127.0.0.2)"
hm_tier_cluster_up "8 slurmd, primary slurmctld on 127.0.0.1" --no-db
{ grep -v '^127\.0\.0\.2' /etc/hosts; echo "127.0.0.2 hmbackup"; } >"$HM_DIR/etc/hosts.backup"
blog=$HM_DIR/log/slurmctld-backup.log
# Its own run/ too: slurmctld kills the process named in SlurmctldPidFile at start.
mkdir -p "$HM_DIR/run.backup"
hm_spawn slurmctld-backup unshare --uts --mount --propagation private sh -c \
	"hostname hmbackup && mount --bind '$HM_DIR/etc/hosts.backup' /etc/hosts &&
	mount --bind '$HM_DIR/run.backup' '$HM_DIR/run' &&
	exec slurmctld -D -f '$SLURM_CONF' -L '$blog'"
hm_wait_s 20 grep -q "slurmctld running in background mode" "$blog"
check "the backup slurmctld runs in standby" grep -q "slurmctld running in background mode" "$blog"
check "scontrol ping: primary and backup UP" \
	bash -c "scontrol ping | grep -q 'primary.* is UP' && scontrol ping | grep -q 'backup.* is UP'"
say "$(scontrol ping | tr '\n' ';')"

echo "=== a --comm-sched job decided by the primary's coordinator"
j=$(sbatch --parsable -J hm-bk -w n1,n5 -N2 --comm-sched=harmonics --comm-profile="iter=100ms,comm=20%,bytes=100MB" \
	--time=2 -o /dev/null --wrap "sleep 120")
hm_wait_s 10 bash -c "[[ \$(ctl job $j | jq -r '.job.decided_epoch // empty') != '' ]]"
dec=$(decision "$j")
say "job $j: $dec"
check "job $j decided by the primary" bash -c "[[ -n '$dec' && '$dec' != *null* ]]"
hm_wait_s 10 agents_up
check "8 agents up on the primary's coordinator" agents_up
plog=$HM_DIR/log/slurmctld.log
check "the primary's coordinator listens on its SlurmctldHost address, 127.0.0.1" \
	grep -q "coordinator up: .*listening on 127.0.0.1:$HM_PORT" "$plog"
check "the 8 agents connected to 127.0.0.1" bash -c "(( \$(agents_at 127.0.0.1) >= 8 ))"
check "the backup has no coordinator while in standby" \
	bash -c "! grep -q 'coordinator up' '$blog'"

# Slurm writes its job state a moment after a change: the backup recovers what
# the primary last wrote (a job allocated just before a crash comes back
# pending). A held job submitted a second after the job runs makes Slurm write
# it again (mtime has whole seconds); wait for that write.
t_run=$(date +%s)
sleep 1.1
sbatch --parsable --hold -J hm-bk-held -o /dev/null --wrap true >/dev/null
hm_wait_s 30 bash -c "(( \$(stat -c %Y '$HM_DIR/state/job_state') > $t_run ))"
check "the primary wrote its job state since the job started" \
	bash -c "(( \$(stat -c %Y '$HM_DIR/state/job_state') > $t_run ))"

echo "=== the primary killed (SIGKILL)"
t_kill=$(date +%s.%N)
kill -KILL "${HM_PIDS[slurmctld]}"
wait "${HM_PIDS[slurmctld]}" 2>/dev/null
unset "HM_PIDS[slurmctld]"
hm_wait_s $((CTLD_TIMEOUT_S * 4 + 10)) grep -q "Running as primary controller" "$blog"
t_ctl=$(date +%s.%N)
check "the backup took control" grep -q "Running as primary controller" "$blog"
hm_wait_s 20 ctl status
t_coord=$(date +%s.%N)
check "the backup's coordinator answers harmonicsctl" bash -c "ctl status >/dev/null"
hm_wait_s 30 agents_up
t_agents=$(date +%s.%N)
check "all 8 agents reconnected to it" agents_up
say "kill -> backup in control $(hm_since "$t_kill" "$t_ctl")s (SlurmctldTimeout=${CTLD_TIMEOUT_S}s)," \
	"-> coordinator answering $(hm_since "$t_kill" "$t_coord")s, -> 8 agents up $(hm_since "$t_kill" "$t_agents")s" \
	"(agents follow: $(hm_since "$t_coord" "$t_agents")s after it answers)"
check "the backup's coordinator listens on 127.0.0.2" grep -q "coordinator up: .*listening on 127.0.0.2:$HM_PORT" "$blog"
check "127.0.0.2 answers, 127.0.0.1 does not (the backup's coordinator is not at the primary's address)" \
	bash -c "ctl_at 127.0.0.2 status >/dev/null && ! ctl_at 127.0.0.1 status >/dev/null"
check "the 8 agents connected to 127.0.0.2" bash -c "(( \$(agents_at 127.0.0.2) == 8 ))"
t0=$(date +%s.%N)
check "a new step of job $j registers at the backup's coordinator" step_registers "$j" "$HM_DIR/out/bk-step"
say "new step (srun) on the backup: $(hm_since "$t0" "$(date +%s.%N)")s"
grep -E "harmonics: (coordinator up|state file)" "$blog" | sed 's/^/    | /'
check "the backup's coordinator restored job $j from StateSaveLocation" \
	grep -Eq "harmonics: state file $HM_DIR/state/harmonics.state: [1-9][0-9]* jobs restored" "$blog"
dec2=$(decision "$j")
say "job $j after the takeover: $dec2"
check "job $j kept its decision across the takeover (class, slot; epoch not lower)" \
	same_decision "$dec" "$dec2"

echo "=== the primary started again: it takes control back, the backup returns to standby"
n_primary=$(agents_at 127.0.0.1)
t_back=$(date +%s.%N)
hm_spawn slurmctld slurmctld -D -f "$SLURM_CONF"
hm_wait_s 30 logged "$plog" 'Running as primary controller' 2
check "the primary is in control again" logged "$plog" 'Running as primary controller' 2
# Its coordinator is up once the backup's has let go of ListenPort (one machine:
# the same address; on a site the agents would otherwise stay with the old one).
hm_wait_s 20 logged "$plog" 'harmonics: coordinator up' 2
t_up=$(date +%s.%N)
grep -E "harmonics: (coordinator up|coordinator stopped|state file|disabled|slurmctld)" "$blog" | tail -n 3 | sed 's/^/    | backup: /'
grep -E "harmonics: (coordinator up|state file|disabled)" "$plog" | tail -n 2 | sed 's/^/    | primary: /'
# job_submit/harmonics notices itself within a second or so (the primary's
# coordinator may be up first: they listen on different addresses);
# sched/harmonics is stopped by slurmctld (sched fini).
backup_stopped() {
	grep -Eq "harmonics: (slurmctld left control \(standby or exit\): coordinator stopped|stopped$)" "$blog"
}
hm_wait_s 10 backup_stopped
check "the backup's coordinator stopped when it went back to standby" backup_stopped
check "the primary's coordinator is up again (state from StateSaveLocation)" \
	logged "$plog" 'harmonics: coordinator up' 2
hm_wait_s 30 bash -c "agents_up && (( \$(agents_at 127.0.0.1) >= $n_primary + 8 ))"
t_agents=$(date +%s.%N)
check "all 8 agents back on the primary's coordinator" agents_up
check "the 8 agents connected to 127.0.0.1 again" bash -c "(( \$(agents_at 127.0.0.1) >= $n_primary + 8 ))"
check "127.0.0.1 answers, 127.0.0.2 does not" \
	bash -c "ctl_at 127.0.0.1 status >/dev/null && ! ctl_at 127.0.0.2 status >/dev/null"
say "primary started -> its coordinator up $(hm_since "$t_back" "$t_up")s, -> 8 agents up $(hm_since "$t_back" "$t_agents")s" \
	"(agents follow: $(hm_since "$t_up" "$t_agents")s after it is up)"
t0=$(date +%s.%N)
check "a new --comm-sched job's step registers at the primary's coordinator" step_registers new "$HM_DIR/out/pr-step"
say "new step (srun) on the primary: $(hm_since "$t0" "$(date +%s.%N)")s"
dec3=$(decision "$j")
say "job $j back on the primary: $dec3"
check "job $j kept its decision" same_decision "$dec" "$dec3"
scancel "$j"
hm_tier_end tail -n 30 "$blog"
