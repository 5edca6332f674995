/*
 * hm_coord_gpus.c - the GPUs Slurm allocated a job on each node, as the sched
 * plugin hands them over (hm_coord_job_info_t.gpu_ids): Slurm's GRES index
 * lists ("IDX:0-3" in scontrol show job -d), one for every node or one per
 * node. The engine models each slot on those GPUs, so on a server with a NIC
 * per GPU pair two jobs on different GPUs use different NICs.
 */
#include <ctype.h>
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
