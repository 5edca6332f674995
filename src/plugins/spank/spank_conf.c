/* harmonics.conf as the SPANK plugin reads it (every context). */
#include <stdint.h> /* spank.h needs it first */

#include <stdio.h>

#include <slurm/spank.h>

#include "spank_plugin.h"

int hm_sp_conf_load(hm_conf_t *conf)
{
	char path[HM_CONF_PATH_MAX];
	hm_err_t err = {0};
	hm_rc_t rc;

	hm_conf_defaults(conf);
	if (hm_sp.args.conf[0])
		snprintf(path, sizeof(path), "%s", hm_sp.args.conf);
	else
		hm_conf_default_path(path, sizeof(path));
	rc = hm_conf_load(path, conf, &err);
	if (rc == HM_OK)
		return 1;
	if (err.rc == HM_ERR_IO)
		return 0; /* none here: the documented defaults */
	slurm_error("harmonics: %s (using defaults)", err.msg);
	hm_conf_defaults(conf);
	return -1;
}
