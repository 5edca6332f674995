/*
 * The coordinator's worker queues (hm_server_admit.c): the agents' sessions in
 * one, hellos and one-shot requests in the other. With 1,024 agents beating
 * every second, one FIFO put a legitimate `status` behind a second of beats
 * and a flood's refusals starved the beats (tests/load/coord_load: status p50
 * 1.6 s, one register timed out, 159 beats answered in 20 s); each side now
 * gets at least every SRV_AGENT_SHARE-th task when both wait.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_server_io.h"

#define N 8

static hm_server_t srv; /* large (the connection table): not on the stack */
static hm_srv_task_t tasks[2 * N];

static void reset(void)
{
	memset(&srv, 0, sizeof(srv));
	memset(tasks, 0, sizeof(tasks));
	for (int i = 0; i < 2 * N; i++)
		tasks[i].conn_id = (uint64_t)i; /* < N: one-shot, >= N: an agent's */
}

static bool is_agent(const hm_srv_task_t *t)
{
	return t->conn_id >= N;
}

/* Both queues full: one-shot first, then every SRV_AGENT_SHARE-th is an
   agent's, each queue in its own order. */
static void test_share_when_both_wait(void **state)
{
	uint64_t next[2] = {0, N};
	int agents = 0;

	(void)state;
	reset();
	for (int i = 0; i < N; i++) {
		hm_srv_task_put(&srv, &tasks[N + i], true);
		hm_srv_task_put(&srv, &tasks[i], false);
	}
	for (int k = 1; k <= N; k++) {
		hm_srv_task_t *t = hm_srv_task_take(&srv);

		assert_non_null(t);
		assert_int_equal(is_agent(t), k % SRV_AGENT_SHARE == 0);
		assert_int_equal(t->conn_id, next[is_agent(t)]++);
		assert_null(t->next);
		agents += is_agent(t);
	}
	assert_int_equal(agents, N / SRV_AGENT_SHARE);
}

/* Either queue alone is taken whole, in order; then NULL. */
static void test_one_queue_alone(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++) {
		reset();
		for (int i = 0; i < N; i++)
			hm_srv_task_put(&srv, &tasks[side * N + i], side == 1);
		for (int i = 0; i < N; i++) {
			hm_srv_task_t *t = hm_srv_task_take(&srv);

			assert_non_null(t);
			assert_int_equal(t->conn_id, (uint64_t)(side * N + i));
		}
		assert_null(hm_srv_task_take(&srv));
		assert_null(srv.todo_tail);
		assert_null(srv.todo_agent_tail);
	}
}

/* A one-shot request queued behind many beats is taken within
   SRV_AGENT_SHARE tasks, not after them all. */
static void test_request_not_behind_beats(void **state)
{
	int k = 0;

	(void)state;
	reset();
	for (int i = 0; i < N; i++)
		hm_srv_task_put(&srv, &tasks[N + i], true);
	assert_int_equal(hm_srv_task_take(&srv)->conn_id, N); /* a worker was busy with a beat */
	hm_srv_task_put(&srv, &tasks[0], false);
	for (hm_srv_task_t *t; (t = hm_srv_task_take(&srv)) && is_agent(t);)
		k++;
	assert_true(k < SRV_AGENT_SHARE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_share_when_both_wait),
	    cmocka_unit_test(test_one_queue_alone),
	    cmocka_unit_test(test_request_not_behind_beats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
