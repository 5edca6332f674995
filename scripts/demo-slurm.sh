#!/usr/bin/env bash
# The Slurm part of the demo: brings up the one-machine cluster with the Harmonics
# plugins (tests/slurm/cluster.sh), submits a small mixed workload with and without
# --comm-sched, shows harmonicsctl, scontrol and sacct output, and tears down.
#
# Usage: scripts/demo-slurm.sh [BUILD_DIR]   (default: ./build; root needed)
# Exit 77 when not root (nothing started).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "demo-slurm: no build dir ${1:-$top/build}" >&2; exit 1; }
if ((EUID != 0)); then
	echo "demo-slurm: SKIP: needs root (Slurm daemons, munge, a private MariaDB)" >&2
	exit 77
fi
# shellcheck source=tests/slurm/cluster.sh
. "$top/tests/slurm/cluster.sh"
trap 'hm_cluster_down' EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m## %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

# Narrow rack uplinks (100 Gbit/s for 4 hosts) so that cross-rack jobs contend;
# node agents beat every 250 ms and a changed decision switches 500 ms ahead, so
# that the live part below takes seconds.
export HM_CONF_EXTRA="UplinkSpeed=100Gbps
HeartbeatInterval=250ms
UpdateLead=500ms
EpochLength=4s"
say "Bringing up 8 slurmd in 2 racks, slurmctld with sched/harmonics, slurmdbd"
hm_cluster_up "$build" || { HM_KEEP=1; exit 1; }
run scontrol show topology
run sinfo
run cat "$HM_DIR/etc/harmonics.conf"

say "A bad option is refused at submission"
run sbatch --comm-sched=fastest --wrap true
run sbatch --comm-sched=auto --comm-profile=iter=fast,comm=40%,bytes=1GB --wrap true

say "What the tasks of a --comm-sched step see"
run srun -N1 --comm-sched=harmonics --comm-profile=iter=250ms,comm=40%,bytes=1.2GB \
	bash -c 'env | grep "^HARMONICS_" | sort'

say "A mixed workload: three jobs with --comm-sched, two without (whole nodes)"
ids=()
submit() { local id; id=$(sbatch --parsable --exclusive -o /dev/null "$@") && ids+=("$id") && echo "submitted $id: sbatch $*"; }
# Two jobs pinned across the racks share both racks' uplinks: the policy staggers them.
submit -J gpt-a -w n1,n5 --comm-sched=harmonics --comm-profile=iter=250ms,comm=40%,bytes=1.2GB --wrap "sleep 25"
submit -J bert-b -w n2,n6 --comm-sched=harmonics --comm-profile=iter=250ms,comm=30%,bytes=700MB --wrap "sleep 25"
# Free placement: the select wrapper keeps a --comm-sched job inside one rack.
submit -J resnet-c -N2 --comm-sched=auto --comm-profile=resnet50 --wrap "sleep 25"
submit -J plain-d -N1 --wrap "sleep 15"
submit -J plain-e -N1 --no-comm-sched --wrap "sleep 15"
for _ in $(seq 100); do
	n=$(scontrol -o show jobs | grep -c 'AdminComment=harmonics:e')
	((n >= 3)) && break
	sleep 0.2
done
run squeue -o "%.6i %.10j %.8T %.6D %N"

say "harmonicsctl (the coordinator inside slurmctld, over its munge-authenticated socket)"
if [[ -n $HM_CTL ]]; then
	run "$HM_CTL" status
	run "$HM_CTL" jobs
	run "$HM_CTL" racks
else
	echo "(harmonicsctl not built in $build)"
fi

say "Decisions in scontrol while the jobs run"
for id in "${ids[@]}"; do
	scontrol show job "$id" | grep -E "JobId=|NodeList=|AdminComment=" | grep -v ReqNodeList | sed 's/^ */  /'
done

say "Waiting for the jobs to end, then sacct"
for _ in $(seq 200); do
	[[ -z $(squeue -h -o %i) ]] && break
	sleep 0.5
done
sleep 1
run sacct -X -j "$(IFS=,; echo "${ids[*]}")" --format=JobID,JobName%10,State,NodeList%10,AdminComment%100

say "Live: a running job receives a new slot and class when a partner arrives"
# Two harmonics-emujob steps (a real ring all-reduce between their two tasks,
# the burst held by libharmonics-pace to the slot in the file that the node
# agent keeps up to date). A starts alone across the racks and runs free; B
# arrives on the same uplinks with more compute per byte.
ej=$build/src/tools/harmonics-emujob
live=$HM_DIR/out
srun_a=(srun -J live-a -w "n1,n5" -N2 -n2 --comm-sched=harmonics --comm-profile="iter=100ms,comm=40%,bytes=300MB"
	-o "$live/live-a.out" "$ej" --rendezvous "127.0.0.1:$((HM_PORT + 9))" --compute 60ms --compute-jitter 0.05
	--bytes 1MB --iterations 100 --warmup 0)
srun_b=(srun -J live-b -w "n2,n6" -N2 -n2 --comm-sched=harmonics --comm-profile="iter=200ms,comm=20%,bytes=300MB"
	-o "$live/live-b.out" "$ej" --rendezvous "127.0.0.1:$((HM_PORT + 10))" --compute 160ms --compute-jitter 0.05
	--bytes 1MB --iterations 40 --warmup 0)
job_of() { squeue -h -n "$1" -o %i | head -1; }
# harmonicsctl jobs --json: "decided applied" of job $1.
epochs_of() { [[ -n $HM_CTL ]] && "$HM_CTL" --json jobs | jq -r --argjson j "$1" '.jobs[] | select(.job_id == $j) | "\(.decided_epoch) \(.applied_epoch)"'; }
printf '$ %s &\n' "${srun_a[*]}"
"${srun_a[@]}" &
pid_a=$!
applied() { read -r d a <<<"$(epochs_of "$1")"; [[ $a =~ ^[0-9]+$ && $d == "$a" ]]; }
for _ in $(seq 150); do
	ja=$(job_of live-a)
	[[ -n $ja ]] && applied "$ja" && break
	sleep 0.1
done
e1=${d:-0}
echo "A runs alone; its steps run the epoch $e1 decision:"
scontrol show job "$ja" | grep -E "JobId=|AdminComment=" | sed 's/^ */  /'
printf '$ %s &\n' "${srun_b[*]}"
"${srun_b[@]}" &
pid_b=$!
for _ in $(seq 150); do
	read -r d a <<<"$(epochs_of "$ja")"
	[[ $d =~ ^[0-9]+$ ]] && ((d > e1)) && break
	sleep 0.1
done
echo "A's new decision (epoch $d) is pending until its switch time:"
[[ -n $HM_CTL ]] && run "$HM_CTL" job "$ja"
for _ in $(seq 100); do
	applied "$ja" && break
	sleep 0.1
done
echo "A's running step now reports epoch $a applied:"
if [[ -n $HM_CTL ]]; then
	run "$HM_CTL" jobs
	run "$HM_CTL" nodes
fi
for j in "$ja" "$(job_of live-b)"; do
	scontrol show job "$j" | grep -E "JobId=|AdminComment=" | sed 's/^ */  /'
done
wait "$pid_a" "$pid_b"
echo "A's own output (rank 0, one line per iteration: slot = the slot's start in us, -1 free;"
echo "epoch = the epoch that governed the burst), around the switch, then its summary:"
awk '/^iter / { line[n++] = $0; ep = $NF; if (n == 1) e = ep; else if (!f && ep != e) f = n - 1 }
	/^summary/ { s = s $0 "\n" }
	END { for (i = (f > 4 ? f - 4 : 0); i < f + 4 && i < n; i++) print "  " line[i]; printf "%s", s }' "$live/live-a.out"

say "Tearing down (by PID)"
