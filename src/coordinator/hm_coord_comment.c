/*
 * AdminComment: one compact entry per decision change, appended, bounded.
 *   harmonics:e<epoch>@<UTC time> p=<policy> shift=<ms>ms/<period ms>ms prio=<n>[ path=<n>];
 *   harmonics:e<epoch>@<UTC time> p=<policy> delay=<ms>ms prio=<n>;   (one-time delay)
 *   harmonics:e<epoch>@<UTC time> off=<reason>;                        (unscheduled)
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hm_coord_int.h"
#include "hm_log.h"

#define ENTRY_TAG   "harmonics:e"
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
	} else {
		snprintf(buf, len, ENTRY_TAG "%lu@%s p=%s delay=%.6gms prio=%d;", a->epoch, when,
			 a->policy, a->shift_us / 1e3, a->prio);
	}
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
	char entry[ENTRY_MAX], foreign[4096];
	span_t ents[MAX_ENTRIES];
	int nents = 0, first;
	size_t flen = 0, limit, total, elen, blen_new, blen_old;
	const char *p, *body_new, *body_old;
	hm_cjob_t *j;
	bool ok = false;

	if (!current)
		current = "";
	pthread_mutex_lock(&c->mu);
	j = hm_coord_find(c, job_id);
	if (!j || !j->decided || (!j->a.scheduled && strcmp(j->mode, "off") == 0)) {
		pthread_mutex_unlock(&c->mu);
		return false; /* nothing decided, or the job did not ask */
	}
	hm_coord_admin_entry(&j->a, entry, sizeof(entry));
	limit = c->conf.admin_comment_max_bytes;
	pthread_mutex_unlock(&c->mu);
	if (len == 0)
		return false;
	if (limit > len - 1)
		limit = len - 1;

	/* Split current into text of others and our entries (oldest first). */
	for (p = current; *p;) {
		const char *tag = strstr(p, ENTRY_TAG), *end;
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

	elen = strlen(entry);
	body_new = entry_body(entry, elen, &blen_new);
	if (nents > 0) {
		body_old = entry_body(ents[nents - 1].s, ents[nents - 1].len, &blen_old);
		if (blen_old == blen_new && memcmp(body_old, body_new, blen_new) == 0)
			return false; /* decision unchanged */
	}
	if (flen + elen > limit) {
		hm_log(HM_LOG_INFO,
		       "job %u: AdminComment has %zu bytes of other text, no room for a "
		       "%zu-byte entry within %zu bytes",
		       job_id, flen, elen, limit);
		return false;
	}
	/* Drop the oldest entries until the rest fits. */
	total = flen + elen;
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
	memcpy(buf + total, entry, elen);
	buf[total + elen] = '\0';
	ok = true;
	return ok;
}
