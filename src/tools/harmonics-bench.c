/*
 * harmonics-bench - how long one full scheduling decision takes as the cluster
 * grows, per policy: wall-clock and CPU time (median over seeds x repeats) and
 * peak memory, each (policy, size) measured in its own forked child so that
 * one policy's memory does not count against another.
 *
 * Scenario per size N GPUs: racks of 8 hosts x 8 GPUs (N / 64 racks), NIC
 * 100 Gbit/s, ToR uplinks oversubscribed 2:1, pods of 16 racks with 2
 * aggregation switches (equal-cost paths) above 16 racks; a seeded job mix
 * (gpus=multi: the multi-GPU part of the Philly sizes, 2 to 128 GPUs) placed on
 * a fragmented cluster until it is full: each job starts in a random rack and
 * takes at most 2 GPUs per host, spilling into the next racks, so NICs and
 * uplinks are shared as in a busy cluster (the worst case for a scheduler; the
 * default packed placement leaves most jobs alone on their links). The
 * decision is the one a policy takes when the last job arrives.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>

#include "hm_clock.h"
#include "hm_job.h"
#include "hm_parse.h"
#include "hm_policy.h"
#include "hm_rng.h"
#include "hm_topo.h"
#include "hm_tool.h"

/* Exit codes (--help, harmonics-bench(1)). */
enum { EXIT_FAILED = 1, EXIT_USAGE = HM_TOOL_EXIT_USAGE };

#define MAX_SIZES   16
#define MAX_POL     8
#define MAX_SAMPLES 64

typedef struct {
	int sizes[MAX_SIZES], nsizes;
	const hm_policy_ops_t *pol[MAX_POL];
	int npol;
	int seeds, repeats;
	double budget_s;
	int threads;
	bool json;
	const char *plot;
} opts_t;

typedef struct {
	double decision_s, cpu_s;
	long peak_rss_bytes;
	int jobs;
	int finished;
	int ok;
	char err[sizeof(((hm_err_t *)0)->msg)]; /* an hm_err_t message, whole */
} sample_t;

typedef struct {
	const char *policy;
	int gpus, jobs;
	double decision_s, cpu_s;
	long peak_rss_bytes;
	bool finished, ran;
	char err[sizeof(((hm_err_t *)0)->msg)];
} row_t;

typedef struct {
	hm_topo_t *topo;
	hm_workload_t w;
	int *free, left; /* free GPUs per host, in all */
	int n;
	hm_placement_t *pl;
	hm_traffic_t **tr; /* per job: npaths entries */
	int *np;
	hm_sched_job_t *sj;
} scen_t;

static void scen_free(scen_t *s)
{
	for (int i = 0; i < s->n; i++) {
		for (int p = 0; p < s->np[i]; p++)
			hm_traffic_free(&s->tr[i][p]);
		free(s->tr[i]);
		hm_placement_free(&s->pl[i]);
	}
	free(s->pl);
	free(s->tr);
	free(s->np);
	free(s->sj);
	free(s->free);
	hm_workload_free(&s->w);
	hm_topo_free(s->topo);
}

/* At most 2 GPUs per host, from a random rack and host on, spilling over. */
static int fragmented_place(scen_t *s, int gpus, uint64_t *rng, hm_placement_t *pl)
{
	const hm_topo_t *t = s->topo;
	int nh = t->nhosts, start = (int)(hm_rng_next(rng) % (uint64_t)nh), need = gpus;

	pl->nslots = 0;
	pl->slots = calloc((size_t)(gpus + 1), sizeof(hm_slot_t)); /* gpu_mask 0: first GPUs */
	if (!pl->slots)
		return -1;
	for (int k = 0; k < nh && need > 0; k++) {
		int h = (start + k) % nh, take = s->free[h] < 2 ? s->free[h] : 2;
		if (take > need)
			take = need;
		if (take <= 0)
			continue;
		pl->slots[pl->nslots].host = h;
		pl->slots[pl->nslots].gpus = take;
		pl->nslots++;
		s->free[h] -= take;
		need -= take;
	}
	s->left -= gpus - need;
	return 0;
}

static hm_rc_t scen_build(int gpus, unsigned long seed, scen_t *s, hm_err_t *err)
{
	hm_topo_gen_t g = {0};
	hm_rc_t rc;
	char spec[160];
	int racks = gpus / 64 > 0 ? gpus / 64 : 1;

	memset(s, 0, sizeof(*s));
	g.racks = racks;
	g.hosts_per_rack = gpus >= 64 ? 8 : (gpus + 7) / 8;
	g.gpus_per_host = 8;
	g.nic_bps = 100e9;
	g.oversubscription = 2;
	if (racks > 16 && racks % 16 == 0) {
		g.racks_per_pod = 16;
		g.aggs_per_pod = 2;
		g.cores = 2;
	}
	rc = hm_topo_generate(&g, &s->topo, err);
	if (rc != HM_OK)
		return rc;
	/* Enough multi-GPU jobs (mean ~5.7 GPUs) to fill the cluster. */
	snprintf(spec, sizeof(spec), "jobs=%d,arrival=poisson:1s,gpus=multi,models=all,iters=100",
		 gpus / 4 > 2 ? gpus / 4 : 2);
	rc = hm_workload_generate(spec, s->topo, seed, &s->w, err);
	if (rc != HM_OK)
		return rc;
	s->pl = calloc((size_t)s->w.njobs, sizeof(*s->pl));
	s->tr = calloc((size_t)s->w.njobs, sizeof(*s->tr));
	s->np = calloc((size_t)s->w.njobs, sizeof(int));
	s->sj = calloc((size_t)s->w.njobs, sizeof(*s->sj));
	s->free = malloc(sizeof(int) * (size_t)s->topo->nhosts);
	if (!s->pl || !s->tr || !s->np || !s->sj || !s->free)
		return hm_err_set(err, HM_ERR_NOMEM, "bench: out of memory");
	for (int h = 0; h < s->topo->nhosts; h++)
		s->free[h] = s->topo->hosts[h].gpus;
	s->left = hm_topo_gpus(s->topo);
	uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 12345;
	for (int j = 0; j < s->w.njobs; j++) {
		hm_job_t *job = &s->w.jobs[j];
		hm_placement_t *pl = &s->pl[s->n];
		int np = 1;

		if (job->gpus > s->left)
			continue; /* full: the decision covers the jobs that fit */
		if (fragmented_place(s, job->gpus, &rng, pl) != 0)
			return hm_err_set(err, HM_ERR_NOMEM, "bench: out of memory");
		/* Equal-cost paths: the most over consecutive ring hosts (as the simulator). */
		for (int i = 0; pl->nslots > 1 && i < pl->nslots; i++) {
			int k = hm_topo_npaths(s->topo, pl->slots[i].host,
					       pl->slots[(i + 1) % pl->nslots].host);
			np = k > np ? k : np;
		}
		np = np > 8 ? 8 : np;
		s->tr[s->n] = calloc((size_t)np, sizeof(hm_traffic_t));
		if (!s->tr[s->n])
			return hm_err_set(err, HM_ERR_NOMEM, "bench: out of memory");
		s->np[s->n] = np;
		for (int p = 0; p < np; p++) {
			rc = hm_traffic_derive(s->topo, &job->profile, pl, p, &s->tr[s->n][p], err);
			if (rc != HM_OK)
				return rc;
		}
		hm_sched_job_t *sj = &s->sj[s->n];
		sj->id = job->id;
		sj->job = job;
		sj->placement = pl;
		sj->traffic = &s->tr[s->n][0];
		sj->path_traffic = np > 1 ? s->tr[s->n] : NULL;
		sj->npaths = np;
		sj->start_s = job->arrival_s;
		sj->iter_start_s = job->arrival_s;
		s->n++;
	}
	return HM_OK;
}

/* One (policy, size) in a child: seeds x repeats decisions, medians. */
static void child_run(const opts_t *o, const hm_policy_ops_t *pol, int gpus, sample_t *out)
{
	double dec[MAX_SAMPLES], cpu[MAX_SAMPLES];
	int ns = 0, jobs = 0;
	bool finished = true;
	struct rusage ru;

	memset(out, 0, sizeof(*out));
	for (int seed = 1; seed <= o->seeds; seed++) {
		scen_t s;
		hm_err_t err = {0};
		if (scen_build(gpus, (unsigned long)seed, &s, &err) != HM_OK) {
			snprintf(out->err, sizeof(out->err), "%s", err.msg);
			scen_free(&s);
			return;
		}
		if (seed == 1)
			jobs = s.n; /* reported: the first seed's job count */
		for (int r = 0; r < o->repeats && ns < MAX_SAMPLES; r++) {
			hm_policy_cfg_t cfg;
			hm_sched_ctx_t ctx;
			void *st = NULL;
			double w0, c0;

			hm_policy_cfg_defaults(&cfg);
			cfg.budget_s = o->budget_s;
			cfg.seed = (unsigned long)seed;
			cfg.threads = o->threads;
			for (int i = 0; i < s.n; i++)
				memset(&s.sj[i].dec, 0, sizeof(s.sj[i].dec));
			memset(&ctx, 0, sizeof(ctx));
			ctx.topo = s.topo;
			ctx.now_s = s.n > 0 ? s.sj[s.n - 1].start_s : 0;
			ctx.event = HM_EV_ARRIVAL;
			ctx.event_job = s.n - 1;
			ctx.njobs = s.n;
			ctx.jobs = s.sj;
			if (pol->create && pol->create(&cfg, &st, &err) != HM_OK) {
				snprintf(out->err, sizeof(out->err), "%s", err.msg);
				scen_free(&s);
				return;
			}
			w0 = hm_clock_s(CLOCK_MONOTONIC);
			c0 = hm_clock_s(CLOCK_PROCESS_CPUTIME_ID);
			if (pol->decide && pol->decide(st, &ctx, &err) != HM_OK) {
				snprintf(out->err, sizeof(out->err), "%s", err.msg);
				if (pol->destroy)
					pol->destroy(st);
				scen_free(&s);
				return;
			}
			dec[ns] = hm_clock_s(CLOCK_MONOTONIC) - w0;
			cpu[ns] = hm_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
			ns++;
			if (pol->destroy)
				pol->destroy(st);
			if (ctx.budget_exhausted) {
				finished = false;
				break; /* cut by its budget: repeating only costs time */
			}
			if (dec[ns - 1] > 1.0)
				break; /* slow decisions vary little: one per seed */
		}
		scen_free(&s);
		if (!finished)
			break;
	}
	/* Medians. */
	for (int i = 1; i < ns; i++)
		for (int k = i; k > 0 && dec[k] < dec[k - 1]; k--) {
			double t = dec[k];
			dec[k] = dec[k - 1];
			dec[k - 1] = t;
		}
	for (int i = 1; i < ns; i++)
		for (int k = i; k > 0 && cpu[k] < cpu[k - 1]; k--) {
			double t = cpu[k];
			cpu[k] = cpu[k - 1];
			cpu[k - 1] = t;
		}
	getrusage(RUSAGE_SELF, &ru);
	out->decision_s = ns ? dec[ns / 2] : 0;
	out->cpu_s = ns ? cpu[ns / 2] : 0;
	out->peak_rss_bytes = ru.ru_maxrss * 1024L;
	out->jobs = jobs;
	out->finished = finished;
	out->ok = ns > 0;
}

static int run_forked(const opts_t *o, const hm_policy_ops_t *pol, int gpus, sample_t *out)
{
	int fd[2], status = 0;
	pid_t pid;
	ssize_t got = 0;

	memset(out, 0, sizeof(*out));
	if (pipe(fd) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		sample_t s;
		close(fd[0]);
		child_run(o, pol, gpus, &s);
		if (write(fd[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(2);
		_exit(0);
	}
	close(fd[1]);
	while (got < (ssize_t)sizeof(*out)) {
		ssize_t k = read(fd[0], (char *)out + got, sizeof(*out) - (size_t)got);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			break;
		}
		got += k;
	}
	close(fd[0]);
	waitpid(pid, &status, 0);
	if (got != (ssize_t)sizeof(*out)) {
		snprintf(out->err, sizeof(out->err), "child ended without a result (status %d)",
			 status);
		out->ok = 0;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: harmonics-bench [OPTIONS]\n"
		"Time one full scheduling decision per policy as the cluster grows.\n\n"
		"  --sizes LIST     GPU counts (default 16,32,64,256,1024,4096,16384,65536,\n"
		"                   131072; below 64 so that optimal finishes somewhere)\n"
		"  --policy LIST    policies among %s, or 'all' (default all)\n"
		"  --seeds N        workload seeds per size (default 2)\n"
		"  --repeats N      decisions per seed; the median is reported (default 3;\n"
		"                   one per seed when a decision takes over 1 s)\n"
		"  --budget S       time budget of one decision (optimal) (default 10s, the\n"
		"                   policies' documented default)\n"
		"  --threads N      worker threads inside a policy (default 1: one core)\n"
		"  --quick          CI run: sizes 64,256,1024, 1 seed, 1 repeat, budget 1s\n"
		"  --json           {\"results\":[{policy,gpus,jobs,decision_s,cpu_s,"
		"peak_rss_bytes,finished}]}\n"
		"  --plot FILE      decision time vs GPUs, log axes (gnuplot; .png or .svg)\n"
		"  -h, --help       this text\n"
		"\n"
		"The size at which optimal is cut by its budget ends its series (larger ones\n"
		"would be cut too). Other policies report finished=false when their own\n"
		"budget use (crux's order sampling) was cut, and go on.\n\n"
		"Exit status: 0 success; 1 a measurement or the plot failed (or memory ran\n"
		"out); 2 a bad option or option value.\n",
		hm_policy_names());
}

static int parse_sizes(const char *arg, opts_t *o, hm_err_t *err)
{
	char buf[256], *save = NULL;

	if (strlen(arg) >= sizeof(buf)) {
		hm_err_set(err, HM_ERR_INVAL, "--sizes: '%s' is too long", arg);
		return -1;
	}
	strcpy(buf, arg);
	o->nsizes = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v;
		if (o->nsizes == MAX_SIZES) {
			hm_err_set(err, HM_ERR_INVAL, "--sizes: more than %d sizes", MAX_SIZES);
			return -1;
		}
		if (hm_parse_long(tok, 8, 1048576, &v, "--sizes", err) != HM_OK)
			return -1;
		o->sizes[o->nsizes++] = (int)v;
	}
	if (o->nsizes == 0) {
		hm_err_set(err, HM_ERR_INVAL, "--sizes: no size in '%s'", arg);
		return -1;
	}
	return 0;
}

static int parse_policies(const char *arg, opts_t *o, hm_err_t *err)
{
	char buf[256], *save = NULL;

	o->npol = 0;
	if (strcmp(arg, "all") == 0) {
		for (int i = 0; i < hm_policy_count() && o->npol < MAX_POL; i++)
			o->pol[o->npol++] = hm_policy_at(i);
		return 0;
	}
	if (strlen(arg) >= sizeof(buf)) {
		hm_err_set(err, HM_ERR_INVAL, "--policy: '%s' is too long", arg);
		return -1;
	}
	strcpy(buf, arg);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const hm_policy_ops_t *p = hm_policy_find(tok);
		if (!p) {
			hm_err_set(err, HM_ERR_NOTFOUND,
				   "--policy: unknown policy '%s' (accepted: %s, all)", tok,
				   hm_policy_names());
			return -1;
		}
		if (o->npol < MAX_POL)
			o->pol[o->npol++] = p;
	}
	return 0;
}

static int write_plot(const char *file, const row_t *rows, int nrows, const opts_t *o)
{
	char data[] = "/tmp/harmonics-bench-XXXXXX";
	int fd = mkstemp(data), rc = -1;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL, *gp = NULL;
	const char *ext = strrchr(file, '.');
	bool svg = ext && strcmp(ext, ".svg") == 0;

	if (!f) {
		fprintf(stderr, "harmonics-bench: cannot write plot data: %s\n", strerror(errno));
		return -1;
	}
	for (int p = 0; p < o->npol; p++) {
		fprintf(f, "# %s\n", o->pol[p]->name);
		for (int r = 0; r < nrows; r++)
			if (rows[r].ran && strcmp(rows[r].policy, o->pol[p]->name) == 0 &&
			    rows[r].decision_s > 0)
				fprintf(f, "%d %.9g\n", rows[r].gpus, rows[r].decision_s);
		fprintf(f, "\n\n");
	}
	fclose(f);
	gp = popen("gnuplot", "w");
	if (!gp) {
		fprintf(stderr, "harmonics-bench: cannot run gnuplot: %s\n", strerror(errno));
		goto out;
	}
	fprintf(gp, "set terminal %s size 800,500\nset output '%s'\n", svg ? "svg" : "pngcairo",
		file);
	fprintf(
	    gp,
	    "set logscale xy\nset format x \"%%g\"\nset format y \"%%g\"\nset xlabel 'GPUs'\nset "
	    "ylabel 'one decision (s, wall clock)'\n"
	    "set key top left\nset grid\nset title 'Scheduling decision time vs cluster size'\n");
	fprintf(gp, "plot ");
	for (int p = 0; p < o->npol; p++)
		fprintf(gp, "%s'%s' index %d using 1:2 with linespoints title '%s'", p ? ", " : "",
			data, p, o->pol[p]->name);
	fprintf(gp, "\n");
	rc = pclose(gp) == 0 ? 0 : -1;
	if (rc != 0)
		fprintf(stderr, "harmonics-bench: gnuplot failed for %s\n", file);
out:
	unlink(data);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"sizes", required_argument, 0, 's'},
					   {"policy", required_argument, 0, 'p'},
					   {"seeds", required_argument, 0, 'S'},
					   {"repeats", required_argument, 0, 'r'},
					   {"budget", required_argument, 0, 'b'},
					   {"threads", required_argument, 0, 't'},
					   {"quick", no_argument, 0, 'q'},
					   {"json", no_argument, 0, 'j'},
					   {"plot", required_argument, 0, 'P'},
					   {"help", no_argument, 0, 'h'},
					   {0, 0, 0, 0}};
	opts_t o = {.sizes = {16, 24, 32, 40, 48, 64, 256, 1024, 4096, 16384, 65536, 131072},
		    .nsizes = 12,
		    .seeds = 2,
		    .repeats = 3,
		    .budget_s = 10,
		    .threads = 1};
	hm_err_t err = {0};
	row_t *rows = NULL;
	int nrows = 0, c, ret = EXIT_FAILED;
	bool policy_given = false;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		long v;
		double d;
		switch (c) {
		case 's':
			if (parse_sizes(optarg, &o, &err) != 0)
				goto bad;
			break;
		case 'p':
			if (parse_policies(optarg, &o, &err) != 0)
				goto bad;
			policy_given = true;
			break;
		case 'S':
			if (hm_parse_long(optarg, 1, 32, &v, "--seeds", &err) != HM_OK)
				goto bad;
			o.seeds = (int)v;
			break;
		case 'r':
			if (hm_parse_long(optarg, 1, 32, &v, "--repeats", &err) != HM_OK)
				goto bad;
			o.repeats = (int)v;
			break;
		case 'b':
			if (hm_parse_duration_s(optarg, 0.001, 3600, &d, "--budget", &err) != HM_OK)
				goto bad;
			o.budget_s = d;
			break;
		case 't':
			if (hm_parse_long(optarg, 1, 64, &v, "--threads", &err) != HM_OK)
				goto bad;
			o.threads = (int)v;
			break;
		case 'q':
			o.nsizes = 3;
			o.sizes[0] = 64;
			o.sizes[1] = 256;
			o.sizes[2] = 1024;
			o.seeds = 1;
			o.repeats = 1;
			o.budget_s = 1;
			break;
		case 'j':
			o.json = true;
			break;
		case 'P':
			o.plot = optarg;
			break;
		default:
			return hm_tool_help_or_usage(c, usage);
		}
	}
	if (optind < argc)
		return hm_tool_stray_arg("harmonics-bench", argv[optind], usage);
	if (!policy_given && parse_policies("all", &o, &err) != 0)
		goto bad;
	rows = calloc((size_t)(o.nsizes * o.npol + 1), sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "harmonics-bench: out of memory\n");
		return EXIT_FAILED;
	}
	if (!o.json)
		printf("%-10s %8s %7s %12s %12s %10s %8s\n", "policy", "gpus", "jobs", "decision_s",
		       "cpu_s", "peak_rss", "finished");
	for (int p = 0; p < o.npol; p++) {
		for (int z = 0; z < o.nsizes; z++) {
			sample_t s;
			row_t *r = &rows[nrows];

			if (run_forked(&o, o.pol[p], o.sizes[z], &s) != 0 || !s.ok) {
				fprintf(stderr, "harmonics-bench: %s at %d GPUs: %s\n",
					o.pol[p]->name, o.sizes[z],
					s.err[0] ? s.err : strerror(errno));
				goto out;
			}
			r->policy = o.pol[p]->name;
			r->gpus = o.sizes[z];
			r->jobs = s.jobs;
			r->decision_s = s.decision_s;
			r->cpu_s = s.cpu_s;
			r->peak_rss_bytes = s.peak_rss_bytes;
			r->finished = s.finished;
			r->ran = true;
			nrows++;
			if (!o.json) {
				printf("%-10s %8d %7d %12.6f %12.6f %9.1fM %8s\n", r->policy,
				       r->gpus, r->jobs, r->decision_s, r->cpu_s,
				       r->peak_rss_bytes / 1048576.0, r->finished ? "yes" : "no");
				fflush(stdout);
			}
			/* An exhaustive search cut at this size is cut at larger ones. */
			if (!s.finished && o.pol[p] == &hm_policy_optimal)
				break;
		}
	}
	if (o.json) {
		printf("{\"seeds\":%d,\"repeats\":%d,\"budget_s\":%g,\"threads\":%d,\"results\":[",
		       o.seeds, o.repeats, o.budget_s, o.threads);
		for (int i = 0; i < nrows; i++)
			printf("%s{\"policy\":\"%s\",\"gpus\":%d,\"jobs\":%d,\"decision_s\":%.9g,"
			       "\"cpu_s\":%.9g,\"peak_rss_bytes\":%ld,\"finished\":%s}",
			       i ? "," : "", rows[i].policy, rows[i].gpus, rows[i].jobs,
			       rows[i].decision_s, rows[i].cpu_s, rows[i].peak_rss_bytes,
			       rows[i].finished ? "true" : "false");
		printf("]}\n");
	}
	if (o.plot && write_plot(o.plot, rows, nrows, &o) != 0)
		goto out;
	ret = 0;
	goto out;
bad:
	fprintf(stderr, "harmonics-bench: %s\n", err.msg);
	ret = EXIT_USAGE;
out:
	free(rows);
	return ret;
}
