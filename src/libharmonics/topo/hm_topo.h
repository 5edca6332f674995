/*
 * hm_topo.h - cluster topology: hosts, NICs, switches, directed links, routes.
 *
 * A topology is a tree (Slurm topology.conf) or a 3-tier Clos (ToR, aggregation,
 * core) of switches with hosts at the leaves. Every physical cable is two
 * directed links (up and down), each with its own capacity, so the two
 * directions of a ring never contend with each other.
 *
 * Racks: a rack is a level-0 switch (ToR) and the hosts below it. The links a
 * rack "owns" (its Local Scheduler's problem) are its hosts' NIC links in both
 * directions and the ToR's uplinks in both directions; links between higher
 * switches have rack == -1 and belong to the Global Coordinator.
 *
 * Ownership: hm_topo_t is created by a loader or the generator and released
 * with hm_topo_free(). All arrays are owned by the topology and read-only for
 * callers. Units: bit/s for capacities.
 */
#ifndef HM_TOPO_H
#define HM_TOPO_H

#include <stdbool.h>
#include <stdio.h>

#include "hm_error.h"

#define HM_MAX_GPUS_PER_HOST 16
#define HM_MAX_NICS_PER_HOST 16
#define HM_MAX_ROUTE_LINKS   16 /* longest route: NIC, ToR, agg, core, agg, ToR, NIC */
#define HM_MAX_PATHS         64 /* equal-cost paths considered between two hosts */

/* Documented defaults for link speeds a file does not give. */
#define HM_DEFAULT_NIC_BPS       100e9 /* 100 Gbit/s per NIC */
#define HM_DEFAULT_UPLINK_BPS    400e9 /* 400 Gbit/s per switch uplink */
#define HM_DEFAULT_GPUS_PER_HOST 8
#define HM_DEFAULT_NICS_PER_HOST 1

typedef struct {
	char *name;
	int rack; /* index into switches[] of its ToR, and rack id: see rack_of_switch */
	int gpus;
	int nics;
	double nic_bps;                    /* per NIC */
	int gpu_nic[HM_MAX_GPUS_PER_HOST]; /* NIC used by each GPU (hwloc affinity or round robin)
					    */
	int nic_up_link[HM_MAX_NICS_PER_HOST];   /* host NIC -> ToR */
	int nic_down_link[HM_MAX_NICS_PER_HOST]; /* ToR -> host NIC */
} hm_host_t;

typedef struct {
	char *name;
	int level;      /* 0 = ToR (rack), 1 = aggregation, 2 = core, ... */
	int rack;       /* rack id for level 0, -1 above */
	int nparents;   /* number of parent switches (>1 gives equal-cost paths) */
	int *parents;   /* switch indexes */
	int *up_link;   /* up_link[i]: this -> parents[i] */
	int *down_link; /* down_link[i]: parents[i] -> this */
} hm_switch_t;

typedef enum { HM_LINK_NIC_UP, HM_LINK_NIC_DOWN, HM_LINK_SW_UP, HM_LINK_SW_DOWN } hm_link_kind_t;

typedef struct {
	hm_link_kind_t kind;
	double capacity_bps;
	int rack;  /* owning rack, -1 for links above the racks */
	int level; /* 0 host<->ToR, 1 ToR<->agg, 2 agg<->core, ... */
	int host;  /* host for NIC links, -1 otherwise */
	int lower; /* switch index of the lower end for switch links, -1 for NIC links */
	int upper; /* switch index of the upper end */
} hm_link_t;

/*
 * One named topology of a topology.yaml with several (Slurm 25.05+: a
 * partition picks one with Topology=), as a plane of one link model. Plane 0
 * is the cluster default: the racks, the hosts and their NIC links above.
 * Every other plane p adds its own switches (switches[sw_first .. sw_first +
 * nswitches), names "TOPOLOGY/SWITCH") and their links (rack -1: the Global
 * Coordinator's), and routes its hosts over them; a host keeps its NICs. So a
 * job contends on switch links only with jobs of its own topology, and on a
 * host's NIC links with every job on that host (docs/topology.md).
 */
typedef struct {
	char *name;   /* the topology's name in topology.yaml */
	char kind[8]; /* "tree", "block" or "flat" */
	int sw_first; /* its switches in switches[] (flat: none) */
	int nswitches;
	int *host_tor; /* [nhosts] the host's ToR switch in this plane, -1 = not in it;
			  NULL for plane 0 (hosts[h].rack) and flat planes */
	int nmissing;  /* its hosts that plane 0 lacks: not modelled */
} hm_topo_plane_t;

typedef struct hm_topo {
	int nhosts;
	hm_host_t *hosts;
	int nswitches;
	hm_switch_t *switches;
	int nlinks;
	hm_link_t *links;
	int nracks;
	int *rack_switch; /* rack id -> switch index of its ToR */
	int nlevels;      /* number of switch levels (1 = racks only) */
	/* Private to hm_topo.c: host indexes sorted by name for hm_topo_host_index
	 * (binary search). NULL in a hand-built topology: linear search then. */
	int *host_order;
	/* Named topologies (opts.all_topologies): nplanes >= 1, planes[0] the
	 * cluster default. 0 and NULL for a topology of one (unnamed) plane. */
	int nplanes;
	hm_topo_plane_t *planes;
} hm_topo_t;

/* Parameters of the generator; fields left 0 take the documented defaults. */
typedef struct {
	int racks;
	int hosts_per_rack;
	int gpus_per_host; /* default 8 */
	int nics_per_host; /* default 1 */
	double nic_bps;    /* default HM_DEFAULT_NIC_BPS */
	double uplink_bps; /* per ToR uplink; default: rack NIC bandwidth / (oversub * uplinks) */
	double oversubscription; /* >= 1, default 1 (non-blocking) */
	int racks_per_pod;       /* 0 = two-tier (ToRs under one layer of spines) */
	int aggs_per_pod;        /* aggregation switches per pod (equal-cost paths), default 1 */
	int cores;               /* core switches, default 1 */
} hm_topo_gen_t;

/* Speeds used by the loaders for values the file lacks (0 = documented default). */
typedef struct {
	double nic_bps;
	double uplink_bps;
	int gpus_per_host;
	int nics_per_host;
	/* CSV column names; NULL = defaults "host", "tor", "agg", "core". */
	const char *col_host, *col_tor, *col_agg, *col_core;
	/* topology.yaml: the topology to load (a partition's Topology=); NULL or
	   "" = Slurm's cluster default (the first with cluster_default: true, else
	   the first). */
	const char *topology_name;
	/* topology.yaml: load every topology as a plane (topology_name is then
	   ignored); the cluster default is plane 0 and must be a tree or block. */
	bool all_topologies;
} hm_topo_opts_t;

void hm_topo_free(hm_topo_t *t); /* NULL is fine */
/* A deep copy (NULL when out of memory or t is NULL). */
hm_topo_t *hm_topo_clone(const hm_topo_t *t);

hm_rc_t hm_topo_generate(const hm_topo_gen_t *gen, hm_topo_t **out, hm_err_t *err);

/* Parse "racks=4,hosts=8,gpus=8,nics=1,nic=100G,uplink=400G,oversub=2,pods=..,aggs=..,cores=.." */
hm_rc_t hm_topo_gen_parse(const char *spec, hm_topo_gen_t *gen, hm_err_t *err);

/* Slurm topology.conf syntax (SwitchName=, Switches=, Nodes=, LinkSpeed=). */
hm_rc_t hm_topo_load_slurm(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			   hm_err_t *err);

/* Slurm topology.yaml (25.05+): the topology opts->topology_name names, else
 * the cluster default; a tree or a block topology (docs/topology.md). Every
 * topology in the file is checked; a flat one cannot be loaded. */
hm_rc_t hm_topo_load_yaml(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			  hm_err_t *err);

/* The Topology= of partition `partition` in slurm.conf at path ("" when the
 * partition names none: the cluster default), into name (len bytes).
 * PartitionName=DEFAULT lines set the default as Slurm does. HM_ERR_NOTFOUND
 * when no such partition is defined. */
hm_rc_t hm_topo_partition_topology(const char *slurm_conf, const char *partition, char *name,
				   size_t len, hm_err_t *err);

/* CSV: one row per host with host/ToR/agg/core columns (names from opts). */
hm_rc_t hm_topo_load_csv(FILE *f, const char *fname, const hm_topo_opts_t *opts, hm_topo_t **out,
			 hm_err_t *err);

/* Open a file and pick the loader from its content: topology.conf lines
 * (SwitchName= or BlockName=/BlockSizes=), topology.yaml ("---", "- " or
 * "topology:" first), or a CSV header. */
hm_rc_t hm_topo_load_file(const char *path, const hm_topo_opts_t *opts, hm_topo_t **out,
			  hm_err_t *err);

/*
 * Write t as Slurm topology.conf (topology/tree): one SwitchName line per
 * switch, racks first with Nodes=, then each level with Switches=, hostlists
 * compressed, no LinkSpeed. A name topology.conf cannot carry (blanks, '=',
 * ',', '[', ']', '#', '\\') is HM_ERR_INVAL naming it; nothing is written then.
 */
hm_rc_t hm_topo_write_slurm(const hm_topo_t *t, FILE *f, hm_err_t *err);

/*
 * Write t as Slurm topology.yaml: one tree topology named `name` (NULL:
 * "default") with cluster_default: true, switches as hm_topo_write_slurm
 * orders them (children:, nodes:). Names are checked as there.
 */
hm_rc_t hm_topo_write_yaml(const hm_topo_t *t, const char *name, FILE *f, hm_err_t *err);

/* Parse "host=ip,tor=ASW,agg=PSW,core=DSW" into opts (strings point into buf). */
hm_rc_t hm_topo_csv_columns_parse(char *buf, hm_topo_opts_t *opts, hm_err_t *err);

/* Host index by name, -1 when absent. */
int hm_topo_host_index(const hm_topo_t *t, const char *name);

/* Number of equal-cost paths between two hosts (1 inside a rack, at most
 * HM_MAX_PATHS; 0 for a bad index or racks without a common ancestor). */
int hm_topo_npaths(const hm_topo_t *t, int src_host, int dst_host);

/*
 * Directed links from src_host's NIC src_nic to dst_host's NIC dst_nic along
 * equal-cost path (path_idx mod npaths). Writes up to HM_MAX_ROUTE_LINKS link
 * ids; returns their count (0 when src_host == dst_host: traffic stays in the host),
 * or -1 for a bad host/NIC index or when the two racks share no ancestor switch.
 * path_idx may be any int (negative included); it is taken modulo npaths.
 */
int hm_topo_route(const hm_topo_t *t, int src_host, int src_nic, int dst_host, int dst_nic,
		  int path_idx, int *links);

/*
 * Planes (named topologies). hm_topo_plane_index: the plane of topology
 * `name`; NULL or "" is plane 0 (the cluster default), as is any name when t
 * has no planes; -1 when t has planes and none is called name.
 */
int hm_topo_plane_index(const hm_topo_t *t, const char *name);
/* The plane's name ("" for a topology without planes or a bad index). */
const char *hm_topo_plane_name(const hm_topo_t *t, int plane);
/* As hm_topo_npaths and hm_topo_route, over plane `plane`'s switches (0: the
 * functions above; a flat plane routes as plane 0). A host not in the plane
 * has no route (-1; npaths 0). */
int hm_topo_npaths_plane(const hm_topo_t *t, int plane, int src_host, int dst_host);
int hm_topo_route_plane(const hm_topo_t *t, int plane, int src_host, int src_nic, int dst_host,
			int dst_nic, int path_idx, int *links);
/*
 * Add topology p as a new plane `name` of t (kind "tree" or "block"): its
 * switches and switch links are appended (t's link ids stay), its hosts are
 * matched to t's by name; *missing (may be NULL) gets the number of p's hosts
 * t lacks (not modelled). kind "flat" with p NULL adds a flat plane.
 * t without planes first gets plane 0 named first_name.
 */
hm_rc_t hm_topo_plane_add(hm_topo_t *t, const char *first_name, const char *name, const char *kind,
			  const hm_topo_t *p, int *missing, hm_err_t *err);

/* One line on plane `plane`: "nvl block: 8 nodes (2 more not in fabric: not
 * modelled), 4 blocks, 7 switches"; hm_topo_describe's line without planes. */
void hm_topo_plane_describe(const hm_topo_t *t, int plane, char *buf, size_t len);

/* Total GPUs. */
int hm_topo_gpus(const hm_topo_t *t);

/*
 * Apply a node's GPU->NIC affinity from an hwloc XML file (GPUs and NICs that
 * share the closest common ancestor): fills gpu_nic[] for host `host`.
 */
hm_rc_t hm_topo_apply_hwloc_xml(hm_topo_t *t, int host, const char *xml_path, hm_err_t *err);

/*
 * A new topology with t's switches, uplinks and hosts (same order, names and
 * racks), each host h with shape[h]'s gpus, nics, nic_bps and gpu_nic (the
 * rest of shape is ignored; NULL: t's own). Links are numbered anew. A GPU on
 * a NIC outside 0..nics-1 is HM_ERR_RANGE naming the host (hm_topo_reshape.c).
 */
hm_rc_t hm_topo_reshape(const hm_topo_t *t, const hm_host_t *shape, hm_topo_t **out,
			hm_err_t *err);

/* One-line summary ("4 racks, 32 hosts, 256 GPUs, 2 levels, 72 links"). */
void hm_topo_describe(const hm_topo_t *t, char *buf, size_t len);

#endif
