# shellcheck shell=bash
# The simulator's side of a testbed case: the same topology (racks, hosts, link
# goodputs), placements, profiles (each job's measured mean compute, its bytes,
# its iterations), measured compute jitter and start times, under the same
# policy, in harmonics-sim. Source this file; tb_case_sim DIR SEED reads
# DIR/case.json and writes DIR/result.json: case.json with, per job,
# "simulated" (what ran: the live loop, every decision reaches running jobs
# UpdateLead after it is made, re-decisions every EpochLength with measured
# times: harmonics-sim --epoch --update-lead) and "simulated_launch_only" (a
# decision reaches a job only at its launch and policies see declared profiles
# only, harmonics-sim --launch-window 1 --declared-only: the Slurm path before
# the live loop) beside "measured". "simulated.alone_iter_s" is the job alone on
# the same links: no policy can give it a shorter iteration.
# A release group's jobs start within a second of each other and all register
# against the decision that knows them all, hence the 1 s window.
#
# Input: TB_SIM (harmonics-sim), TB_TOPOLOGY (the cluster's topology.conf),
# TB_NIC_BPS and TB_UPLINK_BPS (goodputs, bits/s), TB_EPOCH_S and TB_LEAD_MS (the
# coordinator's EpochLength and UpdateLead).

# topology.conf with each rack's uplink speed (LinkSpeed, Gbit/s).
tb_sim_topology() { # out
	awk -v g="$(awk -v b="$TB_UPLINK_BPS" 'BEGIN { printf "%.6f", b / 1e9 }')" '
		/^SwitchName=.* Nodes=/ { print $0 " LinkSpeed=" g; next } { print }' "$TB_TOPOLOGY" >"$1"
}

tb_case_sim() {
	local dir=$1 seed=$2 pol jitter
	pol=$(jq -r .policy "$dir/case.json")
	tb_sim_topology "$dir/sim-topology.conf"
	# Jobs start when their first iteration did; every iteration is simulated,
	# the warm-up one included (it is in the measured JCT too). Jobs of one model
	# declared one profile: they get one compute, the mean of their measured ones
	# (policies then see them equal, as the coordinator did, and break ties alike).
	jq -r '(.jobs | map(.start_s) | min) as $t0 |
		(.jobs | group_by(.model) | map({(.[0].model): (map(.measured.mean_compute_s) | add / length)})
			| add) as $c |
		"arrival_s,name,gpus,compute_s,comm_bytes,iterations,nodes",
		(.jobs[] | [(.start_s - $t0), .name, .ranks, $c[.model], .bytes,
			(.iterations + .warmup), "\"" + .nodes + "\""] | map(tostring) | join(","))' \
		"$dir/case.json" >"$dir/sim-trace.csv"
	jitter=$(jq '[.jobs[].measured.compute_cv] | add / length' "$dir/case.json")
	local mode out
	local -a extra
	for mode in live launch; do
		out=$dir/sim-$mode.json
		extra=(--epoch "$TB_EPOCH_S" --update-lead "${TB_LEAD_MS}ms")
		[[ $mode == launch ]] && extra=(--epoch 0 --launch-window 1 --declared-only)
		"$TB_SIM" --topology "$dir/sim-topology.conf" \
			--nic-gbps "$(awk -v b="$TB_NIC_BPS" 'BEGIN { printf "%.6f", b / 1e9 }')" \
			--trace "$dir/sim-trace.csv" --policy "$pol" --seed "$seed" \
			--jitter "$jitter" --budget 1 "${extra[@]}" --json --per-job --quiet >"$out" 2>"$dir/sim.err" ||
			{ tb_log "harmonics-sim failed on $dir: $(cat "$dir/sim.err")"; return 1; }
	done
	jq --slurpfile s "$dir/sim-live.json" --slurpfile l "$dir/sim-launch.json" --argjson jitter "$jitter" '
		def byname: .policies[0].jobs | map({(.name): {mean_iter_s, mean_comm_s, jct_s, alone_iter_s}}) | add;
		($s[0] | byname) as $sim | ($l[0] | byname) as $launch |
		.sim_jitter_cv = $jitter |
		.jobs |= map(. + {simulated: $sim[.name], simulated_launch_only: $launch[.name]})' \
		"$dir/case.json" >"$dir/result.json"
}
