/*
 * hm_topo_block.c - Slurm topology/block (23.11+) as a switch tree.
 *
 * Each block with nodes is a rack (level-0 switch). Slurm aggregates
 * consecutive blocks into larger ones by the block sizes (powers of two times
 * the base block size, the first BlockSizes value; without BlockSizes 1, 2, 4
 * and 8 base blocks), with the rule of block_record.c: a group starts at a
 * multiple of its size, and a tail too small for it is left to the next
 * larger size. Each aggregate becomes a switch above its members, named
 * "FIRST..LAST" after its first and last block; when more than one switch is
 * left on top, a switch named "blocks" joins them (Slurm lets a job span
 * blocks, so traffic between them crosses something).
 */
#include <stdlib.h>
#include <string.h>

#include "hm_hostlist.h"
#include "hm_topo_build.h"

#define MAX_BLOCK_LEVELS 16 /* as Slurm's block_record.h */

hm_rc_t hm_topo_block_sizes_check(const char *fname, int line, const int *sizes, int nsizes,
				  hm_err_t *err)
{
	for (int j = 0; j < nsizes; j++) {
		int ratio = sizes[0] > 0 ? sizes[j] / sizes[0] : 0;

		if (sizes[j] <= 0 || sizes[j] % sizes[0] || (ratio & (ratio - 1)) ||
		    ratio >= (1 << MAX_BLOCK_LEVELS) || (j && sizes[j] <= sizes[j - 1]))
			return hm_err_set(err, HM_ERR_PARSE,
					  "%s:%d: block size %d: accepted are positive sizes, "
					  "each a power-of-two multiple (up to 2^%d) of the first "
					  "and larger than the one before (4,16,64)",
					  fname, line, sizes[j], MAX_BLOCK_LEVELS - 1);
	}
	return HM_OK;
}

/* Slurm's aggregation levels in base blocks: 1, then each given size (or 2,
 * 4, 8), up to the first that covers all blocks. */
static int agg_levels(const int *sizes, int nsizes, int base, int nblocks, int *lv)
{
	int n = 0;

	for (int level = 0; level < MAX_BLOCK_LEVELS; level++) {
		bool set = level == 0;

		if (nsizes == 0)
			set = level < 4;
		for (int j = 0; j < nsizes && !set; j++)
			set = sizes[j] / base == 1 << level;
		if (!set)
			continue;
		lv[n++] = 1 << level;
		if (lv[n - 1] >= nblocks)
			break;
	}
	return n;
}

hm_rc_t hm_topo_block_build(const char *fname, const hm_topo_blockdef_t *defs, int n,
			    const int *sizes, int nsizes, const hm_topo_opts_t *opts,
			    hm_topo_t **out, hm_err_t *err)
{
	hm_topo_opts_t o;
	hm_tb_t *b = NULL;
	int *sw = NULL, *agg = NULL, *tops = NULL, lv[MAX_BLOCK_LEVELS], nlv, base = 0, ntop = 0;
	char **names = NULL;
	int nnames = 0;
	hm_rc_t rc = HM_OK;

	*out = NULL;
	hm_topo_opts_resolve(opts, &o);
	if (n <= 0)
		return hm_err_set(err, HM_ERR_PARSE, "%s: no blocks defined", fname);
	b = hm_tb_new(fname);
	sw = malloc((size_t)n * sizeof(*sw));
	agg = malloc((size_t)n * MAX_BLOCK_LEVELS * sizeof(*agg));
	tops = malloc((size_t)n * sizeof(*tops));
	if (!b || !sw || !agg || !tops) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "%s: out of memory", fname);
		goto out;
	}
	hm_tb_set_default_uplink(b, o.uplink_bps);
	/* Blocks with nodes are racks; base: the first size, else the first block's nodes. */
	for (int i = 0; i < n && rc == HM_OK; i++) {
		int idx = hm_tb_switch_find(b, defs[i].name);

		sw[i] = -1;
		if (idx >= 0) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"%s:%d: block '%s' already defined at line %d", fname,
					defs[i].line, defs[i].name, hm_tb_switch_line(b, idx));
			break;
		}
		if (!defs[i].nodes || !*defs[i].nodes)
			continue; /* Slurm keeps it as an empty place in the order */
		rc = hm_hostlist_expand(defs[i].nodes, &names, &nnames, err);
		if (rc) {
			hm_err_prefix(err, "%s:%d: Nodes", fname, defs[i].line);
			break;
		}
		if (!base)
			base = nnames;
		if ((rc = hm_tb_switch_add(b, defs[i].name, defs[i].line, &sw[i], err)) != HM_OK)
			hm_err_prefix(err, "%s:%d", fname, defs[i].line);
		else
			hm_tb_switch_set_uplink(b, sw[i], o.uplink_bps);
		for (int h = 0; h < nnames && rc == HM_OK; h++) {
			int hidx = hm_tb_host_find(b, names[h]);

			if (hidx >= 0) {
				int other = hm_tb_host_tor(b, hidx);

				rc = hm_err_set(err, HM_ERR_PARSE,
						"%s:%d: node '%s' is in two blocks: '%s' (line %d) "
						"and '%s'; a node belongs to exactly one block",
						fname, defs[i].line, names[h],
						hm_tb_switch_name(b, other),
						hm_tb_switch_line(b, other), defs[i].name);
				break;
			}
			rc = hm_tb_host_add(b, names[h], sw[i], o.gpus_per_host, o.nics_per_host,
					    o.nic_bps, &hidx, err);
		}
		hm_hostlist_free(names, nnames);
		names = NULL;
		nnames = 0;
	}
	if (rc)
		goto out;
	if (nsizes > 0)
		base = sizes[0];
	if (!base) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s: no block has nodes and no block sizes are set", fname);
		goto out;
	}
	nlv = agg_levels(sizes, nsizes, base, n, lv);
	/* agg[j * n + i]: the aggregate of level j that holds block i, -1 for none. */
	for (int j = 1; j < nlv && rc == HM_OK; j++) {
		for (int s = 0; s < n && rc == HM_OK; s += lv[j]) {
			int last = s + lv[j] < n ? s + lv[j] : n, idx = -1;
			char name[2 * HM_TOPO_MAX_NAME + 3];

			for (int i = s; i < last; i++)
				agg[j * n + i] = -1;
			if (lv[j] > n - s && lv[j - 1] >= n - s)
				continue; /* too small for this size: the next size takes it */
			for (int i = s; i < last && idx < 0; i++)
				idx = sw[i] >= 0 ? 0 : -1;
			if (idx < 0)
				continue; /* only empty blocks */
			snprintf(name, sizeof(name), "%s..%s", defs[s].name, defs[last - 1].name);
			rc = hm_tb_switch_add(b, name, defs[s].line, &idx, err);
			if (rc)
				break;
			hm_tb_switch_set_uplink(b, idx, o.uplink_bps);
			for (int i = s; i < last; i++)
				agg[j * n + i] = idx;
		}
	}
	/* Parents: each switch under the next larger aggregate that holds it;
	   what is left on top goes under "blocks" when it is not alone. */
	for (int i = 0; i < n && rc == HM_OK; i++) {
		int child = sw[i], t;

		for (int j = 1; j < nlv && rc == HM_OK && child >= 0; j++) {
			int parent = agg[j * n + i];

			if (parent < 0)
				continue;
			rc = hm_tb_parent_add(b, child, parent, err);
			child = parent;
		}
		for (t = 0; t < ntop && tops[t] != child; t++)
			;
		if (child >= 0 && t == ntop)
			tops[ntop++] = child;
	}
	if (rc == HM_OK && ntop > 1) {
		int joint;

		rc = hm_tb_switch_add(b, "blocks", 0, &joint, err);
		for (int t = 0; t < ntop && rc == HM_OK; t++)
			rc = hm_tb_parent_add(b, tops[t], joint, err);
	}
	if (rc == HM_OK)
		rc = hm_tb_finish(b, out, err);
out:
	hm_hostlist_free(names, nnames);
	free(sw);
	free(agg);
	free(tops);
	hm_tb_free(b);
	return rc;
}
