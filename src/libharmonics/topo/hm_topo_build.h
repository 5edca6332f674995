/*
 * hm_topo_build.h - internal: the topology builder shared by the loaders and
 * the generator. Not installed, not part of the contract.
 *
 * A loader adds switches and hosts by name, records child->parent switch
 * edges, and calls hm_tb_finish(), which derives switch levels from the
 * nesting (a switch with hosts is level 0, any other switch is one above its
 * highest child), rejects loops, empty or disconnected topologies, creates
 * the directed links with their rack ownership and hands over an hm_topo_t.
 */
#ifndef HM_TOPO_BUILD_H
#define HM_TOPO_BUILD_H

#include "hm_hostlist.h"
#include "hm_topo.h"

#define HM_TOPO_MAX_NAME      255 /* longest host or switch name */
#define HM_TOPO_MAX_LEVELS    ((HM_MAX_ROUTE_LINKS - 2) / 2 + 1)
#define HM_TOPO_MAX_ANCESTORS 512 /* switches above one ToR (route scratch space) */
#define HM_TOPO_MAX_HOSTS     HM_HOSTLIST_MAX /* hosts in one topology: one bound for both */

typedef struct hm_tb hm_tb_t;

/* fname names the source in error messages ("generator" for generated ones). */
hm_tb_t *hm_tb_new(const char *fname);
void hm_tb_free(hm_tb_t *b); /* NULL is fine */

/* Index of a switch/host by name, -1 when absent. */
int hm_tb_switch_find(const hm_tb_t *b, const char *name);
int hm_tb_host_find(const hm_tb_t *b, const char *name);

/* Add a switch (name must be new); line is where it was defined (0 = none). */
hm_rc_t hm_tb_switch_add(hm_tb_t *b, const char *name, int line, int *idx, hm_err_t *err);
const char *hm_tb_switch_name(const hm_tb_t *b, int idx);
int hm_tb_switch_line(const hm_tb_t *b, int idx);
void hm_tb_switch_set_line(hm_tb_t *b, int idx, int line);
/* Capacity of each of the switch's uplinks (bit/s); 0 = the builder default. */
void hm_tb_switch_set_uplink(hm_tb_t *b, int idx, double bps);
/* child -> parent edge; a repeated edge is ignored. */
hm_rc_t hm_tb_parent_add(hm_tb_t *b, int child, int parent, hm_err_t *err);

/* Add a host (name must be new) under ToR switch `tor`. */
hm_rc_t hm_tb_host_add(hm_tb_t *b, const char *name, int tor, int gpus, int nics, double nic_bps,
		       int *idx, hm_err_t *err);
int hm_tb_host_tor(const hm_tb_t *b, int idx);

void hm_tb_set_default_uplink(hm_tb_t *b, double bps);

/* Build the topology; b is left empty (free it anyway). */
hm_rc_t hm_tb_finish(hm_tb_t *b, hm_topo_t **out, hm_err_t *err);

/* Resolve loader options with the documented defaults. */
void hm_topo_opts_resolve(const hm_topo_opts_t *in, hm_topo_opts_t *out);

/* One switch of a topology/tree definition (topology.conf or topology.yaml):
 * children in a hostlist of switches or of nodes; strings stay the caller's. */
typedef struct {
	int line;
	const char *name;
	const char *switches; /* or NULL */
	const char *nodes;    /* or NULL */
	double uplink_bps;    /* 0 = the default */
} hm_topo_swdef_t;

/* A topology/tree from its switches (checks names, links, loops). */
hm_rc_t hm_topo_tree_build(const char *fname, const hm_topo_swdef_t *defs, int n,
			   const hm_topo_opts_t *opts, hm_topo_t **out, hm_err_t *err);

/* One block of topology/block; nodes NULL or "" for an empty block. */
typedef struct {
	int line;
	const char *name;
	const char *nodes;
} hm_topo_blockdef_t;

/* Block sizes as Slurm accepts them (line: where they were given). */
hm_rc_t hm_topo_block_sizes_check(const char *fname, int line, const int *sizes, int nsizes,
				  hm_err_t *err);
/* A topology/block (hm_topo_block.c: blocks are racks, aggregates above). */
hm_rc_t hm_topo_block_build(const char *fname, const hm_topo_blockdef_t *defs, int n,
			    const int *sizes, int nsizes, const hm_topo_opts_t *opts,
			    hm_topo_t **out, hm_err_t *err);

/* hm_topo_reshape: n, rebuilt from t's plane 0 with t's hosts in t's order,
 * gets t's planes again (hm_topo_plane.c). */
hm_rc_t hm_topo_planes_copy(hm_topo_t *n, const hm_topo_t *t, hm_err_t *err);

/* Line reading shared by the loaders: one line (without the newline) of at
 * most HM_TOPO_MAX_LINE bytes; rejects NUL and other control bytes. Returns
 * HM_OK with *line set, HM_OK with *line NULL at end of file, or an error. */
#define HM_TOPO_MAX_LINE (1 << 20)
hm_rc_t hm_topo_read_line(FILE *f, const char *fname, int lineno, char **buf, size_t *cap,
			  char **line, hm_err_t *err);

#endif
