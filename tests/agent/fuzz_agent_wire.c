/*
 * libFuzzer harness for what the node agent parses from outside: contract B
 * messages (hm_aw_decode; a message that decodes must encode and decode again
 * to the same records), slurmd's command line (agent_slurmd_args), and a job's
 * report files (two reads of one task's file, NUL-separated: whatever window
 * they give, the agent either drops it or sends a beat the coordinator's
 * decoder accepts with its meas), and the destination binding every frame
 * starts with (hm_proto_unbind: a matching one leaves a JSON object, before
 * contract B's decoder). The first byte picks the parser. Built and run
 * by tests/agent/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_jobs.h"
#include "hm_agent_wire.h"
#include "hm_proto.h"
#include "pace_report_read.h"


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

#define FUZZ_TAG "agent>coordinator 10.0.0.1:6830 10.0.0.7:41234"

/* The binding as the coordinator checks it, then the decoder on what is left. */
static void unbind_then_decode(const char *data, size_t size)
{
	char *text = malloc(size + 1);
	hm_aw_msg_t m;
	hm_err_t err = {0};
	bool bound = false;
	size_t before;
	hm_rc_t rc;

	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	before = strlen(text);
	rc = hm_proto_unbind(text, FUZZ_TAG, &bound, &err);
	if (rc == HM_OK && bound) {
		/* Exactly {"bind":"TAG" and its comma went; the object's brace stays. */
		if (text[0] != '{' || strlen(text) + strlen(FUZZ_TAG) + 9 > before ||
		    strlen(text) + strlen(FUZZ_TAG) + 10 < before)
			abort();
		if (hm_aw_decode(text, strlen(text), &m, &err) == HM_OK)
			roundtrip(&m);
		hm_aw_msg_free(&m);
	} else if (memcmp(text, data, before) != 0) {
		abort(); /* not bound, or refused: the text is left alone */
	}
	free(text);
}

/* Two report texts: the window between them (or from the second alone). */
static void report_window(const char *data, size_t size)
{
	const char *cut = memchr(data, '\0', size);
	size_t n0 = cut ? (size_t)(cut - data) : 0;
	pace_report_t prev, cur;
	pace_window_t w;
	hm_aw_meas_t meas;
	hm_aw_msg_t m, back;
	hm_err_t err = {0};
	char *json = NULL;
	bool have_prev;

	if (!cut)
		return;
	have_prev = pace_report_parse(data, n0, "report", &prev, &err) == HM_OK;
	if (pace_report_parse(cut + 1, size - n0 - 1, "report", &cur, &err) != HM_OK ||
	    pace_report_window(have_prev ? &prev : NULL, &cur, &w, &err) != HM_OK || !w.samples)
		return;
	memset(&m, 0, sizeof(m));
	m.op = HM_AW_BEAT;
	m.seq = 1;
	if (hm_aw_alloc_nodes(&m, 1, &err) != HM_OK)
		abort();
	m.nnodes = 1;
	strcpy(m.nodes[0].node, "n1");
	m.nodes[0].njobs = 1;
	m.nodes[0].jobs[0].job_id = 42;
	m.nodes[0].jobs[0].applied_epoch = -1;
	m.nodes[0].jobs[0].has_meas = agent_meas_of_window(&w, &meas, &err);
	m.nodes[0].jobs[0].meas = meas;
	if (hm_aw_encode(&m, &json, &err) != HM_OK ||
	    hm_aw_decode(json, strlen(json), &back, &err) != HM_OK)
		abort(); /* the agent sent a beat the coordinator refuses */
	if (back.nodes[0].jobs[0].has_meas != m.nodes[0].jobs[0].has_meas)
		abort(); /* the agent's check and the decoder disagree */
	hm_aw_msg_free(&back);
	hm_aw_msg_free(&m);
	free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 4 == 3) {
		unbind_then_decode((const char *)data + 1, size - 1);
	} else if (data[0] % 4 == 2) {
		report_window((const char *)data + 1, size - 1);
	} else if (data[0] % 4 == 0) {
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
