/*
 * hm_spank_preload.c - the runtime's place in the tasks' LD_PRELOAD, without
 * Slurm (see hm_spank_preload.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hm_parse.h"
#include "hm_spank_preload.h"

/* ld.so splits LD_PRELOAD at blanks and colons. */
#define SEPARATORS " :"

hm_rc_t hm_spank_preload_arg(const char *val, char *out, size_t len, hm_err_t *err)
{
	const char *v = val ? val : "";
	const char *set;

	if (strcasecmp(v, "yes") == 0)
		set = "";
	else if (strcasecmp(v, "no") == 0)
		set = "no";
	else if (v[0] == '/' && !strpbrk(v, SEPARATORS "\t\n") && strlen(v) < len)
		set = v;
	else
		return hm_err_set(err, HM_ERR_INVAL,
				  "preload=%s (accepted: yes, no, or an absolute path of %s "
				  "without blanks or colons, at most %zu bytes)",
				  v, HM_SPANK_PRELOAD_LIB, len - 1);
	snprintf(out, len, "%s", set);
	return HM_OK;
}

const char *hm_spank_preload_lib(const char *arg, const char *installed)
{
	if (arg && strcmp(arg, "no") == 0)
		return NULL;
	if (arg && arg[0])
		return arg;
	return installed ? installed : "";
}

hm_rc_t hm_spank_preload_wanted(bool cli_off, const char *env, bool *on, hm_err_t *err)
{
	bool v = true;
	hm_rc_t rc;

	if (env && *env && (rc = hm_parse_bool(env, &v, HM_SPANK_ENV_PRELOAD, err)) != HM_OK)
		return rc;
	*on = !cli_off && v;
	return HM_OK;
}

/* Is an entry of the list (len bytes at e) a libharmonics-nccl.so, wherever it lies? */
static bool entry_is_ours(const char *e, size_t n)
{
	size_t base = 0, lib = strlen(HM_SPANK_PRELOAD_LIB);

	for (size_t i = 0; i < n; i++)
		if (e[i] == '/')
			base = i + 1;
	return n - base == lib && memcmp(e + base, HM_SPANK_PRELOAD_LIB, lib) == 0;
}

int hm_spank_preload_append(const char *cur, const char *lib, char *out, size_t len, hm_err_t *err)
{
	const char *c = cur ? cur : "";
	size_t n = strlen(c), need;
	bool sep;

	for (const char *p = c; *p;) {
		size_t e = strcspn(p, SEPARATORS);

		if (e && entry_is_ours(p, e))
			return 0;
		p += e;
		p += strspn(p, SEPARATORS);
	}
	/* A list that ends in a separator (or an empty one) needs none added. */
	sep = n > 0 && !strchr(SEPARATORS, c[n - 1]);
	need = n + (sep ? 1 : 0) + strlen(lib) + 1;
	if (need > len) {
		hm_err_set(err, HM_ERR_RANGE,
			   "LD_PRELOAD with %s appended would be %zu bytes (at most %zu): left "
			   "as the user set it",
			   lib, need - 1, len - 1);
		return -1;
	}
	snprintf(out, len, "%s%s%s", c, sep ? ":" : "", lib);
	return 1;
}
