/*
 * hm_topo_csv.c - host CSV loader, its column spec, and hm_topo_load_file.
 *
 *   host,tor,agg,core
 *   n001,tor1,agg1,core1
 *   n001b,tor1,agg2,core1     <- a ToR under two aggs: two parents (ECMP)
 *
 * One row per host; the header names the columns (defaults host, tor, agg,
 * core; others are ignored). agg and core are optional: without them the
 * topology has fewer levels. Plain comma-separated fields (no quoting), blank
 * lines and lines starting with '#' are skipped.
 */
#include "hm_topo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_parse.h"
#include "hm_topo_build.h"

#define CSV_ROLES      "host, tor, agg, core"
#define CSV_MAX_FIELDS 256

enum { R_HOST, R_TOR, R_AGG, R_CORE, R_COUNT };
static const char *const role_names[R_COUNT] = {"host", "tor", "agg", "core"};

/* Split a line at commas in place; fields are trimmed. Returns the count or -1 if too many. */
static int split_fields(char *line, char **fields)
{
	int n = 0;
	char *p = line;

	for (;;) {
		char *comma = strchr(p, ',');

		if (n == CSV_MAX_FIELDS)
			return -1;
		if (comma)
			*comma = '\0';
		fields[n++] = hm_trim(p);
		if (!comma)
			return n;
		p = comma + 1;
	}
}

static bool skip_line(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	return *line == '\0' || *line == '#';
}

/* Switch roles seen so far, to reject a name used as both a ToR and an agg. */
typedef struct {
	int *role, *line;
	int cap;
} roles_t;

static hm_rc_t get_switch(hm_tb_t *b, roles_t *r, const char *name, int role, const char *fname,
			  int line, int *idx, hm_err_t *err)
{
	hm_rc_t rc;

	*idx = hm_tb_switch_find(b, name);
	if (*idx >= 0) {
		if (r->role[*idx] != role)
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%d: switch '%s' is used as %s here but as %s at line %d; a "
			    "switch has one role",
			    fname, line, name, role_names[role], role_names[r->role[*idx]],
			    r->line[*idx]);
		return HM_OK;
	}
	rc = hm_tb_switch_add(b, name, line, idx, err);
	if (rc) {
		hm_err_prefix(err, "%s:%d", fname, line);
		return rc;
	}
	if (*idx >= r->cap) {
		int ncap = r->cap ? r->cap * 2 : 64;
		int *nr = realloc(r->role, (size_t)ncap * sizeof(int));

		if (nr)
			r->role = nr;
		int *nl = realloc(r->line, (size_t)ncap * sizeof(int));

		if (nl)
			r->line = nl;
		if (!nr || !nl)
			return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
		r->cap = ncap;
	}
	r->role[*idx] = role;
	r->line[*idx] = line;
	return HM_OK;
}

/* Column of each role from the header; -1 for an optional role not present. */
static hm_rc_t map_header(char **fields, int nf, const hm_topo_opts_t *given,
			  const hm_topo_opts_t *o, const char *fname, int line, int *col,
			  hm_err_t *err)
{
	const char *want[R_COUNT] = {o->col_host, o->col_tor, o->col_agg, o->col_core};
	bool required[R_COUNT] = {true, true, given && given->col_agg, given && given->col_core};

	for (int i = 0; i < nf; i++)
		for (int j = 0; j < i; j++)
			if (strcasecmp(fields[i], fields[j]) == 0 && *fields[i])
				return hm_err_set(err, HM_ERR_PARSE,
						  "%s:%d: column '%s' appears twice in the header",
						  fname, line, fields[i]);
	for (int r = 0; r < R_COUNT; r++) {
		col[r] = -1;
		for (int i = 0; i < nf; i++)
			if (strcasecmp(fields[i], want[r]) == 0)
				col[r] = i;
		if (col[r] < 0 && required[r])
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s:%d: the header has no '%s' column (for the %s); set "
					  "the names with a column spec like "
					  "host=ip,tor=ASW,agg=PSW,core=DSW",
					  fname, line, want[r], role_names[r]);
	}
	return HM_OK;
}

/* One data row: host under its ToR, ToR under agg, agg under core. */
static hm_rc_t add_row(hm_tb_t *b, roles_t *roles, char **fields, const int *col,
		       const hm_topo_opts_t *o, const char *fname, int line, int **host_line,
		       int *host_cap, hm_err_t *err)
{
	int sw[R_COUNT] = {-1, -1, -1, -1}, idx, prev = -1;
	hm_rc_t rc;

	for (int r = R_TOR; r < R_COUNT; r++) {
		if (col[r] < 0)
			continue;
		if (!*fields[col[r]])
			return hm_err_set(err, HM_ERR_PARSE, "%s:%d: empty %s (column '%s')", fname,
					  line, role_names[r],
					  r == R_TOR   ? o->col_tor
					  : r == R_AGG ? o->col_agg
						       : o->col_core);
		rc = get_switch(b, roles, fields[col[r]], r, fname, line, &sw[r], err);
		if (rc)
			return rc;
		if (prev >= 0) {
			rc = hm_tb_parent_add(b, prev, sw[r], err);
			if (rc)
				return rc;
		}
		prev = sw[r];
	}
	if (!*fields[col[R_HOST]])
		return hm_err_set(err, HM_ERR_PARSE, "%s:%d: empty host name (column '%s')", fname,
				  line, o->col_host);
	idx = hm_tb_host_find(b, fields[col[R_HOST]]);
	if (idx >= 0)
		return hm_err_set(err, HM_ERR_PARSE, "%s:%d: host '%s' already listed at line %d",
				  fname, line, fields[col[R_HOST]], (*host_line)[idx]);
	rc = hm_tb_host_add(b, fields[col[R_HOST]], sw[R_TOR], o->gpus_per_host, o->nics_per_host,
			    o->nic_bps, &idx, err);
	if (rc) {
		hm_err_prefix(err, "%s:%d", fname, line);
		return rc;
	}
	if (idx >= *host_cap) {
		int ncap = *host_cap ? *host_cap * 2 : 256;
		int *n = realloc(*host_line, (size_t)ncap * sizeof(int));

		if (!n)
			return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
		*host_line = n;
		*host_cap = ncap;
	}
	(*host_line)[idx] = line;
	return HM_OK;
}

hm_rc_t hm_topo_load_csv(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			 hm_err_t *err)
{
	hm_topo_opts_t o;
	hm_tb_t *b = NULL;
	roles_t roles = {0};
	char *buf = NULL, *line;
	char **fields = NULL;
	size_t cap = 0;
	int lineno = 0, nhdr = -1, nrows = 0, col[R_COUNT], host_cap = 0, *host_line = NULL;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	if (!fname)
		fname = "hosts.csv";
	if (!f)
		return hm_err_set(err, HM_ERR_INVAL, "%s: no file", fname);
	hm_topo_opts_resolve(opts, &o);
	b = hm_tb_new(fname);
	fields = malloc(CSV_MAX_FIELDS * sizeof(*fields));
	if (!b || !fields) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
		goto out;
	}
	hm_tb_set_default_uplink(b, o.uplink_bps);
	for (;;) {
		int nf;

		rc = hm_topo_read_line(f, fname, lineno + 1, &buf, &cap, &line, err);
		if (rc || !line)
			break;
		lineno++;
		if (skip_line(line))
			continue;
		if (strchr(line, '"')) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: quoted fields are not supported; names must not "
					"contain commas or quotes",
					fname, lineno);
			break;
		}
		nf = split_fields(line, fields);
		if (nf < 0) {
			rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: more than %d fields", fname,
					lineno, CSV_MAX_FIELDS);
			break;
		}
		if (nhdr < 0) {
			rc = map_header(fields, nf, opts, &o, fname, lineno, col, err);
			if (rc)
				break;
			nhdr = nf;
			continue;
		}
		if (nf != nhdr) {
			rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: %d fields, the header has %d",
					fname, lineno, nf, nhdr);
			break;
		}
		rc = add_row(b, &roles, fields, col, &o, fname, lineno, &host_line, &host_cap, err);
		if (rc)
			break;
		nrows++;
	}
	if (rc)
		goto out;
	if (nhdr < 0) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: empty file, expected a header like %s,%s,%s,%s", fname,
				lineno, o.col_host, o.col_tor, o.col_agg, o.col_core);
		goto out;
	}
	if (nrows == 0) {
		rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: no host rows after the header", fname,
				lineno);
		goto out;
	}
	rc = hm_tb_finish(b, out, err);
out:
	hm_tb_free(b);
	free(buf);
	free(fields);
	free(roles.role);
	free(roles.line);
	free(host_line);
	return rc;
}

hm_rc_t hm_topo_csv_columns_parse(char *buf, hm_topo_opts_t *opts, hm_err_t *err)
{
	char *save = NULL, *tok, *key, *val;
	const char **slot[R_COUNT] = {&opts->col_host, &opts->col_tor, &opts->col_agg,
				      &opts->col_core};
	bool seen[R_COUNT] = {false};

	if (!buf || !opts)
		return hm_err_set(err, HM_ERR_INVAL, "csv columns: NULL argument");
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int r;

		if (!hm_split_kv(tok, &key, &val) || !*val)
			return hm_err_set(err, HM_ERR_PARSE,
					  "csv columns: '%s' is not role=column; roles: %s",
					  hm_trim(tok), CSV_ROLES);
		for (r = 0; r < R_COUNT; r++)
			if (strcasecmp(key, role_names[r]) == 0)
				break;
		if (r == R_COUNT)
			return hm_err_set(err, HM_ERR_PARSE,
					  "csv columns: unknown role '%s'; accepted roles: %s", key,
					  CSV_ROLES);
		if (seen[r])
			return hm_err_set(err, HM_ERR_PARSE, "csv columns: role '%s' given twice",
					  key);
		seen[r] = true;
		*slot[r] = val;
	}
	return HM_OK;
}

hm_rc_t hm_topo_load_file(const char *path, const hm_topo_opts_t *opts, hm_topo_t **out,
			  hm_err_t *err)
{
	FILE *f = NULL;
	hm_topo_opts_t o;
	char *buf = NULL, *line = NULL;
	size_t cap = 0;
	int lineno = 0;
	hm_rc_t rc = HM_OK;
	bool slurm = false, yaml = false;

	*out = NULL;
	if (!path)
		return hm_err_set(err, HM_ERR_INVAL, "topology: no file name");
	hm_topo_opts_resolve(opts, &o);
	f = fopen(path, "r");
	if (!f)
		return hm_err_set(err, HM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
	/* The first significant line decides the format. */
	for (;;) {
		rc = hm_topo_read_line(f, path, lineno + 1, &buf, &cap, &line, err);
		if (rc)
			goto out;
		if (!line) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: empty file: no switches or hosts (expected a Slurm "
					"topology.conf or a CSV with a header)",
					path, lineno);
			goto out;
		}
		lineno++;
		if (!skip_line(line))
			break;
	}
	for (char *p = line; *p && !slurm; p++)
		slurm = strncasecmp(p, "SwitchName=", 11) == 0 ||
			strncasecmp(p, "BlockName=", 10) == 0 ||
			strncasecmp(p, "BlockSizes=", 11) == 0;
	yaml = !slurm && (strncmp(line, "---", 3) == 0 || strncmp(line, "- ", 2) == 0 ||
			  strncmp(hm_trim(line), "topology:", 9) == 0);
	if (!slurm && !yaml) {
		char *fields[CSV_MAX_FIELDS], shown[64];
		int nf;

		snprintf(shown, sizeof(shown), "%s", line);
		nf = strchr(line, '"') ? -1 : split_fields(line, fields);
		bool has_host = false;

		for (int i = 0; i < nf; i++)
			has_host = has_host || strcasecmp(fields[i], o.col_host) == 0;
		if (!has_host) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: not a Slurm topology.conf (no SwitchName= or "
					"BlockName=), topology.yaml nor a CSV header with a '%s' "
					"column: '%s'",
					path, lineno, o.col_host, shown);
			goto out;
		}
	}
	rewind(f);
	rc = slurm  ? hm_topo_load_slurm(f, path, opts, out, err)
	     : yaml ? hm_topo_load_yaml(f, path, opts, out, err)
		    : hm_topo_load_csv(f, path, opts, out, err);
out:
	free(buf);
	if (f)
		fclose(f);
	return rc;
}
