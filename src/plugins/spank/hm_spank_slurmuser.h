/*
 * hm_spank_slurmuser.h - the account the coordinator runs as, for the SPANK
 * plugin's two checks of who may speak for it (the step's replies, the node
 * agent's frames): SlurmUser from slurm.conf, not a literal account name.
 * Slurm-free: reads the file itself (no Slurm call in a step's context).
 */
#ifndef HM_SPANK_SLURMUSER_H
#define HM_SPANK_SLURMUSER_H

#include <stddef.h>
#include <stdint.h>

/*
 * SlurmUser's uid from the slurm.conf at path (NULL: $SLURM_CONF, else
 * /etc/slurm/slurm.conf). 0 with *uid set: the last SlurmUser= of the file (a
 * key=value token on any line, key case-insensitive, '#' starts a comment;
 * Include files are not followed), or root when the file names none, as Slurm
 * defaults. -1 when the file cannot be read or the account does not exist,
 * with why (len bytes) naming the file or the account.
 */
int hm_spank_slurm_user(const char *path, uint32_t *uid, char *why, size_t len);

#endif
