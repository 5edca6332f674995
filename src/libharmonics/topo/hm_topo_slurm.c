/*
 * hm_topo_slurm.c - Slurm topology.conf (topology/tree) loader.
 *
 *   SwitchName=s0 Nodes=n[01-16] LinkSpeed=400
 *   SwitchName=top Switches=s[0-3]
 *
 * Keys are case-insensitive, '#' starts a comment, a trailing '\' continues a
 * line. A switch with Nodes= is a rack (level 0); a switch with Switches= is
 * one level above its highest child. LinkSpeed is the speed of each of that
 * switch's uplinks in Gbit/s (units accepted too: "400G", "1.6Tbps").
 */
#include "hm_topo.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_hostlist.h"
#include "hm_parse.h"
#include "hm_topo_build.h"

#define SLURM_KEYS "SwitchName, Switches, Nodes, LinkSpeed"

typedef struct {
	int line;
	int sw;         /* builder index */
	char *switches; /* hostlist of child switches, or NULL */
	char *nodes;    /* hostlist of hosts, or NULL */
} sw_def_t;

typedef struct {
	sw_def_t *v;
	int n, cap;
} defs_t;

static void defs_free(defs_t *d)
{
	for (int i = 0; i < d->n; i++) {
		free(d->v[i].switches);
		free(d->v[i].nodes);
	}
	free(d->v);
}

/* Store a value once per line: a repeated key is an error. */
static hm_rc_t set_once(char **slot, const char *key, const char *val, const char *fname, int line,
			hm_err_t *err)
{
	if (*slot)
		return hm_err_set(err, HM_ERR_PARSE, "%s:%d: %s given twice on one line", fname,
				  line, key);
	if (!*val)
		return hm_err_set(err, HM_ERR_PARSE, "%s:%d: %s has an empty value", fname, line,
				  key);
	*slot = strdup(val);
	return *slot ? HM_OK : hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
}

/* One logical line: key=value tokens separated by blanks. */
static hm_rc_t parse_line(char *text, const char *fname, int line, hm_tb_t *b, defs_t *defs,
			  double default_uplink_bps, hm_err_t *err)
{
	char *name = NULL, *switches = NULL, *nodes = NULL, *speed = NULL;
	char *save = NULL, *tok, *key, *val;
	double bps = 0;
	int idx;
	hm_rc_t rc = HM_OK;

	for (tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!strchr(tok, '=') || !hm_split_kv(tok, &key, &val)) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: '%.80s' is not Key=Value; accepted keys: %s", fname,
					line, tok, SLURM_KEYS);
			goto out;
		}
		if (strcasecmp(key, "SwitchName") == 0) {
			rc = set_once(&name, "SwitchName", val, fname, line, err);
		} else if (strcasecmp(key, "Switches") == 0) {
			rc = set_once(&switches, "Switches", val, fname, line, err);
		} else if (strcasecmp(key, "Nodes") == 0) {
			rc = set_once(&nodes, "Nodes", val, fname, line, err);
		} else if (strcasecmp(key, "LinkSpeed") == 0) {
			rc = set_once(&speed, "LinkSpeed", val, fname, line, err);
		} else if (strcasecmp(key, "BlockName") == 0 ||
			   strcasecmp(key, "BlockSizes") == 0) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: %s belongs to topology/block, which is not "
					"supported; accepted keys: %s",
					fname, line, key, SLURM_KEYS);
		} else {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: unknown key '%.80s'; accepted keys: %s", fname,
					line, key, SLURM_KEYS);
		}
		if (rc)
			goto out;
	}
	if (!name && !switches && !nodes && !speed)
		goto out; /* blank */
	if (!name) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: missing SwitchName=; every line names its switch "
				"(SwitchName=s1 Nodes=... or Switches=...)",
				fname, line);
		goto out;
	}
	if (switches && nodes) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: switch '%s' has both Nodes= and Switches=; a switch with "
				"nodes is a rack (ToR), give its parent a separate SwitchName line",
				fname, line, name);
		goto out;
	}
	if (!switches && !nodes) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: switch '%s' has neither Nodes= nor Switches=", fname, line,
				name);
		goto out;
	}
	if (speed) {
		rc = hm_parse_bandwidth_bps(speed, 1e6, 1e15, &bps, "LinkSpeed", err);
		if (rc) {
			hm_err_prefix(err, "%s:%d", fname, line);
			goto out;
		}
	}
	idx = hm_tb_switch_find(b, name);
	if (idx >= 0) {
		rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: switch '%s' already defined at line %d",
				fname, line, name, hm_tb_switch_line(b, idx));
		goto out;
	}
	rc = hm_tb_switch_add(b, name, line, &idx, err);
	if (rc) {
		hm_err_prefix(err, "%s:%d", fname, line);
		goto out;
	}
	hm_tb_switch_set_uplink(b, idx, bps > 0 ? bps : default_uplink_bps);
	if (defs->n == defs->cap) {
		int ncap = defs->cap ? defs->cap * 2 : 16;
		sw_def_t *v = realloc(defs->v, (size_t)ncap * sizeof(*v));

		if (!v) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
			goto out;
		}
		defs->v = v;
		defs->cap = ncap;
	}
	defs->v[defs->n++] = (sw_def_t){line, idx, switches, nodes};
	switches = nodes = NULL;
out:
	free(name);
	free(switches);
	free(nodes);
	free(speed);
	return rc;
}

/* Second pass: hosts under racks, child switches under parents. */
static hm_rc_t link_defs(hm_tb_t *b, const defs_t *defs, const char *fname, const hm_topo_opts_t *o,
			 hm_err_t *err)
{
	char **names = NULL;
	int n = 0, idx;
	hm_rc_t rc = HM_OK;

	for (int d = 0; d < defs->n && rc == HM_OK; d++) {
		const sw_def_t *def = &defs->v[d];
		const char *expr = def->nodes ? def->nodes : def->switches;

		rc = hm_hostlist_expand(expr, &names, &n, err);
		if (rc) {
			hm_err_prefix(err, "%s:%d: %s", fname, def->line,
				      def->nodes ? "Nodes" : "Switches");
			break;
		}
		for (int i = 0; i < n && rc == HM_OK; i++) {
			if (def->nodes) {
				idx = hm_tb_host_find(b, names[i]);
				if (idx >= 0) {
					int other = hm_tb_host_tor(b, idx);

					rc = hm_err_set(err, HM_ERR_PARSE,
							"%s:%d: node '%s' is in two racks: switch "
							"'%s' (line %d) and switch '%s'; a node "
							"belongs to exactly one leaf switch",
							fname, def->line, names[i],
							hm_tb_switch_name(b, other),
							hm_tb_switch_line(b, other),
							hm_tb_switch_name(b, def->sw));
					break;
				}
				rc = hm_tb_host_add(b, names[i], def->sw, o->gpus_per_host,
						    o->nics_per_host, o->nic_bps, &idx, err);
				if (rc)
					hm_err_prefix(err, "%s:%d", fname, def->line);
				continue;
			}
			idx = hm_tb_switch_find(b, names[i]);
			if (idx < 0) {
				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%d: switch '%s' listed in Switches= of '%s' is "
						"not defined; every switch needs its own "
						"SwitchName= line",
						fname, def->line, names[i],
						hm_tb_switch_name(b, def->sw));
				break;
			}
			if (idx == def->sw) {
				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%d: switch '%s' lists itself in Switches= (a "
						"loop)",
						fname, def->line, names[i]);
				break;
			}
			rc = hm_tb_parent_add(b, idx, def->sw, err);
		}
		hm_hostlist_free(names, n);
		names = NULL;
		n = 0;
	}
	return rc;
}

hm_rc_t hm_topo_load_slurm(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			   hm_err_t *err)
{
	hm_topo_opts_t o;
	hm_tb_t *b = NULL;
	defs_t defs = {0};
	char *buf = NULL, *line, *logical = NULL;
	size_t cap = 0, llen = 0;
	int lineno = 0, start = 0;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	if (!fname)
		fname = "topology.conf";
	if (!f)
		return hm_err_set(err, HM_ERR_INVAL, "%s: no file", fname);
	hm_topo_opts_resolve(opts, &o);
	b = hm_tb_new(fname);
	if (!b)
		return hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
	hm_tb_set_default_uplink(b, o.uplink_bps);
	for (;;) {
		char *hash;
		size_t len;
		bool cont;

		rc = hm_topo_read_line(f, fname, lineno + 1, &buf, &cap, &line, err);
		if (rc || !line)
			break;
		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		len = strlen(line);
		cont = len > 0 && line[len - 1] == '\\';
		if (cont)
			line[--len] = '\0';
		/* Join continued lines into one logical line, numbered by its first. */
		if (llen + len + 2 > HM_TOPO_MAX_LINE) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: continued line longer than %d bytes", fname,
					start ? start : lineno, HM_TOPO_MAX_LINE);
			break;
		}
		{
			char *n = realloc(logical, llen + len + 2);

			if (!n) {
				rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
				break;
			}
			logical = n;
		}
		if (!start)
			start = lineno;
		memcpy(logical + llen, line, len);
		llen += len;
		logical[llen++] = ' ';
		logical[llen] = '\0';
		if (cont)
			continue;
		rc = parse_line(logical, fname, start, b, &defs, o.uplink_bps, err);
		if (rc)
			break;
		llen = 0;
		start = 0;
	}
	if (rc == HM_OK && llen > 0)
		rc = parse_line(logical, fname, start, b, &defs, o.uplink_bps, err);
	if (rc)
		goto out;
	if (defs.n == 0) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: no switches defined (empty topology.conf?); expected lines "
				"like SwitchName=s1 Nodes=n[01-16]",
				fname, lineno);
		goto out;
	}
	rc = link_defs(b, &defs, fname, &o, err);
	if (rc)
		goto out;
	rc = hm_tb_finish(b, out, err);
out:
	defs_free(&defs);
	hm_tb_free(b);
	free(buf);
	free(logical);
	return rc;
}
