/*
 * hm_spank_preload.h - injecting the NCCL runtime (libharmonics-nccl.so) into
 * the tasks of --comm-sched steps, without Slurm: the plugstack.conf switch
 * preload=, the user's opt-out (--no-comm-preload, HARMONICS_COMM_PRELOAD) and
 * the new LD_PRELOAD value (the user's entries kept, the runtime appended
 * once). Unit-tested alone (tests/unit/test_spank_opts.c); spank_preload.c
 * applies it in slurmstepd.
 */
#ifndef HM_SPANK_PRELOAD_H
#define HM_SPANK_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "hm_error.h"

/* The user's environment twin of --no-comm-preload: yes (default) or no. */
#define HM_SPANK_ENV_PRELOAD "HARMONICS_COMM_PRELOAD"
/* The runtime's file name: an LD_PRELOAD entry with this base name is ours. */
#define HM_SPANK_PRELOAD_LIB "libharmonics-nccl.so"
/* Room for a preload= path and for a whole LD_PRELOAD value. */
#define HM_SPANK_PRELOAD_PATH_MAX 1024
#define HM_SPANK_PRELOAD_MAX      8192

/*
 * plugstack.conf preload=VAL into out: yes (the installed runtime, the
 * default) -> "", no -> "no", an absolute path -> the path (without blanks or
 * colons, which would split an LD_PRELOAD entry). Anything else is an error
 * naming the accepted values.
 */
hm_rc_t hm_spank_preload_arg(const char *val, char *out, size_t len, hm_err_t *err);

/*
 * The runtime to preload: the admin's path, else installed (the build's
 * $(libdir)/libharmonics-nccl.so, "" when it was not built). NULL when the
 * admin said preload=no; "" when nothing was built.
 */
const char *hm_spank_preload_lib(const char *arg, const char *installed);

/*
 * The user's choice: --no-comm-preload (cli_off) over HARMONICS_COMM_PRELOAD
 * (env, yes/no, true/false, on/off, 1/0; NULL or "" = not set) over yes. A bad
 * value is an error naming the variable and the accepted values.
 */
hm_rc_t hm_spank_preload_wanted(bool cli_off, const char *env, bool *on, hm_err_t *err);

/*
 * LD_PRELOAD (cur, NULL or "" = unset) with lib appended into out: the user's
 * entries stay first and unchanged (theirs interpose first). Returns 1 when
 * out holds a new value; 0 when an entry named libharmonics-nccl.so is there
 * already (a nested step, or the user's own copy: never two interposers), out
 * untouched; -1 with err when the result would not fit len.
 */
int hm_spank_preload_append(const char *cur, const char *lib, char *out, size_t len, hm_err_t *err);

#endif
