/*
 * Unit tests for the job table's index (hm_coord_index.c): random puts, moves
 * and deletions against a plain array, and the engine's own use of it through
 * upsert and remove (the last job moving into a removed one's slot).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "coord_fixture.h"
#include "hm_coord_int.h"

#define NKEYS 3000

/* Ids that collide on purpose (multiples of the table's sizes), 0 and the largest. */
static uint32_t key_of(int i)
{
	if (i == 0)
		return 0;
	if (i == 1)
		return UINT32_MAX;
	return (uint32_t)(i % 3 ? i * 7919 : i * 4096);
}

static void test_random_ops(void **state)
{
	hm_coord_index_t x = {0};
	int *ref = malloc(sizeof(int) * NKEYS); /* slot of key_of(i), -1 absent */
	unsigned seed = 7;

	(void)state;
	assert_non_null(ref);
	for (int i = 0; i < NKEYS; i++)
		ref[i] = -1;
	assert_int_equal(hm_coord_index_get(&x, 5), -1); /* empty, never allocated */
	hm_coord_index_del(&x, 5);
	for (int op = 0; op < 60000; op++) {
		int i = (int)(rand_r(&seed) % NKEYS), what = (int)(rand_r(&seed) % 3);

		if (what < 2) { /* a put: an insert, or a move of a present key */
			ref[i] = op;
			assert_int_equal(hm_coord_index_put(&x, key_of(i), op), 0);
		} else {
			ref[i] = -1;
			hm_coord_index_del(&x, key_of(i));
		}
		if (op % 997 == 0 || op == 59999) {
			size_t n = 0;

			for (int k = 0; k < NKEYS; k++) {
				assert_int_equal(hm_coord_index_get(&x, key_of(k)), ref[k]);
				n += ref[k] >= 0;
			}
			assert_int_equal(x.n, n);
			assert_true(x.n * 2 <= x.cap); /* at most half full */
		}
	}
	hm_coord_index_clear(&x);
	assert_int_equal(hm_coord_index_get(&x, key_of(2)), -1);
	free(ref);
}

/* The engine: 600 jobs in, every third out in a scattered order, each found or not. */
static void test_engine_find(void **state)
{
	hm_conf_t conf;
	hm_coord_t *c = NULL;
	hm_err_t err = {0};
	char nodes[16];

	(void)state;
	fixture_conf(&conf);
	assert_int_equal(hm_coord_create(&conf, fixture_topo(), &c, &err), HM_OK);
	for (uint32_t id = 1; id <= 600; id++) {
		hm_coord_job_info_t in = {.job_id = id * 11, .uid = 1000, .nodes = nodes,
					  .gpus_per_node = 1, .mode = "auto",
					  .profile = "resnet50", .start_s = 1.8e9};

		snprintf(nodes, sizeof(nodes), "n%u", 1 + id % 8);
		assert_int_equal(hm_coord_job_upsert(c, &in, &err), HM_OK);
	}
	for (uint32_t k = 0; k < 600; k += 3) {
		uint32_t id = 1 + (k * 7) % 600; /* 7 is prime to 600: each id once */

		assert_int_equal(hm_coord_job_remove(c, id * 11), HM_OK);
		assert_int_equal(hm_coord_job_remove(c, id * 11), HM_ERR_NOTFOUND);
	}
	assert_int_equal(c->njobs, 400);
	for (uint32_t id = 1; id <= 600; id++) {
		bool removed = false;

		for (uint32_t k = 0; k < 600; k += 3)
			removed |= 1 + (k * 7) % 600 == id;
		hm_cjob_t *j = hm_coord_find(c, id * 11);

		if (removed) {
			assert_null(j);
		} else {
			assert_non_null(j);
			assert_int_equal(j->job_id, id * 11);
		}
	}
	assert_null(hm_coord_find(c, 5)); /* never there */
	hm_coord_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_ops),
	    cmocka_unit_test(test_engine_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
