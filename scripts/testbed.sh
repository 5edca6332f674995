#!/usr/bin/env bash
# The emulated multi-rack testbed: real Slurm (slurmd per node in its own network
# namespace), shaped NICs and rack uplinks with strict-priority classes, emulated
# training jobs (harmonics-emujob under sbatch/srun with --comm-sched, paced by
# libharmonics-pace) or real ones (PyTorch DDP over gloo, tests/testbed/torch_train.py,
# paced by harmonics.torch.pace); every scenario under every policy, repeated; the same
# scenarios in harmonics-sim; one table of measured vs simulated (docs/testbed.md).
#
# Usage: scripts/testbed.sh [--quick] [--json FILE] [--plot FILE.svg|.png] [OPTIONS]
#   --quick             half-length jobs (the whole run about 10 minutes on 2 cores)
#   --reps N            repetitions of each case (default 3; medians are reported)
#   --scenarios LIST    among pairs, mixed, arrival (default all), torch-pairs,
#                       torch-arrival (real PyTorch training, python3-torch), or files
#   --policies LIST     among fair, crux, cassini, harmonics, optimal (default the first four)
#   --nic RATE --uplink RATE   emulated link rates (default 200mbit each)
#   --jitter CV         compute jitter of the emulated jobs (default 0.05)
#   --torch-comm SHARE  PyTorch jobs: batch sized so that the all-reduce alone is this
#                       share of an iteration on this machine (default 0.5; 0.05-0.95)
#   --torch-cpu SHARE   PyTorch jobs: each rank limited to this share of a core, in its
#                       own CPU cgroup (default 0.4; 0 = no cap, ranks share the cores)
#   --torch-step MODE   PyTorch jobs' step time: cpu (default: the batch sized to take
#                       the time --torch-comm asks for on the capped CPU; it varies
#                       with the shared cores, CV 0.2-0.3 here) or fixed (an
#                       accelerator stand-in: the real forward and backward of a
#                       smaller batch, padded to that time, as a dedicated GPU's
#                       step takes the same time whatever other jobs do)
#   --tcp-cc NAME       the jobs' TCP congestion control: cubic (default), reno, bbr
#   --time-scale T      catalogue compute times x T (default 0.3)
#   --ref-gbps G        link speed the catalogue's profiles are scaled from (default 10)
#   --build DIR         an existing build (default: scripts/build.sh ./build)
#   --keep DIR          keep every case's raw output (emujob JSON, reports, decisions) in DIR
#   --max-error F       exit 1 when a case's simulated mean iteration is off by more (e.g. 0.1)
#   --report FILE       also write the table, the noise and how it was run as a
#                       markdown section (docs/eval/testbed-measured.md, which
#                       scripts/evaluate.sh puts into docs/evaluation.md)
# Root only (namespaces, daemons); exit 77 otherwise. Exit 1 when a case failed.
set -uo pipefail
# One compound command: bash parses it whole before running it, so a run of
# many minutes cannot be broken by an edit of this file.
{

top=$(cd "$(dirname "$0")/.." && pwd)
tb=$top/tests/testbed
quick=0 reps=3 json='' plot='' keep='' build='' max_error='' report=
scenarios=pairs,mixed,arrival policies=fair,crux,cassini,harmonics
TB_NIC=200mbit TB_UPLINK=200mbit TB_JITTER=0.05 TB_TORCH_COMM=0.5 TB_TORCH_CPU=0.4 TB_TORCH_STEP=cpu TB_TCP_CC=cubic TB_TIME_SCALE=0.3 ref_gbps=10

cmdline="scripts/testbed.sh $*"
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "testbed: $*" >&2; exit 2; }
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--reps) reps=${2:-}; shift ;;
	--scenarios) scenarios=${2:-}; shift ;;
	--policies) policies=${2:-}; shift ;;
	--json) json=${2:-}; shift ;;
	--plot) plot=${2:-}; shift ;;
	--nic) TB_NIC=${2:-}; shift ;;
	--uplink) TB_UPLINK=${2:-}; shift ;;
	--jitter) TB_JITTER=${2:-}; shift ;;
	--torch-comm) TB_TORCH_COMM=${2:-}; shift ;;
	--torch-cpu) TB_TORCH_CPU=${2:-}; shift ;;
	--torch-step) TB_TORCH_STEP=${2:-}; shift ;;
	--tcp-cc) TB_TCP_CC=${2:-}; shift ;;
	--time-scale) TB_TIME_SCALE=${2:-}; shift ;;
	--ref-gbps) ref_gbps=${2:-}; shift ;;
	--build) build=${2:-}; shift ;;
	--keep) keep=${2:-}; shift ;;
	--max-error) max_error=${2:-}; shift ;;
	--report) report=${2:-}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
	shift
done
[[ $reps =~ ^[1-9][0-9]?$ ]] || die "--reps '$reps': accepted 1-99"
for v in TB_JITTER TB_TORCH_COMM TB_TIME_SCALE ref_gbps ${max_error:+max_error}; do
	[[ ${!v} =~ ^[0-9]*\.?[0-9]+$ ]] || die "${v}: '${!v}' is not a number"
done
awk -v s="$TB_TORCH_COMM" 'BEGIN { exit !(s >= 0.05 && s <= 0.95) }' ||
	die "--torch-comm '$TB_TORCH_COMM': accepted 0.05-0.95"
[[ $TB_TORCH_CPU =~ ^(0|0?\.[0-9]+|1)$ ]] && awk -v s="$TB_TORCH_CPU" 'BEGIN { exit !(s == 0 || s >= 0.05) }' ||
	die "--torch-cpu '$TB_TORCH_CPU': accepted 0 (no cap) or 0.05-1 of a core"
[[ $TB_TORCH_STEP =~ ^(fixed|cpu)$ ]] || die "--torch-step '$TB_TORCH_STEP': accepted fixed, cpu"
[[ $TB_TCP_CC =~ ^(cubic|reno|bbr)$ ]] || die "--tcp-cc '$TB_TCP_CC': accepted cubic, reno, bbr"
[[ -z $plot || $plot == *.svg || $plot == *.png ]] || die "--plot '$plot': accepted FILE.svg or FILE.png"
scen_files=()
for s in ${scenarios//,/ }; do
	f=$s
	[[ -f $f ]] || f=$tb/scenarios/$s.conf
	[[ -f $f ]] || die "--scenarios: no scenario '$s' (accepted: $(basename -s .conf "$tb"/scenarios/*.conf | paste -sd,), or a file)"
	scen_files+=("$f")
done
IFS=, read -ra pols <<<"$policies"
for p in "${pols[@]}"; do
	[[ $p =~ ^(fair|crux|cassini|harmonics|optimal)$ ]] || die "--policies: '$p' (accepted: fair, crux, cassini, harmonics, optimal)"
done
if ((EUID != 0)); then
	echo "testbed: SKIP: needs root (network namespaces, tc, Slurm daemons)" >&2
	exit 77
fi

t_start=$(date +%s)
if [[ -z $build ]]; then
	build=$top/build
	"$top/scripts/deps.sh" >&2 || exit 1
	"$top/scripts/build.sh" "$build" >&2 || exit 1
fi
build=$(cd "$build" && pwd) || die "no build directory"
TB_EMUJOB=$build/src/tools/harmonics-emujob TB_SIM=$build/src/tools/harmonics-sim HM_CTL=
for b in "$TB_EMUJOB" "$TB_SIM" "$build/src/tools/harmonicsctl"; do
	[[ -x $b ]] || die "$b not built"
done

# shellcheck source=tests/testbed/net.sh
. "$tb/net.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$top/tests/slurm/cluster.sh"
# shellcheck source=tests/testbed/case.sh
. "$tb/case.sh"
# shellcheck source=tests/testbed/sim.sh
. "$tb/sim.sh"
# shellcheck source=tests/testbed/report.sh
. "$tb/report.sh"

out=${keep:-$(mktemp -d /tmp/hm-testbed.XXXXXX)}
mkdir -p "$out" || die "cannot create $out"
cleanup() {
	hm_cluster_down # jobs, then every slurmd, then the controller
	tb_net_down     # then the namespaces
	tb_cpu_down     # and the ranks' CPU cgroups
	[[ -n $keep ]] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Links carry TCP: the goodput of a rate is MSS / frame (1448 / 1514 bytes with
# timestamps; htb counts the Ethernet header); the coordinator and the
# simulator are told goodputs (docs/testbed.md).
goodput=$(awk 'BEGIN { printf "%.6f", 1448 / 1514 }')
nic_bps=$(tb_rate_bps "$TB_NIC") || die "--nic '$TB_NIC': accepted a rate like 200mbit, 1gbit"
uplink_bps=$(tb_rate_bps "$TB_UPLINK") || die "--uplink '$TB_UPLINK': accepted a rate like 200mbit, 1gbit"
TB_NIC_BPS=$(awk -v r="$nic_bps" -v g="$goodput" 'BEGIN { printf "%.0f", r * g }')
TB_UPLINK_BPS=$(awk -v r="$uplink_bps" -v g="$goodput" 'BEGIN { printf "%.0f", r * g }')
TB_PATH_BPS=$((TB_NIC_BPS < TB_UPLINK_BPS ? TB_NIC_BPS : TB_UPLINK_BPS))
# Profiles: catalogue compute x T, bytes x T x (emulated NIC / reference NIC):
# the communication share of the iteration is the catalogue's on the reference.
TB_BYTES_SCALE=$(awk -v n="$nic_bps" -v r="$ref_gbps" 'BEGIN { printf "%.6g", n / (r * 1e9) }')
TB_DURATION_FACTOR=$(awk -v q="$quick" 'BEGIN { print q ? 0.5 : 1 }')
# The live loop (docs/pacing.md): node agents beat every 250 ms and renew each
# step's assign file; a changed decision reaches running steps at a switch time
# UpdateLead = 500 ms ahead; the coordinator re-decides on every arrival and
# departure, and every EpochLength with the measured profiles. 4 s: the quick
# scenarios' jobs run 10-18 s (full length 20-36 s), so each sees 2-8 epochs,
# and a switch (lead + a period + the agent's 1 s promotion margin, < 2 s) is
# done well before the next epoch can change it again.
TB_EPOCH_S=4 TB_HEARTBEAT_MS=250 TB_LEAD_MS=500
export TB_EMUJOB TB_TIME_SCALE TB_BYTES_SCALE TB_JITTER TB_TCP_CC TB_EPOCH_S TB_LEAD_MS

# PyTorch jobs (models torch-NAME, tests/testbed/torch_train.py): the first
# python3 with torch.distributed and gloo (Debian's python3-torch is in
# /usr/bin when PATH leads to another python3); their declared profiles, once.
TB_TOP=$top TB_TORCH_TRAIN=$tb/torch_train.py TB_PACE_LIB=$build/src/pace/.libs/libharmonics-pace.so.2 TB_PYTHON=
torch_models=()
for f in "${scen_files[@]}"; do
	tb_scen_load "$f" || exit 2
	for m in "${SC_MODEL[@]}"; do [[ $m == torch-* ]] && torch_models+=("$m"); done
done
if ((${#torch_models[@]})); then
	for c in ${HM_TEST_PYTHON:-} python3 /usr/bin/python3; do
		[[ $("$c" -c 'import torch.distributed as d; print(d.is_available() and d.is_gloo_available())' 2>/dev/null) == True ]] &&
			{ TB_PYTHON=$(command -v "$c"); break; }
	done
	[[ -n $TB_PYTHON ]] || die "PyTorch jobs (${torch_models[*]}) need a python3 with torch and gloo (scripts/deps.sh: python3-torch)"
	[[ -e $TB_PACE_LIB ]] || die "$TB_PACE_LIB not built"
	tb_cpu_up || exit 1
	tb_torch_profiles "${torch_models[@]}" || exit 1
fi
export TB_TOP TB_TORCH_TRAIN TB_PACE_LIB TB_PYTHON

# Every scenario file, model and node is checked before anything starts.
for f in "${scen_files[@]}"; do
	tb_scen_load "$f" || exit 2
	for ((j = 0; j < ${#SC_NAME[@]}; j++)); do
		tb_profile "${SC_MODEL[$j]}" >/dev/null 2>&1 ||
			die "$f: job ${SC_NAME[$j]}: '${SC_MODEL[$j]}' is not a catalogue model ($("$TB_EMUJOB" --model nosuch 2>&1 | sed 's/.*accepted: //'))"
		for n in ${SC_NODES[$j]//,/ }; do
			((${n#n} >= 1 && ${n#n} <= TB_RACKS * TB_HOSTS)) ||
				die "$f: job ${SC_NAME[$j]}: node $n is not in n1..n$((TB_RACKS * TB_HOSTS))"
		done
	done
done

load0=$(cut -d' ' -f1-3 /proc/loadavg)
tb_net_up "$TB_EMUJOB" || exit 1
export HM_NODES=$TB_NNODES HM_RACK_HOSTS=$TB_HOSTS HM_CTL_ADDR=$TB_CTL_ADDR \
	HM_NODE_ADDR_PREFIX=$TB_MGMT_PREFIX HM_NODE_NETNS_PREFIX=${TB_NS}n
# One emulated job rank per node (GpusPerNode=1); the live loop's timing above.
HM_CONF_EXTRA="GpusPerNode=1
NicSpeed=$(awk -v b="$TB_NIC_BPS" 'BEGIN { printf "%.6fGbps", b / 1e9 }')
UplinkSpeed=$(awk -v b="$TB_UPLINK_BPS" 'BEGIN { printf "%.6fGbps", b / 1e9 }')
EpochLength=${TB_EPOCH_S}s
HeartbeatInterval=${TB_HEARTBEAT_MS}ms
UpdateLead=${TB_LEAD_MS}ms
LogLevel=info"
export HM_CONF_EXTRA
hm_cluster_up "$build" --no-db || { HM_KEEP=1; exit 1; }
TB_TOPOLOGY=$HM_DIR/etc/topology.conf
cp "$TB_TOPOLOGY" "$HARMONICS_CONF" "$out/"

echo "testbed: $TB_RACKS racks x $TB_HOSTS hosts, NIC $TB_NIC, uplink $TB_UPLINK (goodputs" \
	"$((TB_NIC_BPS / 1000000)) / $((TB_UPLINK_BPS / 1000000)) Mbit/s); profiles: catalogue compute x $TB_TIME_SCALE," \
	"bytes x $TB_TIME_SCALE x $TB_BYTES_SCALE, compute jitter $TB_JITTER, TCP $TB_TCP_CC; $reps reps of ${#scen_files[@]} scenarios x ${#pols[@]} policies"
results=()
failed=0
for ((rep = 1; rep <= reps; rep++)); do
	for f in "${scen_files[@]}"; do
		s=$(basename "$f" .conf)
		for p in "${pols[@]}"; do
			d=$out/rep$rep/$s/$p
			t0=$(date +%s.%N)
			if tb_case_run "$f" "$p" "$d" && tb_case_sim "$d" "$rep"; then
				results+=("$d/result.json")
				jq -r --arg t "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')" \
					--arg h "rep $rep/$reps $s $p" '
					def m(f): (map(f) | add / length * 1000 | round / 1000);
					"testbed: \($h): mean iteration measured \(.jobs | m(.measured.mean_iter_s)) s," +
					" simulated \(.jobs | m(.simulated.mean_iter_s)) s; comm \(.jobs | m(.measured.mean_comm_s))" +
					" / \(.jobs | m(.simulated.mean_comm_s)) s; classes \([.jobs[].assignment.prio]);" +
					" held \([.jobs[].assignment.period_us > 0]) (\($t) s)"' "$d/result.json"
			else
				echo "testbed: rep $rep/$reps $s $p: FAILED (raw output in $d)" >&2
				failed=1
				keep=${keep:-$out}
				break 3
			fi
		done
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
((${#results[@]})) || exit 1

tb_summary "${results[@]}" >"$out/summary.json"
tb_noise "${results[@]}" >"$out/noise.json"
tb_noise_lines() {
	jq -r '"noise: spread of the measured mean iteration over repetitions: median \(map(.range) | sort | .[length / 2 | floor] * 1000 | round / 10)%," +
	" largest \(map(.range) | max * 1000 | round / 10)% (\(max_by(.range).case)); measured compute jitter (CV) \(map(.jitter_cv) | add / length * 1000 | round / 1000);" +
	" sleep overshoot of compute, median \(map(.overshoot_ms | select(. != null)) | if length == 0 then "- (no emulated jobs)"
		else (sort | .[length / 2 | floor] * 100 | round / 100 | tostring) + " ms" end)"' "$out/noise.json"
	echo "noise: load average (1, 5, 15 min) $load0 at the start, $load1 at the end; $(nproc) cores; machine shared with other work"
}
echo
tb_table "$out/summary.json" "$out/noise.json"
echo
tb_noise_lines
[[ -n $json ]] && cp "$out/summary.json" "$json"
[[ -n $plot ]] && tb_plot "$out/summary.json" "$plot" && echo "testbed: plot in $plot"
t_total=$(($(date +%s) - t_start))
if [[ -n $report ]]; then
	{
		echo "## (d) The emulated testbed: real jobs through Slurm, measured and simulated"
		echo
		echo "Measured on $(date -u +%Y-%m-%d) ($(uname -m), $(nproc) cores, a machine shared with other"
		echo "work) in $t_total s by"
		echo
		echo '```'
		echo "$cmdline"
		echo '```'
		echo
		if ((${#torch_models[@]})); then
			echo "Real training (scenarios torch-*): PyTorch $("$TB_PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
			echo "jobs (tests/testbed/torch_train.py: a small CNN, DDP over gloo, one rank per"
			echo "node, one thread each, gradient all-reduce paced by harmonics.torch.pace) under"
			echo "sbatch/srun with --comm-sched; their compute is real."
			for m in "${!TB_TORCH_BATCH[@]}"; do
				echo "$m: ${TB_TORCH_BATCH[$m]} images per rank (--torch-comm $TB_TORCH_COMM: the all-reduce alone is"
				echo "that share of an iteration timed alone here; declared compute ${TB_TORCH_PROFILE[$m]% *} s)."
				[[ $TB_TORCH_STEP == fixed ]] &&
					echo "Each step padded to that time (--torch-step fixed: an accelerator stand-in, docs/testbed.md)."
			done
			if [[ -n $TB_CPU_DIR ]]; then
				echo "Each rank ran in its own CPU cgroup limited to $TB_TORCH_CPU of a core (--torch-cpu),"
				echo "so that its speed did not depend on how many others computed at that moment."
			else
				echo "The ranks shared the machine's cores freely (--torch-cpu 0)."
			fi
		fi
		echo "Real Slurm jobs (harmonics-emujob or PyTorch under sbatch/srun with --comm-sched) on"
		echo "$TB_RACKS racks x $TB_HOSTS hosts in network namespaces, NICs $TB_NIC and"
		echo "uplinks $TB_UPLINK with strict-priority classes, TCP $TB_TCP_CC; the same"
		echo "cases in harmonics-sim (docs/testbed.md). Medians over $reps repetitions;"
		echo "\"sim error\" is simulated / measured - 1 of the mean iteration, the fidelity"
		echo "goal is 10%. Running steps follow every re-decision (the live loop: EpochLength"
		echo "${TB_EPOCH_S} s, UpdateLead ${TB_LEAD_MS} ms), and the simulator models the same; the last"
		echo "column simulates launch-time assignments only (the Slurm path before the live"
		echo "loop). Why rows differ: docs/simulator.md, \"Fidelity against the testbed\"."
		echo
		tb_table "$out/summary.json" "$out/noise.json"
		echo
		tb_noise_lines | sed 's/^/- /'
		[[ -n $plot ]] && printf '\n![measured vs simulated mean iteration](%s)\n' "img/$(basename "$plot")"
	} >"$report"
	echo "testbed: report in $report"
fi
echo "testbed: done in $t_total s${keep:+; raw results in $out}"
((failed == 0)) || exit 1
if [[ -n $max_error ]]; then
	jq -e --argjson e "$max_error" '[.scenarios[].policies[] |
		(.simulated_mean_iter_s / .measured_mean_iter_s - 1) | fabs] | max <= $e' "$out/summary.json" >/dev/null ||
		{ echo "testbed: FAIL: a simulated mean iteration is off by more than $max_error"; exit 1; }
fi
exit 0
}
