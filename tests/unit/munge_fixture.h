/* Coordinator tests that need munged skip with a clear message when it is not running. */
#ifndef MUNGE_FIXTURE_H
#define MUNGE_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "hm_proto.h"

static inline bool munge_up(void)
{
	char *cred = NULL, *json = NULL;
	uint32_t uid, gid;
	hm_err_t err = {0};
	bool ok = hm_proto_seal("{}", HM_PROTO_UID_ANY, &cred, &err) == HM_OK &&
		  hm_proto_unseal(cred, &json, &uid, &gid, &err) == HM_OK;

	if (!ok)
		fprintf(stderr,
			"SKIP: munged is not running (%s); start it with "
			"scripts/munge-up.sh or: mkdir -p /run/munge && chown munge:munge "
			"/run/munge && runuser -u munge -- /usr/sbin/munged\n",
			err.msg);
	free(cred);
	free(json);
	return ok;
}

#endif
