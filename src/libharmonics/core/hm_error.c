#include "hm_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const hm_rc_desc[HM_ERR__COUNT] = {
	[HM_OK] = "success",
	[HM_ERR_INVAL] = "invalid argument",
	[HM_ERR_PARSE] = "parse error",
	[HM_ERR_NOMEM] = "out of memory",
	[HM_ERR_IO] = "I/O error",
	[HM_ERR_RANGE] = "value out of range",
	[HM_ERR_NOTFOUND] = "not found",
	[HM_ERR_PLACE] = "cannot be placed",
	[HM_ERR_BUDGET] = "time budget exhausted",
	[HM_ERR_AUTH] = "authentication failed",
	[HM_ERR_PROTO] = "protocol error",
	[HM_ERR_TIMEOUT] = "timed out",
};

const char *hm_strerror(hm_rc_t rc)
{
	if ((unsigned)rc >= HM_ERR__COUNT)
		return "unknown error";
	return hm_rc_desc[rc];
}

hm_rc_t hm_err_set(hm_err_t *err, hm_rc_t rc, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return rc;
	err->rc = rc;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return rc;
}

void hm_err_prefix(hm_err_t *err, const char *fmt, ...)
{
	char prefix[256];
	char old[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* Truncation is acceptable: the message stays NUL-terminated. */
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) < 0)
		err->msg[0] = '\0';
}
