#!/usr/bin/env bash
# Installs the Debian packages Harmonics needs to build, test and demo, only
# those missing (fast when everything is there). Needs root for apt-get.
# Package sources come from the machine's own apt configuration.
set -euo pipefail

pkgs=(
	# build
	build-essential autoconf automake libtool pkg-config
	# required libraries
	libjson-c-dev libmunge-dev libhwloc-dev libcmocka-dev
	# plots (harmonics-sim --plot, harmonics-bench --plot)
	gnuplot-nox
	# a real Slurm on one machine: daemons, clients, plugin headers, accounting
	munge slurmctld slurmd slurm-client libslurm-dev slurmdbd mariadb-server
	# the exact Slurm source for sched/select plugins (apt-get source)
	dpkg-dev
	# network emulation tests (namespaces, veth, tc)
	iproute2
	# hwloc tools (lstopo) for recording node topologies
	hwloc
	# JSON checks in the CLI tests
	jq
	# the parser fuzzer (libFuzzer)
	clang
	# the releases tier: Slurm release sources unpacked, their symbols indexed
	xz-utils universal-ctags
	# the runtime tier: Slurm 26.05 built from source (scripts/slurm-install.sh),
	# its slurmdbd storing in MariaDB (accounting_storage/mysql needs mariadb_config)
	libmariadb-dev
	# Debian packages (make deb; scripts/check.sh packages)
	debhelper dh-python
	# promtool (check metrics) for the metrics tests; Debian 12 ships it only in the
	# server package (about 96 MB installed, its daemon is not started here)
	prometheus
	# real training: harmonics.torch's tests (make check) and PyTorch jobs;
	# Debian's PyTorch 1.13 for the CPU, with gloo
	python3-torch
	# Slurm's own regression tests (tests/slurm/regress.sh): expect for
	# testsuite/expect, pytest for testsuite/python
	expect python3-pytest
)

missing=()
for p in "${pkgs[@]}"; do
	[[ $p == \#* ]] && continue
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $st == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	echo "deps: all ${#pkgs[@]} packages present"
	exit 0
fi

if ((EUID != 0)); then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run as root (or install them) and retry" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# Daemons must not start on install (no init system here; tests start their own).
apt-get install -y -q "${missing[@]}" >/dev/null
echo "deps: done"
