/*
 * hm_client.h - one request to the coordinator (SPANK plugin, harmonicsctl).
 *
 * Seals request_json in a munge credential (so the coordinator knows our uid),
 * sends it length-prefixed, reads the sealed reply and checks its credential.
 * The whole call (resolve, connect, send, receive) is bounded by timeout_ms.
 * Never blocks longer, never raises SIGPIPE.
 */
#ifndef HM_CLIENT_H
#define HM_CLIENT_H

#include <stdint.h>

#include "hm_coord_addr.h"
#include "hm_error.h"

/*
 * On success *reply_json is a malloc'd NUL-terminated JSON text (caller frees).
 * Errors name host:port: HM_ERR_IO (unreachable, refused, reset), HM_ERR_TIMEOUT,
 * HM_ERR_AUTH (munge failed on either side), HM_ERR_PROTO (bad frame or JSON).
 * An error reply from the coordinator ({"ok":false,...}) is still HM_OK here: the
 * caller reads "ok".
 */
hm_rc_t hm_client_call(const char *host, int port, const char *request_json, int timeout_ms,
		       char **reply_json, hm_err_t *err);

/*
 * Same, and the reply must be sealed by one of trusted_uids[ntrusted] (e.g. root
 * and SlurmUser), so that a process squatting on the port while slurmctld is down
 * cannot hand out assignments: another sender is HM_ERR_AUTH naming its uid.
 */
hm_rc_t hm_client_call_trusted(const char *host, int port, const char *request_json, int timeout_ms,
			       const uint32_t *trusted_uids, int ntrusted, char **reply_json,
			       hm_err_t *err);

/*
 * Same over the coordinator's addresses (hm_coord_addr.h) in order, all within
 * timeout_ms: each address's connect is bounded by an equal share of the time
 * left (a refused one moves on at once), the exchange by the whole deadline.
 * The next address is tried when one cannot be connected to or its reply is
 * not sealed by a trusted uid; an address that connected and then failed
 * (timeout, reset) ends the call. *answered (may be NULL) is the index that
 * answered, -1 on error; the error names every address tried.
 */
hm_rc_t hm_client_call_list(const hm_coord_addrs_t *addrs, int port, const char *request_json,
			    int timeout_ms, const uint32_t *trusted_uids, int ntrusted,
			    char **reply_json, int *answered, hm_err_t *err);

#endif
