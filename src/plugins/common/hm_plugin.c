/* The plugins' shared Slurm-side contract, without Slurm (hm_plugin.h). */
#include "hm_plugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *hm_plugin_env_get(char *const *env, uint32_t n, const char *key)
{
	size_t klen = key ? strlen(key) : 0;

	for (uint32_t i = 0; env && klen && i < n; i++)
		if (env[i] && strncmp(env[i], key, klen) == 0 && env[i][klen] == '=')
			return env[i] + klen + 1;
	return NULL;
}

static void *open_in(const char *plugindir, const char *file, int flags,
		     hm_plugin_open_fail_fn on_fail)
{
	char *dirs = plugindir ? strdup(plugindir) : NULL, *save = NULL;
	void *handle = NULL;

	for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !handle;
	     d = strtok_r(NULL, ":", &save)) {
		char path[PATH_MAX];
		int len = snprintf(path, sizeof(path), "%s/%s", d, file);

		if (len < 0 || (size_t)len >= sizeof(path) || access(path, R_OK) != 0)
			continue;
		handle = dlopen(path, flags);
		if (!handle && on_fail)
			on_fail(path, dlerror());
	}
	free(dirs);
	return handle;
}

void *hm_plugin_dlopen(const char *plugindir, const char *file, hm_plugin_open_fail_fn on_fail)
{
	return open_in(plugindir, file, RTLD_LAZY | RTLD_LOCAL, on_fail);
}

void *hm_plugin_find_loaded(const char *plugindir, const char *file)
{
	return open_in(plugindir, file, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD, NULL);
}

int hm_plugin_gpus_per_node(const char *tres)
{
	const char *p = tres ? strstr(tres, "gpu") : NULL;
	const char *end = p ? p + strcspn(p, ",") : NULL;
	const char *colon = NULL;
	long n = 0;

	for (const char *q = p; q && q < end; q++)
		if (*q == ':')
			colon = q;
	if (colon) {
		char *e = NULL;

		n = strtol(colon + 1, &e, 10);
		if (e == colon + 1 || e != end || n < 0 || n > 1024)
			n = 0;
	}
	return (int)n;
}
