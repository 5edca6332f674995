/*
 * hm_topo_slurm.c - Slurm topology.conf loader: topology/tree and
 * topology/block (23.11+) lines, one plugin's per file.
 *
 *   SwitchName=s0 Nodes=n[01-16] LinkSpeed=400      BlockName=b1 Nodes=n[01-16]
 *   SwitchName=top Switches=s[0-3]                  BlockSizes=16,64
 *
 * Keys are case-insensitive, '#' starts a comment, a trailing '\' continues a
 * line. A switch with Nodes= is a rack (level 0); a switch with Switches= is
 * one level above its highest child. LinkSpeed is the speed of each of that
 * switch's uplinks in Gbit/s (units accepted too: "400G", "1.6Tbps"). Blocks
 * are racks with aggregates above them (hm_topo_block.c).
 */
#include "hm_topo.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_hostlist.h"
#include "hm_parse.h"
#include "hm_topo_build.h"

#define SLURM_KEYS                                                                                 \
	"SwitchName, Switches, Nodes, LinkSpeed (topology/tree); BlockName, Nodes, BlockSizes "    \
	"(topology/block)"

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

/* What the lines hold: tree switches or blocks (names and values owned). */
typedef struct {
	hm_topo_swdef_t *sw;
	int nsw, capsw;
	hm_topo_blockdef_t *bl;
	int nbl, capbl;
	int sizes[16], nsizes, sizes_line;
} lines_t;

static void defs_free(defs_t *d)
{
	free(d->v);
}

static void lines_free(lines_t *l)
{
	for (int i = 0; i < l->nsw; i++) {
		free((char *)l->sw[i].name);
		free((char *)l->sw[i].switches);
		free((char *)l->sw[i].nodes);
	}
	for (int i = 0; i < l->nbl; i++) {
		free((char *)l->bl[i].name);
		free((char *)l->bl[i].nodes);
	}
	free(l->sw);
	free(l->bl);
}

/* Room for one more element of an array of elem bytes. */
static bool grow(void **v, int n, int *cap, size_t elem)
{
	void *nv;
	int ncap;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 16;
	if (!(nv = realloc(*v, (size_t)ncap * elem)))
		return false;
	*v = nv;
	*cap = ncap;
	return true;
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

/* BlockSizes=4,16: comma-separated sizes in nodes. */
static hm_rc_t parse_sizes(const char *val, const char *fname, int line, lines_t *l, hm_err_t *err)
{
	char buf[256], *save = NULL, *tok;
	hm_rc_t rc = HM_OK;

	if (l->sizes_line)
		return hm_err_set(err, HM_ERR_PARSE,
				  "%s:%d: BlockSizes given twice (first at line %d)", fname, line,
				  l->sizes_line);
	if (strlen(val) >= sizeof(buf))
		return hm_err_set(err, HM_ERR_PARSE, "%s:%d: BlockSizes too long", fname, line);
	snprintf(buf, sizeof(buf), "%s", val);
	l->sizes_line = line;
	for (tok = strtok_r(buf, ",", &save); tok && rc == HM_OK;
	     tok = strtok_r(NULL, ",", &save)) {
		long v;

		if (l->nsizes == (int)(sizeof(l->sizes) / sizeof(l->sizes[0])))
			return hm_err_set(err, HM_ERR_PARSE, "%s:%d: more than %zu BlockSizes",
					  fname, line, sizeof(l->sizes) / sizeof(l->sizes[0]));
		rc = hm_parse_long(tok, 1, 1L << 30, &v, "BlockSizes", err);
		if (rc)
			hm_err_prefix(err, "%s:%d", fname, line);
		l->sizes[l->nsizes++] = (int)v;
	}
	if (rc == HM_OK && l->nsizes == 0)
		rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: BlockSizes has no sizes", fname, line);
	return rc ? rc : hm_topo_block_sizes_check(fname, line, l->sizes, l->nsizes, err);
}

/* One logical line: key=value tokens separated by blanks. */
static hm_rc_t parse_line(char *text, const char *fname, int line, lines_t *l,
			  double default_uplink_bps, hm_err_t *err)
{
	char *name = NULL, *block = NULL, *switches = NULL, *nodes = NULL, *speed = NULL;
	char *sizes = NULL;
	char *save = NULL, *tok, *key, *val;
	double bps = 0;
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
		} else if (strcasecmp(key, "BlockName") == 0) {
			rc = set_once(&block, "BlockName", val, fname, line, err);
		} else if (strcasecmp(key, "BlockSizes") == 0) {
			rc = set_once(&sizes, "BlockSizes", val, fname, line, err);
		} else {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: unknown key '%.80s'; accepted keys: %s", fname,
					line, key, SLURM_KEYS);
		}
		if (rc)
			goto out;
	}
	if (!name && !block && !sizes && !switches && !nodes && !speed)
		goto out; /* blank */
	if ((name || switches || speed) && (block || sizes)) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: topology/tree keys (SwitchName, Switches, LinkSpeed) and "
				"topology/block keys (BlockName, BlockSizes) on one line",
				fname, line);
		goto out;
	}
	if ((name && l->nbl) || ((block || sizes) && l->nsw)) {
		rc = hm_err_set(
		    err, HM_ERR_PARSE,
		    "%s:%d: %s line in a file of %s lines (line %d); one topology plugin "
		    "reads the file: topology/tree or topology/block",
		    fname, line, name ? "a SwitchName" : "a block",
		    name ? "BlockName" : "SwitchName", name ? l->bl[0].line : l->sw[0].line);
		goto out;
	}
	if (sizes) {
		if (nodes) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: BlockSizes goes on a line of its own", fname, line);
			goto out;
		}
		rc = parse_sizes(sizes, fname, line, l, err);
		goto out;
	}
	if (block) {
		if (!grow((void **)&l->bl, l->nbl, &l->capbl, sizeof(*l->bl))) {
			rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
			goto out;
		}
		l->bl[l->nbl++] = (hm_topo_blockdef_t){line, block, nodes};
		block = nodes = NULL;
		goto out;
	}
	if (!name) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: missing SwitchName= or BlockName=; every line names its "
				"switch (SwitchName=s1 Nodes=... or Switches=...) or block",
				fname, line);
		goto out;
	}
	if (speed) {
		rc = hm_parse_bandwidth_bps(speed, 1e6, 1e15, &bps, "LinkSpeed", err);
		if (rc) {
			hm_err_prefix(err, "%s:%d", fname, line);
			goto out;
		}
	}
	if (!grow((void **)&l->sw, l->nsw, &l->capsw, sizeof(*l->sw))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
		goto out;
	}
	l->sw[l->nsw++] =
	    (hm_topo_swdef_t){line, name, switches, nodes, bps > 0 ? bps : default_uplink_bps};
	name = switches = nodes = NULL;
out:
	free(name);
	free(block);
	free(sizes);
	free(switches);
	free(nodes);
	free(speed);
	return rc;
}

/* First pass of a tree: each switch once, with Nodes= or Switches=. */
static hm_rc_t add_switches(hm_tb_t *b, const char *fname, const hm_topo_swdef_t *sw, int n,
			    defs_t *defs, hm_err_t *err)
{
	for (int i = 0; i < n; i++) {
		int idx = hm_tb_switch_find(b, sw[i].name);
		hm_rc_t rc;

		if (sw[i].switches && sw[i].nodes)
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "%s:%d: switch '%s' has both Nodes= and Switches=; a switch "
			    "with nodes is a rack (ToR), give its parent a separate "
			    "SwitchName line",
			    fname, sw[i].line, sw[i].name);
		if (!sw[i].switches && !sw[i].nodes)
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s:%d: switch '%s' has neither Nodes= nor Switches=",
					  fname, sw[i].line, sw[i].name);
		if (idx >= 0)
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s:%d: switch '%s' already defined at line %d", fname,
					  sw[i].line, sw[i].name, hm_tb_switch_line(b, idx));
		rc = hm_tb_switch_add(b, sw[i].name, sw[i].line, &idx, err);
		if (rc) {
			hm_err_prefix(err, "%s:%d", fname, sw[i].line);
			return rc;
		}
		hm_tb_switch_set_uplink(b, idx, sw[i].uplink_bps);
		defs->v[defs->n++] =
		    (sw_def_t){sw[i].line, idx, (char *)sw[i].switches, (char *)sw[i].nodes};
	}
	return HM_OK;
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

hm_rc_t hm_topo_tree_build(const char *fname, const hm_topo_swdef_t *sw, int n,
			   const hm_topo_opts_t *opts, hm_topo_t **out, hm_err_t *err)
{
	hm_topo_opts_t o;
	defs_t defs = {0};
	hm_tb_t *b;
	hm_rc_t rc;

	*out = NULL;
	hm_topo_opts_resolve(opts, &o);
	b = hm_tb_new(fname);
	defs.v = malloc((size_t)(n > 0 ? n : 1) * sizeof(*defs.v));
	if (!b || !defs.v) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
		goto out;
	}
	hm_tb_set_default_uplink(b, o.uplink_bps);
	rc = add_switches(b, fname, sw, n, &defs, err);
	if (rc == HM_OK)
		rc = link_defs(b, &defs, fname, &o, err);
	if (rc == HM_OK)
		rc = hm_tb_finish(b, out, err);
out:
	defs_free(&defs);
	hm_tb_free(b);
	return rc;
}

hm_rc_t hm_topo_load_slurm(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			   hm_err_t *err)
{
	hm_topo_opts_t o;
	lines_t l = {0};
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
		rc = parse_line(logical, fname, start, &l, o.uplink_bps, err);
		if (rc)
			break;
		llen = 0;
		start = 0;
	}
	if (rc == HM_OK && llen > 0)
		rc = parse_line(logical, fname, start, &l, o.uplink_bps, err);
	if (rc)
		goto out;
	if (l.nsw == 0 && l.nbl == 0) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: no switches or blocks defined (empty topology.conf?); "
				"expected lines like SwitchName=s1 Nodes=n[01-16]",
				fname, lineno);
		goto out;
	}
	rc = l.nsw ? hm_topo_tree_build(fname, l.sw, l.nsw, opts, out, err)
		   : hm_topo_block_build(fname, l.bl, l.nbl, l.sizes, l.nsizes, opts, out, err);
out:
	lines_free(&l);
	free(buf);
	free(logical);
	return rc;
}
