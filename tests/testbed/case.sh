# shellcheck shell=bash
# One testbed case: a scenario's jobs under one policy, through the real Slurm
# path, on a cluster brought up by tests/testbed/testbed.sh (net.sh + cluster.sh).
# Source this file; tb_case_run SCENARIO_FILE POLICY DIR writes DIR/case.json.
#
# Each job is an sbatch job with --comm-sched=POLICY and a --comm-profile that
# declares its scaled catalogue profile; its batch script waits for a go signal,
# then runs harmonics-emujob under srun (one rank per node, rendezvous on the
# first node's data address). Jobs of one arrival time are released together,
# once all are RUNNING and the coordinator lists them, so every step registers
# against the decision that knows them all; a job already running follows the
# new decision through its node agents' assign files (the live loop).
#
# Input (set by testbed.sh): TB_EMUJOB, TB_TIME_SCALE, TB_BYTES_SCALE,
# TB_JITTER, TB_TCP_CC, TB_DURATION_FACTOR, TB_PATH_BPS (the goodput of a job's bottleneck
# alone), TB_TORCH_COMM (PyTorch jobs' communication share), TB_TORCH_STEP
# (fixed or cpu: tb_torch_profiles), TB_TORCH_CPU and
# TB_CPU_DIR (their CPU share, tb_cpu_up), HARMONICS_CONF, HM_CTL, SLURM_CONF.

TB_EMUJOB_PORT=29400

tb_now_us() { date +%s%6N; }

# Scenario file -> arrays SC_NAME SC_MODEL SC_NODES SC_ARRIVAL SC_DURATION.
# Format: '#' comments, then "job model nodes arrival_s duration_s" per line.
tb_scen_load() {
	local file=$1 n=0 name model nodes arr dur rest line=0
	SC_NAME=() SC_MODEL=() SC_NODES=() SC_ARRIVAL=() SC_DURATION=()
	while read -r name model nodes arr dur rest; do
		line=$((line + 1))
		[[ -z $name || $name == \#* ]] && continue
		if [[ -n $rest || -z $dur || ! $name =~ ^[a-z][a-z0-9]{0,15}$ || ! $nodes =~ ^n[0-9]+(,n[0-9]+)+$ ||
			! $arr =~ ^[0-9]+(\.[0-9]+)?$ || ! $dur =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
			tb_log "$file:$line: expected 'job model nodes arrival_s duration_s' (job: a-z0-9," \
				"nodes: n1,n5 (two or more), seconds: 12 or 1.5); got '$name $model $nodes $arr $dur $rest'"
			return 1
		fi
		SC_NAME+=("$name") SC_MODEL+=("$model") SC_NODES+=("$nodes")
		SC_ARRIVAL+=("$arr") SC_DURATION+=("$dur")
		n=$((n + 1))
	done <"$file"
	((n > 0)) || { tb_log "$file: no jobs"; return 1; }
}

# The job's scaled profile from the emujob itself: "compute_s bytes". A
# PyTorch model (torch-NAME: tests/testbed/torch_train.py --model NAME) is
# not scaled: its gradient's bytes, and the compute its --dry-run timed, once
# per testbed run (tb_torch_profiles), so every case declares the same.
declare -gA TB_TORCH_PROFILE=() TB_TORCH_BATCH=()
tb_profile() { # model
	if [[ $1 == torch-* ]]; then
		[[ -n ${TB_TORCH_PROFILE[$1]:-} ]] || return 1
		echo "${TB_TORCH_PROFILE[$1]}"
		return 0
	fi
	"$TB_EMUJOB" --model "$1" --scale "$TB_TIME_SCALE" --bytes-scale "$TB_BYTES_SCALE" --dry-run |
		jq -r '"\(.compute_s) \(.bytes)"'
}
tb_torch_dry() { # model batch -> "compute_s bytes"
	OMP_NUM_THREADS=1 $(tb_torch_capped dry) "$TB_PYTHON" "$TB_TORCH_TRAIN" --model "$1" --batch "$2" \
		--dry-run | jq -r '"\(.compute_s) \(.bytes)"'
}

# Each PyTorch rank's CPU share (TB_TORCH_CPU of a core, tests/testbed/capped.sh)
# in a cgroup under TB_CPU_DIR, made by tb_cpu_up: cgroup v1's cpu hierarchy,
# else v2 with the cpu controller; neither: no cap, said once. TB_TORCH_CPU=0:
# no cap.
TB_CPU_DIR=
tb_cpu_up() {
	local root
	[[ $TB_TORCH_CPU == 0 ]] && return 0
	if [[ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
		root=/sys/fs/cgroup/cpu
	elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		root=/sys/fs/cgroup
		echo +cpu >"$root/cgroup.subtree_control" 2>/dev/null
	else
		tb_log "--torch-cpu $TB_TORCH_CPU: no cgroup with the cpu controller here (v1 cpu or v2" \
			"cpu.max): the PyTorch ranks share the cores freely (as --torch-cpu 0)"
		TB_TORCH_CPU=0
		return 0
	fi
	TB_CPU_DIR=$root/harmonics-testbed-$$
	mkdir -p "$TB_CPU_DIR" || { tb_log "cannot create $TB_CPU_DIR"; TB_CPU_DIR=; return 1; }
	[[ -e $TB_CPU_DIR/cgroup.subtree_control ]] && echo +cpu >"$TB_CPU_DIR/cgroup.subtree_control"
	return 0
}
tb_cpu_down() { # after every rank ended
	[[ -n $TB_CPU_DIR && -d $TB_CPU_DIR ]] || return 0
	find "$TB_CPU_DIR" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null
	rmdir "$TB_CPU_DIR" 2>/dev/null || tb_log "$TB_CPU_DIR: not removed (a process is left in it)"
	TB_CPU_DIR=
}
tb_torch_capped() { # name -> the capped.sh prefix, nothing without a cap
	[[ -n $TB_CPU_DIR ]] && echo "$TB_TOP/tests/testbed/capped.sh $TB_CPU_DIR $TB_TORCH_CPU $1"
}
# The batch per rank (TB_TORCH_BATCH) is sized so that a two-rank job's
# all-reduce alone on the bottleneck (TB_PATH_BPS) is TB_TORCH_COMM of its
# iteration on this machine: compute per image timed at 32 images, then the
# chosen batch timed again. The links are the testbed's choice, the compute is
# the machine's: without this, a quiet machine made the CNN's 16 images 0.024 s
# against 0.15 s of all-reduce (86% communication) and a loaded one 0.2 s (40%).
# TB_TORCH_STEP=cpu: that batch's compute is the step, declared as timed.
# fixed (the accelerator stand-in, torch_train.py --step-time): the step is
# the wanted compute exactly (TB_TORCH_STEPTIME, declared), and the batch is
# sized to compute in half of it, so that the shared CPU's jitter (CV 0.2-0.3)
# stays inside the step.
declare -gA TB_TORCH_STEPTIME=()
tb_torch_profiles() { # models... (not in a subshell: fills TB_TORCH_PROFILE)
	local m prof batch want fill=1
	[[ $TB_TORCH_STEP == fixed ]] && fill=0.5
	for m in "$@"; do
		[[ $m == torch-* && -z ${TB_TORCH_PROFILE[$m]:-} ]] || continue
		prof=$(tb_torch_dry "${m#torch-}" 32) || { tb_log "$m: torch_train.py --dry-run failed"; return 1; }
		want=$(awk -v b="${prof#* }" -v bps="$TB_PATH_BPS" -v s="$TB_TORCH_COMM" \
			'BEGIN { printf "%.6f", b * 8 / bps * (1 - s) / s }')
		batch=$(awk -v c="${prof% *}" -v w="$want" -v f="$fill" 'BEGIN {
			n = int(w * f / (c / 32) + 0.5); print (n < 1 ? 1 : n > 4096 ? 4096 : n) }')
		prof=$(tb_torch_dry "${m#torch-}" "$batch") || { tb_log "$m: torch_train.py --dry-run failed"; return 1; }
		TB_TORCH_BATCH[$m]=$batch TB_TORCH_STEPTIME[$m]=0
		if [[ $TB_TORCH_STEP == fixed ]]; then
			TB_TORCH_STEPTIME[$m]=$want
			tb_log "$m: $batch images per rank compute ${prof% *} s (timed here, alone), padded to a" \
				"fixed step of $want s (--torch-step fixed, an accelerator stand-in)"
			prof="$want ${prof#* }"
		fi
		TB_TORCH_PROFILE[$m]=$prof
		tb_log "$m: declared profile: $batch images per rank, compute ${prof% *} s," \
			"gradient ${prof#* } bytes: all-reduce alone $(awk -v c="${prof% *}" -v b="${prof#* }" \
				-v bps="$TB_PATH_BPS" 'BEGIN { a = b * 8 / bps; printf "%.3f s, %.0f%%", a, 100 * a / (a + c) }') of an iteration"
	done
}

# Policy for the next case: harmonics.conf's Policy, then scontrol reconfigure;
# waits until the coordinator says it runs that policy.
tb_set_policy() {
	local p=$1 i
	sed -i "s/^Policy=.*/Policy=$p/" "$HARMONICS_CONF"
	scontrol reconfigure || return 1
	for ((i = 0; i < 100; i++)); do
		[[ $("$HM_CTL" --json status 2>/dev/null | jq -r .status.policy) == "$p" ]] && return 0
		sleep 0.1
	done
	tb_log "the coordinator did not switch to policy $p"
	return 1
}

tb_jobs_running() { # ids...: all RUNNING?
	local n
	n=$(squeue -h -t R -j "$(IFS=,; echo "$*")" -o %i 2>/dev/null | wc -l)
	((n == $#))
}
tb_jobs_known() { # ids...: all listed by the coordinator?
	local listed id
	listed=$("$HM_CTL" --json jobs 2>/dev/null | jq -r '.jobs[].job_id') || return 1
	for id in "$@"; do grep -qx "$id" <<<"$listed" || return 1; done
}
tb_wait() { # seconds command...: poll every 0.1 s
	local i n=$(($1 * 10))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
tb_no_jobs() { [[ -z $(squeue -h -o %i 2>/dev/null) ]]; }

# The batch script of job j (array index) into DIR/NAME.sh.
tb_write_batch() {
	local j=$1 dir=$2 iters=$3 name=${SC_NAME[$1]}
	if [[ ${SC_MODEL[$j]} == torch-* ]]; then
		tb_write_torch_batch "$@"
		return
	fi
	cat >"$dir/$name.sh" <<-EOF
		#!/bin/bash
		# testbed job $name: ${SC_MODEL[$j]} on ${SC_NODES[$j]}, waits for $dir/$name.go
		for ((i = 0; i < 1200; i++)); do [[ -e $dir/$name.go ]] && break; sleep 0.05; done
		[[ -e $dir/$name.go ]] || { echo "testbed: no go signal within 60 s" >&2; exit 1; }
		# Rank 0 runs here (the first node): rendezvous on this node's data NIC.
		addr=\$(ip -4 -o addr show dev eth0 | awk '{ sub("/.*", "", \$4); print \$4 }')
		exec srun -o $dir/$name.out.%t -e $dir/$name.err.%t $TB_EMUJOB \\
			--rendezvous \$addr:$TB_EMUJOB_PORT --model ${SC_MODEL[$j]} --scale $TB_TIME_SCALE \\
			--bytes-scale $TB_BYTES_SCALE --compute-jitter $TB_JITTER --tcp-cc $TB_TCP_CC \\
			--iterations $iters --warmup 1 --json --timeout 30s
	EOF
}

# A PyTorch job: tests/testbed/torch_train.py under srun, DDP over gloo on the
# data NICs, paced by harmonics.torch.pace (the package from the source tree,
# the runtime from the build); its --json is harmonics-emujob's form. Python
# starts slowly on a loaded machine: the job's bound is generous.
tb_write_torch_batch() {
	local j=$1 dir=$2 iters=$3 name=${SC_NAME[$1]} compute
	compute=$(tb_profile "${SC_MODEL[$j]}") || return 1
	cat >"$dir/$name.sh" <<-EOF
		#!/bin/bash
		# testbed job $name: PyTorch ${SC_MODEL[$j]} on ${SC_NODES[$j]}, waits for $dir/$name.go
		for ((i = 0; i < 1200; i++)); do [[ -e $dir/$name.go ]] && break; sleep 0.05; done
		[[ -e $dir/$name.go ]] || { echo "testbed: no go signal within 60 s" >&2; exit 1; }
		addr=\$(ip -4 -o addr show dev eth0 | awk '{ sub("/.*", "", \$4); print \$4 }')
		export PYTHONPATH=$TB_TOP/python HARMONICS_PACE_LIB=$TB_PACE_LIB OMP_NUM_THREADS=1
		exec srun -o $dir/$name.out.%t -e $dir/$name.err.%t $(tb_torch_capped "$name") $TB_PYTHON $TB_TORCH_TRAIN \\
			--rendezvous \$addr:$TB_EMUJOB_PORT --ifname eth0 --model ${SC_MODEL[$j]#torch-} \\
			--batch ${TB_TORCH_BATCH[${SC_MODEL[$j]}]} --iterations $iters --warmup 2 \\
			--declared-compute ${compute% *} --step-time ${TB_TORCH_STEPTIME[${SC_MODEL[$j]}]} --json --timeout 120
	EOF
}

# tb_case_run SCENARIO_FILE POLICY DIR: run it, write DIR/case.json.
tb_case_run() {
	local scen=$1 pol=$2 dir=$3 j n prof compute bytes ranks alone iters
	local -a ids=() go_us=()
	local arr t0=0 now wait_s bound=0 id
	tb_scen_load "$scen" || return 1
	mkdir -p "$dir" && chmod 755 "$dir"
	n=${#SC_NAME[@]}
	tb_wait 60 tb_no_jobs || { tb_log "jobs of an earlier case still run"; return 1; }
	tb_set_policy "$pol" || return 1
	for ((j = 0; j < n; j++)); do
		prof=$(tb_profile "${SC_MODEL[$j]}") || { tb_log "${SC_MODEL[$j]}: not a catalogue model"; return 1; }
		read -r compute bytes <<<"$prof"
		ranks=$(tr ',' '\n' <<<"${SC_NODES[$j]}" | wc -l)
		# A ring all-reduce sends 2(N-1)/N of the buffer over each edge.
		read -r alone iters < <(awk -v c="$compute" -v b="$bytes" -v r="$ranks" -v bps="$TB_PATH_BPS" \
			-v d="${SC_DURATION[$j]}" -v f="$TB_DURATION_FACTOR" 'BEGIN {
				a = 2 * (r - 1) / r * b * 8 / bps
				it = int(d * f / (c + a) + 0.5); if (it < 6) it = 6
				print a, it - 1 }')
		# Slack for the start: 30 s, 90 s for Python and PyTorch on a loaded machine.
		bound=$(awk -v b="$bound" -v d="${SC_DURATION[$j]}" -v a="${SC_ARRIVAL[$j]}" \
			-v f="$TB_DURATION_FACTOR" -v s="$([[ ${SC_MODEL[$j]} == torch-* ]] && echo 90 || echo 30)" \
			'BEGIN { v = (a + 3 * d) * f + s; print (v > b ? v : b) }')
		tb_write_batch "$j" "$dir" "$iters"
		# The coordinator's profile: compute = iter x (1 - comm), as the job really computes.
		SC_PROFILE[j]=$(awk -v c="$compute" -v a="$alone" -v b="$bytes" \
			'BEGIN { printf "iter=%.3fms,comm=%.6f,bytes=%.0f", (c + a) * 1e3, a / (c + a), b }')
	done
	# Release arrival groups in order: submit, wait RUNNING and known, go.
	for arr in $(printf '%s\n' "${SC_ARRIVAL[@]}" | sort -gu); do
		if ((t0 > 0)); then
			wait_s=$(awk -v t0="$t0" -v a="$arr" -v f="$TB_DURATION_FACTOR" -v now="$(tb_now_us)" \
				'BEGIN { w = (t0 + a * f * 1e6 - now) / 1e6; print (w > 0 ? w : 0) }')
			sleep "$wait_s"
		fi
		local -a group=()
		for ((j = 0; j < n; j++)); do
			[[ ${SC_ARRIVAL[$j]} == "$arr" ]] || continue
			id=$(sbatch --parsable -J "tb-${SC_NAME[$j]}" -w "${SC_NODES[$j]}" \
				-N "$(tr ',' '\n' <<<"${SC_NODES[$j]}" | wc -l)" --ntasks-per-node=1 --exclusive \
				--comm-sched="$pol" --comm-profile="${SC_PROFILE[$j]}" \
				-o "$dir/${SC_NAME[$j]}.batch" "$dir/${SC_NAME[$j]}.sh") ||
				{ tb_log "sbatch of ${SC_NAME[$j]} failed"; return 1; }
			ids[j]=$id
			group+=("$id")
		done
		tb_wait 30 tb_jobs_running "${group[@]}" || { tb_log "jobs ${group[*]} did not start"; return 1; }
		tb_wait 10 tb_jobs_known "${group[@]}" || { tb_log "the coordinator does not list ${group[*]}"; return 1; }
		"$HM_CTL" --json jobs >"$dir/decision-at-$arr.json" 2>&1
		now=$(tb_now_us)
		((t0 > 0)) || t0=$now
		for ((j = 0; j < n; j++)); do
			[[ ${SC_ARRIVAL[$j]} == "$arr" ]] || continue
			touch "$dir/${SC_NAME[$j]}.go"
			go_us[j]=$now
		done
	done
	if ! tb_wait "${bound%.*}" tb_no_jobs; then
		tb_log "case $scen/$pol still running after ${bound%.*} s; cancelling"
		scancel "${ids[@]}"
		return 1
	fi
	# Rank 0's runtime report and its last assign file, from the job directory of
	# the local channel on the job's first node (the SPANK plugin sets
	# HARMONICS_REPORT_FILE there; the agent removes the directory 30 s later).
	local rundir jd
	rundir=$(sed -n 's/^RunDir=//p' "$HARMONICS_CONF")
	for ((j = 0; j < n; j++)); do
		scontrol show job "${ids[$j]}" 2>/dev/null | sed -n 's/^ *AdminComment=//p' >"$dir/${SC_NAME[$j]}.comment"
		jd=$rundir/${SC_NODES[$j]%%,*}/job.${ids[$j]}
		cp "$jd/report.0.0" "$dir/${SC_NAME[$j]}.rep.0" 2>/dev/null ||
			tb_log "${SC_NAME[$j]}: no runtime report in $jd"
		cp "$jd/assign" "$dir/${SC_NAME[$j]}.assign" 2>/dev/null
	done
	tb_case_json "$scen" "$pol" "$dir" "$t0" >"$dir/case.json.tmp" && mv "$dir/case.json.tmp" "$dir/case.json"
}

# case.json from the emujobs' own output (rank 0's JSON) and the runtime's reports;
# per iteration the epoch that governed the burst (it shows when a running job
# switched to a re-decision).
# A job's compute is the time until its last rank was ready (the barrier waits
# for the slowest rank; each rank's compute jitters on its own).
tb_case_json() {
	local scen=$1 pol=$2 dir=$3 t0=$4 j out rep jobs=()
	for ((j = 0; j < ${#SC_NAME[@]}; j++)); do
		out=$dir/${SC_NAME[$j]}.out.0
		rep=$dir/${SC_NAME[$j]}.rep.0
		if ! jq -e '.iterations > 0' "$out" >/dev/null 2>&1; then
			tb_log "${SC_NAME[$j]}: no emujob result in $out:"
			cat "$dir/${SC_NAME[$j]}".err.* "$dir/${SC_NAME[$j]}.batch" >&2 2>/dev/null
			return 1
		fi
		jobs+=("$(jq -c --arg name "${SC_NAME[$j]}" --arg model "${SC_MODEL[$j]}" \
			--arg nodes "${SC_NODES[$j]}" --argjson t0 "$t0" --argjson go "${go_us[$j]}" \
			--arg comment "$(cat "$dir/${SC_NAME[$j]}.comment" 2>/dev/null)" \
			--arg rep "$(cat "$rep" 2>/dev/null)" '
			def kv: split("\n") | map(select(test("=")) | capture("(?<k>[^=]+)=(?<v>.*)")) |
				map({(.k): .v}) | add // {};
			def cv: (map(.ready_ms) | add / length) as $m |
				(map((.ready_ms - $m) * (.ready_ms - $m)) | add / length | sqrt) / $m;
			($rep | kv) as $r | {
				name: $name, model: $model, nodes: $nodes, ranks: .ranks,
				compute_s: .compute_s, bytes: .bytes, iterations: .iterations, warmup: .warmup,
				released_s: (($go - $t0) / 1e6), start_s: ((.start_us - $t0) / 1e6),
				measured: {
					mean_iter_s: (.iter_ms.mean / 1e3), mean_comm_s: (.comm_ms.mean / 1e3),
					mean_wait_s: (.wait_ms.mean / 1e3), rank0_compute_s: (.compute_ms.mean / 1e3),
					mean_compute_s: (.ready_ms.mean / 1e3), compute_cv: (.per_iteration | cv),
					p95_iter_s: (.iter_ms.p95 / 1e3),
					jct_s: ((.end_us - .start_us) / 1e6)
				},
				assignment: {
					mode: ($r.MODE // null), active: ($r.ACTIVE == "1"), epoch: ($r.EPOCH // null),
					period_us: (($r.PERIOD_ASSIGNED_US // "0") | tonumber),
					shift_us: (($r.SHIFT_US // "0") | tonumber), prio: .pace.prio,
					dscp: .pace.dscp, paced: .pace.paced, late: .pace.late,
					skipped: .pace.skipped, comment: $comment
				},
				per_iteration: [.per_iteration[] | {start_s: ((.start_us - $t0) / 1e6),
					iter_s: (.iter_ms / 1e3), comm_s: (.comm_ms / 1e3), slot, epoch}]
			}' "$out")")
	done
	printf '%s\n' "${jobs[@]}" | jq -s --arg s "$(basename "$scen" .conf)" --arg p "$pol" \
		'{scenario: $s, policy: $p, jobs: .}'
}
