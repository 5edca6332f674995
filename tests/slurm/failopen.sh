#!/usr/bin/env bash
# Harmonics never stops Slurm (issue 27 item 4): a real one-machine cluster
# (tests/slurm/cluster.sh, no accounting database) whose Harmonics cannot start.
#
#   1. harmonics.conf with an unknown key: slurmctld starts and stays up, its
#      log names file:line; a --comm-sched job is accepted with a one-line
#      notice and runs to completion, unscheduled (AdminComment
#      off=disabled(harmonics.conf:LINE)), a plain job too, srun as well;
#      harmonicsctl names file:line; every slurmd runs (the node agents
#      refused to start, saying why).
#   2. The file fixed, scontrol reconfigure: the coordinator is up
#      (harmonicsctl status answers), a new --comm-sched job gets a decision;
#      the node agents start by themselves (slurmd watches the file).
#   3. ListenPort held by another process when slurmctld starts: slurmctld
#      runs (log: address in use, the port), jobs run; the port freed,
#      scontrol reconfigure: the coordinator is up.
#   4. munged down when slurmctld starts (its socket hidden in this test's
#      mount namespace): slurmctld, every slurmd and the node agents run on,
#      Harmonics logs the cause; munged back: the coordinator answers, a
#      --comm-sched job is decided, the agents are up, nothing restarted.
#
# Usage: tests/slurm/failopen.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

# Section 4 hides munged's socket from this test's daemons alone: run in a
# mount namespace of our own (mounts made there stay there).
if ((EUID == 0)) && [[ -z ${HM_FAILOPEN_NS:-} ]] && command -v unshare >/dev/null; then
	HM_FAILOPEN_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

# A typo, as admins make them; slurmctld up without the coordinator's port.
export HM_CONF_EXTRA="EpochLenght=10s" HM_CTLD_NO_COORD=1
# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin failopen "the Slurm tier needs root (daemons, munge)" "$@"
command -v jq >/dev/null || { echo "failopen: jq not installed (scripts/deps.sh)" >&2; exit 1; }

PROF="iter=250ms,comm=40%,bytes=1.2GB"
ctld_alive() { hm_alive "${HM_PIDS[slurmctld]:-0}" && scontrol ping >/dev/null 2>&1; }
slurmds_alive() {
	local i
	for ((i = 1; i <= HM_NODES; i++)); do hm_alive "${HM_PIDS[slurmd-n$i]}" || return 1; done
}
ctl_status() { "$HM_CTL" --timeout 2s status; }
comment_has() { [[ $(admin_comment "$1") == *"$2"* ]]; }

echo "=== 1. harmonics.conf with an unknown key"
hm_tier_cluster_up "8 slurmd, harmonics.conf with an unknown key (coordinator expected down)" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }
log=$HM_DIR/log/slurmctld.log
conf=$HM_DIR/etc/harmonics.conf
line=$(grep -n '^EpochLenght=' "$conf" | cut -d: -f1)
check "slurmctld logs Harmonics disabled with $(basename "$conf"):$line: $(grep -m1 -o "$HM_HOST_TYPE: disabled: [^(]*" "$log")" \
	grep -q "$HM_HOST_TYPE: disabled: $conf:$line: unknown key 'EpochLenght' (accepted: .*); jobs run unscheduled (--comm-sched accepted)" "$log"
check "backfill kept (sched/backfill, or wrapped by sched/harmonics)" \
	grep -q "sched/harmonics: backfill kept\|$HM_HOST_TYPE: .*SchedulerType=sched/backfill" "$log"
check "nothing listens on ListenPort $HM_PORT" bash -c "! ss -Htln | grep -q ':$HM_PORT\b'"

comm=$(sbatch --parsable -N2 --comm-sched=harmonics --comm-profile="$PROF" \
	-o "$HM_DIR/out/comm.out" --wrap "sleep 6; echo done" 2>"$HM_DIR/out/comm.err")
plain=$(sbatch --parsable -N1 -o "$HM_DIR/out/plain.out" --wrap "sleep 1; echo done" \
	2>"$HM_DIR/out/plain.err")
say "sbatch --comm-sched stderr: $(cat "$HM_DIR/out/comm.err")"
check "the --comm-sched job is accepted ($comm)" test -n "$comm"
check "with one line on stderr: harmonics: disabled ($conf:$line: ...); job runs unscheduled" \
	bash -c "[[ \$(wc -l <'$HM_DIR/out/comm.err') == 1 ]] &&
		grep -q '^sbatch: harmonics: disabled ($conf:$line: unknown key .EpochLenght. (accepted: .*)); job runs unscheduled\$' '$HM_DIR/out/comm.err'"
check "the plain job is accepted ($plain), nothing said" \
	bash -c "[[ -n '$plain' && ! -s '$HM_DIR/out/plain.err' ]]"
check "the --comm-sched job runs" wait_state "$comm" RUNNING 20
check "its AdminComment: off=disabled(harmonics.conf:$line)" \
	hm_wait_for 5 comment_has "$comm" "off=disabled(harmonics.conf:$line);"
say "AdminComment=$(admin_comment "$comm")"
check "the plain job completes" wait_state "$plain" COMPLETED 30
check "the --comm-sched job completes" wait_state "$comm" COMPLETED 30
check "the plain job has no Harmonics entry" bash -c "[[ '$(admin_comment "$plain")' != *harmonics:* ]]"
check "both outputs say done" bash -c "grep -qx done '$HM_DIR/out/comm.out' && grep -qx done '$HM_DIR/out/plain.out'"
check "the job's output says once why it ran unscheduled" \
	bash -c "[[ \$(grep -c '^harmonics: disabled ($conf:$line: unknown key .*); running unscheduled\$' '$HM_DIR/out/comm.out') == 1 ]]"
srun_out=$(timeout 60 srun -N1 --comm-sched=auto --comm-profile="$PROF" echo srun-ok 2>&1)
srun_ok() { grep -qx srun-ok <<<"$srun_out" && grep -q "^srun: harmonics: disabled ($conf:$line: " <<<"$srun_out"; }
check "srun --comm-sched runs, told at submission" srun_ok
say "srun stderr: $(grep -v srun-ok <<<"$srun_out" | cut -c1-120 | tr '\n' '|')"
ctl_out=$(ctl_status 2>&1)
say "harmonicsctl status: $ctl_out"
check "harmonicsctl names the file and line" grep -q "$conf:$line: unknown key 'EpochLenght'" <<<"$ctl_out"
check "every slurmd runs" slurmds_alive
check "the node agents said why they did not start (slurmd's log)" \
	grep -q "harmonics-agent .*: not started: $conf:$line: unknown key" "$HM_DIR/log/slurmd-n1.log"
check "a step's slurmstepd logged Harmonics disabled on its node" \
	bash -c "cat '$HM_DIR'/log/slurmd-n*.log | grep -q 'harmonics: disabled: $conf:$line: .*this node.s steps run unscheduled'"
check "slurmctld still runs" ctld_alive

echo "=== 2. the file fixed, scontrol reconfigure: Harmonics enabled"
sed -i '/^EpochLenght=/d' "$conf"
scontrol reconfigure
check "slurmctld logs: reconfigure: enabled, coordinator up" \
	hm_wait_for 15 grep -q "$HM_HOST_TYPE: reconfigure: enabled, coordinator up: policy harmonics" "$log"
check "harmonicsctl status answers" hm_wait_for 10 ctl_status
ctl_status 2>&1 | sed 's/^/      /'
comm2=$(sbatch --parsable -N2 --comm-sched=harmonics --comm-profile="$PROF" -o /dev/null \
	--wrap "sleep 300" 2>"$HM_DIR/out/comm2.err")
check "a new --comm-sched job is accepted without a notice" \
	bash -c "[[ -n '$comm2' && ! -s '$HM_DIR/out/comm2.err' ]]"
check "it runs" wait_state "$comm2" RUNNING 20
check "it gets a decision in AdminComment" hm_wait_for 15 comment_has "$comm2" " p=harmonics "
say "AdminComment=$(admin_comment "$comm2")"
agents_up() { [[ $("$HM_CTL" --json --timeout 2s nodes 2>/dev/null | jq '[.nodes[] | select(.state == "up")] | length') == "$HM_NODES" ]]; }
check "the $HM_NODES node agents start by themselves (the file changed; no slurmd restart)" \
	hm_wait_for 20 agents_up
check "slurmd's log says why the agent started" \
	grep -q "harmonics: $conf changed: starting the node agent" "$HM_DIR/log/slurmd-n1.log"
scancel "$comm2"

echo "=== 3. ListenPort held by another process when slurmctld starts"
hm_ctld_stop
hm_spawn holder python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
print("holding", sys.argv[1], flush=True)
time.sleep(300)' "$HM_PORT"
check "a python3 socket holds 127.0.0.1:$HM_PORT" hm_wait_for 10 grep -q holding "$HM_DIR/log/holder.out"
hm_spawn slurmctld slurmctld -D -f "$SLURM_CONF"
check "slurmctld starts" hm_wait_for 30 scontrol ping
check "slurmctld logs: disabled, cannot listen on 127.0.0.1:$HM_PORT: Address already in use" \
	hm_wait_for 10 grep -q "$HM_HOST_TYPE: disabled: server: cannot listen on 127.0.0.1:$HM_PORT: Address already in use" "$log"
busy=$(sbatch --parsable -N1 --comm-sched=harmonics --comm-profile="$PROF" -o /dev/null \
	--wrap "sleep 4")
plain2=$(sbatch --parsable -N1 -o /dev/null --wrap "sleep 1")
check "a --comm-sched job runs" wait_state "$busy" RUNNING 20
check "its AdminComment: off=disabled(listen-127.0.0.1:$HM_PORT)" \
	hm_wait_for 5 comment_has "$busy" "off=disabled(listen-127.0.0.1:$HM_PORT);"
check "a plain job completes" wait_state "$plain2" COMPLETED 30
check "the --comm-sched job completes" wait_state "$busy" COMPLETED 30
check "slurmctld still runs" ctld_alive
hm_stop_pid holder
n_up=$(grep -c "$HM_HOST_TYPE: reconfigure: enabled, coordinator up" "$log")
scontrol reconfigure
check "the port freed, scontrol reconfigure: coordinator up" \
	hm_wait_for 15 bash -c "(( \$(grep -c '$HM_HOST_TYPE: reconfigure: enabled, coordinator up' '$log') > $n_up )) && ss -Htln | grep -q ':$HM_PORT\b'"
check "harmonicsctl status answers" hm_wait_for 10 ctl_status

echo "=== 4. munged down when slurmctld starts (this test's mount namespace only)"
# Empty directory over /run/munge: no munged socket for this namespace's
# daemons; the machine's munged and other clusters are untouched.
hm_ctld_stop
mkdir -p "$HM_DIR/nomunge"
mount --bind "$HM_DIR/nomunge" /run/munge || { fail "bind-mount over /run/munge"; hm_tier_end; }
munge_down() { ! munge -n >/dev/null 2>&1; }
check "munge fails in this namespace: $(munge -n 2>&1 | head -n1 | cut -c1-80)" munge_down
n_up=$(grep -c "$HM_HOST_TYPE: coordinator up" "$log")
hm_spawn slurmctld slurmctld -D -f "$SLURM_CONF"
check "Harmonics logs why it answers no step while munged is down" \
	hm_wait_for 20 grep -q "$HM_HOST_TYPE: .*[Mm]unge.*: the coordinator decides (AdminComment) but answers no step" "$log"
say "$(grep -m1 -o "$HM_HOST_TYPE: .*[Mm]unge.*: the coordinator decides" "$log" | cut -c1-160)"
sleep 5
check "slurmctld still runs 5 s later, munged down" hm_alive "${HM_PIDS[slurmctld]}"
check "every slurmd still runs" slurmds_alive
check "the node agents log the munge failure and run on" \
	hm_wait_for 10 bash -c "cat '$HM_DIR'/log/slurmd-n*.log | grep -q 'harmonics-agent .*[Mm]unge'"
umount /run/munge
check "munged back (the mount removed): munge works" bash -c "munge -n | unmunge >/dev/null"
check "slurmctld answers" hm_wait_for 30 scontrol ping
# Slurm's own recovery: the slurmd could not register while munged was down.
scontrol reconfigure
nodes_respond() { [[ -n $(sinfo -h -N -o %t) && -z $(sinfo -h -N -o %t | grep '[*~#]') ]]; }
check "every node responds again (scontrol reconfigure: the slurmd register)" hm_wait_for 60 nodes_respond
check "the coordinator answers (harmonicsctl status), no restart" hm_wait_for 15 ctl_status
m_job=$(sbatch --parsable -N2 --comm-sched=harmonics --comm-profile="$PROF" -o /dev/null --wrap "sleep 30")
check "a --comm-sched job runs" wait_state "$m_job" RUNNING 30
check "it gets a decision in AdminComment" hm_wait_for 15 comment_has "$m_job" " p=harmonics "
check "the $HM_NODES node agents are up again" hm_wait_for 30 agents_up
scancel "$m_job"

hm_tier_end tail -n 40 "$log"
