# shellcheck shell=bash
# One-machine Slurm cluster with the Harmonics plugins, for tests and the demo.
# Source this file, then: hm_cluster_up BUILD_DIR; ...; hm_cluster_down.
#
# Everything lives in a private directory ($HM_DIR) with its own ports: a private
# MariaDB + slurmdbd (sacct), slurmctld with sched/harmonics, topology/tree and
# select/harmonics_cons_tres, and 8 slurmd (multiple-slurmd, n[1-8], racks
# n[1-4] and n[5-8]) on 127.0.0.1. Daemons run in the foreground as children of
# this shell; teardown stops exactly the PIDs it started (and the slurmstepd
# processes whose environment names this cluster's slurm.conf).
#
# Exported after hm_cluster_up: SLURM_CONF, HM_DIR, HM_PORT (coordinator),
# HM_PLUGINS, HM_PROBE (socket probe), HM_CTL (harmonicsctl, may be empty).
# Optional input: HM_CONF_EXTRA (lines appended to harmonics.conf), HM_KEEP=1,
# HM_CTLD_NO_COORD=1 (slurmctld is up without the coordinator's port: a test of
# a disabled Harmonics), HM_HOST (where the coordinator runs: job_submit, the
# default, JobSubmitPlugins=harmonics with SchedulerType=sched/backfill, which
# heterogeneous jobs need; sched: SchedulerType=sched/harmonics), and
# HM_SLURMD_DAEMONIZE=1 (slurmd without -D: it daemonizes; its PID is read from
# its pid file), HM_CONFIGLESS=1 (SlurmctldParameters=enable_configless: each
# slurmd fetches slurm.conf with --conf-server, sees no harmonics.conf, and
# harmonics.so gets the coordinator's settings: plugstack.conf names it with
# host= and port=), HM_SLURM_EXTRA (lines added to slurm.conf). HM_HOST_TYPE
# (exported) is the host plugin's log prefix. HM_BEFORE_DAEMONS (a command run
# once the directory and configuration exist, before any daemon starts),
# HM_SLURMD_ENV_NODES and HM_SLURMD_ENV (environment for some nodes' slurmd:
# hm_slurmd_start).
# HM_SLURM_PREFIX: a Slurm installed into its own prefix (scripts/slurm-install.sh):
# its daemons and commands first in PATH, its plugin dir HM_SYS_PLUGINDIR; and
# HM_PLUGIN_BUILD: the build dir (configure --with-slurm-source=PREFIX/build)
# the four Slurm plugins come from, BUILD_DIR still giving the agent and tools.
# HM_INSTALLED=1: the installed packages' plugins, node agent and harmonicsctl
# (PluginDir=$HM_SYS_PLUGINDIR, the agent harmonics.so was built to load), not
# BUILD_DIR's (which still gives the test helpers); scripts/check.sh packages.
# Nodes in network namespaces (tests/testbed/net.sh makes them): HM_NODES and
# HM_RACK_HOSTS (nodes, and nodes per rack; default 8 and 4), HM_CTL_ADDR (where
# slurmctld and the coordinator listen, reachable from every namespace; default
# 127.0.0.1), HM_NODE_ADDR_PREFIX (node nK's address is PREFIX.K) and
# HM_NODE_NETNS_PREFIX (slurmd of nK runs in the namespace PREFIX + K).
# HM_NODE_CPUS: CPUs= of every node (default 4; SlurmdParameters=config_overrides
# lets slurmd accept more than the machine has).
# HM_GPUS=N: every node has N STAND-IN GPUs (no GPU here): GresTypes=gpu,
# Gres=gpu:N and a gres.conf with File=$HM_DIR/dev/gpu[0-N-1], links to
# /dev/null (slurmd wants character devices), so that Slurm tracks which GPU
# indexes each job gets (gres_bit_alloc).

HM_NODES=${HM_NODES:-8}
HM_RACK_HOSTS=${HM_RACK_HOSTS:-4}
HM_CTL_ADDR=${HM_CTL_ADDR:-127.0.0.1}
if [[ -n ${HM_SLURM_PREFIX:-} ]]; then
	[[ -x $HM_SLURM_PREFIX/sbin/slurmctld ]] || {
		echo "cluster: HM_SLURM_PREFIX=$HM_SLURM_PREFIX has no sbin/slurmctld (scripts/slurm-install.sh VERSION)" >&2
		return 1 2>/dev/null || exit 1
	}
	[[ :$PATH: == *":$HM_SLURM_PREFIX/sbin:"* ]] || export PATH=$HM_SLURM_PREFIX/bin:$HM_SLURM_PREFIX/sbin:$PATH
	HM_SYS_PLUGINDIR=${HM_SYS_PLUGINDIR:-$HM_SLURM_PREFIX/lib/slurm}
fi
HM_SYS_PLUGINDIR=${HM_SYS_PLUGINDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
HM_HOST=${HM_HOST:-job_submit}
case $HM_HOST in
job_submit) HM_HOST_TYPE=job_submit/harmonics HM_SCHED_LINES="SchedulerType=sched/backfill
JobSubmitPlugins=harmonics" ;;
sched) HM_HOST_TYPE=sched/harmonics HM_SCHED_LINES="SchedulerType=sched/harmonics" ;;
*) echo "cluster: HM_HOST=$HM_HOST (accepted: job_submit, sched)" >&2; return 1 2>/dev/null || exit 1 ;;
esac
export HM_HOST HM_HOST_TYPE
declare -A HM_PIDS=()

hm_log() { echo "cluster: $*" >&2; }

# A base port with the cluster's ports free above it: 4 of its own and one per
# node (at least 16), all below 32768 (where the kernel's ephemeral range starts).
hm_pick_ports() {
	local used base p ok span=$((HM_NODES + 4 < 16 ? 16 : HM_NODES + 4))
	used=$(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
	for _ in $(seq 50); do
		base=$((20000 + (RANDOM % ((12768 - span) / 16)) * 16))
		ok=1
		for p in $(seq "$base" $((base + span - 1))); do
			grep -qx "$p" <<<"$used" && { ok=0; break; }
		done
		((ok)) && { echo "$base"; return 0; }
	done
	return 1
}

# Wait up to $1 seconds for the command "${@:2}" to succeed.
hm_wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# Wait up to $1 seconds of wall clock for "${@:2}": for commands that take a
# while themselves (hm_wait_for counts tries of 0.1 s).
hm_wait_s() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		(($(date +%s) < end)) || return 1
		sleep 0.2
	done
}

# Seconds from $1 to $2 (default now), one decimal.
hm_since() { awk -v a="$1" -v b="${2:-$(date +%s.%N)}" 'BEGIN { printf "%.1f", b - a }'; }

hm_alive() { kill -0 "$1" 2>/dev/null; }

# Start "$@" in the background, logging to $HM_DIR/log/<name>.out; record its PID.
hm_spawn() {
	local name=$1
	shift
	"$@" >>"$HM_DIR/log/$name.out" 2>&1 &
	HM_PIDS[$name]=$!
}

hm_stop_pid() { # name [signal]
	local name=$1 pid=${HM_PIDS[$1]:-} i
	[[ -n $pid ]] || return 0
	if hm_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 150; i++)); do
			hm_alive "$pid" || break
			sleep 0.1
		done
		hm_alive "$pid" && { hm_log "$name (pid $pid) ignored SIGTERM; SIGKILL"; kill -KILL "$pid" 2>/dev/null; }
	fi
	wait "$pid" 2>/dev/null
	unset "HM_PIDS[$name]"
}

# slurmstepd processes of this cluster (their environment names our slurm.conf).
hm_stepd_pids() {
	local p
	for p in /proc/[0-9]*; do
		[[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
		tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "SLURM_CONF=$SLURM_CONF" && echo "${p#/proc/}"
	done
}

hm_write_conf() {
	local base=$1 host pd=$HM_DIR node_addr=127.0.0.1 i
	host=$(hostname -s)
	[[ -n ${HM_NODE_ADDR_PREFIX:-} ]] && node_addr="$HM_NODE_ADDR_PREFIX.[1-$HM_NODES]"
	HM_CTLD_PORT=$base
	HM_DBD_PORT=$((base + 1))
	HM_DB_PORT=$((base + 2))
	HM_PORT=$((base + 3))
	HM_NODE_PORT0=$((base + 4))
	local gres=
	if ((${HM_GPUS:-0} > 0)); then
		gres="Gres=gpu:$HM_GPUS"
		mkdir -p "$pd/dev"
		for ((i = 0; i < HM_GPUS; i++)); do ln -s /dev/null "$pd/dev/gpu$i"; done
		echo "NodeName=n[1-$HM_NODES] Name=gpu File=$pd/dev/gpu[0-$((HM_GPUS - 1))]" >"$pd/etc/gres.conf"
	fi
	cat >"$pd/etc/slurm.conf" <<-CONF
		# Generated by tests/slurm/cluster.sh: a one-machine test cluster.
		ClusterName=hmtest
		SlurmctldHost=$host($HM_CTL_ADDR)
		SlurmctldPort=$HM_CTLD_PORT
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		StateSaveLocation=$pd/state
		SlurmdSpoolDir=$pd/spool/%n
		SlurmctldPidFile=$pd/run/slurmctld.pid
		SlurmdPidFile=$pd/run/slurmd-%n.pid
		SlurmctldLogFile=$pd/log/slurmctld.log
		SlurmdLogFile=$pd/log/slurmd-%n.log
		SlurmctldDebug=verbose
		SlurmdDebug=info
		PluginDir=$([[ $HM_PLUGINS == "$HM_SYS_PLUGINDIR" ]] || echo "$HM_PLUGINS:")$HM_SYS_PLUGINDIR
		PlugStackConfig=$pd/etc/plugstack.conf
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		$HM_SCHED_LINES
		SelectType=select/harmonics_cons_tres
		SelectTypeParameters=CR_Core
		TopologyPlugin=topology/tree
		MpiDefault=none
		SlurmdParameters=config_overrides
		ReturnToService=2
		InactiveLimit=0
		KillWait=3
		MinJobAge=600
		AccountingStorageType=accounting_storage/slurmdbd
		AccountingStorageHost=127.0.0.1
		AccountingStoragePort=$HM_DBD_PORT
		AccountingStoreFlags=job_comment
		JobCompType=jobcomp/none
		${HM_SLURM_EXTRA:-}
		$([[ -n $gres ]] && echo GresTypes=gpu)
		$([[ ${HM_CONFIGLESS:-0} == 1 ]] && echo SlurmctldParameters=enable_configless)
		NodeName=n[1-$HM_NODES] NodeHostname=$host NodeAddr=$node_addr Port=$HM_NODE_PORT0-$((HM_NODE_PORT0 + HM_NODES - 1)) CPUs=${HM_NODE_CPUS:-4} RealMemory=1000 $gres State=UNKNOWN
		PartitionName=debug Nodes=n[1-$HM_NODES] Default=YES MaxTime=INFINITE State=UP
	CONF
	# A private Slurm: 24.05 on initializes a cgroup plugin in every slurmd
	# (autodetect); this cluster tracks processes without (proctrack/linuxproc).
	[[ -n ${HM_SLURM_PREFIX:-} ]] && echo "CgroupPlugin=disabled" >"$pd/etc/cgroup.conf"
	local r nracks=$(((HM_NODES + HM_RACK_HOSTS - 1) / HM_RACK_HOSTS))
	for ((r = 1; r <= nracks; r++)); do
		echo "SwitchName=rack$r Nodes=n[$(((r - 1) * HM_RACK_HOSTS + 1))-$((r * HM_RACK_HOSTS < HM_NODES ? r * HM_RACK_HOSTS : HM_NODES))]"
	done >"$pd/etc/topology.conf"
	echo "SwitchName=spine Switches=rack[1-$nracks]" >>"$pd/etc/topology.conf"
	cat >"$pd/etc/harmonics.conf" <<-CONF
		# Generated by tests/slurm/cluster.sh
		Policy=harmonics
		EpochLength=30s
		ListenAddress=$HM_CTL_ADDR
		ListenPort=$HM_PORT
		RequestTimeout=3s
		GpusPerNode=8
		LogLevel=verbose
		RunDir=$pd/run/harmonics
	CONF
	# Extra harmonics.conf lines from the caller (the demo narrows the uplinks);
	# a key given there replaces the default's line (a repeated key is an error).
	local line
	while IFS= read -r line; do
		[[ $line == *=* ]] || continue
		sed -i "/^${line%%=*}=/Id" "$pd/etc/harmonics.conf"
		printf '%s\n' "$line" >>"$pd/etc/harmonics.conf"
	done <<<"${HM_CONF_EXTRA:-}"
	hm_write_plugstack
	umask 077
	cat >"$pd/etc/slurmdbd.conf" <<-CONF
		AuthType=auth/munge
		DbdAddr=127.0.0.1
		DbdHost=$host
		DbdPort=$HM_DBD_PORT
		SlurmUser=root
		StorageType=accounting_storage/mysql
		StorageHost=127.0.0.1
		StoragePort=$HM_DB_PORT
		StorageUser=slurm
		StoragePass=hmtest
		StorageLoc=slurm_acct_db
		PidFile=$pd/run/slurmdbd.pid
		LogFile=$pd/log/slurmdbd.log
		DebugLevel=info
	CONF
	umask 022
	chmod 600 "$pd/etc/slurmdbd.conf"
}

# plugstack.conf; extra arguments are appended to the harmonics.so line (the node
# agent is this build's unless they name another: agent=PATH or agent=no).
hm_write_plugstack() {
	local agent="agent=$HM_PLUGINS/harmonics_agent.so"
	[[ ${HM_CONFIGLESS:-0} == 1 ]] && agent+=" host=$HM_CTL_ADDR port=$HM_PORT"
	[[ " $* " == *" agent="* ]] && agent=
	[[ ${HM_INSTALLED:-0} == 1 ]] && agent=
	echo "required $HM_PLUGINS/harmonics.so $agent $*" >"$HM_DIR/etc/plugstack.conf.tmp"
	mv "$HM_DIR/etc/plugstack.conf.tmp" "$HM_DIR/etc/plugstack.conf"
}

# Copy the built plugins (temp file + rename: never overwrite a loaded .so).
hm_install_plugins() {
	local build=${HM_PLUGIN_BUILD:-$1} f so
	mkdir -p "$HM_PLUGINS"
	for f in spank/harmonics sched/sched_harmonics select/select_harmonics_cons_tres \
		jobsubmit/job_submit_harmonics; do
		so=$build/src/plugins/$f.so
		[[ -f $so ]] || so=$build/src/plugins/$(dirname $f)/.libs/$(basename $f).so
		if [[ ! -f $so ]]; then
			hm_log "plugin $f.so not built in $build (configure --with-slurm-source=\$(scripts/slurm-source.sh))"
			return 1
		fi
		cp "$so" "$HM_PLUGINS/.tmp.so" && mv "$HM_PLUGINS/.tmp.so" "$HM_PLUGINS/$(basename $f).so"
	done
	# The node agent, loaded by harmonics.so in each slurmd (agent= in plugstack.conf).
	build=$1
	so=$build/src/agent/.libs/harmonics_agent.so
	[[ -f $so ]] || { hm_log "harmonics_agent.so not built in $build"; return 1; }
	cp "$so" "$HM_PLUGINS/.tmp.so" && mv "$HM_PLUGINS/.tmp.so" "$HM_PLUGINS/harmonics_agent.so"
}

hm_db_up() {
	local pd=$HM_DIR
	local cache=${HARMONICS_SLURM_CACHE:-/var/cache/harmonics} tmpl tmp ver
	# A pristine datadir is made once per MariaDB version and copied (saves seconds).
	ver=$(mariadbd --version 2>/dev/null | awk '{print $3}')
	tmpl=$cache/mariadb-datadir-${ver:-unknown}
	if [[ ! -d $tmpl ]]; then
		mkdir -p "$cache" && tmp=$(mktemp -d "$cache/.mariadb-datadir.XXXXXX") || return 1
		if ! mariadb-install-db --no-defaults --datadir="$tmp" --user=root \
			--auth-root-authentication-method=normal --skip-test-db >"$pd/log/mariadb-install.out" 2>&1; then
			hm_log "mariadb-install-db failed (log: $pd/log/mariadb-install.out)"
			rm -rf "$tmp"
			return 1
		fi
		mv -T "$tmp" "$tmpl" 2>/dev/null || rm -rf "$tmp" # another run made it first
	fi
	rmdir "$pd/db" && cp -a "$tmpl" "$pd/db" || { hm_log "cannot copy $tmpl"; return 1; }
	hm_spawn mariadbd mariadbd --no-defaults --datadir="$pd/db" --socket="$pd/run/mysql.sock" \
		--port="$HM_DB_PORT" --bind-address=127.0.0.1 --user=root --pid-file="$pd/run/mariadbd.pid" \
		--log-error="$pd/log/mariadb.log" --skip-log-bin --innodb-buffer-pool-size=32M
	hm_wait_for 30 mariadb-admin --no-defaults -S "$pd/run/mysql.sock" -u root ping ||
		{ hm_log "MariaDB did not start (log: $pd/log/mariadb.log)"; return 1; }
	mariadb --no-defaults -S "$pd/run/mysql.sock" -u root -e \
		"CREATE DATABASE slurm_acct_db; CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'hmtest';
		 GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;" ||
		{ hm_log "cannot create the accounting database"; return 1; }
	# slurmdbd reads slurmdbd.conf beside SLURM_CONF.
	hm_spawn slurmdbd slurmdbd -D
	hm_wait_for 30 bash -c "ss -Htln | grep -q ':$HM_DBD_PORT\b'" ||
		{ hm_log "slurmdbd did not listen on $HM_DBD_PORT (log: $pd/log/slurmdbd.log)"; return 1; }
}

hm_ctld_start() {
	hm_spawn slurmctld slurmctld -D -f "$SLURM_CONF"
	hm_wait_for 30 scontrol ping ||
		{ hm_log "slurmctld did not answer (log: $HM_DIR/log/slurmctld.log)"; tail -n 20 "$HM_DIR/log/slurmctld.log" >&2; return 1; }
	[[ ${HM_CTLD_NO_COORD:-0} == 1 ]] && return 0
	hm_wait_for 10 bash -c "ss -Htln | grep -q ':$HM_PORT\b'" ||
		{ hm_log "coordinator not listening on $HM_PORT"; return 1; }
}

hm_ctld_stop() { hm_stop_pid slurmctld; }

# HM_SLURMD_ARGV: slurmd -N NODE, its configuration from slurm.conf, or from
# slurmctld (HM_CONFIGLESS=1: nothing of this directory's etc/ in its environment).
hm_slurmd_argv() {
	if [[ ${HM_CONFIGLESS:-0} == 1 ]]; then
		HM_SLURMD_ARGV=(env -u SLURM_CONF -u HARMONICS_CONF slurmd -N "$1" --conf-server "$HM_CTL_ADDR:$HM_CTLD_PORT")
	else
		HM_SLURMD_ARGV=(slurmd -N "$1" -f "$SLURM_CONF")
	fi
}

# slurmd -N NODE without -D: it forks into the background; its PID from the pid file.
hm_slurmd_daemon() {
	local node=$1 pidf=$HM_DIR/run/slurmd-$1.pid
	rm -f "$pidf"
	hm_slurmd_argv "$node"
	"${HM_SLURMD_ARGV[@]}" >>"$HM_DIR/log/slurmd-$node.out" 2>&1 ||
		{ hm_log "slurmd -N $node did not daemonize (log: $HM_DIR/log/slurmd-$node.log)"; return 1; }
	hm_wait_for 10 test -s "$pidf" || { hm_log "slurmd -N $node wrote no $pidf"; return 1; }
	HM_PIDS[slurmd-$node]=$(cat "$pidf")
}

# slurmd of node nK (daemonized with HM_SLURMD_DAEMONIZE=1), in its namespace when
# there are some; the nodes named in HM_SLURMD_ENV_NODES (e.g. "n4") get the
# assignments HM_SLURMD_ENV (e.g. "LD_PRELOAD=... VAR=...") in their environment
# (the fault tier's clock shim).
hm_slurmd_start() { # K
	local i=$1 pre=() envs=()
	if [[ ${HM_SLURMD_DAEMONIZE:-0} == 1 ]]; then
		hm_slurmd_daemon "n$i"
		return
	fi
	# nsenter, not `ip netns exec`: that remounts /sys and slurmd fails on cgroups.
	[[ -n ${HM_NODE_NETNS_PREFIX:-} ]] && pre=(nsenter --net="/run/netns/$HM_NODE_NETNS_PREFIX$i")
	# shellcheck disable=SC2206
	[[ " ${HM_SLURMD_ENV_NODES:-} " == *" n$i "* ]] && envs=(env ${HM_SLURMD_ENV:-})
	hm_slurmd_argv "n$i"
	hm_spawn "slurmd-n$i" "${pre[@]}" "${envs[@]}" "${HM_SLURMD_ARGV[@]}" -D
}

hm_nodes_idle() {
	local n
	n=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
	((n == HM_NODES))
}

# hm_cluster_up BUILD_DIR [--no-db]
hm_cluster_up() {
	local build=$1 nodb=${2:-} base i t0 t_db t_ctld t_nodes scripts_dir
	t0=$(date +%s.%N)
	command -v slurmctld >/dev/null || { hm_log "slurmctld not installed (scripts/deps.sh)"; return 1; }
	scripts_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)
	"$scripts_dir/munge-up.sh" || return 1
	HM_DIR=$(mktemp -d /tmp/hm-slurm.XXXXXX)
	HM_PLUGINS=$HM_DIR/plugins
	mkdir -p "$HM_DIR"/{etc,state,spool,run,log,db,out}
	chmod 755 "$HM_DIR" "$HM_DIR/out"
	HM_PROBE=$build/tests/slurm/hm_sockprobe
	HM_CTL=$build/src/tools/harmonicsctl
	if [[ ${HM_INSTALLED:-0} == 1 ]]; then
		HM_PLUGINS=$HM_SYS_PLUGINDIR HM_CTL=$(command -v harmonicsctl)
		[[ -f $HM_PLUGINS/sched_harmonics.so ]] || { hm_log "HM_INSTALLED=1: no sched_harmonics.so in $HM_PLUGINS"; return 1; }
	else
		hm_install_plugins "$build" || return 1
	fi
	[[ -x $HM_CTL ]] || HM_CTL=
	base=$(hm_pick_ports) || { hm_log "no free port range"; return 1; }
	export SLURM_CONF=$HM_DIR/etc/slurm.conf HARMONICS_CONF=$HM_DIR/etc/harmonics.conf
	export HM_DIR HM_PORT HM_PLUGINS HM_PROBE HM_CTL
	hm_write_conf "$base"
	# HM_BEFORE_DAEMONS: a command run now (the fault tier mounts small tmpfs here).
	[[ -z ${HM_BEFORE_DAEMONS:-} ]] || eval "$HM_BEFORE_DAEMONS" || return 1
	t_db=$(date +%s.%N)
	if [[ $nodb == --no-db ]]; then
		sed -i 's|^AccountingStorageType=.*|AccountingStorageType=accounting_storage/none|' "$SLURM_CONF"
	else
		hm_db_up || return 1
	fi
	t_ctld=$(date +%s.%N)
	hm_ctld_start || return 1
	t_nodes=$(date +%s.%N)
	for ((i = 1; i <= HM_NODES; i++)); do
		hm_slurmd_start "$i" || return 1
	done
	hm_wait_s $((60 + HM_NODES / 8)) hm_nodes_idle || { hm_log "nodes not idle:"; sinfo >&2; return 1; }
	HM_UP_S=$(hm_since "$t0")
	hm_log "up in ${HM_UP_S}s (MariaDB+slurmdbd $(hm_since "$t_db" "$t_ctld")s, slurmctld" \
		"$(hm_since "$t_ctld" "$t_nodes")s, $HM_NODES slurmd idle $(hm_since "$t_nodes")s): $HM_DIR" \
		"(slurmctld :$HM_CTLD_PORT, coordinator :$HM_PORT)"
}

# Stop everything this shell started, newest first. Safe to call twice.
hm_cluster_down() {
	local name p i
	[[ -n ${HM_DIR:-} ]] || return 0
	if [[ -n ${HM_PIDS[slurmctld]:-} ]] && hm_alive "${HM_PIDS[slurmctld]}"; then
		scancel --full --quiet --user=root 2>/dev/null || true
		hm_wait_for 10 bash -c '[[ -z $(squeue -h -t R,CG -o %i 2>/dev/null) ]]' || true
	fi
	# Every slurmd is told at once, then waited for (one by one takes minutes
	# with a thousand nodes).
	for name in "${!HM_PIDS[@]}"; do
		[[ $name == slurmd-* ]] && kill -TERM "${HM_PIDS[$name]}" 2>/dev/null
	done
	for name in "${!HM_PIDS[@]}"; do
		[[ $name == slurmd-* ]] && hm_stop_pid "$name"
	done
	for p in $(hm_stepd_pids); do
		hm_log "stray slurmstepd $p: SIGKILL"
		kill -KILL "$p" 2>/dev/null
	done
	for name in slurmctld slurmdbd mariadbd; do
		hm_stop_pid "$name"
	done
	for name in "${!HM_PIDS[@]}"; do hm_stop_pid "$name"; done
	if [[ ${HM_KEEP:-0} == 1 ]]; then
		hm_log "kept $HM_DIR"
	else
		rm -rf "$HM_DIR"
	fi
	HM_DIR=
}
