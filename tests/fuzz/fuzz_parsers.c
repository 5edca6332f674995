/*
 * libFuzzer harness for every parser that reads outside input. The first byte
 * picks the parser; the rest is the input. Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_conf.h"
#include "hm_hostlist.h"
#include "hm_job.h"
#include "hm_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *as_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hm_err_t err = {0};
	hm_topo_opts_t opts = {0};
	hm_topo_t *topo = NULL;
	char *s;
	FILE *f;

	if (size < 1)
		return 0;
	s = as_string(data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 7) {
	case 0:
		if ((f = fmemopen(s, size - 1, "r"))) {
			if (hm_topo_load_slurm(f, "fuzz.conf", &opts, &topo, &err) == HM_OK)
				hm_topo_free(topo);
			fclose(f);
		}
		break;
	case 1:
		if ((f = fmemopen(s, size - 1, "r"))) {
			if (hm_topo_load_csv(f, "fuzz.csv", &opts, &topo, &err) == HM_OK)
				hm_topo_free(topo);
			fclose(f);
		}
		break;
	case 2:
		if ((f = fmemopen(s, size - 1, "r"))) {
			hm_workload_t w = {0};
			if (hm_workload_load_csv(f, "trace.csv", &w, &err) == HM_OK)
				hm_workload_free(&w);
			fclose(f);
		}
		break;
	case 3: {
		char **names = NULL;
		int n = 0;
		if (hm_hostlist_expand(s, &names, &n, &err) == HM_OK)
			hm_hostlist_free(names, n);
		break;
	}
	case 4: {
		hm_conf_t conf;
		hm_conf_defaults(&conf);
		(void)hm_conf_load_string(s, "harmonics.conf", &conf, &err);
		break;
	}
	case 5: {
		hm_topo_gen_t gen;
		memset(&gen, 0, sizeof(gen));
		/* Generated topologies are size-capped to keep a run fast. */
		if (hm_topo_gen_parse(s, &gen, &err) == HM_OK &&
		    gen.racks * gen.hosts_per_rack <= 256 &&
		    hm_topo_generate(&gen, &topo, &err) == HM_OK)
			hm_topo_free(topo);
		break;
	}
	case 6: /* one topology, then all of them as planes, each routed once */
		for (int all = 0; all < 2; all++) {
			hm_topo_opts_t o = opts;

			o.all_topologies = all;
			if (!(f = fmemopen(s, size - 1, "r")))
				break;
			if (hm_topo_load_yaml(f, "fuzz.yaml", &o, &topo, &err) == HM_OK) {
				int links[HM_MAX_ROUTE_LINKS];

				for (int p = 0; p < topo->nplanes; p++)
					(void)hm_topo_route_plane(topo, p, 0, 0, topo->nhosts - 1,
								  0, 0, links);
				hm_topo_free(topo);
			}
			fclose(f);
		}
		break;
	}
	free(s);
	return 0;
}
