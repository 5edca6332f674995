/*
 * The rack round with the leaders (hm_coord.h, "Rack leaders' rounds"): the
 * harmonics policy hands its requests to coord_exchange during a policy run,
 * when the engine's mutex is released with c->deciding set (hm_coord_decide):
 * changes to jobs, nodes or the configuration wait for the run
 * (hm_coord_lock_mut); readers and the server's threads do not. Requests of
 * racks with a leader go to the leaders' node agents through the server, the
 * rest are solved here meanwhile. The round's own mailbox has its own mutex,
 * so the server delivers replies without the engine's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hm_clock.h"
#include "hm_coord_int.h"
#include "hm_harmonics_tier.h"
#include "hm_log.h"

hm_rc_t hm_coord_tier_init(hm_coord_t *c)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&c->tier.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->tier.cv, &ca);
	pthread_cond_init(&c->cv_idle, &ca);
	pthread_condattr_destroy(&ca);
	c->rack_tr.exchange = hm_coord_exchange;
	c->rack_tr.arg = c;
	return HM_OK;
}

void hm_coord_tier_fini(hm_coord_t *c)
{
	pthread_cond_destroy(&c->tier.cv);
	pthread_cond_destroy(&c->cv_idle);
	pthread_mutex_destroy(&c->tier.mu);
	free(c->tier.slot);
}

void hm_coord_node_caps(hm_coord_t *c, const char *node, bool rack_solver, const char *rack_addr)
{
	int h;

	pthread_mutex_lock(&c->mu);
	h = hm_topo_host_index(c->topo, node);
	if (h >= 0 && c->nodes) {
		c->nodes[h].rack_solver = rack_solver;
		snprintf(c->nodes[h].rack_addr, sizeof(c->nodes[h].rack_addr), "%s",
			 rack_addr ? rack_addr : "");
	}
	pthread_mutex_unlock(&c->mu);
}

void hm_coord_set_rack_sender(hm_coord_t *c, void (*send)(void *arg), void *arg)
{
	pthread_mutex_lock(&c->tier.mu);
	c->tier.send = send;
	c->tier.send_arg = arg;
	pthread_mutex_unlock(&c->tier.mu);
}

/* Record what the round gave rack r (caller holds c->mu). */
static void rack_stats(hm_coord_t *c, const hm_rack_req_t *q, const hm_rack_rep_t *p, bool answered,
		       unsigned long round)
{
	hm_crack_t *k = c->racks ? &c->racks[q->rack] : NULL;

	if (!k)
		return;
	if (!answered) {
		k->silent++;
		return;
	}
	k->solver = p->by_leader ? HM_RACK_BY_LEADER : HM_RACK_BY_COORD;
	k->solve_ms = p->solve_ms;
	k->last_round = (long)round;
	if (p->by_leader)
		k->leader_solves++;
	else
		k->coord_solves++;
}

hm_rc_t hm_coord_exchange(void *arg, const hm_rack_req_t *reqs, hm_rack_rep_t *reps, int n,
			  hm_err_t *err)
{
	hm_coord_t *c = arg;
	hm_tier_box_t *b = &c->tier;
	hm_tier_slot_t *slot = NULL;
	void (*send)(void *arg);
	void *send_arg;
	int pending = 0;
	struct timespec until;

	pthread_mutex_lock(&c->mu); /* the racks' leaders and their nodes */
	pthread_mutex_lock(&b->mu);
	if (n > b->cap) {
		hm_tier_slot_t *ns = realloc(b->slot, sizeof(*ns) * (size_t)n);
		if (!ns) {
			pthread_mutex_unlock(&b->mu);
			pthread_mutex_unlock(&c->mu);
			return hm_err_set(err, HM_ERR_NOMEM, "rack round: out of memory");
		}
		b->slot = ns;
		b->cap = n;
	}
	slot = b->slot;
	b->round++;
	b->next = 0;
	send = b->send;
	send_arg = b->send_arg;
	b->n = n;
	b->reqs = reqs;
	b->reps = reps;
	for (int i = 0; i < n; i++) {
		int r = reqs[i].rack, h = c->racks && r < c->topo->nracks ? c->racks[r].leader : -1;
		memset(&slot[i], 0, sizeof(slot[i]));
		/* A leader whose agent predates rack rounds is solved for here. */
		if (c->conf.rack_solve_leaders && h >= 0 && send && c->nodes[h].rack_solver) {
			snprintf(slot[i].node, sizeof(slot[i].node), "%s", c->topo->hosts[h].name);
			slot[i].state = HM_SLOT_WAITING;
			pending++;
		}
	}
	b->pending = pending;
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_unlock(&c->mu);
	if (pending > 0)
		send(send_arg);
	/* Racks without a leader (or RackSolve=coordinator): solved here while the
	   leaders solve theirs. */
	for (int i = 0; i < n; i++) {
		hm_err_t e = {0};
		if (slot[i].node[0]) /* a leader's (the server may be changing its state) */
			continue;
		if (hm_tier_rack_solve(&reqs[i], &reps[i], &e) != HM_OK)
			hm_log(HM_LOG_ERROR, "rack %s: %s: its local jobs run free",
			       hm_coord_rack_name(c, reqs[i].rack), e.msg);
	}
	if (pending > 0) {
		until = hm_clock_deadline(CLOCK_MONOTONIC, c->conf.rack_timeout_ms);
		pthread_mutex_lock(&b->mu);
		while (b->pending > 0 &&
		       pthread_cond_timedwait(&b->cv, &b->mu, &until) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_lock(&c->mu);
	/* Close the round: a late reply finds no slot. */
	pthread_mutex_lock(&b->mu);
	for (int i = 0; i < n; i++) {
		bool answered = reps[i].answered;
		if (slot[i].state == HM_SLOT_WAITING || slot[i].state == HM_SLOT_SENT)
			hm_log(
			    HM_LOG_INFO,
			    "rack %s: leader %s did not answer round %lu within %d ms: its local "
			    "jobs run free this round",
			    hm_coord_rack_name(c, reqs[i].rack), slot[i].node, reqs[i].round,
			    c->conf.rack_timeout_ms);
		else if (slot[i].state == HM_SLOT_FAILED)
			hm_log(
			    HM_LOG_INFO,
			    "rack %s: leader %s could not be asked for round %lu: its local jobs "
			    "run free this round",
			    hm_coord_rack_name(c, reqs[i].rack), slot[i].node, reqs[i].round);
		rack_stats(c, &reqs[i], &reps[i], answered, b->round);
	}
	b->n = 0;
	b->reqs = NULL;
	b->reps = NULL;
	b->pending = 0;
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_unlock(&c->mu);
	return HM_OK;
}

int hm_coord_tier_take(hm_coord_t *c, char *node, size_t len, unsigned long *round)
{
	hm_tier_box_t *b = &c->tier;
	int idx = -1;

	pthread_mutex_lock(&b->mu);
	for (; b->next < b->n && idx < 0; b->next++)
		if (b->slot[b->next].state == HM_SLOT_WAITING) {
			b->slot[b->next].state = HM_SLOT_SENT;
			snprintf(node, len, "%s", b->slot[b->next].node);
			idx = b->next;
		}
	*round = b->round;
	pthread_mutex_unlock(&b->mu);
	return idx;
}

/* Caller holds b->mu: slot idx of round still open? */
static bool open_slot(const hm_tier_box_t *b, int idx, unsigned long round)
{
	return round == b->round && idx >= 0 && idx < b->n;
}

void hm_coord_tier_fail(hm_coord_t *c, int idx, unsigned long round)
{
	hm_tier_box_t *b = &c->tier;

	pthread_mutex_lock(&b->mu);
	if (open_slot(b, idx, round) && b->slot[idx].state == HM_SLOT_SENT) {
		b->slot[idx].state = HM_SLOT_FAILED;
		if (--b->pending == 0)
			pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
}

void hm_coord_tier_node_gone(hm_coord_t *c, const char *node)
{
	hm_tier_box_t *b = &c->tier;

	pthread_mutex_lock(&b->mu);
	for (int i = 0; i < b->n; i++)
		if ((b->slot[i].state == HM_SLOT_SENT || b->slot[i].state == HM_SLOT_WAITING) &&
		    strcmp(b->slot[i].node, node) == 0) {
			b->slot[i].state = HM_SLOT_FAILED;
			if (--b->pending == 0)
				pthread_cond_broadcast(&b->cv);
		}
	pthread_mutex_unlock(&b->mu);
}

hm_rc_t hm_coord_tier_encode(hm_coord_t *c, int idx, unsigned long round, int64_t seq, char **json,
			     hm_err_t *err)
{
	hm_tier_box_t *b = &c->tier;
	hm_aw_msg_t m = {.op = HM_AW_RACK_ROUND, .seq = seq};
	hm_rc_t rc;

	*json = NULL;
	pthread_mutex_lock(&b->mu);
	if (!open_slot(b, idx, round)) {
		pthread_mutex_unlock(&b->mu);
		return hm_err_set(err, HM_ERR_NOTFOUND, "rack round %lu is over", round);
	}
	m.round = b->reqs[idx]; /* borrowed: not freed below */
	rc = hm_aw_encode(&m, json, err);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

bool hm_coord_tier_result(hm_coord_t *c, const char *node, hm_rack_rep_t *rep)
{
	hm_tier_box_t *b = &c->tier;
	bool taken = false;

	pthread_mutex_lock(&b->mu);
	for (int i = 0; i < b->n && !taken; i++) {
		hm_tier_slot_t *s = &b->slot[i];
		if (s->state != HM_SLOT_SENT || strcmp(s->node, node) != 0 ||
		    b->reqs[i].rack != rep->rack || b->reqs[i].round != rep->round)
			continue;
		b->reps[i] = *rep; /* moved: the round owns its decisions now */
		b->reps[i].answered = true;
		b->reps[i].by_leader = true;
		memset(rep, 0, sizeof(*rep));
		s->state = HM_SLOT_DONE;
		if (--b->pending == 0)
			pthread_cond_broadcast(&b->cv);
		taken = true;
	}
	pthread_mutex_unlock(&b->mu);
	return taken;
}
