#!/usr/bin/env bash
# Run it like a site (issue 29): the one-machine cluster (tests/slurm/cluster.sh)
# with every node carrying 4 STAND-IN GPUs (no GPU here: gres.conf
# `Name=gpu File=$HM_DIR/dev/gpu[0-3]`, empty regular files, GresTypes=gpu,
# Gres=gpu:4), the coordinator's MetricsListen on loopback and the node agents'
# MetricsDir. Two --comm-sched jobs with --gres=gpu:2 share n1 and n5 on
# disjoint GPUs. Checked through the real path:
#   - Slurm gave them disjoint GPU indexes, and the coordinator models each job
#     on exactly the indexes Slurm allocated (harmonicsctl job ID --explain --json);
#   - `harmonicsctl job ID --explain` names the job's links and GPUs;
#   - /metrics of slurmctld's coordinator passes `promtool check metrics` and
#     counts the jobs and the links they cross;
#   - each node's textfile (harmonics_<node>.prom) passes promtool and has the
#     job's series while it runs, none after; the file goes with its agent.
# Usage: tests/slurm/site.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin site "the Slurm tier needs root (daemons, munge)" "$@"
for t in jq curl promtool; do
	command -v "$t" >/dev/null || { echo "site: $t not installed (scripts/deps.sh)" >&2; exit 1; }
done

# Short timings (as live.sh); one NIC per GPU, so that jobs on disjoint GPUs of
# a node are modelled on disjoint NICs. The metrics port is above the node
# ports (the daemons take HM_PORT-3 .. HM_PORT+8; the jobs' rendezvous +9, +10).
export HM_GPUS=4
export HM_CONF_EXTRA="HeartbeatInterval=250ms
AgentValidity=1s
UpdateLead=500ms
EpochLength=4s
AssignmentValidity=1s
GpusPerNode=4
NicsPerNode=4"
# shellcheck disable=SC2016 # expanded by hm_cluster_up, once HM_PORT and HM_DIR exist
export HM_BEFORE_DAEMONS='mkdir -p "$HM_DIR/metrics" &&
	printf "MetricsListen=127.0.0.1:%s\nMetricsDir=%s\n" $((HM_PORT + 12)) "$HM_DIR/metrics" >>"$HARMONICS_CONF"'

echo "=== bring-up"
hm_tier_cluster_up "8 slurmd, 4 stand-in GPUs each (gres.conf File=), metrics on" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }
out=$HM_DIR/out mdir=$HM_DIR/metrics
url="http://127.0.0.1:$((HM_PORT + 12))/metrics"
EJ=$build/src/tools/harmonics-emujob
check "slurmctld sees 4 GPUs per node (Gres=gpu:4)" \
	bash -c "[[ \$(sinfo -h -N -n n1 -o %G) == gpu:4* ]]"

echo "=== two jobs on n1,n5 with --gres=gpu:2 each"
jobs=() sruns=() prof="iter=100ms,comm=20%,bytes=100MB"
for k in 0 1; do
	name=hm-site$k
	cmd=(srun -J "$name" -w n1,n5 -N2 -n2 --gres=gpu:2 --time=2 --comm-sched=harmonics
		--comm-profile="$prof" -o "$out/$name.json" -e "$out/$name-%t.err"
		"$EJ" --rendezvous "127.0.0.1:$((HM_PORT + 9 + k))" --compute 50ms --bytes 1MB
		--iterations 100000 --warmup 0 --json --timeout 20s)
	say "\$ ${cmd[*]}"
	"${cmd[@]}" >"$out/$name.out" 2>&1 &
	sruns+=($!)
	hm_wait_s 10 bash -c "[[ -n \$(squeue -h -n $name -t R -o %i) ]]"
	jobs+=("$(squeue -h -n $name -o %i | head -1)")
done
ja=${jobs[0]} jb=${jobs[1]}
check "both jobs running (${jobs[*]})" bash -c "[[ -n '$ja' && -n '$jb' ]]"
# The other ways to ask for GPUs (no step: the coordinator models the job from
# slurmctld's record alone).
jc=$(sbatch --parsable -J hm-site-gpn -w n2,n6 -N2 --gpus-per-node=1 --time=2 --comm-sched=harmonics --comm-profile="$prof" \
	-o /dev/null --wrap "sleep 60")
jd=$(sbatch --parsable -J hm-site-gpus -w n3 -N1 --gpus=3 --time=2 --comm-sched=harmonics --comm-profile="$prof" \
	-o /dev/null --wrap "sleep 60")
say "\$ sbatch -w n2,n6 -N2 --gpus-per-node=1 --comm-sched=harmonics ...: job $jc"
say "\$ sbatch -w n3 -N1 --gpus=3 --comm-sched=harmonics ...: job $jd"
hm_wait_s 10 bash -c "[[ \$(squeue -h -j $jc,$jd -t R -o %i | wc -l) == 2 ]]"

# The GPU indexes Slurm gave job $1 on node $2 ("0-1"), from scontrol show job -d
# (" Nodes=n[1,5] CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)": nodes alike share a line).
slurm_idx() {
	local nodes idx
	while read -r nodes idx; do
		scontrol show hostnames "$nodes" | grep -qx "$2" && echo "$idx"
	done < <(scontrol show job -d "$1" | sed -n 's/^ *Nodes=\([^ ]*\) .*GRES=gpu[^(]*(IDX:\([0-9,-]*\)).*/\1 \2/p')
}
# As a bit mask, for the disjointness check.
idx_mask() {
	local m=0 a b r
	IFS=, read -ra r <<<"$1"
	for x in "${r[@]}"; do
		a=${x%-*} b=${x#*-}
		for ((g = a; g <= b; g++)); do m=$((m | 1 << g)); done
	done
	echo $m
}
for n in n1 n5; do
	ia=$(slurm_idx "$ja" $n) ib=$(slurm_idx "$jb" $n)
	say "Slurm on $n: job $ja IDX:$ia, job $jb IDX:$ib"
	check "Slurm gave the jobs disjoint GPUs on $n ($ia / $ib)" \
		bash -c "[[ -n '$ia' && -n '$ib' ]] && (( ($(idx_mask "${ia:-0}") & $(idx_mask "${ib:-0}")) == 0 ))"
done

explain_json() { "$HM_CTL" --json --timeout 2s job "$1" --explain 2>/dev/null; }
# The explanation's "GPUs": per node of the job, as Slurm's IDX lists.
want_gpus() {
	local n w=()
	for n in $(scontrol show hostnames "$(squeue -h -j "$1" -o %N)"); do
		w+=("$n:$(slurm_idx "$1" "$n")")
	done
	echo "${w[*]}"
}
for j in "$ja" "$jb" "$jc" "$jd"; do
	want=$(want_gpus "$j")
	# The coordinator has the job once the host's mirror ran (each scheduling pass).
	hm_wait_s 10 bash -c "[[ \$(\"$HM_CTL\" --json --timeout 2s job $j --explain 2>/dev/null |
		jq -r '.explain.gpus // empty') == '$want' ]]"
	got=$(explain_json "$j" | jq -r '.explain.gpus // empty')
	say "job $j: Slurm IDX $want, modelled on \"$got\""
	check "job $j modelled on the GPUs Slurm allocated ($want)" test "$got" = "$want"
done

"$HM_CTL" --timeout 2s job "$ja" --explain >"$out/explain.txt" 2>&1
sed 's/^/    | /' "$out/explain.txt"
check "--explain names job $ja's GPUs" grep -q "^GPUs  *$(want_gpus "$ja") " "$out/explain.txt"
check "--explain names job $ja's NIC links (n1:nicK, n5:nicK)" \
	bash -c "grep -Eq '^  n1:nic[0-9]+->rack1 ' '$out/explain.txt' && grep -Eq '^  n5:nic[0-9]+->rack2 ' '$out/explain.txt'"
# Disjoint GPUs, one NIC per GPU: the two jobs' NIC links differ; they share
# only the racks' uplinks.
nics() { explain_json "$1" | jq -r '.explain.links[]?.link // empty' | grep ':nic' | sort; }
na=$(nics "$ja") nb=$(nics "$jb")
say "NIC links: job $ja: ${na//$'\n'/ }, job $jb: ${nb//$'\n'/ }"
check "the jobs are modelled on disjoint NICs" \
	bash -c "[[ -n '$na' && -n '$nb' && -z \$(comm -12 <(echo '$na') <(echo '$nb')) ]]"

echo "=== /metrics from slurmctld's coordinator"
hm_wait_s 10 bash -c "curl -sf -m 2 '$url' | grep -q '^harmonics_link_jobs{link=\"n1:nic'"
curl -sf -m 5 -o "$out/metrics" "$url"
check "GET $url answers" test -s "$out/metrics"
check "promtool check metrics passes on /metrics" bash -c "promtool check metrics <'$out/metrics' >'$out/promtool' 2>&1"
sed 's/^/    | /' "$out/promtool"
grep -E '^harmonics_(build_info|jobs\{|agents\{state="up"|link_jobs\{link="n1:nic)' "$out/metrics" | sed 's/^/    | /'
check "/metrics counts the four running jobs" \
	bash -c "(( \$(awk '/^harmonics_jobs\\{mode=\"harmonics\"/ { s += \$2 } END { print s + 0 }' '$out/metrics') == 4 ))"
check "/metrics: the Slurm version, 8 agents up" \
	bash -c "grep -q '^harmonics_build_info{.*slurm_version=\"22\\.\\|^harmonics_build_info{.*slurm_version=\"[0-9]' '$out/metrics' &&
		grep -q '^harmonics_agents{state=\"up\"} 8\$' '$out/metrics'"
grep -E '^harmonics_rack_(leader_info|rounds_total)\{rack="rack1"' "$out/metrics" | sed 's/^/    | /'
check "/metrics: each rack's leader and its rounds by solver" \
	bash -c "grep -Eq '^harmonics_rack_leader_info\\{rack=\"rack1\",node=\"n[1-4]\"\\} 1\$' '$out/metrics' &&
		grep -Eq '^harmonics_rack_leader_info\\{rack=\"rack2\",node=\"n[5-8]\"\\} 1\$' '$out/metrics' &&
		(( \$(grep -c '^harmonics_rack_rounds_total{rack=\"rack[12]\",solver=' '$out/metrics') == 6 ))"
check "/metrics: the jobs' NIC links on n1 and the rack uplinks" \
	bash -c "grep -Eq '^harmonics_link_jobs\\{link=\"n1:nic[0-9]+->rack1\".* 1\$' '$out/metrics' &&
		grep -Eq '^harmonics_link_jobs\\{link=\"rack1->spine\".* 3\$' '$out/metrics'"

echo "=== node textfiles ($mdir)"
has_series() { grep -q "^harmonics_job_iterations_total{slurm_job_id=\"$1\",node=\"$2\"}" "$mdir/harmonics_$2.prom" 2>/dev/null; }
export -f has_series
export mdir
hm_wait_s 10 bash -c "has_series $ja n1 && has_series $jb n1 && has_series $ja n5"
grep "^harmonics_job_.*slurm_job_id=\"$ja\",node=\"n1\"" "$mdir/harmonics_n1.prom" | sed 's/^/    | /'
check "n1's textfile has both jobs' series while they run" bash -c "has_series $ja n1 && has_series $jb n1"
check "n5's textfile has job $ja's series" has_series "$ja" n5
check "promtool check metrics passes on n1's textfile" bash -c "promtool check metrics <'$mdir/harmonics_n1.prom'"
check "no temporary file left beside it" bash -c "[[ -z \$(ls -A '$mdir' | grep -v '^harmonics_n[1-8]\\.prom\$') ]]"
check "a node without a reporting task has no job series (n3, n4)" \
	bash -c "[[ -e '$mdir/harmonics_n3.prom' ]] && ! grep -q slurm_job_id '$mdir/harmonics_n3.prom' '$mdir/harmonics_n4.prom'"

scancel "$ja" "$jb" "$jc" "$jd"
hm_wait_s 15 bash -c "[[ -z \$(squeue -h -j $ja,$jb -o %i 2>/dev/null) ]]"
hm_wait_s 5 bash -c "! has_series $ja n1 && ! has_series $jb n1 && ! has_series $ja n5"
check "the jobs' series are gone once they ended" \
	bash -c "! grep -q slurm_job_id '$mdir/harmonics_n1.prom' && ! grep -q slurm_job_id '$mdir/harmonics_n5.prom'"
wait "${sruns[@]}" 2>/dev/null
hm_stop_pid slurmd-n8
check "slurmd of n8 stopped: its textfile is removed" bash -c "[[ ! -e '$mdir/harmonics_n8.prom' ]]"
hm_tier_end
