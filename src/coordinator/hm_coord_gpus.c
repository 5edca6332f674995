/*
 * hm_coord_gpus.c - the GPUs Slurm allocated a job on each node, as the sched
 * plugin hands them over (hm_coord_job_info_t.gpu_ids): Slurm's GRES index
 * lists ("IDX:0-3" in scontrol show job -d), one for every node or one per
 * node. The engine models each slot on those GPUs, so on a server with a NIC
 * per GPU pair two jobs on different GPUs use different NICs.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_coord_int.h"

/* "0-3,6" (up to end) into *mask; false when it is not such a list within 0..31. */
static bool idx_list(const char *s, const char *end, uint32_t *mask)
{
	*mask = 0;
	while (s < end) {
		char *e;
		long a = strtol(s, &e, 10), b = a;

		if (e == s || !isdigit((unsigned char)*s))
			return false;
		s = e;
		if (s < end && *s == '-') {
			s++;
			if (!isdigit((unsigned char)*s))
				return false;
			b = strtol(s, &e, 10);
			s = e;
		}
		if (a < 0 || b < a || b > 31 || (s < end && *s != ','))
			return false;
		for (long g = a; g <= b; g++)
			*mask |= 1u << g;
		s += s < end;
	}
	return *mask != 0;
}

int hm_coord_gpu_mask(const char *spec, const char *node, uint32_t *mask)
{
	const char *p = spec;
	bool any = false;

	*mask = 0;
	if (!spec || !*spec)
		return 0;
	while (*p) {
		const char *tok, *end, *colon;
		uint32_t m;

		p += strspn(p, " ");
		if (!*p)
			break;
		tok = p;
		end = tok + strcspn(tok, " ");
		p = end;
		colon = memchr(tok, ':', (size_t)(end - tok));
		if (!colon) { /* every node */
			if (!idx_list(tok, end, &m))
				return -1;
			if (!any)
				*mask = m;
			continue;
		}
		if (!idx_list(colon + 1, end, &m))
			return -1;
		if ((size_t)(colon - tok) == strlen(node) &&
		    strncmp(tok, node, strlen(node)) == 0) {
			*mask = m; /* a node's own list wins over the common one */
			any = true;
		}
	}
	return *mask ? 1 : 0;
}

/* Indexes of mask as "0-3,6" at buf (len bytes); false when they do not fit. */
static bool idx_format(uint32_t mask, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int g = 0; g < 32; g++) {
		int e = g, w;

		if (!(mask >> g & 1u))
			continue;
		while (e + 1 < 32 && (mask >> (e + 1) & 1u))
			e++;
		w = snprintf(buf + used, len - used, e > g ? "%s%d-%d" : "%s%d", used ? "," : "", g,
			     e);
		if (w < 0 || (size_t)w >= len - used)
			return false;
		used += (size_t)w;
		g = e;
	}
	return true;
}

bool hm_coord_gpu_ids_format(const char *const *nodes, const uint32_t *masks, int n, char *buf,
			     size_t len)
{
	size_t used = 0;
	bool same = n > 0;

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < n; i++)
		same &= masks[i] == masks[0] && masks[i] != 0;
	if (same) { /* the common case: one list for every node */
		if (idx_format(masks[0], buf, len))
			return true;
		buf[0] = '\0';
		return false;
	}
	for (int i = 0; i < n; i++) {
		char ids[96];
		int w;

		if (!masks[i])
			continue;
		idx_format(masks[i], ids, sizeof(ids));
		w = snprintf(buf + used, len - used, "%s%s:%s", used ? " " : "", nodes[i], ids);
		if (w < 0 || (size_t)w >= len - used) {
			buf[0] = '\0';
			return false;
		}
		used += (size_t)w;
	}
	return used > 0;
}
