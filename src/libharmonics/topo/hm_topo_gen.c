/*
 * hm_topo_gen.c - parametric topologies: two-tier (ToRs under spines) or a
 * three-tier Clos (ToR -> the aggregation switches of its pod -> every core),
 * and the "key=value,..." spec parser. See docs/topology.md.
 */
#include "hm_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_parse.h"
#include "hm_topo_build.h"

#define GEN_DEFAULT_RACKS 4
#define GEN_DEFAULT_HOSTS 8
#define GEN_MAX_HOSTS     HM_TOPO_MAX_HOSTS /* the builder's cap, named here first */
#define GEN_MAX_RACKS     65536
#define GEN_MAX_AGGS      64
#define GEN_MAX_CORES     256

#define GEN_KEYS                                                                                   \
	"racks, hosts, gpus, nics, nic, uplink, oversub, pods, racks_per_pod, aggs, cores (alias " \
	"spines)"

/* Decimal width for numbering 1..n, at least min. */
static int width_for(long n, int min)
{
	int w = 1;

	while (n >= 10) {
		n /= 10;
		w++;
	}
	return w < min ? min : w;
}

static void gen_resolve(const hm_topo_gen_t *in, hm_topo_gen_t *g)
{
	*g = *in;
	if (g->racks <= 0)
		g->racks = GEN_DEFAULT_RACKS;
	if (g->hosts_per_rack <= 0)
		g->hosts_per_rack = GEN_DEFAULT_HOSTS;
	if (g->gpus_per_host <= 0)
		g->gpus_per_host = HM_DEFAULT_GPUS_PER_HOST;
	if (g->nics_per_host <= 0)
		g->nics_per_host = HM_DEFAULT_NICS_PER_HOST;
	if (!(g->nic_bps > 0))
		g->nic_bps = HM_DEFAULT_NIC_BPS;
	if (!(g->oversubscription > 0))
		g->oversubscription = 1;
	if (g->aggs_per_pod <= 0)
		g->aggs_per_pod = 1;
	if (g->cores <= 0)
		g->cores = 1;
}

static hm_rc_t gen_check(const hm_topo_gen_t *g, hm_err_t *err)
{
	long hosts = (long)g->racks * g->hosts_per_rack;

	if (g->racks > GEN_MAX_RACKS || hosts > GEN_MAX_HOSTS)
		return hm_err_set(err, HM_ERR_RANGE,
				  "generator: %d racks x %d hosts is too large, accepted up to %d "
				  "racks and %d hosts",
				  g->racks, g->hosts_per_rack, GEN_MAX_RACKS, GEN_MAX_HOSTS);
	if (g->gpus_per_host > HM_MAX_GPUS_PER_HOST || g->nics_per_host > HM_MAX_NICS_PER_HOST)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "generator: %d GPUs and %d NICs per host, accepted up to %d and %d",
		    g->gpus_per_host, g->nics_per_host, HM_MAX_GPUS_PER_HOST, HM_MAX_NICS_PER_HOST);
	if (g->oversubscription < 1)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "generator: oversubscription %g, accepted >= 1 (1 = non-blocking)",
		    g->oversubscription);
	if (g->aggs_per_pod > GEN_MAX_AGGS || g->cores > GEN_MAX_CORES)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "generator: %d aggs per pod and %d cores, accepted up to %d and %d",
		    g->aggs_per_pod, g->cores, GEN_MAX_AGGS, GEN_MAX_CORES);
	if (g->racks_per_pod < 0 || (g->racks_per_pod > 0 && g->racks % g->racks_per_pod != 0))
		return hm_err_set(err, HM_ERR_RANGE,
				  "generator: %d racks do not split into pods of %d racks; racks "
				  "must be a multiple of racks_per_pod",
				  g->racks, g->racks_per_pod);
	return HM_OK;
}

hm_rc_t hm_topo_generate(const hm_topo_gen_t *gen, hm_topo_t **out, hm_err_t *err)
{
	hm_topo_gen_t g;
	hm_tb_t *b = NULL;
	hm_rc_t rc;
	int *tor = NULL, *agg = NULL, *core = NULL;
	int npods, wr, wh, hostno = 0, idx;
	int nuplinks;
	double rack_bps, tor_up_bps, agg_up_bps;
	char name[64];

	*out = NULL;
	if (!gen)
		return hm_err_set(err, HM_ERR_INVAL, "generator: NULL parameters");
	gen_resolve(gen, &g);
	rc = gen_check(&g, err);
	if (rc)
		return rc;
	npods = g.racks_per_pod > 0 ? g.racks / g.racks_per_pod : 0;
	b = hm_tb_new("generator");
	tor = calloc((size_t)g.racks, sizeof(int));
	agg = calloc((size_t)(npods ? npods * g.aggs_per_pod : 1), sizeof(int));
	core = calloc((size_t)g.cores, sizeof(int));
	if (!b || !tor || !agg || !core) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "generator: out of memory");
		goto out;
	}
	/* ToR uplinks: the rack's NIC bandwidth divided by the oversubscription. */
	nuplinks = npods ? g.aggs_per_pod : (g.racks > 1 ? g.cores : 0);
	rack_bps = (double)g.hosts_per_rack * g.nics_per_host * g.nic_bps;
	tor_up_bps = g.uplink_bps > 0 ? g.uplink_bps
				      : (nuplinks ? rack_bps / (g.oversubscription * nuplinks) : 0);
	/* Above the ToRs the fabric is non-blocking. */
	agg_up_bps = npods ? (double)g.racks_per_pod * tor_up_bps / g.cores : 0;

	wr = width_for(g.racks, 3);
	for (int r = 0; r < g.racks; r++) {
		snprintf(name, sizeof(name), "tor%0*d", wr & 15, r + 1);
		rc = hm_tb_switch_add(b, name, 0, &tor[r], err);
		if (rc)
			goto out;
		hm_tb_switch_set_uplink(b, tor[r], tor_up_bps);
	}
	if (npods || g.racks > 1) {
		for (int c = 0; c < g.cores; c++) {
			snprintf(name, sizeof(name), "%s%0*d", npods ? "core" : "spine",
				 width_for(g.cores, 2) & 15, c + 1);
			rc = hm_tb_switch_add(b, name, 0, &core[c], err);
			if (rc)
				goto out;
		}
	}
	for (int p = 0; p < npods; p++) {
		for (int a = 0; a < g.aggs_per_pod; a++) {
			int *ai = &agg[p * g.aggs_per_pod + a];

			snprintf(name, sizeof(name), "pod%0*d-agg%0*d", width_for(npods, 2) & 15,
				 p + 1, width_for(g.aggs_per_pod, 2) & 15, a + 1);
			rc = hm_tb_switch_add(b, name, 0, ai, err);
			if (rc)
				goto out;
			hm_tb_switch_set_uplink(b, *ai, agg_up_bps);
			for (int c = 0; c < g.cores; c++) {
				rc = hm_tb_parent_add(b, *ai, core[c], err);
				if (rc)
					goto out;
			}
		}
	}
	for (int r = 0; r < g.racks; r++) {
		if (npods) {
			int p = r / g.racks_per_pod;

			for (int a = 0; a < g.aggs_per_pod; a++) {
				rc = hm_tb_parent_add(b, tor[r], agg[p * g.aggs_per_pod + a], err);
				if (rc)
					goto out;
			}
		} else if (g.racks > 1) {
			for (int c = 0; c < g.cores; c++) {
				rc = hm_tb_parent_add(b, tor[r], core[c], err);
				if (rc)
					goto out;
			}
		}
	}
	wh = width_for((long)g.racks * g.hosts_per_rack, 4);
	for (int r = 0; r < g.racks; r++) {
		for (int h = 0; h < g.hosts_per_rack; h++) {
			snprintf(name, sizeof(name), "n%0*d", wh & 15, ++hostno);
			rc = hm_tb_host_add(b, name, tor[r], g.gpus_per_host, g.nics_per_host,
					    g.nic_bps, &idx, err);
			if (rc)
				goto out;
		}
	}
	rc = hm_tb_finish(b, out, err);
out:
	if (rc && rc != HM_ERR_NOMEM && strncmp(err ? err->msg : "", "generator", 9) != 0)
		hm_err_prefix(err, "generator");
	hm_tb_free(b);
	free(tor);
	free(agg);
	free(core);
	return rc;
}

/* Parse one integer value of key into *v. */
static hm_rc_t gen_int(const char *key, const char *val, long max, int *v, hm_err_t *err)
{
	long l = 0;
	hm_rc_t rc = hm_parse_long(val, 1, max, &l, key, err);

	if (rc == HM_OK)
		*v = (int)l;
	return rc;
}

hm_rc_t hm_topo_gen_parse(const char *spec, hm_topo_gen_t *gen, hm_err_t *err)
{
	char *copy = NULL, *save = NULL, *tok, *key, *val;
	int pods = 0;
	hm_rc_t rc = HM_OK;

	if (!spec || !gen)
		return hm_err_set(err, HM_ERR_INVAL, "generator spec: NULL argument");
	memset(gen, 0, sizeof(*gen));
	copy = strdup(spec);
	if (!copy)
		return hm_err_set(err, HM_ERR_NOMEM, "generator spec: out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool known = true;

		if (*hm_trim(tok) == '\0')
			continue;
		if (!hm_split_kv(tok, &key, &val)) {
			rc = hm_err_set(err, HM_ERR_PARSE,
					"generator spec: '%s' is not key=value; accepted keys: %s",
					hm_trim(tok), GEN_KEYS);
			goto out;
		}
		if (strcasecmp(key, "racks") == 0) {
			rc = gen_int(key, val, GEN_MAX_RACKS, &gen->racks, err);
		} else if (strcasecmp(key, "hosts") == 0) {
			rc = gen_int(key, val, GEN_MAX_HOSTS, &gen->hosts_per_rack, err);
		} else if (strcasecmp(key, "gpus") == 0) {
			rc = gen_int(key, val, HM_MAX_GPUS_PER_HOST, &gen->gpus_per_host, err);
		} else if (strcasecmp(key, "nics") == 0) {
			rc = gen_int(key, val, HM_MAX_NICS_PER_HOST, &gen->nics_per_host, err);
		} else if (strcasecmp(key, "nic") == 0) {
			rc = hm_parse_bandwidth_bps(val, 1e6, 1e15, &gen->nic_bps, key, err);
		} else if (strcasecmp(key, "uplink") == 0) {
			rc = hm_parse_bandwidth_bps(val, 1e6, 1e15, &gen->uplink_bps, key, err);
		} else if (strcasecmp(key, "oversub") == 0) {
			/* "3" or "3:1" */
			char *colon = strchr(val, ':');

			if (colon && strcmp(colon, ":1") == 0)
				*colon = '\0';
			rc = hm_parse_double(val, 1, 1000, &gen->oversubscription, key, err);
		} else if (strcasecmp(key, "pods") == 0) {
			rc = gen_int(key, val, GEN_MAX_RACKS, &pods, err);
		} else if (strcasecmp(key, "racks_per_pod") == 0) {
			rc = gen_int(key, val, GEN_MAX_RACKS, &gen->racks_per_pod, err);
		} else if (strcasecmp(key, "aggs") == 0) {
			rc = gen_int(key, val, GEN_MAX_AGGS, &gen->aggs_per_pod, err);
		} else if (strcasecmp(key, "cores") == 0 || strcasecmp(key, "spines") == 0) {
			rc = gen_int(key, val, GEN_MAX_CORES, &gen->cores, err);
		} else {
			known = false;
			rc = hm_err_set(err, HM_ERR_PARSE,
					"generator spec: unknown key '%s'; accepted keys: %s", key,
					GEN_KEYS);
		}
		if (rc) {
			if (known)
				hm_err_prefix(err, "generator spec");
			goto out;
		}
	}
	if (pods > 0) {
		int racks = gen->racks > 0 ? gen->racks : GEN_DEFAULT_RACKS;

		if (gen->racks_per_pod > 0 && gen->racks_per_pod * pods != racks) {
			rc =
			    hm_err_set(err, HM_ERR_RANGE,
				       "generator spec: pods=%d and racks_per_pod=%d disagree with "
				       "racks=%d; give one of them",
				       pods, gen->racks_per_pod, racks);
			goto out;
		}
		if (racks % pods != 0) {
			rc = hm_err_set(err, HM_ERR_RANGE,
					"generator spec: racks=%d do not split into pods=%d; racks "
					"must be a multiple of pods",
					racks, pods);
			goto out;
		}
		gen->racks_per_pod = racks / pods;
	}
out:
	free(copy);
	return rc;
}
