/*
 * hm_workload_csv.c - the trace CSV loader (format: docs/workloads.md).
 *
 * Strict: every error names file:line, the column, the bad value and what is
 * accepted. Lines are capped (HM_CSV_LINE_MAX) so a garbage file cannot make
 * the loader allocate without bound; NUL and control bytes are refused.
 */
#include "hm_hostlist.h"
#include "hm_job.h"
#include "hm_job_int.h"
#include "hm_parse.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HM_CSV_LINE_MAX   65536
#define HM_CSV_MAX_FIELDS 64
#define HM_MAX_JOB_GPUS   1000000L

enum col {
	C_ARRIVAL,
	C_GPUS,
	C_MODEL,
	C_COMPUTE,
	C_COMM,
	C_OVERLAP,
	C_ITERS,
	C_DURATION,
	C_NAME,
	C_NODES,
	C__COUNT
};

static const char *const col_names[C__COUNT] = {
    [C_ARRIVAL] = "arrival_s", [C_GPUS] = "gpus",           [C_MODEL] = "model",
    [C_COMPUTE] = "compute_s", [C_COMM] = "comm_bytes",     [C_OVERLAP] = "overlap",
    [C_ITERS] = "iterations",  [C_DURATION] = "duration_s", [C_NAME] = "name",
    [C_NODES] = "nodes",
};

#define KNOWN_COLUMNS                                                                              \
	"arrival_s, gpus, model, compute_s, comm_bytes, overlap, iterations, duration_s, name, "   \
	"nodes"
#define REQUIRED_COLUMNS                                                                           \
	"arrival_s, gpus, model (or compute_s and comm_bytes), iterations (or duration_s)"

typedef struct {
	FILE *f;
	const char *fname;
	long lineno;
	char *buf;
	int col_of_field[HM_CSV_MAX_FIELDS]; /* header position -> enum col */
	int field_of_col[C__COUNT];          /* enum col -> header position, -1 absent */
	int nfields;
	hm_rc_t read_rc; /* why read_line failed */
} csv_t;

/* One line without its end-of-line into buf. 1: a line, 0: end of file, < 0: error set. */
static int read_line(csv_t *c, hm_err_t *err)
{
	size_t len = 0;
	int ch;

	c->lineno++;
	while ((ch = getc(c->f)) != EOF && ch != '\n') {
		if (ch == '\0') {
			c->read_rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%ld: NUL byte at column %zu (not a text file?)",
						c->fname, c->lineno, len + 1);
			return -1;
		}
		if (len + 1 >= HM_CSV_LINE_MAX) {
			c->read_rc =
			    hm_err_set(err, HM_ERR_PARSE, "%s:%ld: line longer than %d bytes",
				       c->fname, c->lineno, HM_CSV_LINE_MAX - 1);
			return -1;
		}
		c->buf[len++] = (char)ch;
	}
	if (ferror(c->f)) {
		c->read_rc = hm_err_set(err, HM_ERR_IO, "%s:%ld: read error: %s", c->fname,
					c->lineno, strerror(errno));
		return -1;
	}
	if (ch == EOF && len == 0)
		return 0;
	if (len && c->buf[len - 1] == '\r')
		len--;
	c->buf[len] = '\0';
	return 1;
}

/* Blank or '#' comment line. */
static bool skip_line(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '\0' || *s == '#';
}

/*
 * Split a line in place at commas outside double quotes and square brackets
 * (so "n[01-04,07]" stays one field). Quoted fields use "" for a quote.
 * Returns the field count or -1 with err set.
 */
static int split_fields(csv_t *c, char *line, char **fields, hm_err_t *err)
{
	int n = 0;
	char *p = line;

	for (;;) {
		char *start, *w;
		int depth = 0;

		if (n == HM_CSV_MAX_FIELDS) {
			hm_err_set(err, HM_ERR_PARSE, "%s:%ld: more than %d fields", c->fname,
				   c->lineno, HM_CSV_MAX_FIELDS);
			return -1;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		start = w = p;
		if (*p == '"') {
			p++;
			for (;;) {
				if (*p == '\0') {
					hm_err_set(err, HM_ERR_PARSE,
						   "%s:%ld: field %d: unterminated quote", c->fname,
						   c->lineno, n + 1);
					return -1;
				}
				if (*p == '"' && p[1] == '"') {
					*w++ = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					*w++ = *p++;
				}
			}
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p != ',' && *p != '\0') {
				hm_err_set(err, HM_ERR_PARSE,
					   "%s:%ld: field %d: text after the closing quote",
					   c->fname, c->lineno, n + 1);
				return -1;
			}
		} else {
			for (; *p && (*p != ',' || depth > 0); p++) {
				depth += *p == '[';
				depth -= *p == ']' && depth > 0;
			}
			w = p;
			while (w > start && (w[-1] == ' ' || w[-1] == '\t'))
				w--;
		}
		fields[n++] = start;
		if (*p == '\0') {
			*w = '\0';
			return n;
		}
		*w = '\0';
		p++; /* past the comma (w <= p, so this is safe after the write) */
	}
}

/* Refuse control bytes (and any non-ASCII byte outside `name`) before parsing. */
static hm_rc_t check_bytes(csv_t *c, int col, const char *v, hm_err_t *err)
{
	char q[96];

	for (const unsigned char *s = (const unsigned char *)v; *s; s++) {
		bool bad = *s < 0x20 || *s == 0x7f || *s >= 0x80;

		if (col == C_NAME)
			bad = bad || *s == ',' || *s == '"';
		if (bad)
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%ld: column '%s': value '%s' has byte 0x%02x; accepted: "
			    "printable ASCII%s",
			    c->fname, c->lineno, col_names[col], hm_job_quote(v, q, sizeof(q)), *s,
			    col == C_NAME ? " without ',' or '\"'" : "");
	}
	return HM_OK;
}

static hm_rc_t parse_header(csv_t *c, hm_err_t *err)
{
	char *fields[HM_CSV_MAX_FIELDS], q[96];
	char *line = c->buf;
	int n;

	/* A UTF-8 byte order mark from spreadsheet exports. */
	if ((unsigned char)line[0] == 0xef && (unsigned char)line[1] == 0xbb &&
	    (unsigned char)line[2] == 0xbf)
		line += 3;
	n = split_fields(c, line, fields, err);
	if (n < 0)
		return HM_ERR_PARSE;
	for (int i = 0; i < C__COUNT; i++)
		c->field_of_col[i] = -1;
	for (int i = 0; i < n; i++) {
		int col = -1;

		for (int k = 0; k < C__COUNT; k++)
			if (strcasecmp(fields[i], col_names[k]) == 0)
				col = k;
		if (col < 0)
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%ld: unknown column '%s'; known columns: " KNOWN_COLUMNS, c->fname,
			    c->lineno, hm_job_quote(fields[i], q, sizeof(q)));
		if (c->field_of_col[col] >= 0)
			return hm_err_set(err, HM_ERR_PARSE, "%s:%ld: column '%s' appears twice",
					  c->fname, c->lineno, col_names[col]);
		c->field_of_col[col] = i;
		c->col_of_field[i] = col;
	}
	c->nfields = n;
	for (int k = C_ARRIVAL; k <= C_GPUS; k++)
		if (c->field_of_col[k] < 0)
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%ld: missing column '%s'; required: " REQUIRED_COLUMNS, c->fname,
			    c->lineno, col_names[k]);
	if (c->field_of_col[C_MODEL] < 0 &&
	    (c->field_of_col[C_COMPUTE] < 0 || c->field_of_col[C_COMM] < 0)) {
		const char *miss = c->field_of_col[C_COMPUTE] >= 0 ? "comm_bytes"
				   : c->field_of_col[C_COMM] >= 0  ? "compute_s"
								   : "model";
		return hm_err_set(err, HM_ERR_PARSE,
				  "%s:%ld: missing column '%s'; required: " REQUIRED_COLUMNS,
				  c->fname, c->lineno, miss);
	}
	if (c->field_of_col[C_ITERS] < 0 && c->field_of_col[C_DURATION] < 0)
		return hm_err_set(err, HM_ERR_PARSE,
				  "%s:%ld: missing column 'iterations' (or 'duration_s'); "
				  "required: " REQUIRED_COLUMNS,
				  c->fname, c->lineno);
	return HM_OK;
}

/* Field of a column in the current row, "" when the column is absent. */
static const char *cell(const csv_t *c, char **fields, int col)
{
	return c->field_of_col[col] >= 0 ? fields[c->field_of_col[col]] : "";
}

static hm_rc_t parse_profile(const csv_t *c, char **fields, hm_job_t *job, hm_err_t *err)
{
	const char *model = cell(c, fields, C_MODEL), *comp = cell(c, fields, C_COMPUTE);
	const char *comm = cell(c, fields, C_COMM), *ovl = cell(c, fields, C_OVERLAP);
	hm_profile_t *p = &job->profile;
	double bytes = 0, overlap = 0;
	hm_rc_t rc;

	if (*model && (*comp || *comm))
		return hm_err_set(err, HM_ERR_PARSE,
				  "both model '%s' and compute_s/comm_bytes given; accepted: "
				  "either a catalogue model or compute_s and comm_bytes",
				  model);
	if (*ovl && (rc = hm_parse_fraction(ovl, &overlap, "overlap", err)) != HM_OK)
		return rc;
	if (!*model && c->field_of_col[C_COMPUTE] < 0)
		return hm_err_set(err, HM_ERR_PARSE, "model: empty; accepted: %s",
				  hm_catalogue_names());
	if (*model) {
		rc = hm_profile_from_model(model, p, err);
		if (rc != HM_OK)
			return rc;
	} else {
		if (!*comp || !*comm)
			return hm_err_set(err, HM_ERR_PARSE,
					  "column '%s' is empty; a row needs model, or both "
					  "compute_s and comm_bytes",
					  !*comp ? "compute_s" : "comm_bytes");
		memset(p, 0, sizeof(*p));
		snprintf(p->model, sizeof(p->model), "custom");
		rc = hm_parse_duration_s(comp, 0, 1e6, &p->compute_s, "compute_s", err);
		if (rc == HM_OK)
			rc = hm_parse_bytes(comm, 0, 1e15, &bytes, "comm_bytes", err);
		if (rc != HM_OK)
			return rc;
		/* The gradient of a data-parallel job: one ring all-reduce, none if 0. */
		p->nphases = bytes > 0;
		p->phases[0].coll = HM_COLL_ALLREDUCE_RING;
		p->phases[0].bytes = bytes;
	}
	for (int i = 0; i < p->nphases; i++)
		p->phases[i].overlap = overlap;
	return HM_OK;
}

static hm_rc_t parse_row(csv_t *c, char **fields, int row, hm_job_t *job, hm_err_t *err)
{
	const char *it = cell(c, fields, C_ITERS), *dur = cell(c, fields, C_DURATION);
	const char *name = cell(c, fields, C_NAME), *nodes = cell(c, fields, C_NODES);
	long gpus = 0;
	hm_rc_t rc;

	memset(job, 0, sizeof(*job));
	for (int i = 0; i < c->nfields; i++) {
		rc = check_bytes(c, c->col_of_field[i], fields[i], err);
		if (rc != HM_OK)
			return rc;
	}
	rc = hm_parse_duration_s(cell(c, fields, C_ARRIVAL), 0, 1e9, &job->arrival_s, "arrival_s",
				 err);
	if (rc == HM_OK)
		rc = hm_parse_long(cell(c, fields, C_GPUS), 1, HM_MAX_JOB_GPUS, &gpus, "gpus", err);
	if (rc != HM_OK)
		goto prefix;
	job->gpus = (int)gpus;
	rc = parse_profile(c, fields, job, err);
	if (rc != HM_OK)
		goto prefix;
	if (!!*it == !!*dur)
		return hm_err_set(err, HM_ERR_PARSE,
				  "%s:%ld: give exactly one of iterations and duration_s (got %s)",
				  c->fname, c->lineno, *it ? "both" : "neither");
	if (*it)
		rc = hm_parse_double(it, 1, 1e12, &job->iterations, "iterations", err);
	else
		rc = hm_parse_duration_s(dur, 1e-6, 1e9, &job->duration_s, "duration_s", err);
	if (rc != HM_OK)
		goto prefix;
	if (strlen(name) >= HM_NAME_MAX)
		return hm_err_set(
		    err, HM_ERR_PARSE,
		    "%s:%ld: column 'name': '%.20s...' is %zu bytes; accepted: up to %d", c->fname,
		    c->lineno, name, strlen(name), HM_NAME_MAX - 1);
	if (*name)
		snprintf(job->name, sizeof(job->name), "%s", name);
	else
		snprintf(job->name, sizeof(job->name), "job%d", row);
	if (*nodes) {
		char **names = NULL;
		int n = 0;

		rc = hm_hostlist_expand(nodes, &names, &n, err);
		hm_hostlist_free(names, n);
		if (rc != HM_OK) {
			hm_err_prefix(err, "nodes");
			goto prefix;
		}
		if (n > job->gpus)
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%ld: column 'nodes': '%s' names %d hosts for %ld GPUs; "
			    "accepted: at most one host per GPU",
			    c->fname, c->lineno, nodes, n, gpus);
		job->nodes = strdup(nodes);
		if (!job->nodes)
			return hm_err_set(err, HM_ERR_NOMEM, "%s:%ld: out of memory", c->fname,
					  c->lineno);
	}
	return HM_OK;
prefix:
	hm_err_prefix(err, "%s:%ld", c->fname, c->lineno);
	return rc == HM_ERR_NOMEM ? rc : HM_ERR_PARSE;
}

hm_rc_t hm_workload_load_csv(FILE *f, const char *fname, hm_workload_t *out, hm_err_t *err)
{
	csv_t c = {.f = f, .fname = fname ? fname : "(trace)"};
	char *fields[HM_CSV_MAX_FIELDS];
	int cap = 0, r;
	bool header = false;
	hm_rc_t rc = HM_OK;

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_workload_load_csv: NULL output");
	memset(out, 0, sizeof(*out));
	if (!f)
		return hm_err_set(err, HM_ERR_INVAL, "%s: no file", c.fname);
	c.buf = malloc(HM_CSV_LINE_MAX);
	if (!c.buf)
		return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", c.fname);
	while ((r = read_line(&c, err)) > 0) {
		hm_job_t job;
		int n;

		if (skip_line(c.buf))
			continue;
		if (!header) {
			rc = parse_header(&c, err);
			if (rc != HM_OK)
				goto out;
			header = true;
			continue;
		}
		n = split_fields(&c, c.buf, fields, err);
		if (n < 0) {
			rc = HM_ERR_PARSE;
			goto out;
		}
		if (n != c.nfields) {
			rc = hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%ld: %d fields but the header has %d (truncated or extra "
			    "field?)",
			    c.fname, c.lineno, n, c.nfields);
			goto out;
		}
		rc = parse_row(&c, fields, out->njobs, &job, err);
		if (rc == HM_OK)
			rc = hm_workload_push(out, &cap, &job, err);
		if (rc != HM_OK) {
			free(job.nodes);
			goto out;
		}
	}
	if (r < 0) {
		rc = c.read_rc;
		goto out;
	}
	if (!header) {
		rc = hm_err_set(
		    err, HM_ERR_PARSE,
		    "%s: empty file; expected a header row with columns " REQUIRED_COLUMNS,
		    c.fname);
		goto out;
	}
	if (out->njobs == 0) {
		rc = hm_err_set(err, HM_ERR_PARSE, "%s: no job rows after the header", c.fname);
		goto out;
	}
	rc = hm_workload_sort(out, err);
out:
	free(c.buf);
	if (rc != HM_OK)
		hm_workload_free(out);
	return rc;
}
