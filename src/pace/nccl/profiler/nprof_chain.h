/*
 * nprof_chain.h - the profiler plugin the user had (HARMONICS_NCCL_PROFILER_CHAIN,
 * which the SPANK plugin fills from the user's NCCL_PROFILER_PLUGIN): loaded
 * once, as NCCL would load it (the name as given, then
 * libnccl-profiler-NAME.so), and never unloaded.
 */
#ifndef NPROF_CHAIN_H
#define NPROF_CHAIN_H

#include "nprof_abi.h"

#define NPROF_ENV_CHAIN  "HARMONICS_NCCL_PROFILER_CHAIN"
#define NPROF_LOG_PREFIX "harmonics-profiler: "

/* The chained plugin's struct of that version; NULL when none is named, it
 * cannot be loaded, it is this plugin itself, or it lacks the version (one line
 * on stderr for each of the last three, the first time). */
const nprof_plugin_v4_t *nprof_chain_v4(void);
const nprof_plugin_v5_t *nprof_chain_v5(void);

#endif
