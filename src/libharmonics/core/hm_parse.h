/*
 * hm_parse.h - strict parsing of numbers with units, shared by every loader,
 * the CLI tools, the SPANK options and harmonics.conf.
 *
 * Every function parses the whole string (trailing garbage is an error),
 * checks range, and on failure fills err with a message naming `what`, the bad
 * value and what is accepted. Leading/trailing blanks are not accepted; trim first.
 */
#ifndef HM_PARSE_H
#define HM_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "hm_error.h"

/* Integer in [min, max], base 10. */
hm_rc_t hm_parse_long(const char *s, long min, long max, long *out, const char *what, hm_err_t *err);

/* Finite double in [min, max]. */
hm_rc_t hm_parse_double(const char *s, double min, double max, double *out, const char *what,
			hm_err_t *err);

/* Duration: "250ms", "1.5s", "100us", "2min", "1h"; a bare number is seconds. */
hm_rc_t hm_parse_duration_s(const char *s, double min_s, double max_s, double *out_s,
			    const char *what, hm_err_t *err);

/* Size: "1.2GB" (SI, 1e9), "500MiB" (binary), "100KB", "123" (bytes), "B" suffix optional. */
hm_rc_t hm_parse_bytes(const char *s, double min_bytes, double max_bytes, double *out_bytes,
		       const char *what, hm_err_t *err);

/* Bandwidth: "100Gbps", "100G", "400Mbps", "1.6Tbps"; a bare number is Gbit/s. Result in bit/s. */
hm_rc_t hm_parse_bandwidth_bps(const char *s, double min_bps, double max_bps, double *out_bps,
			       const char *what, hm_err_t *err);

/* Fraction: "40%" or "0.4"; result in [0, 1]. */
hm_rc_t hm_parse_fraction(const char *s, double *out, const char *what, hm_err_t *err);

/* Boolean: yes/no, true/false, on/off, 1/0 (case-insensitive). */
hm_rc_t hm_parse_bool(const char *s, bool *out, const char *what, hm_err_t *err);

/* Trim blanks in place; returns s advanced past leading blanks. */
char *hm_trim(char *s);

/*
 * Split "key=value" in place at the first '='. Key and value are trimmed.
 * Returns false when there is no '=' or the key is empty.
 */
bool hm_split_kv(char *tok, char **key, char **val);

/*
 * Whether name is one of the comma-separated names of list ("a,b" or "a, b":
 * blanks after a comma are skipped). A whole name matches, never a part of
 * one; an empty or NULL name matches nothing.
 */
bool hm_name_in_list(const char *name, const char *list);

#endif
