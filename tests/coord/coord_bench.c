/*
 * coord_bench: how long the coordinator takes, outside Slurm.
 *   - one decide run per policy over 8 jobs arriving at once on the two-rack
 *     fixture (tests/fixtures/coord/topology.conf), then one epoch re-decision;
 *   - N register round trips through the real server and munge (both ways).
 * Usage: top_srcdir=. build/tests/coord/coord_bench [N]   (needs munged)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../unit/coord_fixture.h"
#include "hm_clock.h"
#include "hm_client.h"
#include "hm_log.h"
#include "hm_proto.h"
#include "hm_server.h"

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const nodes[] = {"n[1-2]", "n[2-3]", "n[3-6]", "n[5-6]",
					    "n[6-8]", "n[1,8]", "n4",     "n7"};
	static const char *const profiles[] = {
	    "resnet50", "bert-large", "gpt2-xl", "vgg16", "iter=250ms,comm=40%,bytes=1.2GB",
	    "resnet50", "bert-base",  "vgg19"};
	int n = argc > 1 ? atoi(argv[1]) : 300;
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_server_t *s = NULL;
	hm_err_t err = {0};
	double *lat = NULL, sum = 0;
	bool changed;
	int ret = 1;

	if (n < 1 || n > 1000000 || !(lat = calloc((size_t)n, sizeof(*lat)))) {
		fprintf(stderr, "usage: coord_bench [N in 1..1000000]\n");
		return 2;
	}
	hm_log_set_level(HM_LOG_ERROR);
	for (int p = 0; p < hm_policy_count(); p++) {
		double t0, t1, t2;

		fixture_conf(&conf);
		conf.decision_budget_s = 1;
		snprintf(conf.policy, sizeof(conf.policy), "%s", hm_policy_at(p)->name);
		hm_coord_destroy(c);
		c = NULL;
		if (hm_coord_create(&conf, fixture_topo(), &c, &err) != HM_OK)
			goto out;
		for (int j = 0; j < 8; j++) {
			hm_coord_job_info_t in = {.job_id = (uint32_t)j + 1,
						  .nodes = nodes[j],
						  .mode = "auto",
						  .profile = profiles[j],
						  .gpus_per_node = 4,
						  .start_s = hm_real_s()};
			hm_coord_job_upsert(c, &in, &err);
		}
		t0 = (hm_mono_s() * 1e3);
		if (hm_coord_decide(c, hm_real_s(), &changed, &err) != HM_OK)
			goto out;
		t1 = (hm_mono_s() * 1e3);
		if (hm_coord_decide(c, hm_real_s() + conf.epoch_s, &changed, &err) != HM_OK)
			goto out;
		t2 = (hm_mono_s() * 1e3);
		printf("decide %-9s 8 arriving jobs: %8.2f ms   epoch re-decision: %8.2f ms\n",
		       conf.policy, t1 - t0, t2 - t1);
	}
	conf.listen_port = 0;
	if (hm_server_start(c, &conf, 0, &s, &err) != HM_OK)
		goto out;
	for (int i = 0; i < n; i++) {
		char *reply = NULL;
		double t0 = (hm_mono_s() * 1e3);

		if (hm_client_call(
			"127.0.0.1", hm_server_port(s),
			"{\"op\":\"register\",\"job_id\":3,\"step_id\":0,\"node\":\"n3\"}", 2000,
			&reply, &err) != HM_OK)
			goto out;
		lat[i] = (hm_mono_s() * 1e3) - t0;
		sum += lat[i];
		free(reply);
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp_dbl);
	printf("register round trip (munge both ways), %d calls: mean %.2f ms, p50 %.2f, "
	       "p99 %.2f, max %.2f\n",
	       n, sum / n, lat[n / 2], lat[(size_t)n * 99 / 100], lat[n - 1]);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "coord_bench: %s\n", err.msg);
	hm_server_stop(s);
	hm_coord_destroy(c);
	free(lat);
	return ret;
}
