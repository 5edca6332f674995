/* nprof_chain.c - loading the chained profiler plugin (nprof_chain.h). */
#define _GNU_SOURCE /* dladdr */
#include "nprof_chain.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t chain_once = PTHREAD_ONCE_INIT;
static void *chain_lib;
static char chain_name[PATH_MAX];

/* NCCL's own order: the name as given; then, for a bare name that is not a
 * library file name, libnccl-profiler-NAME.so. */
static void *open_as_nccl(const char *name, char *err, size_t len)
{
	size_t n = strlen(name);
	char alt[PATH_MAX];
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (h)
		return h;
	snprintf(err, len, "%s", dlerror());
	if (strchr(name, '/') ||
	    (strncmp(name, "lib", 3) == 0 && n >= 3 && strcmp(name + n - 3, ".so") == 0))
		return NULL;
	snprintf(alt, sizeof(alt), "libnccl-profiler-%s.so", name);
	h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		snprintf(err, len, "%s", dlerror());
	return h;
}

static void chain_load(void)
{
	const char *name = getenv(NPROF_ENV_CHAIN);
	Dl_info self = {0}, other = {0};
	char err[512] = "";
	void *sym;

	if (!name || !*name || strcasecmp(name, "none") == 0)
		return;
	snprintf(chain_name, sizeof(chain_name), "%s", name);
	chain_lib = open_as_nccl(name, err, sizeof(err));
	if (!chain_lib) {
		fprintf(stderr,
			NPROF_LOG_PREFIX "%s=%s cannot be loaded (%s); NCCL events are not "
					 "forwarded to it\n",
			NPROF_ENV_CHAIN, name, err);
		return;
	}
	/* Never chain to ourselves (NCCL_PROFILER_PLUGIN already named us). */
	sym = dlsym(chain_lib, NPROF_SYMBOL_V5);
	if (!sym)
		sym = dlsym(chain_lib, NPROF_SYMBOL_V4);
	if (sym && dladdr(sym, &other) && dladdr((void *)chain_load, &self) &&
	    other.dli_fbase == self.dli_fbase) {
		fprintf(stderr, NPROF_LOG_PREFIX "%s=%s is this plugin itself: not chained\n",
			NPROF_ENV_CHAIN, name);
		chain_lib = NULL; /* left loaded: dlclose of ourselves from within is unsafe */
	}
}

static void *chain_sym(const char *symbol)
{
	void *sym;

	pthread_once(&chain_once, chain_load);
	if (!chain_lib)
		return NULL;
	sym = dlsym(chain_lib, symbol);
	if (!sym)
		fprintf(stderr,
			NPROF_LOG_PREFIX "%s has no %s (the version this NCCL uses): its events "
					 "are not forwarded\n",
			chain_name, symbol);
	return sym;
}

/* Looked up once per version: raw handles are forwarded on every event. */
static pthread_once_t v4_once = PTHREAD_ONCE_INIT, v5_once = PTHREAD_ONCE_INIT;
static const nprof_plugin_v4_t *v4;
static const nprof_plugin_v5_t *v5;

static void find_v4(void)
{
	v4 = chain_sym(NPROF_SYMBOL_V4);
}

static void find_v5(void)
{
	v5 = chain_sym(NPROF_SYMBOL_V5);
}

const nprof_plugin_v4_t *nprof_chain_v4(void)
{
	pthread_once(&v4_once, find_v4);
	return v4;
}

const nprof_plugin_v5_t *nprof_chain_v5(void)
{
	pthread_once(&v5_once, find_v5);
	return v5;
}
