/* The coordinator's addresses and slurm.conf's SlurmctldHost lines (hm_coord_addr.h). */
#include "hm_coord_addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
#define LOOPBACK           "127.0.0.1"
#define HOST_CHARS         "letters, digits, '.', '-', '_'"

static bool host_ok(const char *s, size_t n)
{
	if (n == 0 || n >= HM_COORD_ADDR_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
			return false;
	return true;
}

hm_rc_t hm_coord_addrs_parse(const char *list, hm_coord_addrs_t *out, hm_err_t *err)
{
	hm_coord_addrs_t a = {0};
	const char *p = list;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (!host_ok(p, n))
			return hm_err_set(err, HM_ERR_INVAL,
					  "'%.*s' in '%s' is not a host name or address (accepted: "
					  "1-%d of " HOST_CHARS "; several separated by ',')",
					  (int)n, p, list, HM_COORD_ADDR_MAX - 1);
		if (a.n == HM_COORD_ADDRS_MAX)
			return hm_err_set(err, HM_ERR_RANGE,
					  "'%s' lists more than %d hosts (accepted: 1-%d)", list,
					  HM_COORD_ADDRS_MAX, HM_COORD_ADDRS_MAX);
		memcpy(a.host[a.n], p, n);
		a.host[a.n][n] = '\0';
		for (int i = 0; i < a.n; i++)
			if (strcmp(a.host[i], a.host[a.n]) == 0)
				return hm_err_set(
				    err, HM_ERR_INVAL,
				    "'%s' lists '%s' twice (accepted: each host once)", list,
				    a.host[i]);
		a.n++;
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = a;
	return HM_OK;
}

void hm_coord_addrs_format(const hm_coord_addrs_t *a, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; i < a->n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? "," : "", a->host[i]);

		off += w > 0 ? (size_t)w : 0;
	}
}

/* One SlurmctldHost value, "NAME(ADDR)" or "NAME" (Slurm's _parse_slurmctld_host). */
static bool ctld_value(const char *v, hm_ctld_host_t *h)
{
	const char *open = strchr(v, '('), *close = strchr(v, ')');
	size_t nlen = open ? (size_t)(open - v) : strlen(v);

	if ((open == NULL) != (close == NULL) || (close && (close[1] || close < open)) ||
	    (open && strchr(open + 1, '(')) || !host_ok(v, nlen))
		return false;
	memcpy(h->name, v, nlen);
	h->name[nlen] = '\0';
	if (!open) {
		memcpy(h->addr, h->name, nlen + 1);
		return true;
	}
	if (!host_ok(open + 1, (size_t)(close - open - 1)))
		return false;
	memcpy(h->addr, open + 1, (size_t)(close - open - 1));
	h->addr[close - open - 1] = '\0';
	return true;
}

hm_rc_t hm_ctld_hosts_parse(FILE *f, const char *fname, hm_ctld_hosts_t *out, hm_err_t *err)
{
	hm_ctld_hosts_t c = {0};
	char line[4096];

	for (int ln = 1; fgets(line, sizeof(line), f); ln++) {
		char *hash = strchr(line, '#'), *save = NULL;

		if (hash)
			*hash = '\0';
		for (char *tok = strtok_r(line, " \t\r\n", &save); tok;
		     tok = strtok_r(NULL, " \t\r\n", &save)) {
			if (strncasecmp(tok, "SlurmctldHost=", 14) != 0)
				continue;
			if (c.n == HM_COORD_ADDRS_MAX)
				return hm_err_set(err, HM_ERR_PARSE,
						  "%s:%d: more than %d SlurmctldHost lines", fname,
						  ln, HM_COORD_ADDRS_MAX);
			if (!ctld_value(tok + 14, &c.h[c.n]))
				return hm_err_set(
				    err, HM_ERR_PARSE,
				    "%s:%d: SlurmctldHost=%s is not NAME or NAME(ADDR) "
				    "(each 1-%d of " HOST_CHARS ")",
				    fname, ln, tok + 14, HM_COORD_ADDR_MAX - 1);
			c.n++;
		}
	}
	*out = c;
	return HM_OK;
}

hm_rc_t hm_ctld_hosts_read(const char *path, hm_ctld_hosts_t *out, hm_err_t *err)
{
	const char *env = getenv("SLURM_CONF");
	FILE *f;
	hm_rc_t rc;

	if (!path)
		path = env && *env ? env : SLURM_CONF_DEFAULT;
	if (!(f = fopen(path, "re")))
		return hm_err_set(err, HM_ERR_IO, "%s: %s", path, strerror(errno));
	rc = hm_ctld_hosts_parse(f, path, out, err);
	fclose(f);
	return rc;
}

/* CoordinatorHost or a ListenAddress other than 0.0.0.0 names the address. */
static bool conf_names_addr(const hm_conf_t *conf)
{
	return conf->coordinator_host[0] ||
	       (conf->listen_addr[0] && strcmp(conf->listen_addr, "0.0.0.0") != 0);
}

void hm_coord_addrs_of(const hm_conf_t *conf, const hm_ctld_hosts_t *ctld, hm_coord_addrs_t *out)
{
	hm_err_t err = {0};

	memset(out, 0, sizeof(*out));
	if (conf->coordinator_host[0] &&
	    hm_coord_addrs_parse(conf->coordinator_host, out, &err) == HM_OK)
		return;              /* checked when loaded: never fails here */
	if (conf_names_addr(conf)) { /* an IPv4 address: fits */
		out->n = 1;
		snprintf(out->host[0], sizeof(out->host[0]), "%.*s", HM_COORD_ADDR_MAX - 1,
			 conf->listen_addr);
		return;
	}
	for (int i = 0; ctld && i < ctld->n; i++)
		snprintf(out->host[out->n++], sizeof(out->host[0]), "%s", ctld->h[i].addr);
	if (out->n == 0) {
		out->n = 1;
		snprintf(out->host[0], sizeof(out->host[0]), LOOPBACK);
	}
}

hm_rc_t hm_coord_addrs_load(const hm_conf_t *conf, const char *slurm_conf, hm_coord_addrs_t *out,
			    hm_err_t *err)
{
	hm_ctld_hosts_t ctld = {0};
	hm_rc_t rc = HM_OK;

	if (!conf_names_addr(conf) && (rc = hm_ctld_hosts_read(slurm_conf, &ctld, err)) != HM_OK)
		ctld.n = 0;
	hm_coord_addrs_of(conf, &ctld, out);
	return rc;
}

hm_rc_t hm_coord_bind_addr(const char *addr, char *buf, size_t len, hm_err_t *err)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	struct in_addr ia;
	int gai;

	if (!addr || !*addr) {
		snprintf(buf, len, LOOPBACK);
		return HM_OK;
	}
	if (inet_pton(AF_INET, addr, &ia) == 1) {
		snprintf(buf, len, "%s", addr);
		return HM_OK;
	}
	if ((gai = getaddrinfo(addr, NULL, &hints, &res)) != 0 || !res)
		return hm_err_set(err, HM_ERR_IO,
				  "SlurmctldHost address '%s' does not resolve to IPv4: %s (set "
				  "ListenAddress=A.B.C.D)",
				  addr, gai ? gai_strerror(gai) : "no address");
	inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, buf, (socklen_t)len);
	freeaddrinfo(res);
	return HM_OK;
}
