#!/usr/bin/env bash
# The coordinator in slurmctld under load and attack (issue 28 item 6).
#
# A one-machine Slurm (tests/slurm/cluster.sh: slurmctld with job_submit/
# harmonics, slurmdbd, MariaDB) of --nodes real slurmd (multiple-slurmd), 8 per
# rack, their own node agents off (plugstack agent=no); --jobs running
# --comm-sched jobs of 1, 2, 4 or 8 nodes with a catalogue profile, made by
# `salloc --no-shell` (an allocation without steps: no slurmstepd per job, the
# one way 10,000 running jobs fit on 2 cores), the first 100 owned by the
# legitimate user (nobody), the rest by root. Then tests/load/coord_load --port
# against slurmctld's coordinator: one agent per node (contract B, sealed by
# root, each from its own loopback address, listing the node's jobs from
# squeue), 64 hostile connections, a registration flood of one user (daemon),
# and nobody's `status` and step `register` every 100 ms, timed. Decision
# rounds come from the coordinator's metrics (MetricsListen), slurmctld's CPU
# and memory from /proc. Everything runs on this machine's cores, the agents
# and the flood included.
#
#   tests/load/ctld_load.sh              # 1,024 nodes, 10,000 jobs, 20 s (about 3 GB)
#   tests/load/ctld_load.sh --short      # 32 nodes, 200 jobs, 5 s
#   tests/load/ctld_load.sh [--nodes N] [--jobs N] [--duration-s S] [--heartbeat-ms MS]
# Environment: HM_BUILD (default build), HM_KEEP=1 keeps the cluster's directory.
# Root; exit 77 (skip) otherwise. Fails when a legitimate request failed or
# fewer jobs than asked were running.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${HM_BUILD:-$top/build}
nodes=1024 jobs=10000 duration_s=20 heartbeat_ms=1000
while (($#)); do
	case $1 in
	--short) nodes=32 jobs=200 duration_s=5 ;;
	--nodes) nodes=$2 && shift ;;
	--jobs) jobs=$2 && shift ;;
	--duration-s) duration_s=$2 && shift ;;
	--heartbeat-ms) heartbeat_ms=$2 && shift ;;
	*)
		echo "ctld_load: unknown option '$1' (accepted: --short, --nodes N, --jobs N, --duration-s S, --heartbeat-ms MS)" >&2
		exit 2
		;;
	esac
	shift
done
for v in nodes jobs duration_s heartbeat_ms; do
	[[ ${!v} =~ ^[1-9][0-9]{0,5}$ ]] || { echo "ctld_load: --${v//_/-} '${!v}' is not a positive integer" >&2; exit 2; }
done
((nodes >= 8 && nodes % 8 == 0)) || { echo "ctld_load: --nodes $nodes: a multiple of 8 (racks of 8)" >&2; exit 2; }
if ((EUID != 0)); then
	echo "SKIP: ctld_load needs root (a Slurm of its own, setuid users)"
	exit 77
fi
legit_user=nobody flood_user=daemon
[[ -x $build/tests/load/coord_load ]] || make -C "$build" -s tests/load/coord_load

export HM_NODES=$nodes HM_RACK_HOSTS=8
# Room for every job: 1, 2, 4, 8 nodes in turn is 3.75 node-CPUs a job; twice that.
export HM_NODE_CPUS=$(((jobs * 15 / 4 + nodes - 1) / nodes * 2 + 4))
export HM_SLURM_EXTRA="MaxJobCount=$((jobs * 2 + 1000))"
# RackSolve=coordinator: coord_load's agents do not answer rack rounds (each
# round would wait out its leader's deadline).
export HM_CONF_EXTRA="EpochLength=10s
HeartbeatInterval=${heartbeat_ms}ms
RackSolve=coordinator
LogLevel=info"
# The nodes' agents are coord_load's; the metrics port is the one past the
# cluster's ports (hm_pick_ports checked those).
export HM_BEFORE_DAEMONS='hm_write_plugstack agent=no &&
	HM_METRICS_PORT=$((HM_NODE_PORT0 + HM_NODES)) &&
	! ss -Htln | grep -q ":$HM_METRICS_PORT\b" &&
	echo "MetricsListen=127.0.0.1:$HM_METRICS_PORT" >>"$HM_DIR/etc/harmonics.conf"'
# shellcheck source=tests/slurm/cluster.sh
source "$top/tests/slurm/cluster.sh"
trap hm_cluster_down EXIT

# A metric's value from the coordinator's endpoint.
metric() {
	local body
	exec 9<>"/dev/tcp/127.0.0.1/$HM_METRICS_PORT" || return 1
	printf 'GET /metrics HTTP/1.0\r\n\r\n' >&9
	body=$(cat <&9)
	exec 9<&-
	awk -v k="$1" '$1 == k { print $2; exit }' <<<"$body"
}
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

hm_cluster_up "$build"
ctld=${HM_PIDS[slurmctld]}
echo "ctld_load: $nodes slurmd up in ${HM_UP_S}s ($HM_NODE_CPUS CPUs each); slurmctld RSS $(rss_kb "$ctld") kB"

# Submit: 8 at a time; job k has 1, 2, 4 or 8 nodes and one of 4 profiles.
sizes=(1 2 4 8) profiles=(resnet50 bert-large gpt2-xl vgg16)
t0=$(date +%s.%N)
failed=0
for ((k = 0; k < jobs; k += 8)); do
	pids=()
	for ((i = k; i < k + 8 && i < jobs; i++)); do
		n=${sizes[i % 4]}
		as=()
		((i < 100)) && as=(runuser -u "$legit_user" --)
		"${as[@]}" salloc --no-shell -Q -J hm-load -N "$n" -n "$n" --comm-sched=harmonics \
			--comm-profile="${profiles[i % 4]}" >/dev/null 2>>"$HM_DIR/log/salloc.err" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
done
running=$(squeue -h -t R -o %i | wc -l)
echo "ctld_load: $running of $jobs jobs running in $(hm_since "$t0")s ($failed salloc failed); slurmctld RSS $(rss_kb "$ctld") kB"
if ((running < jobs)); then
	echo "ctld_load: FAIL: only $running of $jobs jobs running (salloc's errors: $HM_DIR/log/salloc.err)"
	tail -n 3 "$HM_DIR/log/salloc.err"
	exit 1
fi
squeue -h -t R -o "%i %U %N" >"$HM_DIR/jobs.txt"
sleep 12 # an epoch: the coordinator mirrors and decides the last submissions

sum0=$(metric harmonics_decision_duration_seconds_sum) cnt0=$(metric harmonics_decision_duration_seconds_count)
rc=0
"$top/tests/load/coord_load.sh" --port "$HM_PORT" --ctld-pid "$ctld" --nodes "n[1-$nodes]" \
	--jobs-file "$HM_DIR/jobs.txt" --legit-uid "$(id -u "$legit_user")" \
	--flood-uid "$(id -u "$flood_user")" --duration-s "$duration_s" \
	--heartbeat-ms "$heartbeat_ms" || rc=$?
sum1=$(metric harmonics_decision_duration_seconds_sum) cnt1=$(metric harmonics_decision_duration_seconds_count)
awk -v s0="$sum0" -v s1="$sum1" -v c0="$cnt0" -v c1="$cnt1" 'BEGIN {
	n = c1 - c0
	mean = n > 0 ? (s1 - s0) * 1000 / n : 0
	printf "decision rounds during the load: %d, mean %.1f ms (coordinator metrics)\n", n, mean }'
echo "slurmctld: RSS $(rss_kb "$ctld") kB, $(awk '/^Threads/ { print $2 }' "/proc/$ctld/status") threads"
exit $rc
