# shellcheck shell=bash
# The testbed's network: racks of hosts in network namespaces, shaped links,
# priority queues. Source this file, then: tb_net_up EMUJOB; ...; tb_net_down.
#
#   root ns --(one veth)-- mgmt ns: bridge joining every node's mgmt0 (Slurm
#                          control traffic; not shaped)
#   node ns  nK: mgmt0 (198.18.X.K), eth0 (198.19.0.K, the data NIC)
#   ToR ns   tR: bridge joining its hosts' NICs and its uplink
#   spine ns s:  bridge joining every rack's uplink
#
# Shaped (egress of each end, so every directed link is shaped once): a host's
# NIC up (node eth0) and down (ToR port), each rack uplink up (ToR) and down
# (spine port). Each shaped link is an htb of the link's rate with one leaf per
# traffic class: strict priority by htb prio (the prio qdisc is not built into
# this kernel), a bfifo leaf of TB_QUEUE_BYTES (shallow: deep queues make TCP
# flows unfair), u32 filters on the DSCP that libharmonics-pace marks
# (harmonics-emujob --dry-run tells the class -> DSCP map, so it is written once,
# in the runtime). Host routes carry rto_min TB_RTO_MIN (1ms: one tail drop must not cost
# the kernel's 200 ms minimum RTO) and the congestion control TB_TCP_CC: every
# job's TCP uses it, not only the emujob's sockets (--tcp-cc); a PyTorch job's
# gloo sockets took the namespace's default, inherited from the host (bbr here).
# docs/testbed.md has the measured accuracy.
#
# Input (environment, defaults): TB_RACKS=2 TB_HOSTS=4 (per rack), TB_NIC=200mbit,
# TB_UPLINK=200mbit, TB_QUEUE_BYTES=125000, TB_TCP_CC=cubic.
# Output: TB_NS (name prefix), TB_CTL_ADDR (the root namespace's management
# address: slurmctld and the coordinator listen there), TB_NNODES; helpers below.
# Names are unique per process, so several testbeds can run at once.

TB_RACKS=${TB_RACKS:-2}
TB_HOSTS=${TB_HOSTS:-4}
TB_NIC=${TB_NIC:-200mbit}
TB_UPLINK=${TB_UPLINK:-200mbit}
TB_QUEUE_BYTES=${TB_QUEUE_BYTES:-125000}
TB_RTO_MIN=${TB_RTO_MIN:-1ms}
TB_TCP_CC=${TB_TCP_CC:-cubic}
TB_NS=
TB_CTL_ADDR=
TB_MGMT_PREFIX=
TB_NNODES=0
TB_DATA_PREFIX=198.19.0
TB_ROOT_IF=
TB_DEFAULT_LEAF=
declare -A TB_CLASS_DSCP=()

tb_log() { echo "testbed: $*" >&2; }

tb_node_ns() { echo "${TB_NS}n$1"; }
tb_node_addr() { echo "$TB_DATA_PREFIX.$1"; }
tb_node_mgmt() { echo "$TB_MGMT_PREFIX.$1"; }
tb_node_rack() { echo $((($1 - 1) / TB_HOSTS + 1)); }
# Run a command in node K's namespace (nsenter: `ip netns exec` remounts /sys,
# and slurmd then fails on cgroups).
tb_in_node() {
	local k=$1
	shift
	nsenter --net="/run/netns/$(tb_node_ns "$k")" "$@"
}

# "200mbit", "1gbit", "500kbit" -> bits per second (tc's units, decimal).
tb_rate_bps() {
	awk -v r="$1" 'BEGIN {
		if (match(r, /^[0-9.]+/) == 0) exit 1
		v = substr(r, 1, RLENGTH); u = tolower(substr(r, RLENGTH + 1))
		m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9
		if (!(u in m) || v <= 0) exit 1
		printf "%.0f\n", v * m[u] }'
}

# A management /24 in 198.18.0.0/16 (RFC 2544 benchmarking space) that no
# interface or route of this machine uses yet. Called under the lock.
tb_pick_mgmt() {
	local x used
	used=$(ip -4 -o addr show; ip -4 route show table all)
	for _ in $(seq 64); do
		x=$((RANDOM % 254 + 1))
		grep -q "198\.18\.$x\." <<<"$used" && continue
		echo "198.18.$x"
		return 0
	done
	return 1
}

# Class -> DSCP from the runtime itself (harmonics-emujob --dry-run).
tb_load_classes() {
	local emujob=$1 k d
	for k in 0 1 2 3 4 5 6 7; do
		d=$(env -i HARMONICS_MODE=testbed HARMONICS_PERIOD_US=0 HARMONICS_PRIO=$k \
			"$emujob" --dry-run | jq -r .dscp) || return 1
		[[ $d =~ ^[0-9]+$ ]] || { tb_log "emujob --dry-run gave no DSCP for class $k"; return 1; }
		TB_CLASS_DSCP[$k]=$d
		# Unmarked traffic (ARP, other DSCPs) shares the leaf of a class on DSCP 0.
		((d == 0)) && [[ -z $TB_DEFAULT_LEAF ]] && TB_DEFAULT_LEAF=$((10 + k))
	done
	# No class on DSCP 0 (the default ClassDscp): unmarked traffic shares the lowest
	# class's leaf (the first class with class 7's code point).
	for k in 0 1 2 3 4 5 6 7; do
		[[ -z $TB_DEFAULT_LEAF && ${TB_CLASS_DSCP[$k]} == "${TB_CLASS_DSCP[7]}" ]] &&
			TB_DEFAULT_LEAF=$((10 + k))
	done
	return 0
}

# htb of RATE on NS's DEV: one leaf per distinct DSCP, strict priority by class.
tb_shape() {
	local ns=$1 dev=$2 rate=$3 bps min k d id seen=" "
	bps=$(tb_rate_bps "$rate") || { tb_log "bad rate '$rate' (e.g. 200mbit, 1gbit)"; return 1; }
	min=$((bps / 100)) # a leaf's own rate; above it, classes borrow in prio order
	local t=(tc -n "$ns")
	local b=(burst 125000 cburst 125000)
	"${t[@]}" qdisc add dev "$dev" root handle 1: htb default "$TB_DEFAULT_LEAF" || return 1
	"${t[@]}" class add dev "$dev" parent 1: classid 1:1 htb rate "$bps"bit ceil "$bps"bit \
		quantum 60000 "${b[@]}" || return 1
	for k in 0 1 2 3 4 5 6 7; do
		d=${TB_CLASS_DSCP[$k]}
		[[ $seen == *" $d "* ]] && continue
		seen+="$d "
		id=$((10 + k))
		"${t[@]}" class add dev "$dev" parent 1:1 classid "1:$id" htb rate "$min"bit ceil "$bps"bit \
			prio "$k" quantum 60000 "${b[@]}" || return 1
		"${t[@]}" qdisc add dev "$dev" parent "1:$id" handle "$id:" bfifo \
			limit "$( ((k == 0)) && echo "$TB_QUEUE_BYTES" || echo "${TB_LOW_QUEUE_BYTES:-$TB_QUEUE_BYTES}")" || return 1
		"${t[@]}" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
			match ip dsfield $((d << 2)) 0xfc flowid "1:$id" || return 1
	done
}

tb_ns_add() {
	ip netns add "$1" && ip -n "$1" link set lo up
}

tb_bridge() { # ns
	ip -n "$1" link add br0 type bridge && ip -n "$1" link set br0 up
}

# The whole build, run in a subshell (tb_net_up): the first failing command ends
# it; every namespace is named $TB_NS..., so tb_net_down finds them all after a
# partial build. (set -e would be ignored: callers test tb_net_up's status.)
tb_build() {
	local r h k ns tor
	x() { "$@" || { tb_log "failed: $*"; exit 1; }; }
	x tb_ns_add "${TB_NS}m"
	x tb_bridge "${TB_NS}m"
	# The one interface in the root namespace: the controller's side of management.
	x ip link add "$TB_ROOT_IF" type veth peer name ctl netns "${TB_NS}m"
	x ip addr add "$TB_CTL_ADDR/24" dev "$TB_ROOT_IF"
	x ip link set "$TB_ROOT_IF" up
	x ip -n "${TB_NS}m" link set ctl master br0 up
	x tb_ns_add "${TB_NS}s"
	x tb_bridge "${TB_NS}s"
	for ((r = 1; r <= TB_RACKS; r++)); do
		tor=${TB_NS}t$r
		x tb_ns_add "$tor"
		x tb_bridge "$tor"
		x ip -n "$tor" link add uplink type veth peer name "r$r" netns "${TB_NS}s"
		x ip -n "$tor" link set uplink master br0 up
		x ip -n "${TB_NS}s" link set "r$r" master br0 up
		x tb_shape "$tor" uplink "$TB_UPLINK"
		x tb_shape "${TB_NS}s" "r$r" "$TB_UPLINK"
		for ((h = 1; h <= TB_HOSTS; h++)); do
			k=$(((r - 1) * TB_HOSTS + h))
			ns=$(tb_node_ns $k)
			x tb_ns_add "$ns"
			x ip -n "$ns" link add eth0 type veth peer name "p$k" netns "$tor"
			x ip -n "$tor" link set "p$k" master br0 up
			x ip -n "$ns" addr add "$(tb_node_addr $k)/24" dev eth0
			x ip -n "$ns" link set eth0 up
			x ip -n "$ns" route replace "$TB_DATA_PREFIX.0/24" dev eth0 \
				src "$(tb_node_addr $k)" rto_min "$TB_RTO_MIN" congctl "$TB_TCP_CC"
			x tb_shape "$ns" eth0 "$TB_NIC"
			x tb_shape "$tor" "p$k" "$TB_NIC"
			x ip -n "$ns" link add mgmt0 type veth peer name "n$k" netns "${TB_NS}m"
			x ip -n "${TB_NS}m" link set "n$k" master br0 up
			x ip -n "$ns" addr add "$(tb_node_mgmt $k)/24" dev mgmt0
			x ip -n "$ns" link set mgmt0 up
		done
	done
}

# tb_net_up EMUJOB: build everything; after a failure tb_net_down cleans up.
tb_net_up() {
	local emujob=$1 lock=/run/lock/harmonics-testbed.lock t0 lockfd rc
	t0=$(date +%s.%N)
	for t in ip tc nsenter jq flock; do
		command -v $t >/dev/null || { tb_log "'$t' not found (scripts/deps.sh)"; return 1; }
	done
	if ! tb_rate_bps "$TB_NIC" >/dev/null || ! tb_rate_bps "$TB_UPLINK" >/dev/null; then
		tb_log "TB_NIC=$TB_NIC TB_UPLINK=$TB_UPLINK: accepted rates like 200mbit, 1gbit"
		return 1
	fi
	if [[ ! $TB_QUEUE_BYTES =~ ^[0-9]+$ ]] || ((TB_QUEUE_BYTES < 3000)); then
		tb_log "TB_QUEUE_BYTES=$TB_QUEUE_BYTES: accepted an integer >= 3000"
		return 1
	fi
	TB_NNODES=$((TB_RACKS * TB_HOSTS))
	((TB_RACKS >= 1 && TB_RACKS <= 16 && TB_HOSTS >= 1 && TB_NNODES <= 200)) ||
		{ tb_log "TB_RACKS=$TB_RACKS TB_HOSTS=$TB_HOSTS: accepted 1-16 racks, at most 200 hosts"; return 1; }
	tb_load_classes "$emujob" || return 1
	TB_NS=hmtb$$-
	TB_ROOT_IF=hmtb$$
	exec {lockfd}>"$lock"
	flock "$lockfd"
	if TB_MGMT_PREFIX=$(tb_pick_mgmt); then
		TB_CTL_ADDR=$TB_MGMT_PREFIX.254
		(tb_build)
		rc=$?
	else
		tb_log "no free 198.18.x.0/24 for the management network"
		rc=1
	fi
	flock -u "$lockfd"
	exec {lockfd}>&-
	((rc == 0)) || { tb_log "building the network failed"; return 1; }
	tb_log "network up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')s:" \
		"$TB_RACKS racks x $TB_HOSTS hosts, NIC $TB_NIC, uplink $TB_UPLINK," \
		"queues $TB_QUEUE_BYTES B, controller $TB_CTL_ADDR"
}

# Delete this testbed's namespaces (their veths go with them) and the root
# veth. Call only after every process inside them has stopped. Idempotent.
tb_net_down() {
	local ns
	[[ -n $TB_NS ]] || return 0
	for ns in $(ip netns list | awk -v p="$TB_NS" 'index($1, p) == 1 { print $1 }'); do
		ip netns del "$ns"
	done
	ip link del "$TB_ROOT_IF" 2>/dev/null
	return 0
}

# Bytes sent per class on a shaped link: "class bytes" lines (leaf 1:1K = class K).
tb_class_bytes() { # ns dev
	tc -n "$1" -s class show dev "$2" | awk '
		/^class htb 1:1[0-9] / { id = $3; sub("1:", "", id) }
		/^ Sent / && id != "" { print id - 10, $2; id = "" }'
}
