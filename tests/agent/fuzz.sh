#!/bin/bash
# Fuzz the node agent's parsers of outside input (contract B messages, rack
# rounds included, with a round trip, slurmd's command line) under libFuzzer +
# ASan/UBSan for a bounded time.   tests/agent/fuzz.sh [SECONDS]   (default 30; 0 = build only).
# Exit 77 without clang/libFuzzer.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-30}
out=$(mktemp -d /tmp/fuzz_agent.XXXXXX)
trap 'rm -rf "$out"' EXIT
# shellcheck source=scripts/fuzz-lib.sh
. "$top/scripts/fuzz-lib.sh"
fuzz_need_libfuzzer fuzz-agent
[[ -f $top/build/config.h ]] || { echo "fuzz-agent: run scripts/build.sh first"; exit 1; }
inc=(-I"$top/src/agent" -I"$top/src/common" -I"$top/src/pace" -I"$top/build")
for d in "$top"/src/libharmonics/*/; do inc+=(-I"$d"); done
# shellcheck disable=SC2046
clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	"${inc[@]}" $(pkg-config --cflags json-c) "$top/tests/agent/fuzz_agent_wire.c" \
	"$top/src/common/hm_agent_wire.c" "$top/src/common/hm_rack_wire.c" "$top/src/agent/agent_node.c" \
	"$top/src/agent/agent_meas.c" "$top/src/pace/pace_report_read.c" "$top/src/libharmonics/core/hm_parse.c" \
	"$top/src/libharmonics/core/hm_rack_msg.c" \
	"$top/src/common/hm_fields.c" "$top/src/common/hm_json.c" "$top/src/common/hm_proto.c" \
	"$top/src/libharmonics/core/hm_error.c" \
	$(pkg-config --libs json-c) -lmunge -lm -o "$out/fuzz_agent_wire"
((secs > 0)) || exit 0
mkdir -p "$out/corpus"
seed() { printf '%s' "$2" >"$out/corpus/$1"; }
seed hello '0{"v":1,"op":"agent_hello","seq":1,"node":"n1","agent_version":"0.1.0","topo":{"gpus":2,"nics":[{"name":"mlx5_0","pci":"0000:14:00.0","numa":0,"speed_bps":200000000000}],"gpu_nic":[0,0]},"jobs":[{"job_id":42,"steps":1,"ranks":2,"applied_epoch":null}]}'
seed beat_class '0{"v":1,"op":"agent_beat","seq":8,"nodes":[{"node":"n1","jobs":[{"job_id":42,"steps":1,"ranks":2,"applied_epoch":7,"nccl_class":3}]}]}'
seed welcome '0{"v":1,"op":"agent_welcome","seq":1,"re":1,"ok":true,"heartbeat_ms":1000,"valid_ms":3000,"lead_ms":1000}'
seed beat '0{"v":1,"op":"agent_beat","seq":7,"nodes":[{"node":"n1","jobs":[{"job_id":42,"steps":1,"ranks":2,"applied_epoch":7,"meas":{"samples":20,"iter_us":250000.5,"iter_sd_us":1200.0,"compute_us":150000,"compute_sd_us":9000,"slot_misses":1}}]}]}'
seed assign '0{"v":1,"op":"agent_assign","seq":2,"re":1,"nodes":[{"node":"n1","jobs":[{"job_id":42,"uid":1000,"scheduled":true,"policy":"harmonics","epoch":7,"period_us":250000,"shift_us":125000,"origin_us":1700000000000000,"guard_us":10000,"prio":1,"next":{"effective_us":1700000001000000,"epoch":8,"policy":"harmonics","period_us":250000,"shift_us":0,"origin_us":1700000000000000,"guard_us":10000,"prio":2}},{"job_id":43,"uid":1001,"scheduled":false,"reason":"off"}]}]}'
seed rack '0{"v":1,"op":"agent_assign","seq":3,"re":0,"nodes":[],"rack":"rack1","leader":"n2","role":"member","term":2}'
seed round '0{"v":1,"op":"rack_round","seq":12,"rack_idx":0,"round":7,"shift_grid":24,"hold_min_gain":0.5,"guard_s":0,"jobs":[{"i":3,"cross":false,"burst_s":0.04,"T_s":0.1,"sd_s":0.002,"R_s":0.102,"partnered":true,"prev_P_s":0,"prev_s_s":0,"hold":false,"P_s":0,"s_s":0,"links":[17,18],"demand":[0.6,0.6]},{"i":5,"cross":true,"burst_s":0.05,"T_s":0.2,"sd_s":0.001,"R_s":0,"partnered":true,"prev_P_s":0,"prev_s_s":0,"hold":true,"P_s":0.21,"s_s":0.1,"links":[17],"demand":[1]}]}'
seed result '0{"v":1,"op":"rack_result","seq":40,"re":12,"rack_idx":0,"round":7,"solve_ms":0.02,"jobs":[{"i":3,"hold":true,"P_s":0.104,"s_s":0.05,"guard_s":0.0045}]}'
seed bound '3{"bind":"agent>coordinator 10.0.0.1:6830 10.0.0.7:41234","v":1,"op":"agent_welcome","seq":1,"re":1,"ok":true,"heartbeat_ms":1000,"valid_ms":3000,"lead_ms":1000}'
seed bound_elsewhere '3{"bind":"agent>coordinator 10.0.0.2:6830 10.0.0.7:41234","v":1,"op":"agent_welcome","seq":1}'
printf '1slurmd\0-D\0-N\0n1\0--conf\0/etc/slurm.conf\0' >"$out/corpus/cmdline"
# Two reads of one task's report, NUL-separated (tests/unit/test_agent_jobs.c's form).
rep() { # ITER_N ITER_SUM_US ITER_SQ_SUM_US2 PID
	printf 'HARMONICS_REPORT_VERSION=2\nJOB_ID=45\nRANK=0\nMODE=harmonics\nEPOCH=3\nACTIVE=1\nPERIOD_ASSIGNED_US=100000\nSHIFT_US=0\nITERATIONS=%s\nBURSTS=%s\nPACED=0\nLATE=0\nSKIPPED=0\nUNPACED=0\nPERIOD_US=0\nBURST_OFFSET_US=0\nBURST_US=0\nWAIT_US=0\nSLOT_ERROR_US=0.0\nSLOT_ERROR_MAX_US=0.0\nUPDATED_US=1700000000000000\nITER_N=%s\nITER_SUM_US=%s\nITER_SQ_SUM_US2=%s\nCOMPUTE_N=%s\nCOMPUTE_SUM_US=1000\nBURST_N=%s\nBURST_SUM_US=100\nSLOT_MISSES=1\nAPPLIED_EPOCH=3\nPID=%s\nCOMPUTE_SQ_SUM_US2=200000\n' \
		"$1" "$1" "$1" "$2" "$3" "$1" "$1" "$4"
}
{ printf 2; rep 10 1000000 100000000000 1000; printf '\0'; rep 15 1600000 172000000000 1000; } >"$out/corpus/report"
{ printf 2; printf '\0'; rep 1 9223372036854775808 0 1000; } >"$out/corpus/report-hostile"
cd "$out"
echo "--- fuzz_agent_wire, $secs s"
./fuzz_agent_wire -max_total_time="$secs" -max_len=8192 -timeout=10 \
	-artifact_prefix="$top/tests/agent/" -print_final_stats=1 corpus 2>&1 | tail -n 25
