/*
 * hm_lview.c - the link-load view placement scores against (hm_place_score.h):
 * every running job's bits per iteration on each link it crosses, indexed by
 * link (counting sort), and the mean utilisation of links, racks' uplinks and
 * hosts' NICs that the candidate generator orders racks by.
 */
#include "hm_place_score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hm_lview_free(hm_lview_t *v)
{
	if (!v)
		return;
	free(v->jobs);
	free(v->use_off);
	free(v->use);
	free(v->link_util);
	free(v->rack_up_util);
	free(v->host_util);
	free(v);
}

double hm_lview_link_util(const hm_lview_t *v, int link)
{
	double u = 0;

	for (; v; v = v->next)
		u += link >= 0 && link < v->topo->nlinks ? v->link_util[link] : 0;
	return u;
}

double hm_lview_rack_util(const hm_lview_t *v, int rack)
{
	double u = 0;

	for (; v; v = v->next)
		u += rack >= 0 && rack < v->topo->nracks ? v->rack_up_util[rack] : 0;
	return u;
}

double hm_lview_host_util(const hm_lview_t *v, int host)
{
	double u = 0;

	/* Views hold disjoint jobs: a NIC link's loads add up; the largest link of the
	 * host in the sum is bounded by the sum of each view's largest. */
	for (; v; v = v->next)
		u += host >= 0 && host < v->topo->nhosts ? v->host_util[host] : 0;
	return u;
}

int hm_lview_njobs(const hm_lview_t *v)
{
	int n = 0;

	for (; v; v = v->next)
		n += v->njobs;
	return n;
}

void hm_lview_job_times(const hm_profile_t *prof, const hm_traffic_t *tr, double *period_s,
			double *burst_s)
{
	double burst = 0;

	for (int p = 0; tr && p < tr->nphases; p++)
		burst += tr->alone_comm_s[p];
	if (burst_s)
		*burst_s = burst;
	if (period_s)
		*period_s = tr && tr->alone_iter_s > 0 ? tr->alone_iter_s
						       : (prof ? prof->compute_s : 0) + burst;
}

static bool usable(double x)
{
	return x > 0 && isfinite(x);
}

/*
 * Bits per iteration a job puts on each link it crosses, summed over phases,
 * into acc; its links into touched (mark[l] == stamp once listed). Returns
 * their count, -1 for a link outside the topology.
 */
static int job_links(const hm_topo_t *t, const hm_traffic_t *tr, double *acc, int *touched,
		     int *mark, int stamp)
{
	int n = 0;

	for (int p = 0; tr && p < tr->nphases; p++) {
		const hm_phase_load_t *ph = &tr->phases[p];

		for (int i = 0; i < ph->nlinks; i++) {
			int l = ph->links[i];

			if (l < 0 || l >= t->nlinks)
				return -1;
			if (mark[l] != stamp) {
				mark[l] = stamp;
				touched[n++] = l;
			}
			acc[l] += ph->flow_bytes * 8.0 * ph->flows[i];
		}
	}
	return n;
}

hm_rc_t hm_lview_build(const hm_topo_t *t, const hm_lview_job_t *jobs, int n, hm_lview_t **out,
		       hm_err_t *err)
{
	hm_lview_t *v = NULL;
	double *acc = NULL;
	int *touched = NULL, *cnt = NULL, *nup = NULL, *mark = NULL, total = 0;
	hm_rc_t rc = HM_OK;

	if (!out)
		return hm_err_set(err, HM_ERR_INVAL, "hm_lview_build: NULL output");
	*out = NULL;
	if (!t || n < 0 || (n > 0 && !jobs))
		return hm_err_set(err, HM_ERR_INVAL, "hm_lview_build: NULL topology or jobs");
	v = calloc(1, sizeof(*v));
	acc = calloc((size_t)t->nlinks + 1, sizeof(*acc));
	touched = malloc(((size_t)t->nlinks + 1) * sizeof(*touched));
	cnt = calloc((size_t)t->nlinks + 1, sizeof(*cnt));
	nup = calloc((size_t)t->nracks + 1, sizeof(*nup));
	mark = malloc(((size_t)t->nlinks + 1) * sizeof(*mark));
	if (!v || !acc || !touched || !cnt || !nup || !mark)
		goto nomem;
	for (int l = 0; l <= t->nlinks; l++)
		mark[l] = -1;
	v->topo = t;
	v->njobs = n;
	v->jobs = calloc((size_t)n + 1, sizeof(*v->jobs));
	v->use_off = calloc((size_t)t->nlinks + 1, sizeof(*v->use_off));
	v->link_util = calloc((size_t)t->nlinks + 1, sizeof(*v->link_util));
	v->rack_up_util = calloc((size_t)t->nracks + 1, sizeof(*v->rack_up_util));
	v->host_util = calloc((size_t)t->nhosts + 1, sizeof(*v->host_util));
	if (!v->jobs || !v->use_off || !v->link_util || !v->rack_up_util || !v->host_util)
		goto nomem;
	/* Pass 1: count uses per link. */
	for (int j = 0; j < n; j++) {
		int k = job_links(t, jobs[j].tr, acc, touched, mark, j);

		if (k < 0) {
			rc =
			    hm_err_set(err, HM_ERR_INVAL,
				       "hm_lview_build: job %u crosses a link outside the topology",
				       jobs[j].id);
			goto out;
		}
		for (int i = 0; i < k; i++) {
			cnt[touched[i]]++;
			acc[touched[i]] = 0;
		}
		total += k;
	}
	v->use = calloc((size_t)total + 1, sizeof(*v->use));
	if (!v->use)
		goto nomem;
	for (int l = 0; l < t->nlinks; l++)
		v->use_off[l + 1] = v->use_off[l] + cnt[l];
	memset(cnt, 0, ((size_t)t->nlinks + 1) * sizeof(*cnt));
	/* Pass 2: fill them, jobs in input order within a link. */
	for (int j = 0; j < n; j++) {
		int k = job_links(t, jobs[j].tr, acc, touched, mark, n + j);
		double P = jobs[j].period_s;

		v->jobs[j] = jobs[j];
		v->jobs[j].tr = NULL;
		for (int i = 0; i < k; i++) {
			int l = touched[i];
			double c = t->links[l].capacity_bps;

			v->use[v->use_off[l] + cnt[l]++] =
			    (hm_lview_use_t){.job = j, .bits = acc[l]};
			if (usable(P) && usable(c))
				v->link_util[l] += acc[l] / (c * P);
			acc[l] = 0;
		}
	}
	for (int l = 0; l < t->nlinks; l++) {
		const hm_link_t *lk = &t->links[l];

		if ((lk->kind == HM_LINK_SW_UP || lk->kind == HM_LINK_SW_DOWN) && lk->rack >= 0 &&
		    lk->rack < t->nracks) {
			v->rack_up_util[lk->rack] += v->link_util[l];
			nup[lk->rack]++;
		} else if (lk->host >= 0 && lk->host < t->nhosts &&
			   v->link_util[l] > v->host_util[lk->host]) {
			v->host_util[lk->host] = v->link_util[l];
		}
	}
	for (int r = 0; r < t->nracks; r++)
		if (nup[r] > 0)
			v->rack_up_util[r] /= nup[r];
	*out = v;
	v = NULL;
	goto out;
nomem:
	rc = hm_err_set(err, HM_ERR_NOMEM, "link-load view: out of memory");
out:
	hm_lview_free(v);
	free(acc);
	free(touched);
	free(cnt);
	free(nup);
	free(mark);
	return rc;
}
