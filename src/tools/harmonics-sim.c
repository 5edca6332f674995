/*
 * harmonics-sim - run one scenario (topology + workload) under several
 * scheduling policies side by side and compare training time.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "hm_job.h"
#include "hm_parse.h"
#include "hm_policy.h"
#include "hm_sim.h"
#include "hm_topo.h"
#include "sim_report.h"

#include "sim_default.h"

/* Example for --help only: the default workload is the built-in testbed trace. */
#define EXAMPLE_WORKLOAD_GEN "jobs=40,arrival=poisson:30s,gpus=mix,models=all,iters=2000"

enum { FMT_TABLE, FMT_JSON, FMT_CSV };

/* Exit codes (--help, harmonics-sim(1)). */
enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

typedef struct {
	const char *topology, *topo_gen, *csv_columns, *trace, *generate, *policies, *plot;
	double nic_bps, uplink_bps;
	double launch_window_s; /* < 0: every decision reaches every running job */
	bool declared_only;	/* policies see no measured times */
	unsigned long seed;
	int fmt;
	bool per_job, quiet, bound;
	const char *placements; /* --placement LIST, NULL = the default placement */
	hm_policy_cfg_t pcfg;
	hm_sim_opts_t sopts;
} sim_args_t;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: harmonics-sim [OPTIONS]\n"
		"Simulate training jobs on a cluster under several communication-scheduling\n"
		"policies side by side. Without --topology/--topo-gen it runs on a built-in\n"
		"testbed (%s) and without --trace/--generate a built-in trace\n"
		"of 12 jobs that contend for NICs and uplinks (docs/evaluation.md).\n\n"
		"Scenario:\n"
		"  --topology FILE       Slurm topology.conf or a host CSV (format recognised\n"
		"                        from the content)\n"
		"  --csv-columns MAP     CSV column names, e.g. host=ip,tor=ASW,agg=PSW,core=DSW\n"
		"                        (default host,tor,agg,core)\n"
		"  --topo-gen SPEC       generate a topology, e.g. racks=4,hosts=8,gpus=8,oversub=2\n"
		"  --nic-gbps X          NIC speed where the topology file gives none (default %g)\n"
		"  --uplink-gbps Y       switch uplink speed where the file gives none (default %g)\n"
		"  --trace FILE          workload CSV (arrival_s, gpus, model | compute_s+comm_bytes,\n"
		"                        iterations | duration_s, optional name, nodes, overlap)\n"
		"  --generate SPEC       seeded workload generator, e.g. %s\n"
		"Policies:\n"
		"  --policy LIST         comma-separated among %s, or 'all' (default all)\n"
		"  --epoch S             re-decision epoch for policies with epochs (default 30s)\n"
		"  --budget S            time budget of one optimal decision (default 10s)\n"
		"  --budget-evals N      also cut an optimal decision after N candidate\n"
		"                        evaluations (default 0: no cap); unlike --budget the\n"
		"                        result then does not depend on the machine's load\n"
		"  --prio-levels N       hardware priority classes (default 8)\n"
		"  --threads N           worker threads inside a policy (default 1)\n"
		"  --placement LIST      where arriving jobs go, comma-separated among packed\n"
		"                        (cons_tres + topology/tree), spread (a fragmented\n"
		"                        cluster), harmonics (select/harmonics_cons_tres' score),\n"
		"                        cassini (its compatibility among the same candidates),\n"
		"                        or 'all'; each policy runs under each (rows named\n"
		"                        policy/placement). Default: packed, and a policy with a\n"
		"                        placement rule of its own (cassini) uses it\n"
		"Simulation:\n"
		"  --seed N              seed for the generator and jitter (default 1)\n"
		"  --jitter CV           per-iteration compute jitter, coefficient of variation\n"
		"                        (default 0.02)\n"
		"  --horizon S           stop after S simulated seconds (default: all jobs finish)\n"
		"  --launch-window S     decisions reach a job only within S seconds of its start,\n"
		"                        as assignments given to job steps at launch (default:\n"
		"                        every decision reaches every running job)\n"
		"  --update-lead S       a changed decision reaches a running job S seconds after\n"
		"                        it is made, as the live loop's UpdateLead (default 0:\n"
		"                        at once)\n"
		"  --declared-only       policies see only the jobs' declared profiles, no measured\n"
		"                        iteration times (as the Slurm coordinator before its\n"
		"                        measurements flow back)\n"
		"Output:\n"
		"  --json | --csv        machine-readable output instead of the table\n"
		"  --per-job             include one row per job\n"
		"  --bound               a lower bound on mean JCT from link capacities per\n"
		"                        run, and each policy's share of the possible gain\n"
		"                        over fair, (fair - policy) / (fair - bound)\n"
		"  --plot FILE.svg|png   iteration-time CDFs and link utilisation (gnuplot)\n"
		"  --sample S            link-utilisation sampling period for --plot (default 5s)\n"
		"  -q, --quiet           no progress bar\n"
		"  -h, --help            this help;  -V, --version  version\n\n"
		"Exit status: 0 success; 1 an input (topology, workload, --topo-gen or\n"
		"--generate spec) could not be loaded, or a run or the plot failed; 2 a bad\n"
		"option or option value.\n",
		sim_default_topo_gen, HM_DEFAULT_NIC_BPS / 1e9, HM_DEFAULT_UPLINK_BPS / 1e9,
		EXAMPLE_WORKLOAD_GEN, hm_policy_names());
}

enum {
	OPT_TOPOLOGY = 256,
	OPT_TOPO_GEN,
	OPT_CSV_COLUMNS,
	OPT_NIC,
	OPT_UPLINK,
	OPT_TRACE,
	OPT_GENERATE,
	OPT_POLICY,
	OPT_EPOCH,
	OPT_BUDGET,
	OPT_BUDGET_EVALS,
	OPT_PRIO,
	OPT_THREADS,
	OPT_PLACEMENT,
	OPT_SEED,
	OPT_JITTER,
	OPT_HORIZON,
	OPT_LAUNCH_WINDOW,
	OPT_DECLARED_ONLY,
	OPT_UPDATE_LEAD,
	OPT_JSON,
	OPT_CSV,
	OPT_PER_JOB,
	OPT_BOUND,
	OPT_PLOT,
	OPT_SAMPLE,
};

static const struct option long_opts[] = {
	{"topology", required_argument, NULL, OPT_TOPOLOGY},
	{"topo-gen", required_argument, NULL, OPT_TOPO_GEN},
	{"csv-columns", required_argument, NULL, OPT_CSV_COLUMNS},
	{"nic-gbps", required_argument, NULL, OPT_NIC},
	{"uplink-gbps", required_argument, NULL, OPT_UPLINK},
	{"trace", required_argument, NULL, OPT_TRACE},
	{"generate", required_argument, NULL, OPT_GENERATE},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"epoch", required_argument, NULL, OPT_EPOCH},
	{"budget", required_argument, NULL, OPT_BUDGET},
	{"budget-evals", required_argument, NULL, OPT_BUDGET_EVALS},
	{"prio-levels", required_argument, NULL, OPT_PRIO},
	{"threads", required_argument, NULL, OPT_THREADS},
	{"placement", required_argument, NULL, OPT_PLACEMENT},
	{"seed", required_argument, NULL, OPT_SEED},
	{"jitter", required_argument, NULL, OPT_JITTER},
	{"horizon", required_argument, NULL, OPT_HORIZON},
	{"launch-window", required_argument, NULL, OPT_LAUNCH_WINDOW},
	{"declared-only", no_argument, NULL, OPT_DECLARED_ONLY},
	{"update-lead", required_argument, NULL, OPT_UPDATE_LEAD},
	{"json", no_argument, NULL, OPT_JSON},
	{"csv", no_argument, NULL, OPT_CSV},
	{"per-job", no_argument, NULL, OPT_PER_JOB},
	{"bound", no_argument, NULL, OPT_BOUND},
	{"plot", required_argument, NULL, OPT_PLOT},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* Returns 0 to go on, 1 to exit successfully (help/version), -1 on a bad option. */
static int parse_args(int argc, char **argv, sim_args_t *a, hm_err_t *err)
{
	long l;
	int c;

	memset(a, 0, sizeof(*a));
	a->policies = "all";
	a->seed = 1;
	a->launch_window_s = -1;
	hm_policy_cfg_defaults(&a->pcfg);
	a->pcfg.epoch_s = 30;
	hm_sim_opts_defaults(&a->sopts);
	a->sopts.jitter_cv = 0.02;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "qhV", long_opts, NULL)) != -1) {
		hm_rc_t rc = HM_OK;

		switch (c) {
		case OPT_TOPOLOGY: a->topology = optarg; break;
		case OPT_TOPO_GEN: a->topo_gen = optarg; break;
		case OPT_CSV_COLUMNS: a->csv_columns = optarg; break;
		case OPT_NIC:
			rc = hm_parse_double(optarg, 0.001, 1e6, &a->nic_bps, "--nic-gbps", err);
			a->nic_bps *= 1e9;
			break;
		case OPT_UPLINK:
			rc = hm_parse_double(optarg, 0.001, 1e6, &a->uplink_bps, "--uplink-gbps", err);
			a->uplink_bps *= 1e9;
			break;
		case OPT_TRACE: a->trace = optarg; break;
		case OPT_GENERATE: a->generate = optarg; break;
		case OPT_POLICY: a->policies = optarg; break;
		case OPT_EPOCH:
			rc = hm_parse_duration_s(optarg, 0, 1e6, &a->pcfg.epoch_s, "--epoch", err);
			break;
		case OPT_BUDGET:
			rc = hm_parse_duration_s(optarg, 0.001, 1e5, &a->pcfg.budget_s, "--budget", err);
			break;
		case OPT_BUDGET_EVALS:
			rc = hm_parse_long(optarg, 0, 1000000000L, &a->pcfg.budget_evals, "--budget-evals",
					   err);
			break;
		case OPT_PRIO:
			rc = hm_parse_long(optarg, 1, HM_PRIO_LEVELS_MAX, &l, "--prio-levels", err);
			a->pcfg.prio_levels = (int)l;
			break;
		case OPT_THREADS:
			rc = hm_parse_long(optarg, 1, 1024, &l, "--threads", err);
			a->pcfg.threads = (int)l;
			break;
		case OPT_PLACEMENT: a->placements = optarg; break;
		case OPT_SEED:
			rc = hm_parse_long(optarg, 0, 0x7fffffffL, &l, "--seed", err);
			a->seed = (unsigned long)l;
			break;
		case OPT_JITTER:
			rc = hm_parse_double(optarg, 0, 1, &a->sopts.jitter_cv, "--jitter", err);
			break;
		case OPT_HORIZON:
			rc = hm_parse_duration_s(optarg, 0, 1e9, &a->sopts.horizon_s, "--horizon", err);
			break;
		case OPT_LAUNCH_WINDOW:
			rc = hm_parse_duration_s(optarg, 0, 1e6, &a->launch_window_s, "--launch-window",
						 err);
			break;
		case OPT_DECLARED_ONLY: a->declared_only = true; break;
		case OPT_UPDATE_LEAD:
			rc = hm_parse_duration_s(optarg, 0, 600, &a->sopts.update_lead_s,
						 "--update-lead", err);
			break;
		case OPT_JSON: a->fmt = FMT_JSON; break;
		case OPT_CSV: a->fmt = FMT_CSV; break;
		case OPT_PER_JOB: a->per_job = true; break;
		case OPT_BOUND: a->bound = true; break;
		case OPT_PLOT: a->plot = optarg; break;
		case OPT_SAMPLE:
			rc = hm_parse_duration_s(optarg, 0.001, 1e6, &a->sopts.sample_s, "--sample", err);
			break;
		case 'q': a->quiet = true; break;
		case 'h': usage(stdout); return 1;
		case 'V': printf("harmonics-sim %s\n", PACKAGE_VERSION); return 1;
		case ':':
			hm_err_set(err, HM_ERR_INVAL, "option %s needs a value", argv[optind - 1]);
			return -1;
		default:
			hm_err_set(err, HM_ERR_INVAL, "unknown option '%s' (see --help)",
				   argv[optind - 1]);
			return -1;
		}
		if (rc != HM_OK)
			return -1;
	}
	if (optind < argc) {
		hm_err_set(err, HM_ERR_INVAL, "unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}
	if (a->topology && a->topo_gen) {
		hm_err_set(err, HM_ERR_INVAL, "--topology and --topo-gen exclude each other");
		return -1;
	}
	if (a->trace && a->generate) {
		hm_err_set(err, HM_ERR_INVAL, "--trace and --generate exclude each other");
		return -1;
	}
	if (a->csv_columns && !a->topology) {
		hm_err_set(err, HM_ERR_INVAL, "--csv-columns applies to --topology FILE only");
		return -1;
	}
	if (a->plot && a->sopts.sample_s <= 0)
		a->sopts.sample_s = 5.0;
	a->sopts.seed = a->seed;
	a->pcfg.seed = a->seed;
	a->pcfg.jitter_cv = a->sopts.jitter_cv; /* optimal judges under the simulated model */
	return 0;
}

static hm_rc_t load_topology(const sim_args_t *a, hm_topo_t **topo, hm_err_t *err)
{
	hm_topo_opts_t opts = {.nic_bps = a->nic_bps, .uplink_bps = a->uplink_bps};
	char *cols = NULL;
	hm_rc_t rc;

	if (a->topology) {
		if (a->csv_columns) {
			if (!(cols = strdup(a->csv_columns)))
				return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
			rc = hm_topo_csv_columns_parse(cols, &opts, err);
			if (rc != HM_OK) {
				hm_err_prefix(err, "--csv-columns");
				goto out;
			}
		}
		rc = hm_topo_load_file(a->topology, &opts, topo, err);
	} else {
		hm_topo_gen_t gen;
		memset(&gen, 0, sizeof(gen));
		rc = hm_topo_gen_parse(a->topo_gen ? a->topo_gen : sim_default_topo_gen, &gen, err);
		if (rc != HM_OK) {
			hm_err_prefix(err, "--topo-gen");
			goto out;
		}
		if (a->nic_bps > 0)
			gen.nic_bps = a->nic_bps;
		if (a->uplink_bps > 0)
			gen.uplink_bps = a->uplink_bps;
		rc = hm_topo_generate(&gen, topo, err);
	}
out:
	free(cols);
	return rc;
}

static hm_rc_t load_workload(const sim_args_t *a, const hm_topo_t *topo, hm_workload_t *w,
			     hm_err_t *err)
{
	FILE *f;
	hm_rc_t rc;

	if (a->generate) {
		rc = hm_workload_generate(a->generate, topo, a->seed, w, err);
		if (rc != HM_OK)
			hm_err_prefix(err, "--generate");
		return rc;
	}
	if (!a->trace) {
		f = fmemopen((void *)sim_default_trace, strlen(sim_default_trace), "r");
		if (!f)
			return hm_err_set(err, HM_ERR_NOMEM, "built-in trace: %s", strerror(errno));
		rc = hm_workload_load_csv(f, "built-in trace", w, err);
		fclose(f);
		return rc;
	}
	if (!(f = fopen(a->trace, "r")))
		return hm_err_set(err, HM_ERR_IO, "%s: %s", a->trace, strerror(errno));
	rc = hm_workload_load_csv(f, a->trace, w, err);
	fclose(f);
	return rc;
}

/* Resolve "all" or a comma list into policy ops; unknown names are errors. */
static int resolve_policies(const char *list, const hm_policy_ops_t **out, int max, hm_err_t *err)
{
	char *dup, *save = NULL;
	int n = 0;

	if (strcmp(list, "all") == 0) {
		for (int i = 0; i < hm_policy_count() && n < max; i++)
			out[n++] = hm_policy_at(i);
		return n;
	}
	if (!(dup = strdup(list))) {
		hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		return -1;
	}
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const hm_policy_ops_t *p = hm_policy_find(hm_trim(tok));
		if (!p || n >= max) {
			hm_err_set(err, HM_ERR_INVAL, "--policy: unknown policy '%s'; accepted: %s or all",
				   tok, hm_policy_names());
			n = -1;
			break;
		}
		out[n++] = p;
	}
	free(dup);
	if (n == 0) {
		hm_err_set(err, HM_ERR_INVAL, "--policy: empty list; accepted: %s or all",
			   hm_policy_names());
		n = -1;
	}
	return n;
}

typedef struct {
	const char *policy;
	double last;
} progress_t;

static void progress_bar(double frac, void *arg)
{
	progress_t *p = arg;
	int width = 40, fill = (int)(frac * width + 0.5);

	if (frac - p->last < 0.01 && frac < 1.0)
		return;
	p->last = frac;
	fprintf(stderr, "\r%-10s [%.*s%*s] %3.0f%%", p->policy, fill,
		"########################################", width - fill, "", 100.0 * frac);
	if (frac >= 1.0)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/*
 * What the Slurm path gives a policy today, as a wrapper around the chosen
 * policy (one run at a time: file-static). --launch-window: the policy decides
 * as usual, but a job applies a new decision only within the window after its
 * start (a job step's assignment reaches it once, at launch); older jobs keep
 * the decision they had. --declared-only: the policy sees no measured times.
 */
static struct {
	const hm_policy_ops_t *inner;
	double window_s; /* < 0: no window */
	bool declared_only;
} launch;

typedef struct {
	void *inner_state;
	hm_decision_t *saved;
	int cap;
} launch_state_t;

static hm_rc_t launch_create(const hm_policy_cfg_t *cfg, void **state, hm_err_t *err)
{
	launch_state_t *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
	*state = ls;
	return launch.inner->create ? launch.inner->create(cfg, &ls->inner_state, err) : HM_OK;
}

static hm_rc_t launch_decide(void *state, hm_sched_ctx_t *ctx, hm_err_t *err)
{
	launch_state_t *ls = state;
	hm_rc_t rc;

	if (ctx->njobs > ls->cap) {
		hm_decision_t *d = realloc(ls->saved, sizeof(*d) * (size_t)ctx->njobs);

		if (!d)
			return hm_err_set(err, HM_ERR_NOMEM, "out of memory");
		ls->saved = d;
		ls->cap = ctx->njobs;
	}
	for (int i = 0; i < ctx->njobs; i++) {
		hm_sched_job_t *j = &ctx->jobs[i];

		ls->saved[i] = j->dec;
		if (launch.declared_only)
			j->meas_iter_s = j->meas_compute_s = j->meas_comm_s = j->meas_iter_sd_s = 0;
	}
	if ((rc = launch.inner->decide(ls->inner_state, ctx, err)) != HM_OK)
		return rc;
	for (int i = 0; i < ctx->njobs; i++)
		if (launch.window_s >= 0 && ctx->now_s - ctx->jobs[i].start_s > launch.window_s)
			ctx->jobs[i].dec = ls->saved[i];
	return HM_OK;
}

static void launch_destroy(void *state)
{
	launch_state_t *ls = state;

	if (!ls)
		return;
	if (launch.inner->destroy)
		launch.inner->destroy(ls->inner_state);
	free(ls->saved);
	free(ls);
}

static int launch_place(void *state, hm_sched_ctx_t *ctx, const hm_placement_t *cands,
			const hm_traffic_t *cand_traffic, int ncands)
{
	launch_state_t *ls = state;

	return launch.inner->place(ls->inner_state, ctx, cands, cand_traffic, ncands);
}

static hm_policy_ops_t launch_ops(const hm_policy_ops_t *inner, double window_s,
				  bool declared_only)
{
	hm_policy_ops_t o = *inner;

	launch.inner = inner;
	launch.window_s = window_s;
	launch.declared_only = declared_only;
	o.create = launch_create;
	o.decide = inner->decide ? launch_decide : NULL;
	o.destroy = launch_destroy;
	o.place = inner->place ? launch_place : NULL;
	return o;
}

/* --placement LIST into kinds[]; returns their count or -1 (err set). */
static int resolve_placements(const char *list, hm_sim_placement_t *kinds, int max, hm_err_t *err)
{
	char buf[256], *save = NULL;
	int n = 0;

	if (!list) {
		kinds[0] = HM_SIM_PLACE_DEFAULT;
		return 1;
	}
	if (strcmp(list, "all") == 0)
		list = "packed,spread,harmonics,cassini";
	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf)) {
		hm_err_set(err, HM_ERR_INVAL, "--placement list too long");
		return -1;
	}
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			hm_err_set(err, HM_ERR_INVAL, "--placement: more than %d entries", max);
			return -1;
		}
		if (hm_sim_placement_parse(tok, &kinds[n], err) != HM_OK) {
			hm_err_prefix(err, "--placement");
			return -1;
		}
		n++;
	}
	if (n == 0)
		hm_err_set(err, HM_ERR_INVAL,
			   "--placement '%s' names none; accepted: packed, spread, harmonics, "
			   "cassini, all",
			   list);
	return n > 0 ? n : -1;
}

int main(int argc, char **argv)
{
	const hm_policy_ops_t *pols[16];
	hm_sim_result_t *res = NULL;
	hm_topo_t *topo = NULL;
	hm_workload_t wl = {0};
	hm_err_t err = {0};
	sim_args_t a;
	char topo_desc[256], wl_desc[512];
	int npol, nres = 0, ret = EXIT_FAILED, pr, nplace;
	hm_sim_placement_t places[8];

	pr = parse_args(argc, argv, &a, &err);
	if (pr != 0) {
		if (pr < 0)
			fprintf(stderr, "harmonics-sim: %s\n", err.msg);
		return pr > 0 ? 0 : EXIT_USAGE;
	}
	npol = resolve_policies(a.policies, pols, 16, &err);
	nplace = npol < 0 ? -1 : resolve_placements(a.placements, places, 8, &err);
	if (npol < 0 || nplace < 0) {
		fprintf(stderr, "harmonics-sim: %s\n", err.msg);
		return EXIT_USAGE;
	}
	if (load_topology(&a, &topo, &err) != HM_OK || load_workload(&a, topo, &wl, &err) != HM_OK) {
		fprintf(stderr, "harmonics-sim: %s\n", err.msg);
		goto out;
	}
	hm_topo_describe(topo, topo_desc, sizeof(topo_desc));
	snprintf(wl_desc, sizeof(wl_desc), "%s",
		 a.trace ? a.trace : a.generate ? a.generate : "built-in testbed trace");
	if (!(res = calloc((size_t)(npol * nplace), sizeof(*res)))) {
		fprintf(stderr, "harmonics-sim: out of memory\n");
		goto out;
	}
	for (int k = 0; k < npol * nplace; k++) {
		int i = k % npol;
		progress_t prog = {.policy = pols[i]->name, .last = -1};
		hm_sim_opts_t so = a.sopts;
		hm_policy_ops_t ops = *pols[i];

		so.placement = places[k / npol];
		if (a.launch_window_s >= 0 || a.declared_only)
			ops = launch_ops(pols[i], a.launch_window_s, a.declared_only);

		if (!a.quiet && isatty(STDERR_FILENO)) {
			so.progress = progress_bar;
			so.progress_arg = &prog;
		}
		if (hm_sim_run(topo, &wl, &ops, &a.pcfg, &so, &res[k], &err) != HM_OK) {
			fprintf(stderr, "harmonics-sim: policy %s: %s\n", pols[i]->name, err.msg);
			goto out;
		}
		if (a.placements) /* one row per policy and placement */
			snprintf(res[k].policy, sizeof(res[k].policy), "%s/%s", pols[i]->name,
				 hm_sim_placement_name(so.placement));
		nres++;
	}

	sim_scenario_t sc = {.topology = topo_desc, .workload = wl_desc, .njobs = wl.njobs,
			     .seed = a.seed, .jitter_cv = a.sopts.jitter_cv, .epoch_s = a.pcfg.epoch_s,
			     .bound = a.bound};
	switch (a.fmt) {
	case FMT_JSON:
		if (sim_report_json(stdout, &sc, res, nres, a.per_job) != 0) {
			fprintf(stderr, "harmonics-sim: could not build JSON output\n");
			goto out;
		}
		break;
	case FMT_CSV: sim_report_csv(stdout, res, nres, a.per_job); break;
	default: sim_report_table(stdout, &sc, res, nres, a.per_job); break;
	}
	if (a.plot && sim_report_plot(a.plot, res, nres, &err) != HM_OK) {
		fprintf(stderr, "harmonics-sim: %s\n", err.msg);
		goto out;
	}
	ret = 0;
out:
	for (int i = 0; i < nres; i++)
		hm_sim_result_free(&res[i]);
	free(res);
	hm_workload_free(&wl);
	hm_topo_free(topo);
	return ret;
}
