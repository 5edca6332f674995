/*
 * harmonics-agent: run one node agent outside slurmd (tests, debugging). The
 * agent is the same library harmonics_agent.so wraps; this entry only parses
 * options and waits for SIGTERM or SIGINT. Not installed.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "hm_tool.h"

/* Exit codes (--help, harmonics-agent(1)). */
enum { EXIT_CONFIG = 1, EXIT_USAGE = HM_TOOL_EXIT_USAGE, EXIT_STOP_TIMEOUT = 3 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: harmonics-agent --node NAME [--conf FILE] [--topo-xml FILE] "
		"[--foreground]\n"
		"Run the Harmonics node agent of NAME in the foreground until SIGTERM or "
		"SIGINT.\n\n"
		"  -n, --node NAME      node name (default: this host's short name)\n"
		"  -c, --conf FILE      harmonics.conf (default: $HARMONICS_CONF, else beside "
		"slurm.conf)\n"
		"  -t, --topo-xml FILE  hwloc XML of the node (default: this machine;\n"
		"                       HWLOC_XMLFILE is honoured)\n"
		"  -f, --foreground     run in the foreground (the only mode)\n"
		"  -h, --help           this text\n\n"
		"Exit status: 0 stopped by SIGTERM or SIGINT; 1 the agent could not start\n"
		"(harmonics.conf, node name or topology: the message says which); 2 bad usage;\n"
		"3 it did not stop within %d ms.\n",
		HM_AGENT_STOP_BOUND_MS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"node", required_argument, NULL, 'n'},     {"conf", required_argument, NULL, 'c'},
	    {"topo-xml", required_argument, NULL, 't'}, {"foreground", no_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
	const char *node = NULL, *conf = NULL, *xml = NULL;
	agent_cfg_t cfg;
	agent_t *agent = NULL;
	hm_err_t err = {0};
	sigset_t set;
	int c, sig, rc = 0;

	while ((c = getopt_long(argc, argv, "n:c:t:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			node = optarg;
			break;
		case 'c':
			conf = optarg;
			break;
		case 't':
			xml = optarg;
			break;
		case 'f':
			break;
		default:
			return hm_tool_help_or_usage(c, usage);
		}
	}
	if (optind < argc)
		return hm_tool_stray_arg("harmonics-agent", argv[optind], usage);
	/* Block the stop signals before the thread starts: it inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (agent_cfg_init(&cfg, node, conf, HM_AGENT_NO_UID, xml, NULL, &err) != HM_OK ||
	    agent_start(&cfg, &agent, &err) != HM_OK) {
		fprintf(stderr, "harmonics-agent: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	sigwait(&set, &sig);
	if (agent_stop(agent, HM_AGENT_STOP_BOUND_MS) != HM_OK) {
		fprintf(stderr, "harmonics-agent: the agent did not stop within %d ms\n",
			HM_AGENT_STOP_BOUND_MS);
		rc = EXIT_STOP_TIMEOUT;
	}
	return rc;
}
