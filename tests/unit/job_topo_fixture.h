/*
 * job_topo_fixture.h - topologies for the job/traffic/placement tests, made by
 * the real generator (hm_topo_generate) so the tests exercise real routes.
 * Include after <cmocka.h>.
 */
#ifndef JOB_TOPO_FIXTURE_H
#define JOB_TOPO_FIXTURE_H

#include <stdio.h>

#include "hm_topo.h"

static inline hm_topo_t *fixture_topo(const char *spec)
{
	hm_topo_gen_t gen;
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	if (hm_topo_gen_parse(spec, &gen, &err) != HM_OK ||
	    hm_topo_generate(&gen, &t, &err) != HM_OK) {
		print_error("topology '%s': %s\n", spec, err.msg);
		fail();
	}
	return t;
}

#endif
