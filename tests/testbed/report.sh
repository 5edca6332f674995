# shellcheck shell=bash
# The testbed's summary: medians over repetitions of every case's measured and
# simulated figures, the simulator's error, and how noisy the runs were.
# Source this file. Input: result.json files (tests/testbed/sim.sh).
#   tb_summary FILES...      the --json document on stdout:
#     {"scenarios": [{"name", "policies": [{"name", "jobs", "measured_mean_iter_s",
#      "simulated_mean_iter_s", "measured_mean_comm_s", "simulated_mean_comm_s",
#      "measured_mean_jct_s", "alone_mean_iter_s", "measured_slowdown", "sim_error"}]}]}
#      ("jobs": per job, the same medians; sim_error: simulated / measured - 1 of
#      the mean iteration; alone_mean_iter_s: each job alone on the same links in
#      the simulator, from the compute it measured in that case: no policy goes
#      below it; measured_slowdown: measured / alone, what contention cost, free
#      of how fast the shared CPU happened to compute in that case)
#   tb_noise FILES...        per case: repetitions, spread of the measured mean
#                            iteration (CV and max-min over the median), and the
#                            simulated one with launch-time assignments only
#   tb_table SUMMARY NOISE   the table for people
#   tb_plot SUMMARY FILE     measured vs simulated mean iteration (gnuplot; .svg or .png)

TB_JQ_DEFS='
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def mean: if length == 0 then null else add / length end;
def case_figs: {
	mi: (.jobs | map(.measured.mean_iter_s) | mean),
	si: (.jobs | map(.simulated.mean_iter_s) | mean),
	mc: (.jobs | map(.measured.mean_comm_s) | mean),
	sc: (.jobs | map(.simulated.mean_comm_s) | mean),
	mj: (.jobs | map(.measured.jct_s) | mean),
	li: (.jobs | map(.simulated_launch_only.mean_iter_s) | mean),
	ai: (.jobs | map(.simulated.alone_iter_s) | mean),
	sd: (.jobs | map(if .simulated.alone_iter_s > 0 then .measured.mean_iter_s / .simulated.alone_iter_s
		else null end) | if any(. == null) then null else mean end) };
def order: {"pairs": 0, "mixed": 1, "arrival": 2, "torch-pairs": 3, "torch-arrival": 4}[.] // 9;
def porder: {"fair": 0, "crux": 1, "cassini": 2, "harmonics": 3, "optimal": 4}[.] // 9;
'

tb_summary() {
	jq -s "$TB_JQ_DEFS"'
		group_by(.scenario) | sort_by(.[0].scenario | order) | map({
			name: .[0].scenario,
			policies: (group_by(.policy) | sort_by(.[0].policy | porder) | map(
				(map(case_figs)) as $f | {
				name: .[0].policy,
				jobs: ([.[].jobs[]] | group_by(.name) | map({
					name: .[0].name,
					measured_mean_iter_s: (map(.measured.mean_iter_s) | median),
					simulated_mean_iter_s: (map(.simulated.mean_iter_s) | median),
					measured_mean_comm_s: (map(.measured.mean_comm_s) | median),
					simulated_mean_comm_s: (map(.simulated.mean_comm_s) | median),
					measured_jct_s: (map(.measured.jct_s) | median) })),
				measured_mean_iter_s: ($f | map(.mi) | median),
				simulated_mean_iter_s: ($f | map(.si) | median),
				measured_mean_comm_s: ($f | map(.mc) | median),
				simulated_mean_comm_s: ($f | map(.sc) | median),
				measured_mean_jct_s: ($f | map(.mj) | median),
				alone_mean_iter_s: ($f | map(.ai) | median),
				measured_slowdown: ($f | map(.sd) | if any(. == null) then null else median end) } |
				.sim_error = (if .measured_mean_iter_s > 0 and .simulated_mean_iter_s != null
					then .simulated_mean_iter_s / .measured_mean_iter_s - 1 else null end)))
		}) | {scenarios: .}' "$@"
}

tb_noise() {
	jq -s "$TB_JQ_DEFS"'
		group_by(.scenario + "/" + .policy) | map((map(case_figs.mi)) as $v |
			($v | median) as $m | ($v | mean) as $a | {
			case: (.[0].scenario + "/" + .[0].policy), reps: ($v | length),
			cv: (($v | map((. - $a) * (. - $a)) | mean | sqrt) / $a),
			range: ((($v | max) - ($v | min)) / $m),
			launch_only_iter_s: (map(case_figs.li) | median),
			jitter_cv: (map(.sim_jitter_cv) | mean),
			overshoot_ms: ([.[].jobs[] | select(.model | startswith("torch-") | not) |
				(.measured.rank0_compute_s - .compute_s) * 1e3] | median) })' "$@"
}

# Table: per scenario and policy, measured and simulated figures, the error, the
# gain against fair, and the spread over repetitions.
tb_table() { # summary.json noise.json
	jq -r --slurpfile n "$2" "$TB_JQ_DEFS"'
		($n[0] | map({(.case): .}) | add) as $noise |
		def f3: if . == null then "-" else (. * 1000 | round / 1000 | tostring) end;
		def pct: if . == null then "-" else ((. * 1000 | round) / 10 | tostring) + "%" end;
		"| scenario | policy | iter measured (s) | iter simulated (s) | sim error | within 10% | comm measured (s) | comm simulated (s) | JCT measured (s) | iter vs fair (measured) | iter alone, simulated (s) | slowdown: measured / alone | spread over reps (CV) | iter simulated, launch-time assignments only (s) |",
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
		(.scenarios[] | .name as $s | ([.policies[] | select(.name == "fair") | .measured_mean_iter_s] | first) as $fair |
		 .policies[] | $noise[$s + "/" + .name] as $z |
		 "| \($s) | \(.name) | \(.measured_mean_iter_s | f3) | \(.simulated_mean_iter_s | f3) | " +
		 "\((.simulated_mean_iter_s / .measured_mean_iter_s - 1) | pct) | " +
		 "\(if ((.simulated_mean_iter_s / .measured_mean_iter_s - 1) | fabs) <= 0.1 then "yes" else "no" end) | " +
		 "\(.measured_mean_comm_s | f3) | \(.simulated_mean_comm_s | f3) | \(.measured_mean_jct_s | f3) | " +
		 "\(if $fair then (.measured_mean_iter_s / $fair - 1) | pct else "-" end) | " +
		 "\(.alone_mean_iter_s | f3) | \(.measured_slowdown | f3) | " +
		 "\($z.range | pct) (\($z.cv | pct), \($z.reps) reps) | \($z.launch_only_iter_s | f3) |")' "$1"
}

tb_plot() { # summary.json FILE
	local data term
	command -v gnuplot >/dev/null || { tb_log "gnuplot not installed: no plot"; return 1; }
	case $2 in
	*.svg) term="svg size 900,420 dynamic font 'sans,11'" ;;
	*.png) term="pngcairo size 900,420 font 'sans,10'" ;;
	*) tb_log "--plot $2: accepted FILE.svg or FILE.png"; return 1 ;;
	esac
	data=$(mktemp /tmp/hm-tbplot.XXXXXX)
	jq -r '.scenarios[] | .name as $s | .policies[] |
		"\($s)/\(.name) \(.measured_mean_iter_s) \(.simulated_mean_iter_s)"' "$1" >"$data"
	gnuplot <<-EOF
		set terminal $term
		set output '$2'
		set title 'Testbed: mean iteration time per scenario and policy, measured (real Slurm jobs) vs simulated'
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.8 border -1
		set ylabel 'mean iteration (s)'
		set yrange [0:*]
		set xtics rotate by -35 font ',9'
		set key top left
		set grid ytics
		plot '$data' using 2:xtic(1) title 'measured' lc rgb '#3465a4', '' using 3 title 'simulated' lc rgb '#f57900'
	EOF
	local rc=$?
	rm -f "$data"
	return $rc
}
