/*
 * hm_topo_yaml.c - Slurm's topology.yaml (25.05+): several named topologies,
 * each tree, block or flat; partitions pick one with Topology=.
 *
 *   - topology: topo1
 *     cluster_default: true
 *     tree:
 *       switches:
 *         - switch: s1
 *           nodes: node[01-02]
 *         - switch: top
 *           children: s1
 *   - topology: topo2
 *     block:
 *       block_sizes: [4, 16]
 *       blocks:
 *         - block: b1
 *           nodes: node[01-04]
 *
 * The schema is Slurm 25.11's data_parser (TOPOLOGY_CONF_ARRAY and below): a
 * list of topologies or a single one; "topology" first; exactly one of tree,
 * block, flat: true; a list where Slurm takes one item may also be that item.
 * Unknown keys are errors here (strict), with the accepted ones named.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_parse.h"
#include "hm_topo.h"
#include "hm_topo_build.h"
#include "hm_yaml.h"

#define TOPO_KEYS   "topology, cluster_default, tree, block, flat"
#define TREE_KEYS   "switches"
#define SWITCH_KEYS "switch, children, nodes"
#define BLOCK_KEYS  "block_sizes, blocks"
#define BLK_KEYS    "block, nodes"

typedef struct {
	const char *fname;
	hm_err_t *err;
} ctx_t;

/* Every key of map is one of the accepted (comma-separated) names. */
static hm_rc_t keys_known(ctx_t *c, const hm_yaml_t *map, const char *what, const char *accepted)
{
	for (int i = 0; i < map->n; i++)
		if (!hm_name_in_list(map->keys[i], accepted))
			return hm_err_set(c->err, HM_ERR_PARSE,
					  "%s:%d: unknown key '%.60s' in %s; accepted: %s",
					  c->fname, map->key_lines[i], map->keys[i], what, accepted);
	return HM_OK;
}

static hm_rc_t want(ctx_t *c, const hm_yaml_t *y, hm_yaml_kind_t kind, const char *what)
{
	if (y->kind == kind && !(kind == HM_YAML_SCALAR && !y->quoted && !*y->str))
		return HM_OK;
	return hm_err_set(
	    c->err, HM_ERR_PARSE, "%s:%d: %s is %s where %s is expected", c->fname, y->line, what,
	    y->kind == HM_YAML_SCALAR && !*y->str ? "empty" : hm_yaml_kind_name(y->kind),
	    hm_yaml_kind_name(kind));
}

/* A string member (NULL when absent); required: its absence is an error. */
static hm_rc_t str_member(ctx_t *c, const hm_yaml_t *map, const char *key, bool required,
			  const char *what, const char **out)
{
	int line;
	const hm_yaml_t *v = hm_yaml_get(map, key, &line);
	hm_rc_t rc;

	*out = NULL;
	if (!v)
		return required ? hm_err_set(c->err, HM_ERR_PARSE, "%s:%d: %s without '%s'",
					     c->fname, map->line, what, key)
				: HM_OK;
	if ((rc = want(c, v, HM_YAML_SCALAR, key)) == HM_OK)
		*out = v->str;
	return rc;
}

static hm_rc_t bool_value(ctx_t *c, const hm_yaml_t *v, const char *key, bool *out)
{
	static const char *const t[] = {"true", "yes", "on"}, *const f[] = {"false", "no", "off"};
	hm_rc_t rc = want(c, v, HM_YAML_SCALAR, key);

	for (int i = 0; rc == HM_OK && i < 3; i++) {
		if (strcasecmp(v->str, t[i]) == 0)
			return *out = true, HM_OK;
		if (strcasecmp(v->str, f[i]) == 0)
			return *out = false, HM_OK;
	}
	return rc ? rc
		  : hm_err_set(c->err, HM_ERR_PARSE,
			       "%s:%d: %s: '%.40s' is not a boolean; accepted: true, false (yes, "
			       "no, on, off)",
			       c->fname, v->line, key, v->str);
}

/* The items of a list, or the one mapping Slurm also takes in its place. */
static void items_of(const hm_yaml_t *v, const hm_yaml_t *const **items, int *n)
{
	static const hm_yaml_t *one;

	if (v->kind == HM_YAML_SEQ) {
		*items = (const hm_yaml_t *const *)v->items;
		*n = v->n;
	} else {
		one = v;
		*items = &one;
		*n = 1;
	}
}

static hm_rc_t load_tree(ctx_t *c, const hm_yaml_t *tree, const hm_topo_opts_t *opts,
			 hm_topo_t **out)
{
	const hm_yaml_t *sws, *const *items;
	hm_topo_swdef_t *defs = NULL;
	int n, line;
	hm_rc_t rc;

	if ((rc = want(c, tree, HM_YAML_MAP, "tree")) ||
	    (rc = keys_known(c, tree, "tree", TREE_KEYS)))
		return rc;
	if (!(sws = hm_yaml_get(tree, "switches", &line)))
		return hm_err_set(c->err, HM_ERR_PARSE, "%s:%d: tree without 'switches'", c->fname,
				  tree->line);
	if (sws->kind != HM_YAML_MAP && (rc = want(c, sws, HM_YAML_SEQ, "switches")))
		return rc;
	items_of(sws, &items, &n);
	if (n == 0)
		return hm_err_set(c->err, HM_ERR_PARSE, "%s:%d: switches: an empty list", c->fname,
				  line);
	if (!(defs = calloc((size_t)n, sizeof(*defs))))
		return hm_err_set(c->err, HM_ERR_NOMEM, "%s: out of memory", c->fname);
	for (int i = 0; i < n && rc == HM_OK; i++) {
		const hm_yaml_t *s = items[i];

		defs[i].line = s->line;
		if ((rc = want(c, s, HM_YAML_MAP, "a switch")) ||
		    (rc = keys_known(c, s, "a switch", SWITCH_KEYS)) ||
		    (rc = str_member(c, s, "switch", true, "a switch", &defs[i].name)) ||
		    (rc = str_member(c, s, "children", false, "", &defs[i].switches)))
			break;
		rc = str_member(c, s, "nodes", false, "", &defs[i].nodes);
	}
	if (rc == HM_OK)
		rc = hm_topo_tree_build(c->fname, defs, n, opts, out, c->err);
	free(defs);
	return rc;
}

static hm_rc_t load_block(ctx_t *c, const hm_yaml_t *blk, const hm_topo_opts_t *opts,
			  hm_topo_t **out)
{
	const hm_yaml_t *bl, *sz, *const *items;
	hm_topo_blockdef_t *defs = NULL;
	int n, line, sizes[16], nsizes = 0, sz_line = blk->line;
	hm_rc_t rc;

	if ((rc = want(c, blk, HM_YAML_MAP, "block")) ||
	    (rc = keys_known(c, blk, "block", BLOCK_KEYS)))
		return rc;
	if ((sz = hm_yaml_get(blk, "block_sizes", &sz_line))) {
		const hm_yaml_t *const *v;
		int nv;

		if (sz->kind == HM_YAML_MAP)
			return want(c, sz, HM_YAML_SEQ, "block_sizes");
		items_of(sz, &v, &nv);
		if (nv > (int)(sizeof(sizes) / sizeof(sizes[0])))
			return hm_err_set(c->err, HM_ERR_PARSE, "%s:%d: more than %zu block_sizes",
					  c->fname, sz_line, sizeof(sizes) / sizeof(sizes[0]));
		for (int i = 0; i < nv; i++) {
			long val;

			if ((rc = want(c, v[i], HM_YAML_SCALAR, "a block size")) ||
			    (rc = hm_parse_long(v[i]->str, 1, 1L << 30, &val, "block_sizes",
						c->err))) {
				if (rc == HM_ERR_PARSE && v[i]->kind == HM_YAML_SCALAR &&
				    *v[i]->str)
					hm_err_prefix(c->err, "%s:%d", c->fname, v[i]->line);
				return rc;
			}
			sizes[nsizes++] = (int)val;
		}
		if ((rc = hm_topo_block_sizes_check(c->fname, sz_line, sizes, nsizes, c->err)))
			return rc;
	}
	if (!(bl = hm_yaml_get(blk, "blocks", &line)))
		return hm_err_set(c->err, HM_ERR_PARSE, "%s:%d: block without 'blocks'", c->fname,
				  blk->line);
	if (bl->kind != HM_YAML_MAP && (rc = want(c, bl, HM_YAML_SEQ, "blocks")))
		return rc;
	items_of(bl, &items, &n);
	if (n == 0)
		return hm_err_set(c->err, HM_ERR_PARSE, "%s:%d: blocks: an empty list", c->fname,
				  line);
	if (!(defs = calloc((size_t)n, sizeof(*defs))))
		return hm_err_set(c->err, HM_ERR_NOMEM, "%s: out of memory", c->fname);
	for (int i = 0; i < n && rc == HM_OK; i++) {
		const hm_yaml_t *b = items[i];

		defs[i].line = b->line;
		if ((rc = want(c, b, HM_YAML_MAP, "a block")) ||
		    (rc = keys_known(c, b, "a block", BLK_KEYS)) ||
		    (rc = str_member(c, b, "block", true, "a block", &defs[i].name)))
			break;
		rc = str_member(c, b, "nodes", false, "", &defs[i].nodes);
	}
	if (rc == HM_OK)
		rc = hm_topo_block_build(c->fname, defs, n, sizes, nsizes, opts, out, c->err);
	free(defs);
	return rc;
}

/* Checks one topology's keys; its kind in *kind ("tree", "block", "flat"). */
static hm_rc_t check_topology(ctx_t *c, const hm_yaml_t *t, const char **name, bool *dflt,
			      const char **kind)
{
	const hm_yaml_t *v;
	int nkinds = 0;
	hm_rc_t rc;

	*dflt = false;
	*kind = NULL;
	if ((rc = want(c, t, HM_YAML_MAP, "a topology")) ||
	    (rc = keys_known(c, t, "a topology", TOPO_KEYS)) ||
	    (rc = str_member(c, t, "topology", true, "a topology", name)))
		return rc;
	if (strcmp(t->keys[0], "topology") != 0)
		return hm_err_set(c->err, HM_ERR_PARSE,
				  "%s:%d: 'topology' must be the first key of a topology (Slurm's "
				  "rule), not '%.40s'",
				  c->fname, t->key_lines[0], t->keys[0]);
	if ((v = hm_yaml_get(t, "cluster_default", NULL)) &&
	    (rc = bool_value(c, v, "cluster_default", dflt)))
		return rc;
	if ((v = hm_yaml_get(t, "flat", NULL))) {
		bool flat;

		if ((rc = bool_value(c, v, "flat", &flat)))
			return rc;
		if (flat)
			*kind = "flat", nkinds++;
	}
	if (hm_yaml_get(t, "tree", NULL))
		*kind = "tree", nkinds++;
	if (hm_yaml_get(t, "block", NULL))
		*kind = "block", nkinds++;
	if (nkinds != 1)
		return hm_err_set(c->err, HM_ERR_PARSE,
				  "%s:%d: topology '%.60s' has %s; give exactly one of tree, "
				  "block, flat: true",
				  c->fname, t->line, *name,
				  nkinds ? "more than one of tree, block, flat"
					 : "no tree or block");
	return HM_OK;
}

hm_rc_t hm_topo_load_yaml(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			  hm_err_t *err)
{
	ctx_t c = {fname ? fname : "topology.yaml", err};
	bool all = opts && opts->all_topologies;
	const char *want_name = opts && !all ? opts->topology_name : NULL, *pick_kind = NULL;
	hm_topo_t **built = NULL;
	const hm_yaml_t *const *items, *pick = NULL;
	hm_yaml_t *doc = NULL;
	char names[512] = "";
	bool asked = want_name && *want_name, pick_dflt = false;
	int n;
	hm_rc_t rc;

	*out = NULL;
	if (!f)
		return hm_err_set(err, HM_ERR_INVAL, "%s: no file", c.fname);
	if ((rc = hm_yaml_read(f, c.fname, &doc, err)))
		return rc;
	if (doc->kind == HM_YAML_SCALAR) {
		rc = want(&c, doc, HM_YAML_SEQ, "the document");
		goto out;
	}
	items_of(doc, &items, &n);
	/* Every topology is checked; the one asked for, else the first cluster
	   default, else the first, is loaded (Slurm's order). */
	for (int i = 0; i < n && rc == HM_OK; i++) {
		const char *name, *kind;
		bool dflt;

		if ((rc = check_topology(&c, items[i], &name, &dflt, &kind)))
			break;
		for (int j = 0; j < i; j++)
			if (strcmp(hm_yaml_get(items[j], "topology", NULL)->str, name) == 0)
				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%d: topology '%.60s' defined twice (first at "
						"line %d)",
						c.fname, items[i]->line, name, items[j]->line);
		if (strlen(names) + strlen(name) + 3 < sizeof(names))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 *names ? ", " : "", name);
		if (asked ? strcmp(name, want_name) == 0 : !pick || (dflt && !pick_dflt)) {
			pick = items[i];
			pick_kind = kind;
			pick_dflt = dflt;
		}
	}
	if (rc)
		goto out;
	if (n == 0) {
		rc = hm_err_set(err, HM_ERR_PARSE, "%s:%d: no topologies in the list", c.fname,
				doc->line);
		goto out;
	}
	if (!pick) {
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "%s: no topology '%.60s'; defined: %s",
				c.fname, want_name, names);
		goto out;
	}
	if (strcmp(pick_kind, "flat") == 0) {
		rc = hm_err_set(
		    err, HM_ERR_PARSE,
		    "%s:%d: topology '%.60s' is flat (topology/flat): it has no switches "
		    "or blocks to derive racks from; pick a tree or block topology (%s)",
		    c.fname, pick->line, hm_yaml_get(pick, "topology", NULL)->str, names);
		goto out;
	}
	/* Every topology is built (Slurm rejects a file with any bad one); the
	   picked one is kept, and with all_topologies the others become its
	   planes (hm_topo_plane.c), in file order. */
	if (!(built = calloc((size_t)n, sizeof(*built)))) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", c.fname);
		goto out;
	}
	for (int i = 0; i < n && rc == HM_OK; i++) {
		const hm_yaml_t *t = items[i], *v;

		if ((v = hm_yaml_get(t, "tree", NULL)))
			rc = load_tree(&c, v, opts, &built[i]);
		else if ((v = hm_yaml_get(t, "block", NULL)))
			rc = load_block(&c, v, opts, &built[i]);
		if (t == pick)
			*out = built[i];
	}
	for (int i = 0; i < n && rc == HM_OK && all; i++) {
		const char *name = hm_yaml_get(items[i], "topology", NULL)->str, *kind;
		bool dflt;

		if (items[i] == pick || (rc = check_topology(&c, items[i], &name, &dflt, &kind)))
			continue;
		rc = hm_topo_plane_add(*out, hm_yaml_get(pick, "topology", NULL)->str, name, kind,
				       built[i], NULL, err);
	}
	if (rc == HM_OK && all && (*out)->planes)
		snprintf((*out)->planes[0].kind, sizeof((*out)->planes[0].kind), "%s", pick_kind);
	for (int i = 0; i < n; i++)
		if (built[i] != *out)
			hm_topo_free(built[i]);
	if (rc) {
		hm_topo_free(*out);
		*out = NULL;
	}
out:
	free(built);
	hm_yaml_free(doc);
	return rc;
}
