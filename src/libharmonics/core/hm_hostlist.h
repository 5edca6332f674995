/*
 * hm_hostlist.h - Slurm hostlist expressions: "n[01-16],gpu[1-4],login".
 * Used by the topology.conf loader, the trace CSV `nodes` column and the
 * Slurm plugins (SLURM_JOB_NODELIST).
 */
#ifndef HM_HOSTLIST_H
#define HM_HOSTLIST_H

#include "hm_error.h"

/* Refuse expressions expanding past this many names: 2^17, eight times the
   largest Slurm cluster, so a 100-byte expression (n[1-8]x[1-8]...) cannot
   make a loader spend seconds on a million hosts. */
#define HM_HOSTLIST_MAX 131072

/*
 * Expand expr into *names (an array of *n malloc'd strings, itself malloc'd).
 * Zero-padding of ranges is kept ("n[01-03]" -> n01 n02 n03). Nested brackets,
 * empty names, reversed or unterminated ranges are HM_ERR_PARSE with the bad part.
 */
hm_rc_t hm_hostlist_expand(const char *expr, char ***names, int *n, hm_err_t *err);
void hm_hostlist_free(char **names, int n); /* NULL is fine */

/*
 * The reverse, for names in the order given: consecutive names with the same
 * prefix and numeric suffix (same zero-padded width, or both unpadded) become
 * one range ("n1,n2,n3,n5" -> "n[1-3,5]"), the rest stay as they are;
 * hm_hostlist_expand of the result gives the names back. Returns a malloc'd
 * string, NULL when out of memory (or n < 1).
 */
char *hm_hostlist_compress(char *const *names, int n);

/*
 * Order of node names as hostlists list them: runs of digits compare by value
 * (n2 < n10; n01 before n1 when equal in value, by length), everything else
 * byte by byte. <0, 0, >0 like strcmp; 0 only for equal strings.
 */
int hm_hostname_cmp(const char *a, const char *b);

#endif
