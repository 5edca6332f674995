#!/bin/bash
# harmonics-agent, the standalone entry: options, a bad harmonics.conf refused with
# file:line, and a clean stop on SIGTERM while the coordinator is unreachable.
set -euo pipefail
bin=${top_builddir:-.}/src/tools/harmonics-agent
src=${top_srcdir:-$(dirname "$0")/../..}
dir=$(mktemp -d /tmp/hm_agent_cli.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" --help | grep -q -- '--node NAME' || fail "--help"
rc=0; "$bin" --bogus 2>/dev/null || rc=$?
((rc == 2)) || fail "unknown option: exit $rc, expected 2"
printf 'RunDir=%s/run\nHeartbeatInterval=1s AgentValidity=1s\n' "$dir" >"$dir/bad.conf"
rc=0; "$bin" --node n1 --conf "$dir/bad.conf" 2>"$dir/err" || rc=$?
((rc == 1)) || fail "bad conf: exit $rc, expected 1"
grep -q "bad.conf:2: AgentValidity=1000ms" "$dir/err" || fail "bad conf message: $(cat "$dir/err")"
rc=0; "$bin" --node 'n1/..' --conf "$dir/bad.conf" 2>"$dir/err" || rc=$?
((rc == 1)) && grep -q "node name 'n1/..'" "$dir/err" || fail "bad node name: $(cat "$dir/err")"

# Port 1 on loopback refuses: the agent logs it once, keeps retrying, stops on SIGTERM.
# A recorded node topology: this machine's own would load hwloc's PCI plugin,
# whose allocations LeakSanitizer reports (hwloc 2.9, sanitize tier).
# ListenAddress named: not the SlurmctldHost lines of this machine's slurm.conf.
printf 'RunDir=%s/run\nListenAddress=127.0.0.1 ListenPort=1\nHeartbeatInterval=200ms\n' "$dir" >"$dir/h.conf"
"$bin" --node n1 --conf "$dir/h.conf" --topo-xml "$src/tests/fixtures/topo/eth2.xml" 2>"$dir/log" &
pid=$!
for _ in $(seq 100); do grep -q "Connection refused" "$dir/log" && break; sleep 0.05; done
sleep 1.6 # three more attempts (0.5, 1 s back-off)
kill -TERM $pid
rc=0; wait $pid || rc=$?
((rc == 0)) || fail "stop: exit $rc"
[[ $(grep -c "Connection refused" "$dir/log") == 1 ]] || fail "refusals not logged once: $(cat "$dir/log")"
grep -q "stopped" "$dir/log" || fail "no 'stopped' line"
[[ -d $dir/run/n1 && $(stat -c %a "$dir/run/n1") == 755 ]] || fail "node directory"
echo "agent_cli: ok"
