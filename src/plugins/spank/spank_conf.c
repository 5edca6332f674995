/* harmonics.conf as the SPANK plugin reads it (every context). */
#include <stdint.h> /* spank.h needs it first */

#include <stdbool.h>
#include <stdio.h>

#include <slurm/spank.h>

#include "spank_plugin.h"

int hm_sp_conf_load(hm_conf_t *conf)
{
	char path[HM_CONF_PATH_MAX];
	static bool logged;
	spank_context_t ctx = spank_context();
	hm_err_t err = {0};
	hm_rc_t rc;

	hm_conf_defaults(conf);
	if (hm_sp.args.conf[0])
		snprintf(path, sizeof(path), "%s", hm_sp.args.conf);
	else
		hm_conf_default_path(path, sizeof(path));
	rc = hm_conf_load(path, conf, &err);
	hm_sp.conf_err[0] = '\0';
	if (rc == HM_OK)
		return 1;
	if (err.rc == HM_ERR_IO)
		return 0; /* none here: the documented defaults */
	snprintf(hm_sp.conf_err, sizeof(hm_sp.conf_err), "%s", err.msg);
	/* Harmonics runs disabled with such a file; nothing here fails a job or slurmd. */
	if (!logged) {
		if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
			slurm_verbose("harmonics: disabled: %s", err.msg);
		else
			slurm_error("harmonics: disabled: %s; this node's steps run unscheduled",
				    err.msg);
		logged = true;
	}
	hm_conf_defaults(conf);
	return -1;
}
