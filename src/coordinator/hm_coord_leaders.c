/*
 * Rack leaders: one node agent per rack leads (the rule is in hm_coord_nodes.h
 * and docs/architecture.md). Elections run under the engine's mutex on agent
 * events of the rack and on hm_coord_leaders_check, never on a timer of their
 * own: a leader that went silent gives way at the first of them after
 * AgentValidity.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"
#include "hm_coord_nodes.h"
#include "hm_hostlist.h"
#include "hm_log.h"

typedef struct {
	int rack, host;
	const char *name;
} rack_host_t;

static int by_rack_name(const void *a, const void *b)
{
	const rack_host_t *x = a, *y = b;

	if (x->rack != y->rack)
		return x->rack < y->rack ? -1 : 1;
	return hm_hostname_cmp(x->name, y->name);
}

static const char *rack_name(const hm_topo_t *t, int r)
{
	int sw = t->rack_switch && r >= 0 && r < t->nracks ? t->rack_switch[r] : -1;

	return sw >= 0 && sw < t->nswitches ? t->switches[sw].name : "";
}

const char *hm_coord_rack_name(const hm_coord_t *c, int r)
{
	return rack_name(c->topo, r);
}

void hm_coord_racks_free(hm_coord_t *c)
{
	free(c->racks);
	free(c->rack_hosts);
	free(c->rack_first);
	c->racks = NULL;
	c->rack_hosts = c->rack_first = NULL;
}

hm_rc_t hm_coord_racks_rebuild(hm_coord_t *c, const hm_topo_t *old_topo, hm_crack_t *old_racks)
{
	const hm_topo_t *t = c->topo;
	int nr = t->nracks, n = 0;
	rack_host_t *rh = calloc((size_t)(t->nhosts > 0 ? t->nhosts : 1), sizeof(*rh));

	hm_coord_racks_free(c);
	c->racks = calloc((size_t)(nr > 0 ? nr : 1), sizeof(*c->racks));
	c->rack_hosts = calloc((size_t)(t->nhosts > 0 ? t->nhosts : 1), sizeof(int));
	c->rack_first = calloc((size_t)nr + 1, sizeof(int));
	if (!rh || !c->racks || !c->rack_hosts || !c->rack_first) {
		free(rh);
		hm_coord_racks_free(c);
		return HM_ERR_NOMEM;
	}
	for (int h = 0; h < t->nhosts; h++)
		if (t->hosts[h].rack >= 0 && t->hosts[h].rack < nr)
			rh[n++] = (rack_host_t){t->hosts[h].rack, h, t->hosts[h].name};
	qsort(rh, (size_t)n, sizeof(*rh), by_rack_name);
	for (int i = 0; i < n; i++)
		c->rack_hosts[i] = rh[i].host;
	free(rh);
	for (int i = 0, r = 0; r <= nr; r++) {
		while (i < n && t->hosts[c->rack_hosts[i]].rack < r)
			i++;
		c->rack_first[r] = i;
	}
	for (int r = 0; r < nr; r++) {
		hm_crack_t *k = &c->racks[r];

		k->leader = -1;
		/* The same rack (by switch name) keeps its leader if that node is still in it. */
		for (int o = 0; old_topo && old_racks && o < old_topo->nracks; o++) {
			int l = old_racks[o].leader, h;

			if (strcmp(rack_name(old_topo, o), rack_name(t, r)) != 0)
				continue;
			*k = old_racks[o];
			h = l >= 0 ? hm_topo_host_index(t, old_topo->hosts[l].name) : -1;
			k->leader = h >= 0 && t->hosts[h].rack == r ? h : -1;
			break;
		}
	}
	return HM_OK;
}

static bool healthy(const hm_coord_t *c, int h, double now_s)
{
	const hm_cnode_t *n = c->nodes ? &c->nodes[h] : NULL;

	return n && n->up && now_s - n->last_s <= c->conf.agent_valid_ms / 1000.0;
}

/* Re-elect rack r (caller holds mu); true when its leader changed. */
static bool elect(hm_coord_t *c, int r, double now_s)
{
	hm_crack_t *k = &c->racks[r];
	int old = k->leader, best = -1;
	bool settled = false;
	char why[96] = "";

	if (old >= 0 && healthy(c, old, now_s))
		return false;
	for (int i = c->rack_first[r]; i < c->rack_first[r + 1]; i++) {
		int h = c->rack_hosts[i];

		if (!healthy(c, h, now_s))
			continue;
		if (best < 0)
			best = h;
		settled |= now_s - c->nodes[h].up_s >= c->conf.agent_valid_ms / 1000.0;
	}
	/* A rack without a leader waits until one of its agents has been up for
	   AgentValidity, so that agents starting together (the rack's slurmd, or
	   every agent reconnecting after a coordinator restart, spread by their
	   back-off's jitter) elect the lowest-named one, not the first to connect.
	   A leader that goes is replaced at once. */
	if (old < 0 && best >= 0 && !settled)
		return false;
	if (best == old)
		return false;
	if (old >= 0)
		snprintf(why, sizeof(why), " (was %s: %s)", c->topo->hosts[old].name,
			 !c->nodes[old].up ? "its agent's connection closed"
					   : "its agent silent past AgentValidity");
	k->leader = best;
	k->since_s = now_s;
	if (best >= 0) {
		k->term++;
		k->had_leader = true;
		hm_log(HM_LOG_INFO, "rack %s: leader %s, term %lu%s", rack_name(c->topo, r),
		       c->topo->hosts[best].name, k->term, why);
	} else {
		hm_log(HM_LOG_INFO, "rack %s: no leader, no agent of the rack is up%s",
		       rack_name(c->topo, r), why);
	}
	/* Every agent of the rack hears of it with the next push. */
	c->gen++;
	for (int i = c->rack_first[r]; i < c->rack_first[r + 1]; i++)
		c->nodes[c->rack_hosts[i]].gen = c->gen;
	return true;
}

void hm_coord_elect_host(hm_coord_t *c, int h, double now_s)
{
	int r = h >= 0 && h < c->topo->nhosts ? c->topo->hosts[h].rack : -1;

	if (c->racks && c->nodes && r >= 0 && r < c->topo->nracks && elect(c, r, now_s) &&
	    c->notify)
		c->notify(c->notify_arg);
}

void hm_coord_leaders_check(hm_coord_t *c, double now_s)
{
	bool changed = false;

	hm_coord_nodes_grace_check(c, now_s); /* a stall's pending losses, first */

	pthread_mutex_lock(&c->mu);
	for (int r = 0; c->racks && c->nodes && r < c->topo->nracks; r++)
		changed |= elect(c, r, now_s);
	if (changed && c->notify)
		c->notify(c->notify_arg);
	pthread_mutex_unlock(&c->mu);
}

/* The addresses of rack r's agents, one per node with a rack channel: who may join
   its leader's (caller holds mu). */
static void rack_members(const hm_coord_t *c, int r, hm_aw_rack_t *out)
{
	out->has_members = true;
	for (int h = 0; h < c->topo->nhosts && out->nmembers < HM_AW_MAX_NODES; h++) {
		const char *a = c->nodes[h].rack_addr, *colon = strrchr(a, ':');
		char ip[HM_AW_ADDR_MAX];
		struct in_addr in;

		if (c->topo->hosts[h].rack != r || !colon)
			continue;
		snprintf(ip, sizeof(ip), "%.*s", (int)(colon - a), a);
		if (inet_pton(AF_INET, ip, &in) == 1)
			out->member_ip[out->nmembers++] = in.s_addr;
	}
}

bool hm_coord_node_rack(hm_coord_t *c, const char *node, hm_aw_rack_t *out)
{
	int h, r;
	bool ok = false;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->mu);
	h = node ? hm_topo_host_index(c->topo, node) : -1;
	r = h >= 0 ? c->topo->hosts[h].rack : -1;
	if (c->racks && r >= 0 && r < c->topo->nracks && rack_name(c->topo, r)[0]) {
		const hm_crack_t *k = &c->racks[r];

		snprintf(out->rack, sizeof(out->rack), "%s", rack_name(c->topo, r));
		if (k->leader >= 0) {
			snprintf(out->leader, sizeof(out->leader), "%s",
				 c->topo->hosts[k->leader].name);
			if (c->nodes)
				snprintf(out->leader_addr, sizeof(out->leader_addr), "%s",
					 c->nodes[k->leader].rack_addr);
		}
		snprintf(out->role, sizeof(out->role), "%s", k->leader == h ? "leader" : "member");
		out->term = (long)k->term;
		if (k->leader == h && c->nodes)
			rack_members(c, r, out);
		ok = true;
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}

/* The rack view's leader members (caller holds mu). */
void hm_coord_rack_leader_view(const hm_coord_t *c, int r, hm_coord_rack_view_t *v)
{
	const hm_crack_t *k = c->racks ? &c->racks[r] : NULL;

	v->leader_since_s = -1;
	v->last_epoch = -1;
	v->solve_ms = -1;
	snprintf(v->state, sizeof(v->state), "%s",
		 k && k->leader >= 0  ? "up"
		 : k && k->had_leader ? "lost"
				      : "none");
	if (!k)
		return;
	if (k->leader >= 0) {
		snprintf(v->leader, sizeof(v->leader), "%s", c->topo->hosts[k->leader].name);
		if (c->nodes)
			snprintf(v->leader_addr, sizeof(v->leader_addr), "%s",
				 c->nodes[k->leader].rack_addr);
		v->leader_since_s = k->since_s;
	}
	v->term = k->term;
	/* Its rounds (hm_coord_tier.c): only racks with contending local jobs get one. */
	if (k->last_round > 0) {
		v->last_epoch = k->last_round;
		v->solve_ms = k->solve_ms;
	}
	snprintf(v->solver, sizeof(v->solver), "%s",
		 k->solver == HM_RACK_BY_LEADER  ? "leader"
		 : k->solver == HM_RACK_BY_COORD ? "coordinator"
						 : "");
	v->leader_solves = k->leader_solves;
	v->coord_solves = k->coord_solves;
	v->silent = k->silent;
}
