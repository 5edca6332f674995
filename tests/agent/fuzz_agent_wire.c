/*
 * libFuzzer harness for what the node agent parses from outside: contract B
 * messages (hm_aw_decode; a message that decodes must encode and decode again
 * to the same records) and slurmd's command line (agent_slurmd_args). The first
 * byte picks the parser. Built and run by tests/agent/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "hm_agent_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const hm_aw_msg_t *m)
{
	hm_aw_msg_t again;
	char *json = NULL;
	hm_err_t err = {0};

	if (hm_aw_encode(m, &json, &err) != HM_OK)
		abort(); /* what was accepted must be encodable */
	if (hm_aw_decode(json, strlen(json), &again, &err) != HM_OK || again.op != m->op ||
	    again.seq != m->seq || again.nnodes != m->nnodes || again.nassign != m->nassign)
		abort();
	for (int i = 0; i < m->nassign; i++)
		if (again.assign[i].njobs != m->assign[i].njobs ||
		    (m->assign[i].njobs &&
		     again.assign[i].jobs[0].cur.period_us != m->assign[i].jobs[0].cur.period_us))
			abort();
	hm_aw_msg_free(&again);
	free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0) {
		hm_aw_msg_t m;
		hm_err_t err = {0};

		if (hm_aw_decode((const char *)data + 1, size - 1, &m, &err) == HM_OK)
			roundtrip(&m);
		hm_aw_msg_free(&m);
	} else {
		char node[64];
		bool fg;

		agent_slurmd_args((const char *)data + 1, size - 1, node, sizeof(node), &fg);
	}
	return 0;
}
