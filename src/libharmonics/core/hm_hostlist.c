/*
 * hm_hostlist.c - expand Slurm hostlist expressions.
 *
 * Grammar: list := element ("," element)*; element := (text | "[" ranges "]")+;
 * ranges := range ("," range)*; range := digits | digits "-" digits.
 * Several bracket groups in one element expand as a cartesian product, the
 * first group varying slowest ("a[1-2]b[3-4]" -> a1b3 a1b4 a2b3 a2b4), as
 * Slurm does. A range keeps the width of its low bound ("[01-10]" -> 01..10).
 */
#include "hm_hostlist.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_parse.h"

#define HL_MAX_GROUPS 8   /* bracket groups in one element */
#define HL_MAX_RANGES 64  /* ranges in one bracket group */
#define HL_MAX_NAME   255 /* longest expanded host name */

typedef struct {
	unsigned long lo, hi;
	int width; /* zero padding, 0 = none */
} hl_range_t;

typedef struct {
	const char *text; /* literal text before this group (not NUL-terminated) */
	size_t text_len;
	int nranges;
	hl_range_t ranges[HL_MAX_RANGES];
	unsigned long count; /* names this group yields */
} hl_group_t;

typedef struct {
	int ngroups;
	hl_group_t groups[HL_MAX_GROUPS];
	const char *tail; /* literal text after the last group */
	size_t tail_len;
	unsigned long count;
} hl_elem_t;

void hm_hostlist_free(char **names, int n)
{
	if (!names)
		return;
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool is_name_char(char c)
{
	/* Anything printable except the hostlist syntax and blanks. */
	return isgraph((unsigned char)c) && c != '[' && c != ']' && c != ',';
}

/* Parse a decimal bound at *p; width is its digit count. */
static hm_rc_t parse_bound(const char **p, const char *expr, unsigned long *v, int *width,
			   hm_err_t *err)
{
	const char *s = *p;
	char *end = NULL;

	if (!isdigit((unsigned char)*s))
		return hm_err_set(err, HM_ERR_PARSE,
				  "hostlist '%s': expected a number at '%.20s', accepted: "
				  "name[1-4,7] with decimal bounds",
				  expr, *s ? s : "end of text");
	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno == ERANGE || *v > 999999999UL || end - s > 9)
		return hm_err_set(
		    err, HM_ERR_PARSE,
		    "hostlist '%s': number '%.*s' too large, accepted up to 999999999", expr,
		    (int)(end - s), s);
	*width = (int)(end - s);
	*p = end;
	return HM_OK;
}

/* Parse "1-4,7]" at *p (just after '['); leaves *p after ']'. */
static hm_rc_t parse_group(const char **p, const char *expr, hl_group_t *g, hm_err_t *err)
{
	const char *s = *p;
	hm_rc_t rc;

	g->nranges = 0;
	g->count = 0;
	for (;;) {
		hl_range_t r = {0};
		int wlo = 0, whi = 0;

		if (*s == ']' || *s == ',')
			return hm_err_set(err, HM_ERR_PARSE,
					  "hostlist '%s': empty range in brackets at '%.20s'", expr,
					  s);
		if (*s == '\0')
			return hm_err_set(err, HM_ERR_PARSE, "hostlist '%s': unterminated '['",
					  expr);
		if (*s == '[')
			return hm_err_set(err, HM_ERR_PARSE,
					  "hostlist '%s': nested '[' at '%.20s' is not accepted",
					  expr, s);
		rc = parse_bound(&s, expr, &r.lo, &wlo, err);
		if (rc)
			return rc;
		r.hi = r.lo;
		if (*s == '-') {
			s++;
			rc = parse_bound(&s, expr, &r.hi, &whi, err);
			if (rc)
				return rc;
			if (r.hi < r.lo)
				return hm_err_set(err, HM_ERR_PARSE,
						  "hostlist '%s': reversed range %lu-%lu, the low "
						  "bound must come first",
						  expr, r.lo, r.hi);
		}
		/* Pad to the low bound's digit count: "01-10" -> 01..10, "1-10" -> 1..10. */
		r.width = wlo;
		(void)whi;
		if (g->nranges >= HL_MAX_RANGES)
			return hm_err_set(err, HM_ERR_PARSE,
					  "hostlist '%s': more than %d ranges in one bracket", expr,
					  HL_MAX_RANGES);
		g->ranges[g->nranges++] = r;
		g->count += r.hi - r.lo + 1;
		if (g->count > HM_HOSTLIST_MAX)
			return hm_err_set(err, HM_ERR_RANGE, "hostlist '%s': expands past %d names",
					  expr, HM_HOSTLIST_MAX);
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == ']') {
			*p = s + 1;
			return HM_OK;
		}
		if (*s == '\0')
			return hm_err_set(err, HM_ERR_PARSE, "hostlist '%s': unterminated '['",
					  expr);
		return hm_err_set(err, HM_ERR_PARSE,
				  "hostlist '%s': unexpected '%c' in brackets, accepted: digits, "
				  "'-' and ','",
				  expr, *s);
	}
}

/* Parse one element starting at *p; stops at a top-level ',' or the end. */
static hm_rc_t parse_elem(const char **p, const char *expr, hl_elem_t *e, hm_err_t *err)
{
	const char *s = *p, *text = s;
	hm_rc_t rc;

	e->ngroups = 0;
	e->count = 1;
	for (;;) {
		if (*s == '\0' || *s == ',') {
			e->tail = text;
			e->tail_len = (size_t)(s - text);
			break;
		}
		if (*s == ']')
			return hm_err_set(err, HM_ERR_PARSE,
					  "hostlist '%s': ']' without '[' at '%.20s'", expr, s);
		if (*s == '[') {
			hl_group_t *g;

			if (e->ngroups >= HL_MAX_GROUPS)
				return hm_err_set(err, HM_ERR_PARSE,
						  "hostlist '%s': more than %d bracket groups in "
						  "one name",
						  expr, HL_MAX_GROUPS);
			g = &e->groups[e->ngroups];
			g->text = text;
			g->text_len = (size_t)(s - text);
			s++;
			rc = parse_group(&s, expr, g, err);
			if (rc)
				return rc;
			e->ngroups++;
			e->count *= g->count;
			if (e->count > HM_HOSTLIST_MAX)
				return hm_err_set(err, HM_ERR_RANGE,
						  "hostlist '%s': expands past %d names", expr,
						  HM_HOSTLIST_MAX);
			text = s;
			continue;
		}
		if (!is_name_char(*s))
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "hostlist '%s': character 0x%02x is not accepted in a host "
			    "name (blanks and control bytes are not allowed)",
			    expr, (unsigned char)*s);
		s++;
	}
	if (e->ngroups == 0 && e->tail_len == 0)
		return hm_err_set(err, HM_ERR_PARSE,
				  "hostlist '%s': empty element (two commas, or a comma at an end)",
				  expr);
	*p = s;
	return HM_OK;
}

/* Write the k-th name of e (0 <= k < e->count) into buf. */
static hm_rc_t elem_name(const hl_elem_t *e, unsigned long k, const char *expr, char *buf,
			 size_t len, hm_err_t *err)
{
	unsigned long idx[HL_MAX_GROUPS];
	size_t pos = 0;

	/* Last group varies fastest. */
	for (int g = e->ngroups - 1; g >= 0; g--) {
		idx[g] = k % e->groups[g].count;
		k /= e->groups[g].count;
	}
	for (int g = 0; g < e->ngroups; g++) {
		const hl_group_t *gr = &e->groups[g];
		unsigned long i = idx[g];
		int r = 0, n;

		while (i > gr->ranges[r].hi - gr->ranges[r].lo) {
			i -= gr->ranges[r].hi - gr->ranges[r].lo + 1;
			r++;
		}
		n = snprintf(buf + pos, len - pos, "%.*s%0*lu", (int)gr->text_len, gr->text,
			     gr->ranges[r].width, gr->ranges[r].lo + i);
		if (n < 0 || (size_t)n >= len - pos)
			goto too_long;
		pos += (size_t)n;
	}
	if (pos + e->tail_len >= len)
		goto too_long;
	memcpy(buf + pos, e->tail, e->tail_len);
	buf[pos + e->tail_len] = '\0';
	return HM_OK;
too_long:
	return hm_err_set(err, HM_ERR_PARSE,
			  "hostlist '%.60s': a name is longer than %d characters", expr,
			  HL_MAX_NAME);
}

/* One pass over the elements of trimmed: with names NULL, validate and add the
   count to *count; else write the names from names[*count] on. */
static hm_rc_t hl_pass(const char *trimmed, hl_elem_t *e, char **names, unsigned long *count,
		       hm_err_t *err)
{
	const char *p = trimmed;
	char buf[HL_MAX_NAME + 1];
	hm_rc_t rc;

	for (;;) {
		if ((rc = parse_elem(&p, trimmed, e, err)))
			return rc;
		for (unsigned long k = 0; names && k < e->count; k++) {
			if ((rc = elem_name(e, k, trimmed, buf, sizeof(buf), err)))
				return rc;
			if (!(names[*count] = strdup(buf)))
				return hm_err_set(err, HM_ERR_NOMEM, "hostlist: out of memory");
			++*count;
		}
		if (!names && (*count += e->count) > HM_HOSTLIST_MAX)
			return hm_err_set(err, HM_ERR_RANGE,
					  "hostlist '%.60s': expands past %d names", trimmed,
					  HM_HOSTLIST_MAX);
		if (*p == '\0')
			return HM_OK;
		if (*++p == '\0') /* past the ',' */
			return hm_err_set(err, HM_ERR_PARSE,
					  "hostlist '%s': empty element (comma at the end)",
					  trimmed);
	}
}

hm_rc_t hm_hostlist_expand(const char *expr, char ***names_out, int *n_out, hm_err_t *err)
{
	char **names = NULL;
	char *copy = NULL, *trimmed;
	unsigned long total = 0, expanded = 0;
	int n = 0;
	hm_rc_t rc = HM_OK;
	hl_elem_t *e = NULL;

	*names_out = NULL;
	*n_out = 0;
	if (!expr) {
		rc = hm_err_set(err, HM_ERR_INVAL, "hostlist: NULL expression");
		goto out;
	}
	copy = strdup(expr);
	e = malloc(sizeof(*e));
	if (!copy || !e) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "hostlist: out of memory");
		goto out;
	}
	trimmed = hm_trim(copy);
	if (*trimmed == '\0') {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"hostlist: empty expression, accepted: "
				"names like n[01-16],gpu[1-4,7],login");
		goto out;
	}
	/* Validate and count first, so a huge expression fails before allocating. */
	rc = hl_pass(trimmed, e, NULL, &total, err);
	if (rc)
		goto out;
	names = calloc(total, sizeof(*names));
	if (!names) {
		rc = hm_err_set(err, HM_ERR_NOMEM, "hostlist: out of memory for %lu names", total);
		goto out;
	}
	rc = hl_pass(trimmed, e, names, &expanded, err);
	n = (int)expanded;
	if (rc)
		goto out;
	*names_out = names;
	*n_out = n;
	names = NULL;
out:
	hm_hostlist_free(names, n);
	free(e);
	free(copy);
	return rc;
}

/* name = prefix + digits (*dlen of them, *padded: a leading zero). */
static bool split_num(const char *name, size_t *plen, unsigned long *val, int *dlen, bool *padded)
{
	size_t len = strlen(name), p = len;
	char *end;

	while (p > 0 && isdigit((unsigned char)name[p - 1]))
		p--;
	if (p == len || len - p > 9)
		return false;
	*plen = p;
	*val = strtoul(name + p, &end, 10);
	*dlen = (int)(len - p);
	*padded = name[p] == '0' && len - p > 1;
	return true;
}

typedef struct {
	char *s;
	size_t len, cap;
	bool oom;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len)
			break;
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *ns = realloc(b->s, cap);

		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	b->len += (size_t)n;
}

char *hm_hostlist_compress(char *const *names, int n)
{
	sbuf_t b = {0};
	int i = 0;

	if (n < 1)
		return NULL;
	b.cap = 64;
	if (!(b.s = malloc(b.cap)))
		return NULL;
	b.s[0] = '\0';
	while (i < n) {
		size_t plen;
		unsigned long v;
		int w, dl, j = i + 1, ranges = 0;
		bool pad;

		if (i > 0)
			sb_add(&b, ",");
		if (!split_num(names[i], &plen, &v, &dl, &pad)) {
			sb_add(&b, "%s", names[i++]);
			continue;
		}
		/* names[i..j) share the prefix and a width: one bracket. w > 0: every
		   number has w digits (one is zero-padded); w == 0: none is padded. */
		{
			int dl0 = dl, samelen = 1;

			w = pad ? dl : 0;
			while (j < n) {
				size_t pl2;
				unsigned long v2;
				int dl2;
				bool pad2;

				if (!split_num(names[j], &pl2, &v2, &dl2, &pad2) || pl2 != plen ||
				    strncmp(names[i], names[j], plen) != 0)
					break;
				if (w > 0 ? dl2 != w : pad2 && !(samelen && dl2 == dl0))
					break;
				if (pad2)
					w = dl2;
				samelen = samelen && dl2 == dl0;
				j++;
			}
		}
		if (j == i + 1) {
			sb_add(&b, "%s", names[i++]);
			continue;
		}
		sb_add(&b, "%.*s[", (int)plen, names[i]);
		for (int k = i; k < j;) {
			size_t pl;
			unsigned long a, c;
			int dla, e = k + 1;
			bool pa;

			split_num(names[k], &pl, &a, &dla, &pa);
			c = a;
			while (e < j) {
				unsigned long x;
				int dlx;
				bool px;

				split_num(names[e], &pl, &x, &dlx, &px);
				if (x != c + 1)
					break;
				c = x;
				e++;
			}
			sb_add(&b, ranges++ ? ",%0*lu" : "%0*lu", w, a);
			if (c != a)
				sb_add(&b, "-%0*lu", w, c);
			k = e;
		}
		sb_add(&b, "]");
		i = j;
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

int hm_hostname_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *x = a, *y = b;
			size_t lx, ly, za, zb;

			while (*x == '0')
				x++;
			while (*y == '0')
				y++;
			za = (size_t)(x - a);
			zb = (size_t)(y - b);
			for (lx = 0; isdigit((unsigned char)x[lx]); lx++)
				;
			for (ly = 0; isdigit((unsigned char)y[ly]); ly++)
				;
			if (lx != ly)
				return lx < ly ? -1 : 1;
			for (size_t i = 0; i < lx; i++)
				if (x[i] != y[i])
					return (unsigned char)x[i] < (unsigned char)y[i] ? -1 : 1;
			if (za != zb) /* same value: the longer spelling (more zeros) first */
				return za > zb ? -1 : 1;
			a = x + lx;
			b = y + ly;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}
