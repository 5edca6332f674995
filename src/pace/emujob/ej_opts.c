/* harmonics-emujob option parsing: strict values, Slurm defaults. */
#include "ej.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "hm_hostlist.h"
#include "hm_job.h"
#include "hm_parse.h"

#define EJ_MAX_RANKS       4096
#define EJ_MAX_BYTES       2e9
#define EJ_SLURM_PORT_BASE 20000

void ej_usage(FILE *f)
{
	fputs("Usage: harmonics-emujob [OPTION]...\n"
	      "An emulated data-parallel training job: each iteration computes, then runs a\n"
	      "real ring all-reduce over TCP, with its burst held to the job's slot by\n"
	      "libharmonics-pace (HARMONICS_* environment, see docs/pacing.md).\n"
	      "\n"
	      "Ranks:\n"
	      "  --local N              fork N ranks on 127.0.0.1 (a single command)\n"
	      "  --ranks N              number of ranks (default: SLURM_NTASKS, else 1)\n"
	      "  --rank R               this rank (default: SLURM_PROCID, else 0)\n"
	      "  --rendezvous HOST:PORT rank 0 listens there, the others connect (default under\n"
	      "                         Slurm: first node of SLURM_STEP_NODELIST, port 20000 +\n"
	      "                         (16 * SLURM_JOB_ID + SLURM_STEP_ID) % 20000)\n"
	      "Work:\n"
	      "  --model NAME           compute time and gradient bytes of a catalogue model\n"
	      "  --scale F              multiply the model's bytes and compute by F (default 1)\n"
	      "  --bytes-scale F        multiply the model's bytes once more, e.g. by emulated /\n"
	      "                         real link speed (default 1)\n"
	      "  --compute DURATION     compute per iteration, e.g. 200ms (default 100ms)\n"
	      "  --compute-mode MODE    sleep (default) or busy\n"
	      "  --compute-jitter CV    per-iteration compute variation, coefficient of variation\n"
	      "                         (uniform), e.g. 0.05 or 5% (default 0)\n"
	      "  --bytes SIZE           all-reduce buffer, e.g. 4.75MB (default 4MB)\n"
	      "  --iterations N         measured iterations (default 20; the most with --stop-file)\n"
	      "  --stop-file PATH       end the run after the iteration in which PATH exists\n"
	      "                         (rank 0 looks before each barrier; every rank ends there)\n"
	      "  --warmup N             iterations before them, not measured (default 2)\n"
	      "  --tcp-cc NAME          TCP congestion control per socket, e.g. cubic\n"
	      "  --timeout DURATION     fail when a peer is silent this long (default 30s)\n"
	      "Output (rank 0):\n"
	      "  --json                 JSON instead of text\n"
	      "  --quiet                summary only, no per-iteration lines\n"
	      "  --dry-run              print the resolved job and its traffic class (JSON), exit\n"
	      "  --help                 this text\n"
	      "\n"
	      "Exit status: 0 success; 1 a rank failed (network, timeout, wrong all-reduce\n"
	      "result); 2 a bad option or option value.\n",
	      f);
}

enum {
	OPT_LOCAL = 256,
	OPT_RANKS,
	OPT_RANK,
	OPT_RDV,
	OPT_MODEL,
	OPT_SCALE,
	OPT_BYTES_SCALE,
	OPT_COMPUTE,
	OPT_COMPUTE_MODE,
	OPT_JITTER,
	OPT_BYTES,
	OPT_ITERS,
	OPT_WARMUP,
	OPT_TCP_CC,
	OPT_TIMEOUT,
	OPT_JSON,
	OPT_QUIET,
	OPT_DRY_RUN,
	OPT_HELP,
	OPT_STOP_FILE,
};

static const struct option long_opts[] = {
    {"local", required_argument, NULL, OPT_LOCAL},
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"rank", required_argument, NULL, OPT_RANK},
    {"rendezvous", required_argument, NULL, OPT_RDV},
    {"model", required_argument, NULL, OPT_MODEL},
    {"scale", required_argument, NULL, OPT_SCALE},
    {"bytes-scale", required_argument, NULL, OPT_BYTES_SCALE},
    {"compute", required_argument, NULL, OPT_COMPUTE},
    {"compute-mode", required_argument, NULL, OPT_COMPUTE_MODE},
    {"compute-jitter", required_argument, NULL, OPT_JITTER},
    {"bytes", required_argument, NULL, OPT_BYTES},
    {"iterations", required_argument, NULL, OPT_ITERS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"tcp-cc", required_argument, NULL, OPT_TCP_CC},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"json", no_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"help", no_argument, NULL, OPT_HELP},
    {"stop-file", required_argument, NULL, OPT_STOP_FILE},
    {NULL, 0, NULL, 0},
};

static hm_rc_t parse_int(const char *s, long min, long max, int *out, const char *what,
			 hm_err_t *err)
{
	long v = 0;
	hm_rc_t rc = hm_parse_long(s, min, max, &v, what, err);

	if (rc == HM_OK)
		*out = (int)v;
	return rc;
}

/* "host:port" (the last ':' splits, so "[::1]:80" style is not supported). */
static hm_rc_t parse_hostport(const char *s, ej_opts_t *o, hm_err_t *err)
{
	const char *c = strrchr(s, ':');

	if (!c || c == s || (size_t)(c - s) >= sizeof(o->rdv_host))
		return hm_err_set(err, HM_ERR_PARSE,
				  "--rendezvous: '%s' is not HOST:PORT (e.g. 10.0.0.1:29400)", s);
	snprintf(o->rdv_host, sizeof(o->rdv_host), "%.*s", (int)(c - s), s);
	return parse_int(c + 1, 1, 65535, &o->rdv_port, "--rendezvous port", err);
}

/* Slurm defaults: rank, size, and a rendezvous on the step's first node. */
static hm_rc_t slurm_defaults(ej_opts_t *o, hm_err_t *err)
{
	const char *ntasks = getenv("SLURM_NTASKS"), *procid = getenv("SLURM_PROCID");
	const char *nodes = getenv("SLURM_STEP_NODELIST"), *jobid = getenv("SLURM_JOB_ID");
	const char *stepid = getenv("SLURM_STEP_ID");
	char **names = NULL;
	int n = 0, job = 0, step = 0;
	hm_rc_t rc = HM_OK;

	if (!nodes)
		nodes = getenv("SLURM_JOB_NODELIST");
	if (ntasks && (rc = parse_int(ntasks, 1, EJ_MAX_RANKS, &o->nranks, "SLURM_NTASKS", err)))
		return rc;
	if (procid && (rc = parse_int(procid, 0, EJ_MAX_RANKS - 1, &o->rank, "SLURM_PROCID", err)))
		return rc;
	if (!nodes || !jobid)
		return HM_OK;
	if ((rc = parse_int(jobid, 0, 2147483647L, &job, "SLURM_JOB_ID", err)))
		return rc;
	if (stepid && parse_int(stepid, 0, 2147483647L, &step, "SLURM_STEP_ID", NULL) != HM_OK)
		step = 0; /* batch/extern steps have symbolic ids: they do not run emujob */
	rc = hm_hostlist_expand(nodes, &names, &n, err);
	if (rc != HM_OK) {
		hm_err_prefix(err, "SLURM_STEP_NODELIST/SLURM_JOB_NODELIST");
		return rc;
	}
	if (n > 0) {
		snprintf(o->rdv_host, sizeof(o->rdv_host), "%s", names[0]);
		/* Distinct per job and step, so concurrent steps do not collide. */
		o->rdv_port = EJ_SLURM_PORT_BASE + (int)(((long)job * 16 + step) % 20000);
	}
	hm_hostlist_free(names, n);
	return HM_OK;
}

/* Model defaults: explicit --compute/--bytes win over the catalogue. */
static hm_rc_t apply_model(ej_opts_t *o, bool have_compute, bool have_bytes, hm_err_t *err)
{
	const hm_model_t *m;

	if (!o->model[0])
		return o->bytes_scale == 1.0
			   ? HM_OK
			   : hm_err_set(err, HM_ERR_INVAL,
					"--bytes-scale applies to a --model's bytes; with --bytes, "
					"give the size itself");
	m = hm_catalogue_find(o->model);
	if (!m)
		return hm_err_set(err, HM_ERR_NOTFOUND, "--model: unknown model '%s'; accepted: %s",
				  o->model, hm_catalogue_names());
	if (!have_compute)
		o->compute_s = m->compute_s * o->scale;
	if (!have_bytes)
		o->bytes = m->params * m->bytes_per_param * o->scale * o->bytes_scale;
	if (o->bytes > EJ_MAX_BYTES)
		return hm_err_set(err, HM_ERR_RANGE,
				  "--model %s: %.3g bytes per iteration exceeds %.0g; use --scale "
				  "(e.g. --scale 0.01) or --bytes",
				  o->model, o->bytes, EJ_MAX_BYTES);
	return HM_OK;
}

hm_rc_t ej_opts_parse(int argc, char **argv, ej_opts_t *o, bool *help, hm_err_t *err)
{
	bool have_compute = false, have_bytes = false, have_rdv = false;
	hm_rc_t rc = HM_OK;
	int c;

	memset(o, 0, sizeof(*o));
	o->nranks = 1;
	o->scale = 1.0;
	o->bytes_scale = 1.0;
	o->compute_s = 0.1;
	o->bytes = 4e6;
	o->iterations = 20;
	o->warmup = 2;
	o->timeout_s = 30;
	o->listen_fd = -1;
	*help = false;
	if ((rc = slurm_defaults(o, err)))
		return rc;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_LOCAL:
			rc = parse_int(optarg, 1, 64, &o->local, "--local", err);
			break;
		case OPT_RANKS:
			rc = parse_int(optarg, 1, EJ_MAX_RANKS, &o->nranks, "--ranks", err);
			break;
		case OPT_RANK:
			rc = parse_int(optarg, 0, EJ_MAX_RANKS - 1, &o->rank, "--rank", err);
			break;
		case OPT_RDV:
			rc = parse_hostport(optarg, o, err);
			have_rdv = true;
			break;
		case OPT_MODEL:
			snprintf(o->model, sizeof(o->model), "%s", optarg);
			break;
		case OPT_SCALE:
			rc = hm_parse_double(optarg, 1e-6, 1e3, &o->scale, "--scale", err);
			break;
		case OPT_BYTES_SCALE:
			rc = hm_parse_double(optarg, 1e-9, 1e3, &o->bytes_scale, "--bytes-scale",
					     err);
			break;
		case OPT_COMPUTE:
			rc = hm_parse_duration_s(optarg, 0, 3600, &o->compute_s, "--compute", err);
			have_compute = true;
			break;
		case OPT_COMPUTE_MODE:
			if (strcmp(optarg, "sleep") == 0)
				o->compute_mode = EJ_COMPUTE_SLEEP;
			else if (strcmp(optarg, "busy") == 0)
				o->compute_mode = EJ_COMPUTE_BUSY;
			else
				rc = hm_err_set(err, HM_ERR_PARSE,
						"--compute-mode: '%s' is not a mode; accepted: "
						"sleep, busy",
						optarg);
			break;
		case OPT_JITTER:
			rc = hm_parse_fraction(optarg, &o->jitter, "--compute-jitter", err);
			if (rc == HM_OK && o->jitter > 0.5)
				rc = hm_err_set(
				    err, HM_ERR_RANGE,
				    "--compute-jitter: %g is above 0.5; accepted: [0, 0.5]",
				    o->jitter);
			break;
		case OPT_BYTES:
			rc = hm_parse_bytes(optarg, 4, EJ_MAX_BYTES, &o->bytes, "--bytes", err);
			have_bytes = true;
			break;
		case OPT_ITERS:
			rc = parse_int(optarg, 1, 10000000, &o->iterations, "--iterations", err);
			break;
		case OPT_WARMUP:
			rc = parse_int(optarg, 0, 1000000, &o->warmup, "--warmup", err);
			break;
		case OPT_TCP_CC:
			if (!*optarg || strlen(optarg) >= sizeof(o->tcp_cc))
				rc = hm_err_set(err, HM_ERR_PARSE,
						"--tcp-cc: '%s' is not a congestion control name "
						"(e.g. cubic, reno, bbr)",
						optarg);
			else
				snprintf(o->tcp_cc, sizeof(o->tcp_cc), "%s", optarg);
			break;
		case OPT_TIMEOUT:
			rc = hm_parse_duration_s(optarg, 0.1, 86400, &o->timeout_s, "--timeout",
						 err);
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_QUIET:
			o->quiet = true;
			break;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_HELP:
			*help = true;
			return HM_OK;
		case OPT_STOP_FILE:
			if (!*optarg || strlen(optarg) >= sizeof(o->stop_file))
				rc = hm_err_set(err, HM_ERR_PARSE,
						"--stop-file: '%.64s' is not a path of 1-%zu bytes",
						optarg, sizeof(o->stop_file) - 1);
			else
				snprintf(o->stop_file, sizeof(o->stop_file), "%s", optarg);
			break;
		default:
			return hm_err_set(err, HM_ERR_PARSE,
					  "unknown or incomplete option '%s'; see --help",
					  argv[optind - 1]);
		}
		if (rc != HM_OK)
			return rc;
	}
	if (optind < argc)
		return hm_err_set(err, HM_ERR_PARSE, "unexpected argument '%s'; see --help",
				  argv[optind]);
	if ((rc = apply_model(o, have_compute, have_bytes, err)))
		return rc;
	if (o->local > 0) {
		if (have_rdv)
			return hm_err_set(err, HM_ERR_INVAL,
					  "--local and --rendezvous exclude each other (--local "
					  "picks a loopback rendezvous itself)");
		o->nranks = o->local;
		o->rank = 0;
		snprintf(o->rdv_host, sizeof(o->rdv_host), "127.0.0.1");
		return HM_OK;
	}
	if (o->rank >= o->nranks)
		return hm_err_set(err, HM_ERR_RANGE, "--rank %d is not below --ranks %d", o->rank,
				  o->nranks);
	if (o->nranks > 1 && !o->rdv_host[0])
		return hm_err_set(err, HM_ERR_INVAL,
				  "%d ranks need --rendezvous HOST:PORT (or --local N, or srun "
				  "with SLURM_STEP_NODELIST)",
				  o->nranks);
	return HM_OK;
}
