/*
 * hm_proto.h - wire format shared by the server and the client (internal).
 *
 * A frame is a 4-byte big-endian length and that many bytes of a munge
 * credential (text). The credential's payload is a JSON object (not
 * NUL-terminated on the wire). Deadlines are absolute CLOCK_MONOTONIC
 * milliseconds (hm_proto_now_ms() + timeout).
 */
#ifndef HM_PROTO_H
#define HM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hm_clock.h"
#include "hm_error.h"

#define HM_PROTO_UID_ANY ((uint32_t)-1)

/* The deadline clock (CLOCK_MONOTONIC milliseconds). */
static inline int64_t hm_proto_now_ms(void)
{
	return hm_mono_ms();
}

/*
 * Seal json into a munge credential (*cred malloc'd, caller frees). to_uid:
 * only that uid can decode it (HM_PROTO_UID_ANY: anyone). HM_ERR_AUTH when munged
 * is unreachable or refuses.
 */
hm_rc_t hm_proto_seal(const char *json, uint32_t to_uid, char **cred, hm_err_t *err);

/*
 * Decode a credential: *json (malloc'd, NUL-terminated) and the sender's uid/gid.
 * Any munge failure (garbage, expired, replayed, not for us) is HM_ERR_AUTH naming
 * munge's reason; a payload with NUL bytes or empty is HM_ERR_PROTO.
 */
hm_rc_t hm_proto_unseal(const char *cred, char **json, uint32_t *uid, uint32_t *gid, hm_err_t *err);

/*
 * Destination binding of the daemons' frames (docs/protocol.md "Bound frames").
 * A bound frame's JSON object starts with the member "bind": "DIR DST SRC": the
 * direction (e.g. "agent>coordinator") and the connection's two ends as the
 * sender sees them (DST its peer, SRC its own address, "A.B.C.D:PORT" or
 * "[V6]:PORT"). The receiver expects "DIR LOCAL PEER" of its socket, so a frame
 * sealed for another coordinator, leader, connection or direction is refused.
 */
#define HM_PROTO_BIND_MAX 160 /* a tag, NUL included */
#define HM_PROTO_ADDR_MAX 64  /* one end, NUL included */

/* fd's own address (peer false) or its peer's, numeric; HM_ERR_IO when unknown. */
hm_rc_t hm_proto_sock_addr(int fd, bool peer, char *out, size_t len, hm_err_t *err);

/* The tag "dir dst src" into out; HM_ERR_RANGE when it does not fit or holds a
 * character outside [A-Za-z0-9.:>[]_-] in its parts. */
hm_rc_t hm_proto_bind_tag(char *out, size_t len, const char *dir, const char *dst, const char *src,
			  hm_err_t *err);

/* The tag of connected socket fd in direction dir: of a frame we send (sending: "dir
 * PEER SELF") or one we accept ("dir SELF PEER"). */
hm_rc_t hm_proto_conn_tag(int fd, const char *dir, bool sending, char *tag, size_t len,
			  hm_err_t *err);

/* Seal json (a JSON object text) bound to tag: as hm_proto_seal. */
hm_rc_t hm_proto_seal_bound(const char *json, uint32_t to_uid, const char *tag, char **cred,
			    hm_err_t *err);

/*
 * Check and strip the binding of an unsealed text in place. Bound to expect:
 * HM_OK, *bound true, the text without its "bind" member. Not bound (no leading
 * "bind" member): HM_OK, *bound false, text unchanged (the caller refuses it
 * where binding is required). Bound elsewhere: HM_ERR_AUTH naming the first part
 * that differs ("frame bound to another source ('A', this connection's is 'B')").
 */
hm_rc_t hm_proto_unbind(char *json, const char *expect, bool *bound, hm_err_t *err);

/* Write one frame before deadline_ms (MSG_NOSIGNAL). */
hm_rc_t hm_proto_send(int fd, const char *data, size_t len, int64_t deadline_ms, hm_err_t *err);

/*
 * Read one frame of at most max_bytes before deadline_ms into *data (malloc'd,
 * NUL-terminated, *len without the NUL). A length of 0 or above max_bytes is
 * HM_ERR_PROTO; EOF is HM_ERR_IO; the deadline is HM_ERR_TIMEOUT.
 */
hm_rc_t hm_proto_recv(int fd, size_t max_bytes, int64_t deadline_ms, char **data, size_t *len,
		      hm_err_t *err);

#endif
