#include "hm_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct hm_unit {
	const char *suffix;
	double scale;
};

hm_rc_t hm_parse_long(const char *s, long min, long max, long *out, const char *what, hm_err_t *err)
{
	char *end = NULL;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return hm_err_set(err, HM_ERR_PARSE, "%s: empty or blank value, expected an integer",
				  what);
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE || *end != '\0')
		return hm_err_set(err, HM_ERR_PARSE, "%s: '%s' is not an integer in [%ld, %ld]", what,
				  s, min, max);
	if (v < min || v > max)
		return hm_err_set(err, HM_ERR_RANGE, "%s: %ld is out of range, accepted [%ld, %ld]",
				  what, v, min, max);
	*out = v;
	return HM_OK;
}

/* Parse a leading finite double; *end points past it. */
static bool parse_number(const char *s, double *v, char **end)
{
	if (!s || !*s || isspace((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtod(s, end);
	if (*end == s || errno == ERANGE || !isfinite(*v))
		return false;
	return true;
}

hm_rc_t hm_parse_double(const char *s, double min, double max, double *out, const char *what,
			hm_err_t *err)
{
	char *end = NULL;
	double v;

	if (!parse_number(s, &v, &end) || *end != '\0')
		return hm_err_set(err, HM_ERR_PARSE, "%s: '%s' is not a number in [%g, %g]", what,
				  s ? s : "(null)", min, max);
	if (v < min || v > max)
		return hm_err_set(err, HM_ERR_RANGE, "%s: %g is out of range, accepted [%g, %g]", what,
				  v, min, max);
	*out = v;
	return HM_OK;
}

/* Number followed by one of the units (case-insensitive); bare number uses bare_scale. */
static hm_rc_t parse_with_units(const char *s, const struct hm_unit *units, double bare_scale,
				double min, double max, double *out, const char *what,
				const char *accepted, hm_err_t *err)
{
	char *end = NULL;
	double v, scale = -1;

	if (!parse_number(s, &v, &end))
		return hm_err_set(err, HM_ERR_PARSE, "%s: '%s' is not a number; accepted: %s", what,
				  s ? s : "(null)", accepted);
	if (*end == '\0') {
		scale = bare_scale;
	} else {
		for (const struct hm_unit *u = units; u->suffix; u++) {
			if (strcasecmp(end, u->suffix) == 0) {
				scale = u->scale;
				break;
			}
		}
	}
	if (scale < 0)
		return hm_err_set(err, HM_ERR_PARSE, "%s: unknown unit '%s' in '%s'; accepted: %s",
				  what, end, s, accepted);
	v *= scale;
	if (v < min || v > max)
		return hm_err_set(err, HM_ERR_RANGE, "%s: '%s' is out of range [%g, %g]", what, s,
				  min, max);
	*out = v;
	return HM_OK;
}

hm_rc_t hm_parse_duration_s(const char *s, double min_s, double max_s, double *out_s,
			    const char *what, hm_err_t *err)
{
	static const struct hm_unit units[] = {
		{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1},       {"sec", 1},
		{"m", 60},    {"min", 60},  {"h", 3600},  {"hour", 3600}, {NULL, 0},
	};
	return parse_with_units(s, units, 1.0, min_s, max_s, out_s, what,
				"a duration such as 250ms, 1.5s, 100us, 2min, 1h (bare = seconds)",
				err);
}

hm_rc_t hm_parse_bytes(const char *s, double min_bytes, double max_bytes, double *out_bytes,
		       const char *what, hm_err_t *err)
{
	static const struct hm_unit units[] = {
		{"B", 1},	      {"K", 1e3},	       {"KB", 1e3},
		{"M", 1e6},	      {"MB", 1e6},	       {"G", 1e9},
		{"GB", 1e9},	      {"T", 1e12},	       {"TB", 1e12},
		{"KiB", 1024.0},      {"MiB", 1048576.0},      {"GiB", 1073741824.0},
		{"TiB", 1099511627776.0}, {NULL, 0},
	};
	return parse_with_units(s, units, 1.0, min_bytes, max_bytes, out_bytes, what,
				"a size such as 1.2GB, 500MB, 64KiB (bare = bytes)", err);
}

hm_rc_t hm_parse_bandwidth_bps(const char *s, double min_bps, double max_bps, double *out_bps,
			       const char *what, hm_err_t *err)
{
	static const struct hm_unit units[] = {
		{"bps", 1},   {"Kbps", 1e3}, {"K", 1e3},     {"Mbps", 1e6}, {"M", 1e6},
		{"Gbps", 1e9}, {"G", 1e9},   {"Tbps", 1e12}, {"T", 1e12},   {NULL, 0},
	};
	return parse_with_units(s, units, 1e9, min_bps, max_bps, out_bps, what,
				"a bandwidth such as 100Gbps, 400Mbps, 1.6Tbps (bare = Gbit/s)",
				err);
}

hm_rc_t hm_parse_fraction(const char *s, double *out, const char *what, hm_err_t *err)
{
	char *end = NULL;
	double v;

	if (!parse_number(s, &v, &end) || (*end != '\0' && strcmp(end, "%") != 0))
		return hm_err_set(err, HM_ERR_PARSE,
				  "%s: '%s' is not a fraction; accepted: 0..1 or 0%%..100%%", what,
				  s ? s : "(null)");
	if (*end == '%')
		v /= 100.0;
	if (v < 0 || v > 1)
		return hm_err_set(err, HM_ERR_RANGE, "%s: '%s' is out of range, accepted 0..1 or 0%%..100%%",
				  what, s);
	*out = v;
	return HM_OK;
}

hm_rc_t hm_parse_bool(const char *s, bool *out, const char *what, hm_err_t *err)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return HM_OK;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return HM_OK;
		}
	}
	return hm_err_set(err, HM_ERR_PARSE, "%s: '%s' is not a boolean; accepted: yes/no, true/false, on/off, 1/0",
			  what, s ? s : "(null)");
}

char *hm_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

bool hm_split_kv(char *tok, char **key, char **val)
{
	char *eq = strchr(tok, '=');

	if (!eq)
		return false;
	*eq = '\0';
	*key = hm_trim(tok);
	*val = hm_trim(eq + 1);
	return **key != '\0';
}

bool hm_name_in_list(const char *name, const char *list)
{
	size_t n = name ? strlen(name) : 0, len;

	for (const char *p = list; n > 0 && *p; p += len, p += strspn(p, ", ")) {
		len = strcspn(p, ",");
		if (len == n && strncmp(p, name, n) == 0)
			return true;
	}
	return false;
}
