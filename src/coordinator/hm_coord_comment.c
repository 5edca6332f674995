/*
 * AdminComment: one compact entry per decision change, appended, bounded.
 *   harmonics:e<epoch>@<UTC time> p=<policy> shift=<ms>ms/<period ms>ms prio=<n>[ path=<n>];
 *   harmonics:e<epoch>@<UTC time> p=<policy> delay=<ms>ms prio=<n>;   (one-time delay)
 *   harmonics:e<epoch>@<UTC time> p=<policy> free prio=<n>;            (no slot, a class)
 *   harmonics:e<epoch>@<UTC time> off=<reason>;                        (unscheduled)
 *   harmonics:a<epoch>@<UTC time>;   the job's steps run epoch <epoch> (oldest on any node)
 *   harmonics:m@<UTC time> unpaced[ class=<n>];  modelled as its traffic runs (hm_coord_pace.c):
 *   harmonics:m@<UTC time> paced[ class=<n>];    no applied epoch for UnpacedAfter, or its NCCL
 *                                                traffic carries class n, not the decided prio
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hm_clock.h"
#include "hm_coord_int.h"
#include "hm_log.h"

#define ENTRY_TAG   "harmonics:e"
#define APPLIED_TAG "harmonics:a"
#define MODEL_TAG   "harmonics:m"
#define ANY_TAG     "harmonics:"
#define ENTRY_MAX   256
#define MAX_ENTRIES 256

void hm_coord_admin_entry(const hm_assignment_t *a, char *buf, size_t len)
{
	char when[32] = "?";
	time_t t = (time_t)(a->decided_us / 1000000);
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!a->scheduled) {
		char reason[sizeof(a->reason)];
		size_t i;

		/* Keep the entry one token: no blanks or separators inside the reason. */
		for (i = 0; a->reason[i] && i + 1 < sizeof(reason); i++) {
			char ch = a->reason[i];

			reason[i] = ch == ' ' || ch == '\t' ? '-' : ch == ';' ? ',' : ch;
		}
		reason[i] = '\0';
		snprintf(buf, len, ENTRY_TAG "%lu@%s off=%s;", a->epoch, when,
			 reason[0] ? reason : "unknown");
	} else if (a->period_us > 0) {
		char path[24] = "";

		if (a->path > 0)
			snprintf(path, sizeof(path), " path=%d", a->path);
		snprintf(buf, len, ENTRY_TAG "%lu@%s p=%s shift=%.6gms/%.6gms prio=%d%s;", a->epoch,
			 when, a->policy, a->shift_us / 1e3, a->period_us / 1e3, a->prio, path);
	} else if (a->shift_us > 0) {
		snprintf(buf, len, ENTRY_TAG "%lu@%s p=%s delay=%.6gms prio=%d;", a->epoch, when,
			 a->policy, a->shift_us / 1e3, a->prio);
	} else {
		snprintf(buf, len, ENTRY_TAG "%lu@%s p=%s free prio=%d;", a->epoch, when, a->policy,
			 a->prio);
	}
}

/* "harmonics:a<epoch>@<UTC time>;": what the steps run, as their agents report. */
static void applied_entry(long epoch, double now_s, char *buf, size_t len)
{
	char when[32] = "?";
	time_t t = (time_t)now_s;
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, len, APPLIED_TAG "%ld@%s;", epoch, when);
}

/* The model entry of job view v ("harmonics:m@TIME unpaced;", "... paced class=3;"). */
static void model_entry(const hm_coord_job_view_t *v, double now_s, char *buf, size_t len)
{
	char when[32] = "?", cls[24] = "";
	time_t t = (time_t)now_s;
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (v->class_in_force >= 0 && (v->unpaced || v->class_in_force != v->a.prio))
		snprintf(cls, sizeof(cls), " class=%d", v->class_in_force);
	snprintf(buf, len, MODEL_TAG "@%s %s%s;", when, v->unpaced ? "unpaced" : "paced", cls);
}

/* Epoch of an applied entry ("harmonics:a7@..."), -1 when unreadable. */
static long applied_epoch_of(const char *e)
{
	char *end = NULL;
	long v = strtol(e + strlen(APPLIED_TAG), &end, 10);

	return end && *end == '@' && v >= 0 ? v : -1;
}

/* The part of an entry after its timestamp ("p=... prio=2;"): what identifies a decision. */
static const char *entry_body(const char *e, size_t len, size_t *blen)
{
	const char *sp = memchr(e, ' ', len);

	if (!sp) {
		*blen = 0;
		return e + len;
	}
	*blen = len - (size_t)(sp + 1 - e);
	return sp + 1;
}

typedef struct {
	const char *s;
	size_t len;
} span_t;

bool hm_coord_admin_comment(hm_coord_t *c, uint32_t job_id, const char *current, char *buf,
			    size_t len)
{
	char adds[3][ENTRY_MAX], foreign[4096], model[ENTRY_MAX];
	span_t ents[MAX_ENTRIES];
	int nents = 0, nadds = 0, first, last_e = -1, last_a = -1, last_m = -1;
	bool notable = false;
	size_t flen = 0, limit, total, alen = 0, blen_new, blen_old;
	const char *p, *body_new, *body_old;
	long applied = -1;
	hm_coord_job_view_t v;
	hm_cjob_t *j;

	if (!current)
		current = "";
	pthread_mutex_lock(&c->mu);
	j = hm_coord_find(c, job_id);
	if (!j || !j->decided || (!j->a.scheduled && strcmp(j->mode, "off") == 0)) {
		pthread_mutex_unlock(&c->mu);
		return false; /* nothing decided, or the job did not ask */
	}
	hm_coord_admin_entry(&j->a, adds[0], sizeof(adds[0]));
	limit = c->conf.admin_comment_max_bytes;
	pthread_mutex_unlock(&c->mu);
	memset(&v, 0, sizeof(v));
	if (hm_coord_job(c, job_id, &v) == HM_OK) {
		applied = v.applied_epoch;
		notable = v.a.scheduled &&
			  (v.unpaced || (v.class_in_force >= 0 && v.class_in_force != v.a.prio));
	}
	if (len == 0)
		return false;
	if (limit > len - 1)
		limit = len - 1;

	/* Split current into text of others and our entries (oldest first). */
	for (p = current; *p;) {
		const char *tag = strstr(p, ANY_TAG), *end;
		size_t n = tag ? (size_t)(tag - p) : strlen(p);

		if (flen + n >= sizeof(foreign))
			n = sizeof(foreign) - 1 - flen;
		memcpy(foreign + flen, p, n);
		flen += n;
		if (!tag)
			break;
		end = strchr(tag, ';');
		end = end ? end + 1 : tag + strlen(tag);
		if (nents == MAX_ENTRIES) {
			memmove(ents, ents + 1, sizeof(ents[0]) * (MAX_ENTRIES - 1));
			nents--;
		}
		ents[nents++] = (span_t){tag, (size_t)(end - tag)};
		p = end;
	}
	foreign[flen] = '\0';
	for (int k = 0; k < nents; k++) {
		if (strncmp(ents[k].s, ENTRY_TAG, strlen(ENTRY_TAG)) == 0)
			last_e = k;
		else if (strncmp(ents[k].s, APPLIED_TAG, strlen(APPLIED_TAG)) == 0)
			last_a = k;
		else if (strncmp(ents[k].s, MODEL_TAG, strlen(MODEL_TAG)) == 0)
			last_m = k;
	}

	/* A changed decision, a newly applied epoch, a changed model: 0 to 3 entries to add. */
	body_new = entry_body(adds[0], strlen(adds[0]), &blen_new);
	if (last_e >= 0) {
		body_old = entry_body(ents[last_e].s, ents[last_e].len, &blen_old);
		if (!(blen_old == blen_new && memcmp(body_old, body_new, blen_new) == 0))
			nadds = 1;
	} else {
		nadds = 1;
	}
	if (applied >= 0 && (last_a < 0 || applied_epoch_of(ents[last_a].s) != applied))
		applied_entry(applied, hm_real_s(), adds[nadds++], sizeof(adds[0]));
	/* How it is modelled: when notable, or when it changed since the last such entry. */
	if (v.a.scheduled && (notable || last_m >= 0)) {
		model_entry(&v, hm_real_s(), model, sizeof(model));
		body_new = entry_body(model, strlen(model), &blen_new);
		if (last_m >= 0)
			body_old = entry_body(ents[last_m].s, ents[last_m].len, &blen_old);
		if (last_m < 0 ||
		    !(blen_old == blen_new && memcmp(body_old, body_new, blen_new) == 0))
			snprintf(adds[nadds++], sizeof(adds[0]), "%s", model);
	}
	if (nadds == 0)
		return false; /* nothing new */
	for (int k = 0; k < nadds; k++)
		alen += strlen(adds[k]);
	if (flen + alen > limit) {
		hm_log(HM_LOG_INFO,
		       "job %u: AdminComment has %zu bytes of other text, no room for a "
		       "%zu-byte entry within %zu bytes",
		       job_id, flen, alen, limit);
		return false;
	}
	/* Drop the oldest entries until the rest fits. */
	total = flen + alen;
	for (int k = 0; k < nents; k++)
		total += ents[k].len;
	for (first = 0; first < nents && total > limit; first++)
		total -= ents[first].len;
	memcpy(buf, foreign, flen);
	total = flen;
	for (int k = first; k < nents; k++) {
		memcpy(buf + total, ents[k].s, ents[k].len);
		total += ents[k].len;
	}
	for (int k = 0; k < nadds; k++) {
		size_t n = strlen(adds[k]);

		memcpy(buf + total, adds[k], n);
		total += n;
	}
	buf[total] = '\0';
	return true;
}
