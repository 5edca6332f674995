#!/usr/bin/env bash
# End-to-end tests of the command-line tools (harmonics-sim; the documented exit
# codes of all): options, formats, loaders through the CLI, bad input.
# Usage: tests/cli/run.sh BUILD_DIR
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
sim=$build/src/tools/harmonics-sim
fx=$top/tests/fixtures/cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   - $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL - $1"; [[ -f $tmp/err ]] && sed 's/^/#   /' "$tmp/err" | head -20; }

# expect NAME RC CMD...: runs CMD, checks its exit code; stdout in $tmp/out, stderr in $tmp/err.
expect() {
	local name=$1 want=$2 got
	shift 2
	timeout 300 "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [[ $got == "$want" ]]; then ok "$name"; return 0; fi
	not_ok "$name (exit $got, wanted $want)"
	return 1
}
# grep_out NAME PATTERN FILE
has() {
	if grep -qE -- "$2" "$3"; then ok "$1"; else not_ok "$1: /$2/ not in $(basename "$3")"; fi
}

[[ -x $sim ]] || { echo "harmonics-sim not built at $sim"; echo "0 passed, 1 failed"; exit 1; }

expect "--help exits 0" 0 "$sim" --help && has "--help lists --policy" '--policy LIST' "$tmp/out"
expect "--version" 0 "$sim" --version && has "version string" '^harmonics-sim [0-9]' "$tmp/out"
expect "unknown option rejected" 2 "$sim" --bogus && has "unknown option named" "'--bogus'" "$tmp/err"
expect "unknown policy rejected" 2 "$sim" --policy fair,nosuch &&
	has "unknown policy lists accepted" "'nosuch'.*accepted: fair" "$tmp/err"
expect "bad seed rejected" 2 "$sim" --seed -4 && has "bad seed named" "--seed" "$tmp/err"
expect "bad jitter rejected" 2 "$sim" --jitter 3 && has "jitter range" "out of range" "$tmp/err"

# The default scenario, JSON keys that others script against.
if expect "default scenario --json" 0 "$sim" --policy fair,optimal --budget 0.2 --json -q; then
	cp "$tmp/out" "$tmp/default.json"
	if jq -e '.policies | length == 2' "$tmp/default.json" >/dev/null; then ok "two policies"; else not_ok "two policies"; fi
	for k in name mean_jct_s p99_jct_s mean_iter_s mean_comm_s gpu_util sched_time_s completed; do
		if jq -e --arg k "$k" 'all(.policies[]; has($k))' "$tmp/default.json" >/dev/null; then
			ok "json key $k"
		else
			not_ok "json key $k"
		fi
	done
	if jq -e 'all(.policies[]; .completed > 0 and .mean_jct_s > 0 and .gpu_util > 0 and .gpu_util <= 1)' \
		"$tmp/default.json" >/dev/null; then ok "json values sane"; else not_ok "json values sane"; fi
	# Optimal decides; fair never does: fair's scheduling time is ~0 and its comm time is not lower.
	if jq -e '(.policies[0].name == "fair") and (.policies[1].mean_comm_s <= .policies[0].mean_comm_s * 1.02)' \
		"$tmp/default.json" >/dev/null; then ok "optimal comm <= fair comm"; else not_ok "optimal comm <= fair comm"; fi
	# The built-in scenario is the evaluation's testbed: the same numbers from the files.
	strip='del(.scenario.workload, .policies[].sched_time_s, .policies[].max_decision_s, .policies[].sim_wall_s, .policies[].budget_exhausted, .policies[].decisions)'
	"$sim" --policy fair --json -q | jq "$strip" >"$tmp/builtin.json"
	"$sim" --policy fair --json -q --topo-gen racks=3,hosts=8,gpus=2,nic=10G,oversub=2 \
		--trace "$top/docs/eval/testbed-trace.csv" | jq "$strip" >"$tmp/files.json"
	if cmp -s "$tmp/builtin.json" "$tmp/files.json"; then ok "built-in scenario = docs/eval testbed"; else not_ok "built-in scenario = docs/eval testbed"; fi
fi

expect "same seed, same result" 0 "$sim" --policy fair --json -q
jq 'del(.policies[].sched_time_s, .policies[].max_decision_s, .policies[].sim_wall_s)' "$tmp/out" >"$tmp/a.json"
"$sim" --policy fair --json -q | jq 'del(.policies[].sched_time_s, .policies[].max_decision_s, .policies[].sim_wall_s)' >"$tmp/b.json"
if cmp -s "$tmp/a.json" "$tmp/b.json"; then ok "deterministic for a seed"; else not_ok "deterministic for a seed"; fi

# --launch-window: decisions reach a job only near its start; a window longer
# than the run changes nothing.
printf 'arrival_s,gpus,model,iterations,nodes\n0,16,bert-base,200,"gpu01,gpu05"\n30,16,bert-base,100,"gpu02,gpu06"\n' >"$tmp/late.csv"
expect "bad --launch-window rejected" 2 "$sim" --launch-window -1 && has "bad window named" '--launch-window' "$tmp/err"
nt='del(.policies[].sched_time_s, .policies[].max_decision_s, .policies[].sim_wall_s)'
"$sim" --topology "$fx/topology.conf" --trace "$tmp/late.csv" --policy harmonics,crux --json -q | jq "$nt" >"$tmp/lw-a.json"
"$sim" --topology "$fx/topology.conf" --trace "$tmp/late.csv" --policy harmonics,crux --json -q \
	--launch-window 1e6 | jq "$nt" >"$tmp/lw-b.json"
if jq -e ".policies[0].completed == 2" "$tmp/lw-a.json" >/dev/null && cmp -s "$tmp/lw-a.json" "$tmp/lw-b.json"; then
	ok "--launch-window longer than the run = every decision applied"
else
	not_ok "--launch-window longer than the run = every decision applied"
fi
expect "--declared-only" 0 "$sim" --topology "$fx/topology.conf" --trace "$tmp/late.csv" --policy harmonics \
	--declared-only --json -q && { jq -e '.policies[0].completed == 2' "$tmp/out" >/dev/null &&
	ok "--declared-only runs every job" || not_ok "--declared-only runs every job"; }
expect "--launch-window 0" 0 "$sim" --topology "$fx/topology.conf" --trace "$tmp/late.csv" --policy harmonics \
	--launch-window 0 --json -q && { jq -e '.policies[0].completed == 2' "$tmp/out" >/dev/null && ok "--launch-window 0 runs every job" || not_ok "--launch-window 0 runs every job"; }

# --update-lead: a bad value is named; 0 is the default (same result).
expect "bad --update-lead rejected" 2 "$sim" --update-lead -1 && has "bad lead named" '--update-lead' "$tmp/err"
"$sim" --topology "$fx/topology.conf" --trace "$tmp/late.csv" --policy harmonics,crux --json -q \
	--update-lead 0 | jq "$nt" >"$tmp/ul-0.json"
if jq -e ".policies[0].completed == 2" "$tmp/ul-0.json" >/dev/null && cmp -s "$tmp/lw-a.json" "$tmp/ul-0.json"; then
	ok "--update-lead 0 = the default"
else
	not_ok "--update-lead 0 = the default"
fi
expect "--update-lead 500ms" 0 "$sim" --topology "$fx/topology.conf" --trace "$tmp/late.csv" --policy harmonics \
	--epoch 4 --update-lead 500ms --json -q && { jq -e '.policies[0].completed == 2' "$tmp/out" >/dev/null &&
	ok "--update-lead 500ms runs every job" || not_ok "--update-lead 500ms runs every job"; }

# Loaders through the CLI: topology.conf + trace with fixed nodes.
if expect "topology.conf + trace" 0 "$sim" --topology "$fx/topology.conf" --trace "$fx/trace.csv" --policy fair --per-job -q; then
	has "table has fair row" '^fair ' "$tmp/out"
	has "per-job rows" 'bert-a' "$tmp/out"
fi
expect "host CSV with named columns" 0 "$sim" --topology "$fx/hosts.csv" --csv-columns host=ip,tor=ASW,agg=PSW,core=DSW \
	--generate "jobs=4,gpus=8,iters=50" --policy fair -q
expect "CSV without column map fails" 1 "$sim" --topology "$fx/hosts.csv" --generate "jobs=2" --policy fair -q &&
	has "missing column named" 'host' "$tmp/err"
expect "explicit-profile trace, --csv" 0 "$sim" --topology "$fx/topology.conf" --trace "$fx/trace-explicit.csv" --policy fair --csv -q &&
	has "csv header" '^policy,jobs,completed' "$tmp/out"

# Bad input: file:line, the bad value, non-zero exit.
expect "bad trace rejected" 1 "$sim" --topology "$fx/topology.conf" --trace "$fx/bad-trace.csv" --policy fair -q &&
	has "bad trace names file:line and value" 'bad-trace.csv:3.*eight' "$tmp/err"
expect "bad topology rejected" 1 "$sim" --topology "$fx/bad-topology.conf" --trace "$fx/trace.csv" --policy fair -q &&
	has "bad topology names file:line" 'bad-topology.conf:2' "$tmp/err"
expect "missing file" 1 "$sim" --topology "$tmp/nope.conf" --policy fair -q && has "missing file named" 'nope.conf' "$tmp/err"
head -c 3000 /dev/urandom >"$tmp/garbage"
expect "garbage topology rejected" 1 "$sim" --topology "$tmp/garbage" --policy fair -q
: >"$tmp/empty.csv"
expect "empty trace rejected" 1 "$sim" --trace "$tmp/empty.csv" --policy fair -q

# A job that can never be placed is reported, not dropped.
printf 'arrival_s,gpus,model,iterations\n0,4096,resnet50,10\n0,8,resnet50,10\n' >"$tmp/huge-job.csv"
if expect "unplaceable job reported" 0 "$sim" --topology "$fx/topology.conf" --trace "$tmp/huge-job.csv" --policy fair --json -q; then
	if jq -e '.policies[0].unplaced == 1 and .policies[0].completed == 1' "$tmp/out" >/dev/null; then
		ok "unplaced counted"; else not_ok "unplaced counted"; fi
fi

if grep -q '^#define GNUPLOT ".\+"' "$build/config.h"; then
	expect "--plot svg" 0 "$sim" --policy fair,harmonics --plot "$tmp/p.svg" -q &&
		has "svg written" '<svg' "$tmp/p.svg"
	expect "--plot bad extension" 1 "$sim" --policy fair --plot "$tmp/p.gif" -q && has "accepted image types" 'svg' "$tmp/err"
fi

# --policy all runs every registered policy.
if expect "--policy all" 0 "$sim" --policy all --budget 0.2 --json -q; then
	n=$(jq '.policies | length' "$tmp/out")
	want=$("$sim" --help | sed -n 's/.*--policy LIST.*comma-separated among \([a-z,]*\).*/\1/p' | tr ',' '\n' | grep -c .)
	if [[ $n == "$want" && $n -ge 2 ]]; then ok "all $n policies ran"; else not_ok "policy all ran $n of $want"; fi
fi

# harmonics-bench: the JSON others script against, one row per policy and size.
bench=$build/src/tools/harmonics-bench
if expect "harmonics-bench --quick --json" 0 "$bench" --quick --policy fair,crux,harmonics --json; then
	if jq -e '(.results | length == 9) and all(.results[]; has("policy") and has("gpus") and has("jobs")
		and has("decision_s") and has("cpu_s") and has("peak_rss_bytes") and has("finished")
		and .decision_s >= 0 and .peak_rss_bytes > 0)' "$tmp/out" >/dev/null; then
		ok "bench json keys and rows"
	else
		not_ok "bench json keys and rows"
	fi
fi
expect "harmonics-bench bad option" 2 "$bench" --bogus && has "bench names the option" "bogus" "$tmp/err"
expect "harmonics-bench empty --sizes" 2 "$bench" --sizes , && has "bench names --sizes" "--sizes" "$tmp/err"

# Every tool documents its exit codes in --help and in its man page.
for t in harmonics-sim harmonics-bench harmonicsctl harmonics-emujob harmonics-agent; do
	if expect "$t --help exits 0" 0 "$build/src/tools/$t" --help; then
		has "$t --help lists exit codes" '^Exit status: 0 ' "$tmp/out"
	fi
	has "$t(1) lists exit codes" '^\.SH EXIT STATUS' "$top/docs/man/$t.1"
done

# harmonicsctl topology: topology.conf from a host CSV, read back to the same lines.
ctl=$build/src/tools/harmonicsctl
tfx=$top/tests/fixtures/topo
if expect "harmonicsctl topology hosts.csv" 0 "$ctl" topology "$tfx/hosts.csv"; then
	cp "$tmp/out" "$tmp/topo.conf"
	has "ECMP kept: tor2 under agg1 and agg2" '^SwitchName=agg2 Switches=tor2$' "$tmp/topo.conf"
	has "racks with compressed nodes" '^SwitchName=tor1 Nodes=h\[01-02\]$' "$tmp/topo.conf"
	expect "harmonicsctl topology reads its own output" 0 "$ctl" topology "$tmp/topo.conf" &&
		if diff <(grep -v '^#' "$tmp/topo.conf") <(grep -v '^#' "$tmp/out") >"$tmp/err"; then
			ok "round trip: the same switches and nodes"
		else
			not_ok "round trip: the same switches and nodes"
		fi
fi
expect "harmonicsctl topology --csv-columns" 0 "$ctl" topology --csv-columns host=ip,tor=ASW,agg=PSW,core=DSW \
	"$tfx/hosts_named.csv" && has "named columns" '^SwitchName=asw-1 Nodes=10\.1\.0\.\[1-2\]$' "$tmp/out"
expect "harmonicsctl topology: bad file" 2 "$ctl" topology "$tfx/bad_dup_host.csv" &&
	has "bad file named with its line" 'bad_dup_host.csv:[0-9]+:' "$tmp/err"
expect "harmonicsctl topology: bad --csv-columns" 2 "$ctl" topology --csv-columns rack=ASW "$tfx/hosts.csv" &&
	has "bad role named, accepted listed" "unknown role 'rack'.*accepted" "$tmp/err"
expect "harmonicsctl topology: no file" 2 "$ctl" topology && has "says what it needs" 'needs a host CSV' "$tmp/err"
printf 'host,tor\nh 1,tor1\n' >"$tmp/blank.csv"
expect "harmonicsctl topology: a name topology.conf cannot carry" 2 "$ctl" topology "$tmp/blank.csv" &&
	has "the name is given" "host 'h 1' cannot be written" "$tmp/err"
# harmonicsctl topology --format yaml: topology.yaml, read back to the same topology.conf.
if expect "harmonicsctl topology --format yaml --topology-name fabric" 0 "$ctl" topology --format yaml \
	--topology-name fabric "$tfx/hosts.csv"; then
	cp "$tmp/out" "$tmp/topo.yaml"
	has "a tree topology named fabric, the cluster default" '^- topology: fabric$' "$tmp/topo.yaml"
	expect "harmonicsctl topology reads topology.yaml" 0 "$ctl" topology --topology-name fabric "$tmp/topo.yaml" &&
		if diff <(grep -v '^#' "$tmp/topo.conf") <(grep -v '^#' "$tmp/out") >"$tmp/err"; then
			ok "yaml round trip: the same switches and nodes as topology.conf"
		else
			not_ok "yaml round trip: the same switches and nodes as topology.conf"
		fi
fi
expect "harmonicsctl topology: topology/block to topology.conf" 0 "$ctl" topology "$tfx/block.conf" &&
	has "blocks under their aggregate" '^SwitchName=b1\.\.b2 Switches=b\[1-2\]$' "$tmp/out"
expect "harmonicsctl topology: a topology.yaml's named block topology" 0 "$ctl" topology \
	--topology-name topo2 "$tfx/topology.yaml" && has "four blocks under one" '^SwitchName=b1\.\.b4 Switches=b\[1-4\]$' "$tmp/out"
expect "harmonicsctl topology: bad --format" 2 "$ctl" topology --format json "$tfx/hosts.csv" &&
	has "accepted formats listed" "accepted: conf, yaml, list" "$tmp/err"
# --format list: every topology of a topology.yaml as the coordinator models it.
if expect "harmonicsctl topology --format list" 0 "$ctl" topology --format list "$tfx/two_topologies.yaml"; then
	has "the cluster default first, with its racks" '^fabric tree: cluster default, 8 nodes, 2 racks' "$tmp/out"
	has "the blocks, nodes outside the default counted" '^nvl block: 8 nodes \(2 more not in fabric' "$tmp/out"
	has "a flat topology on the default's links" "^none flat: modelled on fabric's links" "$tmp/out"
fi
expect "harmonicsctl topology --format list: topology.conf" 0 "$ctl" topology --format list "$tfx/block.conf" &&
	has "one topology, its summary" 'racks, [0-9]+ hosts' "$tmp/out"
expect "harmonicsctl topology: unknown key in topology.yaml" 2 "$ctl" topology "$tfx/bad_unknown_key.yaml" &&
	has "file:line and the key" "bad_unknown_key.yaml:6: unknown key 'link_speed'" "$tmp/err"

echo "cli: $pass passed, $fail failed"
((fail == 0))
