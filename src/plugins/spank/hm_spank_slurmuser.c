/* SlurmUser from slurm.conf (hm_spank_slurmuser.h). */
#include "hm_spank_slurmuser.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"

/* The value of the last SlurmUser= token of f into name ("" when none). */
static void last_slurm_user(FILE *f, char *name, size_t len)
{
	char line[4096];

	name[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *save = NULL;

		if (hash)
			*hash = '\0';
		for (char *tok = strtok_r(line, " \t\r\n", &save); tok;
		     tok = strtok_r(NULL, " \t\r\n", &save))
			if (strncasecmp(tok, "SlurmUser=", 10) == 0)
				snprintf(name, len, "%s", tok + 10);
	}
}

int hm_spank_slurm_user(const char *path, uint32_t *uid, char *why, size_t len)
{
	const char *env = getenv("SLURM_CONF");
	char name[256], buf[1024];
	struct passwd pw, *res = NULL;
	FILE *f;

	if (!path)
		path = env && *env ? env : SLURM_CONF_DEFAULT;
	if (!(f = fopen(path, "re"))) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	last_slurm_user(f, name, sizeof(name));
	fclose(f);
	if (!name[0]) { /* Slurm's default */
		*uid = 0;
		return 0;
	}
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(name, &end, 10); /* Slurm also takes a numeric uid */
		if (isdigit((unsigned char)name[0]) && !*end && !errno && n < UINT32_MAX) {
			*uid = (uint32_t)n;
			return 0;
		}
		snprintf(why, len, "%s: SlurmUser=%s: no such account", path, name);
		return -1;
	}
	*uid = (uint32_t)res->pw_uid;
	return 0;
}
