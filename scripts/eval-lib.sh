# Functions shared by scripts/evaluate.sh and scripts/evaluate-hard.sh (sourced;
# they expect $sim, $top and $policies). eval_tmp sets $tmp: a new folder
# removed at exit, or HM_EVAL_TMP kept (with HM_EVAL_REUSE=1 a second run reuses
# what the first finished, so a failed write of the page costs no rerun).
eval_tmp() {
	if [[ -n ${HM_EVAL_TMP:-} ]]; then
		tmp=$HM_EVAL_TMP
		mkdir -p "$tmp"
	else
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
	fi
}

# run NAME TOPO (trace:FILE|gen:SPEC) SEED JITTER BUDGET -> $tmp/NAME.csv, one
# simulator run per policy (a policy that exceeds the time limit loses only
# its own row); $tmp/NAME.cmd holds the command (for one policy: --policy P).
# TOPO is a --topo-gen spec or file:PATH (a topology.conf).
run() {
	local name=$1 topo=$2 work=$3 seed=$4 jitter=$5 budget=$6 wl tp cmd p t0
	if [[ $topo == file:* ]]; then
		tp=(--topology "${topo#file:}")
	else
		tp=(--topo-gen "$topo")
	fi
	if [[ $work == trace:* ]]; then
		wl=(--trace "${work#trace:}")
	else
		wl=(--generate "${work#gen:}")
	fi
	# HM_EVAL_REUSE=1 with HM_EVAL_TMP: keep a finished scenario's results.
	[[ ${HM_EVAL_REUSE:-0} == 1 && -s $tmp/$name.csv ]] && return 0
	: >"$tmp/$name.csv"
	for p in ${policies//,/ }; do
		cmd=("$sim" "${tp[@]}" "${wl[@]}" --policy "$p" --seed "$seed"
			--jitter "$jitter" --epoch 30 --budget "$budget" --bound --csv --quiet)
		echo "${cmd[*]}" | sed "s|$top/||g; s|--policy $p|--policy P|" >"$tmp/$name.cmd"
		t0=$(date +%s.%N)
		if ! timeout "$tmo" "${cmd[@]}" >"$tmp/$name.one" 2>"$tmp/$name.err"; then
			echo "evaluate: $name/$p did not finish in ${tmo}s (or failed): $(tail -1 "$tmp/$name.err")" >&2
			echo "TIMEOUT,$p" >>"$tmp/$name.csv"
			continue
		fi
		# The run's wall-clock time (the simulator's speed) as column 17.
		awk -F, -v w="$(echo "$(date +%s.%N) $t0" | awk '{ print $1 - $2 }')" \
			'/^policy,/ { next } { print $0 "," w }' "$tmp/$name.one" >>"$tmp/$name.csv"
	done
}

# Markdown table from one or more CSV files (averaged over files, per policy).
table() {
	awk -F, '
	/^TIMEOUT/ { timeout = timeout " " $2; next }
	/^policy,/ { next }
	NF >= 15 {
		p = $1; n[p]++; if (!(p in seen)) { order[++np] = p; seen[p] = 1 }
		done[p] += $3; jobs[p] += $2; jct[p] += $5; p99[p] += $6; comm[p] += $9
		util[p] += $11; sched[p] += $12; if ($13 > maxd[p]) maxd[p] = $13; cut[p] += $15
		bound[p] += $16; wall[p] += $17
	}
	END {
		print "| policy | completed | mean JCT (s) | p99 JCT (s) | bound (s) | share of possible gain | mean comm (s/iter) | GPU util | decision time total (s) | longest decision (s) | budget cut | simulation (s, wall) |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|"
		# Each run bounds itself (its own start times); the share is taken
		# against the lowest bound of the scenario.
		f = n["fair"] ? jct["fair"] / n["fair"] : 0
		for (i = 1; i <= np; i++) { b = bound[order[i]] / n[order[i]]; if (i == 1 || b < bmin) bmin = b }
		for (i = 1; i <= np; i++) {
			p = order[i]; k = n[p]; b = bound[p] / k
			share = (f > bmin) ? sprintf("%.0f%%", 100 * (f - jct[p] / k) / (f - bmin)) : "n/a"
			printf "| %s | %d/%d | %.1f | %.1f | %.1f | %s | %.4f | %.1f%% | %.4f | %.4f | %s | %.1f |\n", p,
			       done[p] / k, jobs[p] / k, jct[p] / k, p99[p] / k, b, share, comm[p] / k,
			       100 * util[p] / k, sched[p] / k, maxd[p], (cut[p] > 0 ? "yes" : "no"), wall[p] / k
		}
		if (timeout) print "\n(did not finish within the time limit, so missing here:" timeout ")"
	}' "$@"
}

# value POLICY COLUMN FILES... -> mean over files
value() {
	local pol=$1 col=$2
	shift 2
	awk -F, -v p="$pol" -v c="$col" '$1 == p { s += $c; k++ } END { if (k) printf "%.6f", s / k; else printf "nan" }' "$@"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "n/a"; else printf "%.4f", a / b }'; }

# spread TRACE -> the same jobs 10,000 s apart, so each runs alone (any policy
# does the same then: fair): a scenario's contention-free ceiling.
spread() {
	awk -F, 'BEGIN { OFS = "," } /^#/ { next }
	!h { if ($1 != "arrival_s") { print "evaluate: " FILENAME ": arrival_s is not the first column" > "/dev/stderr"; exit 1 }
	     h = 1; print; next }
	NF { sub(/^[^,]*/, 10000 * n++); print }' "$1"
}

# yesno RATIO LIMIT -> yes when RATIO <= LIMIT
yesno() { awk -v r="$1" -v m="$2" 'BEGIN { print (r != "n/a" && r <= m) ? "yes" : "no" }'; }
# lower RATIO -> "x.y% lower" (or higher)
lower() {
	awk -v r="$1" 'BEGIN { if (r == "n/a") print "n/a"; else if (r <= 1) printf "%.1f%% lower", 100 * (1 - r); else printf "%.1f%% higher", 100 * (r - 1) }'
}

# harmonics-bench --json in $tmp/bench.json -> $tmp/bench.csv, one row per
# result: policy,gpus,jobs,decision_s,cpu_s,peak_rss_bytes,finished (no JSON
# tool needed: one object per result).
bench_csv() {
	tr '{' '\n' <"$tmp/bench.json" | awk -F'[,:]' '/"policy"/ {
		for (i = 1; i <= NF; i++) { gsub(/[" }\]]/, "", $i) }
		for (i = 1; i < NF; i++) v[$i] = $(i + 1)
		printf "%s,%s,%s,%s,%s,%s,%s\n", v["policy"], v["gpus"], v["jobs"], v["decision_s"], v["cpu_s"], v["peak_rss_bytes"], v["finished"]
	}' >"$tmp/bench.csv"
}

# bval POLICY GPUS COLUMN: that column of $tmp/bench.csv, "nan" when absent.
bval() { awk -F, -v p="$1" -v g="$2" -v c="$3" '$1 == p && $2 == g { print $c; f = 1 } END { if (!f) print "nan" }' "$tmp/bench.csv"; }
