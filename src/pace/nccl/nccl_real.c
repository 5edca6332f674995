/*
 * Finding the real NCCL behind the interposer (see nccl_real.h). Everything
 * here is reentrant and allocation-free (paths on the stack, one atomic
 * handle): it runs inside the wrappers, on whatever thread calls NCCL first.
 */
#define _GNU_SOURCE /* RTLD_NEXT, RTLD_DEFAULT, RTLD_NOLOAD, dl_iterate_phdr */
#include "nccl_real.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

#define MAX_CANDIDATES 4
#define CANDIDATE_LEN  1024

/* The NCCL library found by name (steps 2 and 3), kept for the next symbols. */
static void *nccl_lib;

static const char *const nccl_names[] = {"libnccl.so.2", "libnccl.so"};
static const char *const cudart_names[] = {"libcudart.so.13", "libcudart.so.12",
					   "libcudart.so.11.0", "libcudart.so"};

/* Is f defined by this library (the interposer itself)? */
static bool in_self(void *f)
{
	Dl_info a, b;

	return dladdr(f, &a) != 0 && dladdr((void *)&in_self, &b) != 0 &&
	       a.dli_fbase == b.dli_fbase;
}

typedef struct {
	const char *needle; /* "libnccl" */
	const char *so;     /* "libnccl.so": a base name that starts with it is pass 1's */
	bool prefix;        /* pass 1 (else pass 2: the other names containing needle) */
	int n;
	char path[MAX_CANDIDATES][CANDIDATE_LEN];
} scan_t;

/* dl_iterate_phdr's callback: only copies names (the loader's lock is held). */
static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	scan_t *s = arg;
	const char *name = info->dlpi_name, *base;
	size_t len;

	(void)size;
	if (!name || !*name || s->n >= MAX_CANDIDATES)
		return 0;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	len = strlen(name);
	if (len >= CANDIDATE_LEN || !strstr(base, s->needle) ||
	    (strncmp(base, s->so, strlen(s->so)) == 0) != s->prefix)
		return 0;
	memcpy(s->path[s->n++], name, len + 1);
	return 0;
}

/* sym in the scope of handle h, not our own; h is released when it has none. */
static void *sym_in(void *h, const char *sym)
{
	void *f = h ? dlsym(h, sym) : NULL;

	return f && !in_self(f) ? f : NULL;
}

/*
 * sym from a loaded object whose name contains needle; *lib gets its handle
 * (a reference kept) when found, and *seen tells whether any such object is
 * loaded at all.
 */
static void *from_loaded(const char *needle, const char *so, const char *sym, void **lib,
			 bool *seen)
{
	for (int pass = 0; pass < 2; pass++) {
		scan_t s = {.needle = needle, .so = so, .prefix = pass == 0};

		dl_iterate_phdr(scan_cb, &s);
		for (int i = 0; i < s.n; i++) {
			void *h = dlopen(s.path[i], RTLD_NOLOAD | RTLD_LAZY);
			void *f = sym_in(h, sym);

			if (h)
				*seen = true;
			if (f) {
				*lib = h;
				return f;
			}
			if (h)
				dlclose(h); /* only the reference NOLOAD took */
		}
	}
	return NULL;
}

/* sym from the first of names that loads (flags: with or without RTLD_NOLOAD). */
static void *from_names(const char *const *names, size_t n, int flags, const char *sym, void **lib,
			bool *seen)
{
	for (size_t i = 0; i < n; i++) {
		void *h = dlopen(names[i], flags);
		void *f = sym_in(h, sym);

		if (h)
			*seen = true;
		if (f) {
			*lib = h;
			return f;
		}
		if (h)
			dlclose(h);
	}
	return NULL;
}

static void keep_lib(void *h)
{
	void *none = NULL;

	/* The first library found stays the one; another reference is dropped. */
	if (h &&
	    !__atomic_compare_exchange_n(&nccl_lib, &none, h, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    none != h)
		dlclose(h);
}

void *hm_nccl_real_sym(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name), *lib = NULL, *kept;
	bool seen = false;

	if (f && !in_self(f))
		return f;
	kept = __atomic_load_n(&nccl_lib, __ATOMIC_ACQUIRE);
	if (kept)
		return sym_in(kept, name); /* one NCCL per process: no other is tried */
	f = from_loaded("libnccl", "libnccl.so", name, &lib, &seen);
	if (!f)
		f = from_names(nccl_names, sizeof(nccl_names) / sizeof(nccl_names[0]),
			       RTLD_NOLOAD | RTLD_LAZY, name, &lib, &seen);
	/* Only a process without any NCCL gets one loaded (the application calls NCCL,
	 * so it expects one); a loaded NCCL that lacks name is the answer. */
	if (!f && !seen)
		f = from_names(nccl_names, sizeof(nccl_names) / sizeof(nccl_names[0]),
			       RTLD_LAZY | RTLD_LOCAL, name, &lib, &seen);
	if (f)
		keep_lib(lib);
	return f;
}

void *hm_nccl_cuda_sym(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name), *lib = NULL, *kept;
	bool seen = false;

	if (f && !in_self(f))
		return f;
	f = from_names(cudart_names, sizeof(cudart_names) / sizeof(cudart_names[0]),
		       RTLD_NOLOAD | RTLD_LAZY, name, &lib, &seen);
	if (!f)
		f = from_loaded("libcudart", "libcudart.so", name, &lib, &seen);
	if (f)
		return f; /* the cudart reference is kept: f stays valid */
	/* NCCL's own scope (its dependencies): found already, or looked up now. */
	kept = __atomic_load_n(&nccl_lib, __ATOMIC_ACQUIRE);
	if (kept)
		return sym_in(kept, name);
	f = from_loaded("libnccl", "libnccl.so", name, &lib, &seen);
	if (!f)
		f = from_names(nccl_names, sizeof(nccl_names) / sizeof(nccl_names[0]),
			       RTLD_NOLOAD | RTLD_LAZY, name, &lib, &seen);
	if (f)
		keep_lib(lib);
	return f;
}
