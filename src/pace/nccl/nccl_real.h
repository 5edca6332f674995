/*
 * nccl_real.h - where the interposer finds the real NCCL (and the CUDA
 * runtime's cudaLaunchHostFunc) when the dynamic linker's next definition is
 * missing: libnccl loaded as a dependency of an RTLD_LOCAL dlopen (a Python
 * extension) is invisible to dlsym(RTLD_NEXT), yet the extension's calls reach
 * the preloaded wrappers. Internal to libharmonics-nccl.so.
 */
#ifndef NCCL_REAL_H
#define NCCL_REAL_H

/*
 * The real definition of an NCCL entry point, never the interposer's own:
 *   1. dlsym(RTLD_NEXT): the library the application linked;
 *   2. an already loaded object whose file name contains "libnccl" (walked with
 *      dl_iterate_phdr, "libnccl.so*" first), through dlopen(path,
 *      RTLD_NOLOAD | RTLD_LAZY): the one an RTLD_LOCAL dlopen brought in;
 *   3. the standard names libnccl.so.2, libnccl.so: already loaded under that
 *      name (RTLD_NOLOAD); loaded here (RTLD_LOCAL) only when the process has
 *      no libnccl at all, so that one process never mixes two NCCLs.
 * The library found in 2 or 3 is kept for the next names. NULL when none has
 * it (no message: the caller says so once). Thread-safe; no allocation.
 */
void *hm_nccl_real_sym(const char *name);

/*
 * cudaLaunchHostFunc of the CUDA runtime the process already has: the global
 * scope (RTLD_DEFAULT), libcudart.so.{13,12,11.0} and libcudart.so
 * (RTLD_NOLOAD), a loaded object whose name contains "libcudart", then the
 * scope of the NCCL library step 2 or 3 above found (its own dependencies).
 * Never loads cudart. NULL when none.
 */
void *hm_nccl_cuda_sym(const char *name);

#endif
