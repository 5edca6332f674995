#!/bin/bash
# Two emulated training jobs (harmonics-emujob, 2 ranks each) share one shaped
# link between two network namespaces. Case "together": both start at once,
# unpaced (fair sharing, what a cluster does today). Case "staggered": the same
# jobs paced by libharmonics-pace with complementary shifts (0 and half a period).
# Each case runs REPS times; the medians of the mean iteration time are compared.
# Passes when staggered < together. Root only (namespaces, tc); skips otherwise.
#
# Usage: tests/emulation/netns_stagger.sh [BUILDDIR]   (default: $top_builddir or .)
# First one job runs alone (unpaced) once: its iteration time sets the period
# (PERIOD_US=auto: PERIOD_FACTOR x the alone mean, as a scheduler would set it from
# the measured profile), and shows the contention-free baseline.
# Knobs (env): REPS=5 ITERS=30 RATE=200mbit COMPUTE=100ms BYTES=2.4MB PERIOD_US=auto
#   EJ_ARGS="..." extra harmonics-emujob options (default: --compute-jitter 0.1, the
#   upper end of measured mini-batch time variation; without jitter free-running
#   jobs on this link often settle into interleaving by themselves)
# Bounded: every emujob runs under `timeout`; namespaces are always deleted.
set -u
b=${1:-${top_builddir:-.}}
emujob="$b/src/tools/harmonics-emujob"
REPS=${REPS:-5}
ITERS=${ITERS:-30}
WARMUP=${WARMUP:-3}
RATE=${RATE:-200mbit}
COMPUTE=${COMPUTE:-100ms}
BYTES=${BYTES:-2.4MB}
PERIOD_US=${PERIOD_US:-auto}
GUARD_US=${GUARD_US:-10000}
PERIOD_FACTOR=${PERIOD_FACTOR:-1.06}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-40}
EJ_ARGS=${EJ_ARGS:---compute-jitter 0.1}

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: netns_stagger needs root (ip netns, veth, tc); run it as root"
	exit 77
fi
if [ ! -x "$emujob" ]; then
	echo "FAIL: $emujob not built (pass the build directory as the first argument)"
	exit 1
fi
for t in ip tc timeout awk sort; do
	command -v "$t" >/dev/null || { echo "FAIL: '$t' not found (iproute2/coreutils)"; exit 1; }
done

A="hmpaceA$$"
B="hmpaceB$$"
tmp=$(mktemp -d /tmp/netns_stagger.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

set -e
ip netns add "$A"
ip netns add "$B"
ip link add eth0 netns "$A" type veth peer name eth0 netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev eth0
ip -n "$B" addr add 10.77.0.2/24 dev eth0
for n in "$A" "$B"; do
	ip -n "$n" link set lo up
	ip -n "$n" link set eth0 up
	# Shallow tbf (5 ms) with a 1 Mbit burst: accurate and cheap (network-emulation notes).
	tc -n "$n" qdisc add dev eth0 root tbf rate "$RATE" burst 1mbit latency 5ms
done
# One tail drop must not cost the kernel's 200 ms minimum RTO.
ip -n "$A" route replace 10.77.0.0/24 dev eth0 src 10.77.0.1 rto_min 5ms
ip -n "$B" route replace 10.77.0.0/24 dev eth0 src 10.77.0.2 rto_min 5ms
set +e
echo "netns-stagger: link $A<->$B tbf $RATE; jobs: 2 ranks each, compute $COMPUTE, all-reduce $BYTES,"
echo "netns-stagger: $ITERS iterations (+$WARMUP warm-up), guard ${GUARD_US} us, reps $REPS"

# run_job JOB PORT OUT [ENV...]: rank 0 in A, rank 1 in B, in the background.
run_job() {
	local job=$1 port=$2 out=$3
	shift 3
	for r in 0 1; do
		local ns=$A
		[ "$r" = 1 ] && ns=$B
		ip netns exec "$ns" env "$@" timeout "$RUN_TIMEOUT_S" "$emujob" --ranks 2 --rank "$r" \
			--rendezvous "10.77.0.1:$port" --compute "$COMPUTE" --bytes "$BYTES" \
			--iterations "$ITERS" --warmup "$WARMUP" --quiet --timeout 20s $EJ_ARGS \
			>"$out.$r" 2>"$out.$r.err" &
		pids+=($!)
	done
}

mean_of() { awk '/^summary iter_ms/ { sub("mean=", "", $3); print $3 }' "$1"; }
p95_of() { awk '/^summary iter_ms/ { sub("p95=", "", $5); print $5 }' "$1"; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

fail=0
out="$tmp/alone"
pids=()
run_job 1 29500 "$out.job1" HARMONICS_MODE=off
for p in "${pids[@]}"; do wait "$p" || fail=1; done
alone=$(mean_of "$out.job1.0")
alone95=$(p95_of "$out.job1.0")
if [ -z "$alone" ] || [ "$fail" != 0 ]; then
	echo "FAIL: the alone run failed:"
	cat "$out".job1.*.err
	exit 1
fi
if [ "$PERIOD_US" = auto ]; then
	PERIOD_US=$(awk -v p="$alone" -v f="$PERIOD_FACTOR" 'BEGIN { printf "%d", p * f * 1000 }')
fi
echo "netns-stagger: alone mean_ms=$alone p95_ms=$alone95 -> period ${PERIOD_US} us, shifts 0 and $((PERIOD_US / 2)) us"
for rep in $(seq 1 "$REPS"); do
	for mode in together staggered; do
		out="$tmp/$mode.$rep"
		pids=()
		if [ "$mode" = together ]; then
			env1=(HARMONICS_MODE=off)
			env2=(HARMONICS_MODE=off)
		else
			origin=$(($(date +%s%6N) + 1000000))
			common=(HARMONICS_MODE=harmonics HARMONICS_PERIOD_US=$PERIOD_US
				HARMONICS_ORIGIN_US=$origin HARMONICS_GUARD_US=$GUARD_US
				HARMONICS_VALID_UNTIL_US=$((origin + 600000000)))
			env1=("${common[@]}" HARMONICS_JOB_ID=1 HARMONICS_SHIFT_US=0)
			env2=("${common[@]}" HARMONICS_JOB_ID=2 HARMONICS_SHIFT_US=$((PERIOD_US / 2)))
		fi
		run_job 1 29501 "$out.job1" "${env1[@]}"
		run_job 2 29502 "$out.job2" "${env2[@]}"
		for p in "${pids[@]}"; do
			wait "$p" || fail=1
		done
		pids=()
		m1=$(mean_of "$out.job1.0")
		m2=$(mean_of "$out.job2.0")
		if [ -z "$m1" ] || [ -z "$m2" ] || [ "$fail" != 0 ]; then
			echo "FAIL: rep $rep $mode: an emujob failed:"
			cat "$out".job*.err
			exit 1
		fi
		avg=$(awk -v a="$m1" -v b="$m2" 'BEGIN { printf "%.1f", (a + b) / 2 }')
		echo "$avg" >>"$tmp/$mode.means"
		awk -v a="$(p95_of "$out.job1.0")" -v b="$(p95_of "$out.job2.0")" \
			'BEGIN { printf "%.1f\n", (a + b) / 2 }' >>"$tmp/$mode.p95s"
		echo "netns-stagger: rep=$rep case=$mode job1_mean_ms=$m1 job2_mean_ms=$m2" \
			"job1_p95_ms=$(p95_of "$out.job1.0") job2_p95_ms=$(p95_of "$out.job2.0") mean_ms=$avg"
		grep -h '^summary pace' "$out.job1.0" "$out.job2.0" | sed 's/^/netns-stagger:   /'
	done
done

tog=$(median <"$tmp/together.means")
stg=$(median <"$tmp/staggered.means")
tog95=$(median <"$tmp/together.p95s")
stg95=$(median <"$tmp/staggered.p95s")
gain=$(awk -v t="$tog" -v s="$stg" 'BEGIN { printf "%.1f", (t - s) / t * 100 }')
echo "netns-stagger: MEDIAN alone_ms=$alone together_ms=$tog staggered_ms=$stg staggered_lower_by=${gain}%"
echo "netns-stagger: MEDIAN_P95 together_ms=$tog95 staggered_ms=$stg95"
if awk -v t="$tog" -v s="$stg" 'BEGIN { exit !(s < t) }'; then
	echo "PASS: complementary shifts give shorter iterations than starting together"
	exit 0
fi
echo "FAIL: staggered ($stg ms) is not shorter than together ($tog ms)"
exit 1
