/*
 * hm_spank_opts.c - SPANK option values without Slurm (see hm_spank_opts.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_coord_addr.h"
#include "hm_parse.h"
#include "hm_spec.h"
#include "hm_spank_opts.h"

const char *hm_spank_modes(void)
{
	static char buf[256];

	/* Built once; the policy list is static for the process lifetime. */
	if (!buf[0])
		snprintf(buf, sizeof(buf), "%s,help", hm_spec_mode_names());
	return buf;
}

const char *hm_spank_src_name(hm_spank_src_t s)
{
	switch (s) {
	case HM_SRC_CLI:
		return "command line";
	case HM_SRC_ENV:
		return "environment";
	case HM_SRC_PLUGSTACK:
		return "plugstack.conf";
	default:
		return "default";
	}
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

hm_rc_t hm_spank_mode_check(const char *val, const char *origin, char *canon, size_t canon_len,
			    hm_err_t *err)
{
	hm_err_t e = {0};
	char low[HM_SPANK_MODE_MAX];
	size_t i;

	if (!val || !*val)
		return hm_err_set(err, HM_ERR_INVAL, "%s: empty mode (accepted: %s)", origin,
				  hm_spank_modes());
	for (i = 0; val[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)val[i]);
	low[i] = '\0';
	if (strcmp(low, "help") != 0 && (val[i] || hm_spec_mode_check(low, &e) != HM_OK))
		return hm_err_set(err, HM_ERR_INVAL, "%s: unknown mode '%s' (accepted: %s)", origin,
				  val, hm_spank_modes());
	if (canon)
		copy_str(canon, canon_len, low);
	return HM_OK;
}

hm_rc_t hm_spank_profile_check(const char *val, const char *origin, hm_err_t *err)
{
	hm_profile_t p;
	hm_rc_t rc;

	if (!val || !*val)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: empty profile (accepted: a catalogue model or "
				  "iter=DURATION,comm=PERCENT,bytes=SIZE)",
				  origin);
	rc = hm_spec_profile_parse(val, &p, err);
	if (rc != HM_OK)
		hm_err_prefix(err, "%s", origin);
	return rc;
}

void hm_spank_args_defaults(hm_spank_args_t *a)
{
	memset(a, 0, sizeof(*a));
	copy_str(a->default_mode, sizeof(a->default_mode), "off");
}

hm_rc_t hm_spank_args_parse(int argc, char **argv, hm_spank_args_t *a, hm_err_t *err)
{
	hm_rc_t rc = HM_OK;

	for (int i = 0; i < argc; i++) {
		char buf[512];
		char *key, *val;
		long n;
		const char *origin = "plugstack.conf harmonics.so argument";

		copy_str(buf, sizeof(buf), argv[i]);
		if (!hm_split_kv(buf, &key, &val)) {
			rc = hm_err_set(
			    err, HM_ERR_INVAL,
			    "%s '%s' is not key=value (accepted keys: host, port, timeout_ms, "
			    "default_mode, default_profile, conf, agent, preload)",
			    origin, argv[i]);
			goto out;
		}
		if (strcasecmp(key, "host") == 0) {
			hm_coord_addrs_t addrs;

			if ((rc = hm_coord_addrs_parse(val, &addrs, err)) != HM_OK) {
				hm_err_prefix(err, "host");
				goto bad;
			}
			copy_str(a->host, sizeof(a->host), val);
		} else if (strcasecmp(key, "port") == 0) {
			if ((rc = hm_parse_long(val, 1, 65535, &n, "port", err)) != HM_OK)
				goto bad;
			a->port = (int)n;
		} else if (strcasecmp(key, "timeout_ms") == 0) {
			if ((rc = hm_parse_long(val, 1, 600000, &n, "timeout_ms", err)) != HM_OK)
				goto bad;
			a->timeout_ms = (int)n;
		} else if (strcasecmp(key, "default_mode") == 0) {
			if ((rc = hm_spank_mode_check(val, "default_mode", a->default_mode,
						      sizeof(a->default_mode), err)) != HM_OK)
				goto bad;
			if (strcmp(a->default_mode, "help") == 0) {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"default_mode=help is not a mode (accepted: %s)",
						hm_spec_mode_names());
				goto bad;
			}
		} else if (strcasecmp(key, "default_profile") == 0) {
			if ((rc = hm_spank_profile_check(val, "default_profile", err)) != HM_OK)
				goto bad;
			copy_str(a->default_profile, sizeof(a->default_profile), val);
		} else if (strcasecmp(key, "conf") == 0) {
			copy_str(a->conf, sizeof(a->conf), val);
		} else if (strcasecmp(key, "agent") == 0) {
			if (strcmp(val, "no") != 0 && val[0] != '/') {
				rc = hm_err_set(err, HM_ERR_INVAL,
						"agent=%s (accepted: an absolute path of "
						"harmonics_agent.so, or no)",
						val);
				goto bad;
			}
			copy_str(a->agent, sizeof(a->agent), val);
		} else if (strcasecmp(key, "preload") == 0) {
			if ((rc = hm_spank_preload_arg(val, a->preload, sizeof(a->preload), err)) !=
			    HM_OK)
				goto bad;
		} else {
			rc = hm_err_set(err, HM_ERR_INVAL,
					"%s: unknown key '%s' (accepted: host, port, timeout_ms, "
					"default_mode, default_profile, conf, agent, preload)",
					origin, key);
			goto out;
		}
		continue;
	bad:
		hm_err_prefix(err, "%s", origin);
		goto out;
	}
out:
	return rc;
}

hm_rc_t hm_spank_resolve(const hm_spank_args_t *a, const char *cli_mode, const char *cli_profile,
			 const char *env_mode, const char *env_profile, hm_spank_choice_t *out,
			 hm_err_t *err)
{
	hm_rc_t rc = HM_OK;
	hm_spank_choice_t c;

	memset(&c, 0, sizeof(c));
	copy_str(c.mode, sizeof(c.mode), a->default_mode[0] ? a->default_mode : "off");
	c.mode_src = a->default_mode[0] && strcmp(a->default_mode, "off") ? HM_SRC_PLUGSTACK
									  : HM_SRC_DEFAULT;
	copy_str(c.profile, sizeof(c.profile), a->default_profile);
	c.profile_src = a->default_profile[0] ? HM_SRC_PLUGSTACK : HM_SRC_DEFAULT;

	if (env_mode && *env_mode) {
		if ((rc = hm_spank_mode_check(env_mode, HM_SPANK_ENV_MODE, c.mode, sizeof(c.mode),
					      err)) != HM_OK)
			goto out;
		c.mode_src = HM_SRC_ENV;
	}
	if (env_profile && *env_profile) {
		if ((rc = hm_spank_profile_check(env_profile, HM_SPANK_ENV_PROFILE, err)) != HM_OK)
			goto out;
		copy_str(c.profile, sizeof(c.profile), env_profile);
		c.profile_src = HM_SRC_ENV;
	}
	if (cli_mode) {
		if ((rc = hm_spank_mode_check(cli_mode, "--comm-sched", c.mode, sizeof(c.mode),
					      err)) != HM_OK)
			goto out;
		c.mode_src = HM_SRC_CLI;
	}
	if (cli_profile) {
		if ((rc = hm_spank_profile_check(cli_profile, "--comm-profile", err)) != HM_OK)
			goto out;
		copy_str(c.profile, sizeof(c.profile), cli_profile);
		c.profile_src = HM_SRC_CLI;
	}
	/* A profile alone asks for scheduling: it would otherwise be silently ignored. */
	if (c.profile[0] && strcmp(c.mode, "off") == 0 && c.mode_src < c.profile_src) {
		copy_str(c.mode, sizeof(c.mode), "auto");
		c.mode_src = c.profile_src;
	}
	*out = c;
out:
	return rc;
}

const char *hm_spank_help_text(void)
{
	return "Harmonics communication scheduling (harmonics.so SPANK plugin)\n"
	       "\n"
	       "  --comm-sched=MODE     schedule this job's communication bursts:\n"
	       "      off        no scheduling (the default unless the admin set default_mode)\n"
	       "      auto       the cluster's configured policy\n"
	       "      fair       fair sharing, no time shifts (baseline)\n"
	       "      optimal    exhaustive search of shifts (small jobs counts only)\n"
	       "      cassini    Cassini-style time shifts\n"
	       "      crux       CRUX-style priority classes\n"
	       "      harmonics  two-tier shifts + priorities + placement\n"
	       "      help       print this page and exit\n"
	       "  --no-comm-sched       same as --comm-sched=off\n"
	       "  --comm-profile=SPEC   declare the iteration profile when it cannot be measured:\n"
	       "      a catalogue model name, or iter=DURATION,comm=PERCENT,bytes=SIZE\n"
	       "      e.g. --comm-profile=iter=250ms,comm=40%,bytes=1.2GB\n"
	       "  --no-comm-preload     do not add the NCCL pacing runtime (libharmonics-nccl.so)\n"
	       "      to the tasks' LD_PRELOAD; by default a scheduled step's tasks get it\n"
	       "      appended to their own LD_PRELOAD (the program then calls hm_pace_*\n"
	       "      itself, or runs unpaced)\n"
	       "\n"
	       "Environment twins: HARMONICS_COMM_SCHED, HARMONICS_COMM_PROFILE,\n"
	       "HARMONICS_COMM_PRELOAD=no.\n"
	       "Precedence: command line > environment > plugstack.conf defaults.\n"
	       "The tasks see the assignment in HARMONICS_MODE, HARMONICS_PERIOD_US,\n"
	       "HARMONICS_SHIFT_US, HARMONICS_ORIGIN_US, HARMONICS_PRIO, HARMONICS_EPOCH, ...\n"
	       "Decisions: scontrol show job ID (AdminComment), sacct -o JobID,AdminComment.\n";
}

hm_rc_t hm_spank_policy_check(const char *mode, const char *origin, const char *cluster_policy,
			      hm_err_t *err)
{
	if (strcasecmp(mode, "off") == 0 || strcasecmp(mode, "auto") == 0 ||
	    strcasecmp(mode, cluster_policy) == 0)
		return HM_OK;
	return hm_err_set(err, HM_ERR_INVAL,
			  "%s=%s: this cluster schedules with %s (harmonics.conf Policy=%s), one "
			  "policy for all jobs that share links (accepted here: off, auto, %s)",
			  origin, mode, cluster_policy, cluster_policy, cluster_policy);
}

bool hm_spank_disabled_notice(const char *mode, const char *conf_err, char *buf, size_t len)
{
	if (!conf_err || !*conf_err || !mode || strcasecmp(mode, "off") == 0 || len == 0)
		return false;
	snprintf(buf, len, "harmonics: disabled (%s); job runs unscheduled", conf_err);
	return true;
}
