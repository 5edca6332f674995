#!/usr/bin/env bash
# Several topologies on a real cluster (docs/topology.md "Several topologies"):
# a topology.yaml beside slurm.conf and harmonics.conf defines the default tree
# `fabric` (rack1 n[1-4], rack2 n[5-8] under spine: the cluster default) and a
# block topology `nvl` across the racks (blocks nvl1 n[1,5] .. nvl4 n[4,8],
# block_sizes [2, 4]); partition `debug` uses the default, partition `nvl` has
# Topology=nvl. Slurm 25.05+ only (Topology= and topology.yaml); the runtime
# tier runs it on 26.05 (tests/slurm/runtime.sh).
#
#   1. Slurm takes the file: both partitions up, `nvl` with Topology=nvl, and
#      `scontrol show topology` lists both; job_submit/harmonics loads both
#      topologies (its log), `harmonicsctl topology --format list` shows them.
#   2. A --comm-sched job in `debug` (sbatch, n3 n7) is modelled on fabric's
#      links: it crosses rack1->spine; no link of nvl's. (Every job: its
#      `topology` in `harmonicsctl jobs --json` and its links in
#      `harmonicsctl job ID --explain --json`.)
#   3. A 4-node --comm-sched job in `nvl` (sbatch, Slurm's block nvl1..nvl2:
#      n1 n2 n5 n6) is modelled on nvl's: it crosses nvl/ switch links, never
#      spine (on fabric it would: n2 and n5 are in different racks).
#   4. A --comm-sched step in `nvl` on the first job's nodes (srun, n3 n7, one
#      block): only NIC links, shared with the first job (NICs are the hosts'),
#      and the first job's spine links stay its own (switch links are not).
#
# Usage: tests/slurm/topo_planes.sh [BUILD_DIR]   (root; exit 0 passed, 1 failed, 77 skipped)
set -uo pipefail

topo_files() {
	cat >"$HM_DIR/etc/topology.yaml" <<-'YAML'
		# tests/slurm/topo_planes.sh: two topologies over n[1-8]
		- topology: fabric
		  cluster_default: true
		  tree:
		    switches:
		      - switch: spine
		        children: rack[1-2]
		      - switch: rack1
		        nodes: n[1-4]
		      - switch: rack2
		        nodes: n[5-8]
		- topology: nvl
		  block:
		    block_sizes: [2, 4]
		    blocks:
		      - block: nvl1
		        nodes: n[1,5]
		      - block: nvl2
		        nodes: n[2,6]
		      - block: nvl3
		        nodes: n[3,7]
		      - block: nvl4
		        nodes: n[4,8]
	YAML
	echo "PartitionName=nvl Nodes=n[1-$HM_NODES] MaxTime=INFINITE State=UP Topology=nvl" >>"$SLURM_CONF"
}
export HM_HOST=job_submit HM_BEFORE_DAEMONS=topo_files
# shellcheck source=tests/slurm/checks.sh
. "$(dirname "$0")/checks.sh"
hm_tier_begin topo_planes "the Slurm tier needs root (daemons, munge)" "$@"
command -v jq >/dev/null || { echo "topo_planes: jq not installed (scripts/deps.sh)" >&2; exit 1; }
ver=$(slurmctld -V | awk '{print $2}')
if [[ $(printf '%s\n' "$ver" 25.05 | sort -V | head -1) != 25.05 ]]; then
	echo "topo_planes: SKIP: Slurm $ver has no topology.yaml or partition Topology= (25.05+)" >&2
	exit 77
fi

PROF="iter=250ms,comm=40%,bytes=1.2GB"
nodes_of() { scontrol show hostnames "$(squeue -h -j "$1" -o %N)" 2>/dev/null | sort -V | tr '\n' ' '; }
# The job's modelled links (explain), one "LINK JOBS" line each.
links_of() { ctl_json job "$1" --explain | jq -r '.explain.links[] | "\(.link) \(.jobs)"'; }
decided() { [[ $(job_q "$1" .assignment.scheduled) == true ]]; }
srun_pid=
cleanup() {
	[[ -n $srun_pid ]] && kill "$srun_pid" 2>/dev/null
	hm_cluster_down
}
trap cleanup EXIT

echo "=== 1. Slurm $ver and Harmonics take a topology.yaml of two topologies"
hm_tier_cluster_up "8 slurmd, topology.yaml: fabric (default tree) and nvl (blocks), partition nvl Topology=nvl" --no-db
[[ -n $HM_CTL ]] || { fail "harmonicsctl built"; HM_KEEP=1; exit 1; }
log=$HM_DIR/log/slurmctld.log
say "$(scontrol show partition nvl | grep -o 'Topology=[^ ]*')"
check "slurmctld: partition nvl has Topology=nvl, debug none" \
	bash -c "scontrol show partition nvl | grep -q 'Topology=nvl' && ! scontrol show partition debug | grep -q 'Topology=nvl'"
topo_out=$(scontrol show topology 2>&1)
nvl_out=$(scontrol show topology nvl 2>&1)
say "scontrol show topology: $(tr '\n' '|' <<<"$topo_out" | cut -c1-300)"
say "scontrol show topology nvl: $(tr '\n' '|' <<<"$nvl_out" | cut -c1-400)"
check "scontrol show topology: fabric's switches the default, nvl's blocks and aggregate by name" \
	bash -c "grep -q '^SwitchName=rack1 .*Nodes=n\[1-4\]' <<<'$topo_out' && grep -q '^BlockName=nvl1 .*Nodes=n\[1,5\]' <<<'$nvl_out' &&
		grep -q '^AggregatedBlock=nvl\[1-2\] .*Nodes=n\[1-2,5-6\]' <<<'$nvl_out'"
check "job_submit/harmonics: fabric is the cluster default, nvl for its partitions' jobs" \
	hm_wait_for 10 bash -c "grep -q \"job_submit/harmonics: topology 'fabric' (tree): the cluster default\" '$log' &&
		grep -q \"job_submit/harmonics: topology 'nvl' (block): for its partitions' jobs\" '$log'"
list=$("$HM_CTL" topology --format list "$HM_DIR/etc/topology.yaml" 2>&1)
say "harmonicsctl topology --format list: $(tr '\n' '|' <<<"$list")"
check "harmonicsctl topology --format list: fabric the default with 2 racks, nvl 4 blocks" \
	bash -c "grep -q '^fabric tree: cluster default, 8 nodes, 2 racks, 3 switches' <<<'$list' &&
		grep -q '^nvl block: 8 nodes, 4 blocks' <<<'$list'"

echo "=== 2. a --comm-sched job in partition debug: fabric's links"
a=$(sbatch --parsable -p debug -w n3,n7 --comm-sched=harmonics --comm-profile="$PROF" -o /dev/null --wrap "sleep 300")
wait_state "$a" RUNNING 20
check "job $a (debug) runs on n3 n7: $(nodes_of "$a")" bash -c "[[ '$(nodes_of "$a")' == 'n3 n7 ' ]]"
check "job $a is scheduled by the coordinator" hm_wait_for 30 decided "$a"
links_a=$(links_of "$a")
say "job $a links: $(tr '\n' ' ' <<<"$links_a")"
check "job $a crosses fabric's spine (rack1->spine, spine->rack2), no nvl/ link" \
	bash -c "grep -q '^rack1->spine ' <<<'$links_a' && grep -q '^spine->rack2 ' <<<'$links_a' && ! grep -q 'nvl/' <<<'$links_a'"

echo "=== 3. a 4-node --comm-sched job in partition nvl: nvl's links"
b=$(sbatch --parsable -p nvl -w "n[1-2,5-6]" --comm-sched=harmonics --comm-profile="$PROF" -o /dev/null --wrap "sleep 300")
wait_state "$b" RUNNING 20
check "job $b (nvl) runs on Slurm's block nvl1..nvl2: $(nodes_of "$b")" bash -c "[[ '$(nodes_of "$b")' == 'n1 n2 n5 n6 ' ]]"
check "job $b is scheduled by the coordinator" hm_wait_for 30 decided "$b"
links_b=$(links_of "$b")
say "job $b links: $(tr '\n' ' ' <<<"$links_b")"
check "job $b crosses nvl's switch links (TOPOLOGY/SWITCH names), never spine" \
	bash -c "grep -q '^nvl/nvl[12]->nvl/nvl1\.\.nvl2 ' <<<'$links_b' && ! grep -q 'spine' <<<'$links_b'"
both=$(ctl_json jobs | jq -r --argjson a "$a" --argjson b "$b" \
	'[.jobs[] | select(.job_id == $a or .job_id == $b) | "\(.job_id):\(.topology):\(.racks):\(.assignment.scheduled)"] | join(" ")')
check "jobs --json: job $a on fabric, $b on nvl, both scheduled, on 2 racks of the default ($both)" \
	bash -c "[[ '$both' == '$a:fabric:2:true $b:nvl:2:true' ]]"

echo "=== 4. an srun step in partition nvl on job $a's nodes: NIC links shared, switch links not"
srun -p nvl -w n3,n7 -N2 --comm-sched=harmonics --comm-profile="$PROF" -J topo_c sleep 300 >"$HM_DIR/log/srun_c.out" 2>&1 &
srun_pid=$!
hm_wait_for 20 bash -c "[[ -n \$(squeue -h -n topo_c -t R -o %i) ]]"
c=$(job_id_of topo_c)
check "srun job ${c:-none} (nvl) runs on n3 n7" bash -c "[[ -n '$c' && '$(nodes_of "$c")' == 'n3 n7 ' ]]"
check "job $c is scheduled by the coordinator" hm_wait_for 30 decided "$c"
check "jobs --json: job $c on topology nvl" bash -c "[[ '$(job_q "$c" .topology)' == nvl ]]"
links_c=$(links_of "$c")
say "job $c links: $(tr '\n' ' ' <<<"$links_c")"
check "job $c (one nvl block) crosses only NIC links, shared with job $a (2 jobs each)" \
	bash -c "[[ -n '$links_c' ]] && ! grep -q -e spine -e '^rack[12]->rack' -e 'nvl/' <<<'$links_c' &&
		! grep -qv ' 2\$' <<<'$links_c'"
# The coordinator's next round has c; job a's spine links stay a's alone.
links_a=$(links_of "$a")
say "job $a links now: $(tr '\n' ' ' <<<"$links_a")"
check "job $a: its NIC links carry 2 jobs, rack1->spine only its own" \
	bash -c "grep -q '^rack1->spine 1\$' <<<'$links_a' && grep -q '^n3:nic[0-9]*->rack1 2\$' <<<'$links_a'"

scancel "$a" "$b" "$c" 2>/dev/null
wait "$srun_pid" 2>/dev/null
srun_pid=
check "slurmctld and every slurmd still run" bash -c "scontrol ping >/dev/null && [[ \$(sinfo -h -N -o %N | sort -u | wc -l) == $HM_NODES ]]"
hm_tier_end
