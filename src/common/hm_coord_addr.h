/*
 * hm_coord_addr.h - where the coordinator is: an ordered list of addresses that
 * the node agents, the steps and harmonicsctl try in turn, so that they follow
 * a backup controller (docs/admin-guide.md "Backup controller").
 *
 * The list is CoordinatorHost= (one name or address, or several separated by
 * commas), else ListenAddress= when it names one address, else the addresses of
 * slurm.conf's SlurmctldHost lines in their order, else 127.0.0.1. slurm.conf
 * is read here, Slurm-free (no Slurm call in a step or in slurmd): Slurm's
 * syntax, "SlurmctldHost=NAME(ADDR)" or "SlurmctldHost=NAME" (the address is
 * then the name); keys case-insensitive, '#' starts a comment, Include files
 * are not followed.
 */
#ifndef HM_COORD_ADDR_H
#define HM_COORD_ADDR_H

#include <stddef.h>
#include <stdio.h>

#include "hm_conf.h"

#define HM_COORD_ADDRS_MAX 8  /* controllers (SlurmctldHost lines) or CoordinatorHost entries */
#define HM_COORD_ADDR_MAX  64 /* one name or address, NUL included */

typedef struct {
	int n;                                            /* 0..HM_COORD_ADDRS_MAX */
	char host[HM_COORD_ADDRS_MAX][HM_COORD_ADDR_MAX]; /* names or addresses, in order */
} hm_coord_addrs_t;

/* One SlurmctldHost line. */
typedef struct {
	char name[HM_COORD_ADDR_MAX]; /* the host name slurmctld runs on */
	char addr[HM_COORD_ADDR_MAX]; /* its address: the part in parentheses, else name */
} hm_ctld_host_t;

typedef struct {
	int n;
	hm_ctld_host_t h[HM_COORD_ADDRS_MAX]; /* in the file's order: primary first */
} hm_ctld_hosts_t;

/*
 * "a,b,c" into *out: 1..HM_COORD_ADDRS_MAX names or addresses (letters, digits,
 * '.', '-', '_'; each shorter than HM_COORD_ADDR_MAX), no empty or repeated
 * entry. HM_ERR_INVAL/HM_ERR_RANGE naming the bad entry and what is accepted;
 * *out is untouched on error.
 */
hm_rc_t hm_coord_addrs_parse(const char *list, hm_coord_addrs_t *out, hm_err_t *err);

/* "a,b,c" into buf (len bytes, cut to fit). */
void hm_coord_addrs_format(const hm_coord_addrs_t *a, char *buf, size_t len);

/*
 * The SlurmctldHost lines of slurm.conf text read from f (fname in messages).
 * HM_ERR_PARSE "fname:line: ..." naming a malformed value (unbalanced
 * parentheses, an empty name or address, a character a host name cannot have)
 * or a line past HM_COORD_ADDRS_MAX; out->n is 0 when the file has none.
 */
hm_rc_t hm_ctld_hosts_parse(FILE *f, const char *fname, hm_ctld_hosts_t *out, hm_err_t *err);

/* The same from the file at path (NULL: $SLURM_CONF, else /etc/slurm/slurm.conf);
   HM_ERR_IO naming it when it cannot be read. */
hm_rc_t hm_ctld_hosts_read(const char *path, hm_ctld_hosts_t *out, hm_err_t *err);

/* The list from conf and the SlurmctldHost lines (ctld may be NULL: none), in
   the order of the top of this file. */
void hm_coord_addrs_of(const hm_conf_t *conf, const hm_ctld_hosts_t *ctld, hm_coord_addrs_t *out);

/*
 * hm_coord_addrs_of with the SlurmctldHost lines of slurm_conf (NULL: the
 * default path), read only when conf names no address. Always fills *out; a
 * slurm.conf that cannot be read or parsed leaves 127.0.0.1 and returns its
 * error (callers log it; a client still tries the list).
 */
hm_rc_t hm_coord_addrs_load(const hm_conf_t *conf, const char *slurm_conf, hm_coord_addrs_t *out,
			    hm_err_t *err);

/*
 * The IPv4 address (dotted, into buf of len bytes) a coordinator binds when
 * ListenAddress is unset, from its controller's SlurmctldHost address addr: a
 * dotted address as is, a name resolved (the first IPv4 address). "" or NULL:
 * 127.0.0.1 (not in a controller: tests, tools). HM_ERR_IO naming addr when it
 * does not resolve.
 */
hm_rc_t hm_coord_bind_addr(const char *addr, char *buf, size_t len, hm_err_t *err);

#endif
