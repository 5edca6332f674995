#!/usr/bin/env bash
# Writes the scenario files of docs/eval that are generated rather than hand
# written, deterministically (own integer generator, the same output with gawk
# or mawk on any machine):
#
#   scripts/eval-scenarios.sh mixed SEED     contended mixed-period testbed trace
#   scripts/eval-scenarios.sh clos847        topology.conf of the 847-host Clos
#   scripts/eval-scenarios.sh all            rewrite every file in docs/eval
#
# mixed: 24 single-GPU hosts in 4 racks of 6 (harmonics-sim --topo-gen
# racks=4,hosts=6,gpus=1,nic=50G,oversub=2 or 4), filled with jobs of 2-6 GPUs
# on random hosts across at least two racks (so their rings cross the ToR
# uplinks), each a catalogue model (random) on GPUs 4x faster than the
# catalogue's (compute x 0.25, same gradient), arriving 10 s apart, each 900 s
# alone. The model's name is the job's name; compute_s and comm_bytes carry the
# profile.
#
# clos847: the shape of the public Alibaba three-tier Clos: 847 hosts under 119
# ToRs (98 of 8 hosts, 21 of 3), 3 pods of 2 aggregation switches, 2 cores.
# Each ToR has one 100 Gbit/s uplink per aggregation switch of its pod: 4:1
# for 8 hosts with one 100 Gbit/s NIC (harmonics-sim --nic-gbps 100, 8 GPUs per
# host by default); above the ToRs the fabric is non-blocking.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

mixed() {
	local seed=$1
	awk -v seed="$seed" -v racks=4 -v hpr=6 -v scale=0.25 '
	# MINSTD: exact in double arithmetic, so every awk gives the same draws.
	function rnd(n) { x = (x * 48271) % 2147483647; return x % n }
	BEGIN {
		x = 12345 + seed * 7919
		for (i = 0; i < 10; i++)
			rnd(2)
		nm = split("resnet50 vgg16 vgg19 bert-base bert-large gpt2-s gpt2-m gpt2-l deepspeech2 yolov3 resnet18", models, " ")
		# Catalogue compute (s) and fp32 gradient (MB) of the same models (docs/models.md).
		split("0.439 1.6596 2.0986 0.683 2.1111 0.7699 2.2042 4.8058 0.801 0.535 0.108", comp, " ")
		split("102.4 553.6 574.8 440 1360 496 1420 3096 259.9 247.6 44.8", mb, " ")
		nh = racks * hpr
		for (h = 1; h <= nh; h++)
			free[h] = h
		nfree = nh
		printf "# Contended mixed-period testbed, seed %d (scripts/eval-scenarios.sh mixed %d):\n", seed, seed
		printf "# %d single-GPU hosts in %d racks of %d; jobs of 2-6 GPUs across racks,\n", nh, racks, hpr
		printf "# catalogue models with compute x %s, 10 s apart, 900 s each alone.\n", scale
		print "arrival_s,name,gpus,compute_s,comm_bytes,duration_s,nodes"
		for (j = 0; nfree >= 2; j++) {
			size = 2 + rnd(5)
			if (size > nfree)
				size = nfree
			if (nfree - size == 1) # never leave one host alone
				size++
			if (size > nfree)
				size = nfree
			for (k = 1; k <= size; k++) {
				p = 1 + rnd(nfree)
				pick[k] = free[p]
				free[p] = free[nfree--]
			}
			# Across racks: swap the last host for a free one of another rack.
			r1 = int((pick[1] - 1) / hpr)
			same = 1
			for (k = 2; k <= size; k++)
				if (int((pick[k] - 1) / hpr) != r1)
					same = 0
			if (same && nfree > 0) {
				for (p = 1; p <= nfree; p++)
					if (int((free[p] - 1) / hpr) != r1)
						break
				if (p <= nfree) {
					t = pick[size]; pick[size] = free[p]; free[p] = t
				}
			}
			for (a = 1; a <= size; a++)
				for (b = a + 1; b <= size; b++)
					if (pick[b] < pick[a]) {
						t = pick[a]; pick[a] = pick[b]; pick[b] = t
					}
			nodes = ""
			for (k = 1; k <= size; k++)
				nodes = nodes (k > 1 ? "," : "") sprintf("%04d", pick[k])
			mi = 1 + rnd(nm)
			printf "%d,%s-%d,%d,%.4f,%sMB,900,\"n[%s]\"\n", 10 * j, models[mi], j, size,
			       comp[mi] * scale, mb[mi], nodes
		}
	}'
}

clos847() {
	awk 'BEGIN {
		print "# The shape of the public Alibaba three-tier Clos (scripts/eval-scenarios.sh clos847):"
		print "# 847 hosts under 119 ToRs (98 of 8 hosts, 21 of 3), 3 pods of 2 aggregation"
		print "# switches, 2 cores. One 100 Gbit/s uplink per ToR and aggregation switch:"
		print "# 4:1 for 8 hosts of one 100 Gbit/s NIC; non-blocking above the ToRs."
		h = 0
		for (i = 0; i < 119; i++) {
			n = (i * 21) % 119 >= 98 ? 3 : 8
			printf "SwitchName=tor%03d Nodes=n[%04d-%04d] LinkSpeed=100\n", i + 1, h + 1, h + n
			h += n
			pod = int(i * 3 / 119)
			if (!(pod in first))
				first[pod] = i + 1
			last[pod] = i + 1
		}
		for (p = 0; p < 3; p++)
			for (a = 1; a <= 2; a++)
				printf "SwitchName=pod%d-agg%d Switches=tor[%03d-%03d] LinkSpeed=2000\n", p + 1, a,
				       first[p], last[p]
		for (c = 1; c <= 2; c++)
			printf "SwitchName=core%d Switches=pod[1-3]-agg[1-2]\n", c
		if (h != 847) {
			print "eval-scenarios: " h " hosts, expected 847" > "/dev/stderr"
			exit 1
		}
	}'
}

case ${1:-} in
mixed)
	[[ ${2:-} =~ ^[0-9]+$ ]] || { echo "usage: $0 mixed SEED (a number)" >&2; exit 2; }
	mixed "$2"
	;;
clos847) clos847 ;;
all)
	for s in 1 2 3 4 5; do
		mixed "$s" >"$top/docs/eval/mixed-$s.csv"
	done
	clos847 >"$top/docs/eval/clos847.conf"
	;;
*)
	echo "usage: $0 mixed SEED | clos847 | all" >&2
	exit 2
	;;
esac
