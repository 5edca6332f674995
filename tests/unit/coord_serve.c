/*
 * coord_serve: a coordinator and its server outside Slurm, for the harmonicsctl
 * tests. Loads the two-rack fixture topology, adds three jobs, decides, listens on
 * 127.0.0.1 (any port), writes the port to argv[1], and serves until stdin closes
 * or 30 s pass (never outlives its test). With argv[2], it also serves
 * /metrics on 127.0.0.1 (any port, written to argv[2]) and publishes them on
 * every byte read from stdin (and once at the start), with a fourth job, 15,
 * on n[2-3]: it shares n2's NIC with job 12 (a contended job to explain).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "coord_fixture.h"
#include "hm_clock.h"
#include "hm_log.h"
#include "hm_metrics.h"
#include "hm_server.h"

int main(int argc, char **argv)
{
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_server_t *s = NULL;
	hm_metrics_srv_t *mx = NULL;
	hm_err_t err = {0};
	bool changed;
	FILE *f;
	int ret = 1;
	hm_coord_job_info_t jobs[] = {
	    {.job_id = 12,
	     .uid = 0,
	     .name = "train",
	     .nodes = "n[1-2]",
	     .mode = "auto",
	     .profile = "iter=250ms,comm=40%,bytes=1.2GB"},
	    {.job_id = 13,
	     .uid = 65534,
	     .name = "bert",
	     .nodes = "n[4-5]",
	     .mode = "fair",
	     .profile = "bert-large"},
	    {.job_id = 14, .uid = 0, .name = "plain", .nodes = "n8", .mode = "off"},
	};

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: coord_serve PORTFILE [METRICSPORTFILE]\n");
		return 2;
	}
	hm_log_set_level(HM_LOG_ERROR);
	fixture_conf(&conf);
	conf.listen_port = 0;
	if (hm_coord_create(&conf, fixture_topo(), &c, &err) != HM_OK ||
	    hm_coord_set_policy_ops(c, &script_policy, &err) != HM_OK)
		goto out;
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		hm_coord_job_upsert(c, &jobs[i], &err);
	if (argc == 3) {
		hm_coord_job_info_t j15 = {.job_id = 15,
					   .name = "gpt",
					   .nodes = "n[2-3]",
					   .gpu_ids = "0-3",
					   .mode = "auto",
					   .profile = "iter=250ms,comm=40%,bytes=1.2GB"};

		hm_coord_job_upsert(c, &j15, &err);
	}
	if (hm_coord_decide(c, hm_real_s(), &changed, &err) != HM_OK ||
	    hm_server_start(c, &conf, 64030, &s, &err) != HM_OK)
		goto out;
	if (argc == 3 && hm_metrics_srv_start("127.0.0.1:0", "none", &mx, &err) != HM_OK)
		goto out;
	hm_metrics_srv_refresh(mx, c);
	if (!(f = fopen(argv[1], "w")) || fprintf(f, "%d\n", hm_server_port(s)) < 0 ||
	    fclose(f) != 0) {
		perror(argv[1]);
		goto out;
	}
	if (mx && (!(f = fopen(argv[2], "w")) || fprintf(f, "%d\n", hm_metrics_srv_port(mx)) < 0 ||
		   fclose(f) != 0)) {
		perror(argv[2]);
		goto out;
	}
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	char ch;
	while (poll(&pfd, 1, 30000) > 0 && read(0, &ch, 1) > 0)
		hm_metrics_srv_refresh(mx, c);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "coord_serve: %s\n", err.msg);
	hm_metrics_srv_stop(mx);
	hm_server_stop(s);
	hm_coord_destroy(c);
	return ret;
}
