/* slurmd's command line and the node name of this process (no Slurm, no config). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* ---- slurmd's command line ------------------------------------------------------ */

bool agent_node_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n >= 1 && n < AGENT_NODE_MAX &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
		   n;
}

/* slurmd 22.05: short options "bcCd:Df:F::GhL:Mn:N:svVZ", long conf=, conf-server=, version. */
#define SLURMD_OPTS "bcCd:Df:F::GhL:Mn:N:svVZ"

/* Does the long option (without "--", up to '=') take an argument? -1: not slurmd's. */
static int long_opt_arg(const char *name, size_t len)
{
	static const struct {
		const char *name;
		int arg;
	} longs[] = {{"conf", 1}, {"conf-server", 1}, {"version", 0}};
	int found = -1, matches = 0;

	for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
		if (strncmp(longs[i].name, name, len) != 0)
			continue;
		if (strlen(longs[i].name) == len)
			return longs[i].arg; /* exact */
		found = longs[i].arg;
		matches++;
	}
	return matches == 1 ? found : -1;
}

bool agent_slurmd_args(const char *buf, size_t len, char *node, size_t node_len, bool *foreground)
{
	char copy[8192]; /* NUL-terminated even when the input's last argument is cut */
	const char *argv[256];
	const char *base;
	int argc = 0;

	node[0] = '\0';
	*foreground = false;
	if (len >= sizeof(copy))
		len = sizeof(copy) - 1;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	for (size_t i = 0; i < len && argc < 256;) {
		const char *s = copy + i;

		argv[argc++] = s;
		i += strlen(s) + 1;
	}
	if (argc == 0)
		return false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			break;
		if (strncmp(a, "--", 2) == 0) {
			size_t nl = strcspn(a + 2, "=");

			if (long_opt_arg(a + 2, nl) == 1 && a[2 + nl] != '=')
				i++; /* its argument */
			continue;
		}
		if (a[0] != '-' || a[1] == '\0')
			continue; /* getopt permutes: operands may sit anywhere */
		for (int j = 1; a[j]; j++) {
			const char *o = strchr(SLURMD_OPTS, a[j]);
			const char *optarg = NULL;

			if (!o || a[j] == ':')
				continue;
			if (o[1] != ':') {
				*foreground |= a[j] == 'D';
				continue;
			}
			if (a[j + 1])
				optarg = a + j + 1;
			else if (o[2] != ':' && i + 1 < argc)
				optarg = argv[++i];
			if (a[j] == 'N' && optarg)
				snprintf(node, node_len, "%s", optarg);
			break;
		}
	}
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	return strcmp(base, "slurmd") == 0;
}

hm_rc_t agent_node_name(char *out, size_t len, bool *daemonizes, hm_err_t *err)
{
	char buf[8192], node[256] = "", host[256];
	bool foreground = false, slurmd = false;
	ssize_t n = 0;
	FILE *f = fopen("/proc/self/cmdline", "re");

	if (f) {
		n = (ssize_t)fread(buf, 1, sizeof(buf), f);
		fclose(f);
		slurmd = agent_slurmd_args(buf, (size_t)n, node, sizeof(node), &foreground);
	}
	*daemonizes = slurmd && !foreground;
	if (!node[0]) {
		if (gethostname(host, sizeof(host)) != 0)
			return hm_err_set(err, HM_ERR_NOTFOUND, "gethostname: %s", strerror(errno));
		host[sizeof(host) - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		snprintf(node, sizeof(node), "%s", host);
	}
	if (!agent_node_valid(node) || strlen(node) >= len)
		return hm_err_set(err, HM_ERR_NOTFOUND,
				  "node name '%.80s' is not accepted (1-63 of A-Z a-z 0-9 . _ -)",
				  node);
	snprintf(out, len, "%s", node);
	return HM_OK;
}
