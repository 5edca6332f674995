/* harmonicsctl: ask the Harmonics coordinator (inside slurmctld) what it decided. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_client.h"
#include "hm_conf.h"
#include "hm_ctl.h"
#include "hm_parse.h"
#include "hm_topo.h"
#include "hm_tool.h"

/* Exit codes (harmonicsctl(1)). */
enum { EXIT_REFUSED = 1, EXIT_USAGE = HM_TOOL_EXIT_USAGE, EXIT_UNREACHABLE = 3 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: harmonicsctl [OPTIONS] status|jobs|racks|nodes|job JOBID [--explain]\n"
		"       harmonicsctl topology FILE\n"
		"Show what the Harmonics coordinator (sched/harmonics in slurmctld) decided.\n\n"
		"  status        coordinator, policy, epoch, counters\n"
		"  jobs          running jobs with their slot, priority class and epoch\n"
		"  racks         racks: leader, jobs and link load\n"
		"  nodes         node agents: state, steps, GPUs and NICs they reported\n"
		"  job JOBID     one job in detail (owner, root, SlurmUser, Slurm's operators\n"
		"                and the coordinators of its account)\n"
		"  job JOBID --explain  the links it is modelled on, who else is on them,\n"
		"                its predicted share and the decision with its reason\n"
		"  topology FILE a Slurm topology.conf (topology/tree) or topology.yaml on\n"
		"                stdout, from a host CSV (host,tor[,agg[,core]]), a topology.conf\n"
		"                (tree or block) or a topology.yaml; no coordinator\n\n"
		"Options:\n"
		"  -j, --json          print the coordinator's JSON reply\n"
		"  -H, --host HOSTS    coordinator host, or several separated by ',' tried in\n"
		"                      order (default: CoordinatorHost, else ListenAddress\n"
		"                      from harmonics.conf, else slurm.conf's SlurmctldHost\n"
		"                      addresses)\n"
		"  -p, --port PORT     coordinator port (default: ListenPort, %d)\n"
		"  -c, --conf FILE     harmonics.conf (default: $HARMONICS_CONF, else beside\n"
		"                      $SLURM_CONF, else /etc/slurm/harmonics.conf)\n"
		"  -t, --timeout DUR   give up after DUR (default 5s)\n"
		"      --csv-columns MAP  topology: the CSV's column names, e.g.\n"
		"                      host=ip,tor=ASW,agg=PSW,core=DSW\n"
		"      --format conf|yaml|list  topology: write topology.conf (default) or\n"
		"                      topology.yaml (Slurm 25.05+), or list the file's\n"
		"                      topologies (each partition's jobs are modelled on\n"
		"                      its Topology=)\n"
		"      --topology-name NAME  topology: the topology to read from a\n"
		"                      topology.yaml (default: its cluster default) and the\n"
		"                      name written to one (default: \"default\")\n"
		"  -h, --help          this help\n\n"
		"Exit status: 0 ok, 1 refused by the coordinator (unknown job, not yours),\n"
		"2 usage or configuration error, 3 coordinator unreachable or not answering.\n",
		HM_CONF_DEFAULT_PORT);
}

/* path with --csv-columns' map (NULL: none) applied to opts. */
static hm_rc_t load_topology(const char *path, char *columns, hm_topo_opts_t *opts,
			     hm_topo_t **t, hm_err_t *err)
{
	hm_rc_t rc;

	if (columns && (rc = hm_topo_csv_columns_parse(columns, opts, err)) != HM_OK) {
		hm_err_prefix(err, "--csv-columns");
		return rc;
	}
	return hm_topo_load_file(path, opts, t, err);
}

/* topology FILE: the file as topology.conf or topology.yaml on stdout; 0, or
   2 naming what is wrong. */
static int write_topology(const char *path, char *columns, bool yaml, const char *name)
{
	hm_topo_opts_t opts = {.topology_name = name};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	int ret = EXIT_USAGE;

	if (load_topology(path, columns, &opts, &t, &err) != HM_OK)
		goto out;
	printf("# Slurm %s written by harmonicsctl\n"
	       "# from %s: %d nodes in %d racks\n",
	       yaml ? "topology.yaml (25.05+)" : "topology.conf (TopologyPlugin=topology/tree)",
	       path, t->nhosts, t->nracks);
	if ((yaml ? hm_topo_write_yaml(t, name, stdout, &err)
		  : hm_topo_write_slurm(t, stdout, &err)) != HM_OK)
		goto out;
	if (fflush(stdout) != 0) {
		hm_err_set(&err, HM_ERR_IO, "stdout: write failed");
		goto out;
	}
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "harmonicsctl: %s\n", err.msg);
	hm_topo_free(t);
	return ret;
}

/* topology --format list FILE: every topology of the file, one line each
   (the coordinator's view: a job is modelled on its partition's). */
static int list_topologies(const char *path, char *columns)
{
	hm_topo_opts_t opts = {.all_topologies = true};
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	char line[256];
	int ret = EXIT_USAGE;

	if (load_topology(path, columns, &opts, &t, &err) != HM_OK)
		goto out;
	for (int p = 0; p < (t->nplanes > 0 ? t->nplanes : 1); p++) {
		hm_topo_plane_describe(t, p, line, sizeof(line));
		printf("%s\n", line);
	}
	ret = fflush(stdout) == 0 ? 0 : EXIT_USAGE;
	if (ret)
		hm_err_set(&err, HM_ERR_IO, "stdout: write failed");
out:
	if (ret)
		fprintf(stderr, "harmonicsctl: %s\n", err.msg);
	hm_topo_free(t);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"host", required_argument, NULL, 'H'},
					     {"port", required_argument, NULL, 'p'},
					     {"conf", required_argument, NULL, 'c'},
					     {"timeout", required_argument, NULL, 't'},
					     {"csv-columns", required_argument, NULL, 'C'},
					     {"format", required_argument, NULL, 'F'},
					     {"topology-name", required_argument, NULL, 'N'},
					     {"explain", no_argument, NULL, 'E'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *host = NULL, *conf_path = NULL, *topo_name = NULL;
	bool topo_yaml = false, topo_list = false;
	char *columns = NULL;
	char default_conf[HM_CONF_PATH_MAX], req[128], where[HM_COORD_ADDR_MAX + 16];
	hm_coord_addrs_t addrs;
	int answered = -1;
	long port = -1, job_id = 0;
	double timeout_s = 5;
	bool json = false, explain = false;
	hm_conf_t conf;
	hm_ctl_cmd_t cmd;
	hm_err_t err = {0};
	char *reply = NULL;
	int opt, ret = EXIT_USAGE;
	hm_rc_t rc;

	while ((opt = getopt_long(argc, argv, "jH:p:c:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'H':
			host = optarg;
			break;
		case 'p':
			if (hm_parse_long(optarg, 1, 65535, &port, "--port", &err) != HM_OK)
				goto fail;
			break;
		case 'c':
			conf_path = optarg;
			break;
		case 't':
			if (hm_parse_duration_s(optarg, 0.01, 3600, &timeout_s, "--timeout",
						&err) != HM_OK)
				goto fail;
			break;
		case 'C':
			columns = optarg;
			break;
		case 'F':
			if (strcmp(optarg, "conf") != 0 && strcmp(optarg, "yaml") != 0 &&
			    strcmp(optarg, "list") != 0) {
				hm_err_set(&err, HM_ERR_INVAL,
					   "--format '%s': accepted: conf, yaml, list", optarg);
				goto fail;
			}
			topo_yaml = strcmp(optarg, "yaml") == 0;
			topo_list = strcmp(optarg, "list") == 0;
			break;
		case 'N':
			topo_name = optarg;
			break;
		case 'E':
			explain = true;
			break;
		default:
			return hm_tool_help_or_usage(opt, usage);
		}
	}
	if (optind >= argc) {
		hm_err_set(&err, HM_ERR_INVAL,
			   "no command (accepted: status, jobs, racks, nodes, job ID)");
		goto fail;
	}
	if (strcmp(argv[optind], "topology") == 0) {
		if (optind + 2 != argc) {
			hm_err_set(&err, HM_ERR_INVAL,
				   optind + 1 >= argc
				       ? "'topology' needs a host CSV or topology.conf"
				       : "unexpected argument '%s'",
				   argv[argc - 1]);
			goto fail;
		}
		ret = topo_list ? list_topologies(argv[optind + 1], columns)
				: write_topology(argv[optind + 1], columns, topo_yaml, topo_name);
		goto out;
	}
	if (hm_ctl_parse_cmd(argv[optind], &cmd, &err) != HM_OK)
		goto fail;
	if (cmd == HM_CTL_JOB) {
		if (optind + 1 >= argc) {
			hm_err_set(&err, HM_ERR_INVAL, "'job' needs a job id");
			goto fail;
		}
		if (hm_parse_long(argv[optind + 1], 1, 4294967295L, &job_id, "job id", &err) !=
		    HM_OK)
			goto fail;
		optind++;
		if (explain)
			cmd = HM_CTL_EXPLAIN;
	}
	if (explain && cmd != HM_CTL_EXPLAIN) {
		hm_err_set(&err, HM_ERR_INVAL, "--explain goes with 'job ID'");
		goto fail;
	}
	if (optind + 1 < argc) {
		hm_err_set(&err, HM_ERR_INVAL, "unexpected argument '%s'", argv[optind + 1]);
		goto fail;
	}

	/* harmonics.conf gives the defaults; a missing default file is fine, a named one
	   or a broken one is not. */
	hm_conf_defaults(&conf);
	if (!conf_path) {
		hm_conf_default_path(default_conf, sizeof(default_conf));
		if (access(default_conf, F_OK) == 0)
			conf_path = default_conf;
	}
	if (conf_path && hm_conf_load(conf_path, &conf, &err) != HM_OK)
		goto fail;
	/* -H's list, else CoordinatorHost, ListenAddress or slurm.conf's SlurmctldHost
	   lines (hm_coord_addr.h); an unreadable slurm.conf leaves 127.0.0.1. */
	if (host && hm_coord_addrs_parse(host, &addrs, &err) != HM_OK) {
		hm_err_prefix(&err, "--host");
		goto fail;
	}
	if (!host)
		(void)hm_coord_addrs_load(&conf, NULL, &addrs, &err);
	memset(&err, 0, sizeof(err));
	if (port < 0)
		port = conf.listen_port;

	hm_ctl_request(cmd, (uint32_t)job_id, req, sizeof(req));
	rc = hm_client_call_list(&addrs, (int)port, req, (int)(timeout_s * 1000), NULL, 0, &reply,
				 &answered, &err);
	if (rc == HM_OK)
		snprintf(where, sizeof(where), "%s:%ld", addrs.host[answered], port);
	if (rc != HM_OK) {
		fprintf(stderr, "harmonicsctl: %s\n", err.msg);
		ret = EXIT_UNREACHABLE;
		goto out;
	}
	rc = hm_ctl_print(cmd, reply, json, where, stdout, stderr);
	ret = rc == HM_OK ? 0 : rc == HM_ERR_PROTO ? EXIT_UNREACHABLE : EXIT_REFUSED;
	goto out;
fail:
	fprintf(stderr, "harmonicsctl: %s\n", err.msg);
	fprintf(stderr, "Try 'harmonicsctl --help'.\n");
	ret = EXIT_USAGE;
out:
	free(reply);
	return ret;
}
