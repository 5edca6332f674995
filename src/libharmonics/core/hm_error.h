/*
 * hm_error.h - error codes and a message buffer shared by every libharmonics API.
 *
 * Functions that can fail return an hm_rc_t (0 on success) and, when given a
 * non-NULL hm_err_t, fill it with a one-line message that names the bad value,
 * where it came from (file:line when parsing) and what is accepted.
 */
#ifndef HM_ERROR_H
#define HM_ERROR_H

#include <stddef.h>

typedef enum {
	HM_OK = 0,
	HM_ERR_INVAL,    /* bad argument or value */
	HM_ERR_PARSE,    /* malformed input text */
	HM_ERR_NOMEM,    /* allocation failed */
	HM_ERR_IO,       /* read/write/open failed (errno in the message) */
	HM_ERR_RANGE,    /* value out of the accepted range */
	HM_ERR_NOTFOUND, /* a named thing does not exist */
	HM_ERR_PLACE,    /* a job cannot be placed on the cluster */
	HM_ERR_BUDGET,   /* a time budget ran out (result is best-effort) */
	HM_ERR_AUTH,     /* authentication or authorisation failed */
	HM_ERR_PROTO,    /* protocol violation by a peer */
	HM_ERR_TIMEOUT,  /* a peer did not answer in time */
	HM_ERR__COUNT
} hm_rc_t;

/* Message buffer. Zero-initialise before use; msg is always NUL-terminated. */
typedef struct {
	hm_rc_t rc;
	char msg[1024];
} hm_err_t;

/* Short static description of an error code; never NULL. */
const char *hm_strerror(hm_rc_t rc);

/*
 * Record an error: sets err->rc and formats err->msg (printf-style).
 * err may be NULL. Returns rc so callers can write `return hm_err_set(...)`.
 */
hm_rc_t hm_err_set(hm_err_t *err, hm_rc_t rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix an existing message with "prefix: " (for example a file name). */
void hm_err_prefix(hm_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
