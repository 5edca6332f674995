/* --comm-sched modes and --comm-profile specs (hm_spec.h): no policy code needed. */
#include "hm_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hm_conf.h"
#include "hm_parse.h"
#include "hm_policy_names.h"

const char *hm_spec_mode_names(void)
{
	return "off,auto," HM_POLICY_NAMES;
}

bool hm_spec_policy_known(const char *name)
{
	return hm_name_in_list(name, HM_POLICY_NAMES);
}

hm_rc_t hm_spec_mode_check(const char *mode, hm_err_t *err)
{
	char low[HM_CONF_NAME_MAX];
	size_t i;

	if (!mode)
		mode = "";
	for (i = 0; mode[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)mode[i]);
	low[i] = '\0';
	if (!mode[i] &&
	    (strcmp(low, "off") == 0 || strcmp(low, "auto") == 0 || hm_spec_policy_known(low)))
		return HM_OK;
	return hm_err_set(err, HM_ERR_INVAL, "comm-sched mode '%s' is not known (accepted: %s)",
			  mode, hm_spec_mode_names());
}

#define SPEC_ACCEPTED                                                                              \
	"a model name (%s) or iter=<duration>,comm=<fraction>,bytes=<size>[,overlap=<fraction>],"  \
	" e.g. iter=250ms,comm=40%%,bytes=1.2GB"

hm_rc_t hm_spec_profile_parse(const char *spec, hm_profile_t *out, hm_err_t *err)
{
	char buf[256], *save = NULL, *tok;
	double iter_s = -1, comm = -1, bytes = -1, overlap = 0;
	hm_profile_t p;
	hm_rc_t rc = HM_OK;

	if (!spec || !*spec)
		return hm_err_set(err, HM_ERR_INVAL, "empty profile (accepted: " SPEC_ACCEPTED ")",
				  hm_catalogue_names());
	if (strlen(spec) >= sizeof(buf))
		return hm_err_set(err, HM_ERR_RANGE, "profile '%.40s...' is longer than %zu bytes",
				  spec, sizeof(buf) - 1);
	if (!strchr(spec, '=') || strncasecmp(spec, "model=", 6) == 0) {
		const char *name = strchr(spec, '=') ? spec + 6 : spec;

		if (!hm_catalogue_find(name))
			return hm_err_set(
			    err, HM_ERR_INVAL,
			    "profile '%s' is not a catalogue model (accepted: " SPEC_ACCEPTED ")",
			    spec, hm_catalogue_names());
		return hm_profile_from_model(name, out, err);
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *key, *val;

		if (!hm_split_kv(tok, &key, &val))
			return hm_err_set(
			    err, HM_ERR_PARSE,
			    "profile '%s': '%s' is not key=value (accepted: " SPEC_ACCEPTED ")",
			    spec, tok, hm_catalogue_names());
		if (strcasecmp(key, "iter") == 0)
			rc = hm_parse_duration_s(val, 1e-4, 3600, &iter_s, "profile iter", err);
		else if (strcasecmp(key, "comm") == 0)
			rc = hm_parse_fraction(val, &comm, "profile comm", err);
		else if (strcasecmp(key, "bytes") == 0)
			rc = hm_parse_bytes(val, 1, 1e13, &bytes, "profile bytes", err);
		else if (strcasecmp(key, "overlap") == 0)
			rc = hm_parse_fraction(val, &overlap, "profile overlap", err);
		else
			rc = hm_err_set(
			    err, HM_ERR_INVAL,
			    "profile '%s': unknown key '%s' (accepted: iter, comm, bytes, "
			    "overlap)",
			    spec, key);
		if (rc != HM_OK)
			return rc;
	}
	if (iter_s < 0 || comm < 0 || bytes < 0)
		return hm_err_set(err, HM_ERR_INVAL,
				  "profile '%s' lacks %s (accepted: " SPEC_ACCEPTED ")", spec,
				  iter_s < 0 ? "iter="
				  : comm < 0 ? "comm="
					     : "bytes=",
				  hm_catalogue_names());
	if (comm >= 1)
		return hm_err_set(
		    err, HM_ERR_RANGE,
		    "profile '%s': comm=%g leaves no compute (accepted: 0 <= comm < 1)", spec,
		    comm);
	memset(&p, 0, sizeof(p));
	snprintf(p.model, sizeof(p.model), "custom");
	p.compute_s = iter_s * (1 - comm);
	p.nphases = 1;
	p.phases[0].coll = HM_COLL_ALLREDUCE_RING;
	p.phases[0].bytes = bytes;
	p.phases[0].overlap = overlap;
	*out = p;
	return HM_OK;
}
