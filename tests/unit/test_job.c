/* Unit tests for the model catalogue and catalogue profiles (hm_catalogue.c, hm_job.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hm_job.h"

/* The names string lists exactly the catalogue, in order. */
static void test_names_match_catalogue(void **state)
{
	char buf[1024] = "";
	int n = 0;

	(void)state;
	for (const hm_model_t *m = hm_catalogue(); m->name; m++, n++) {
		if (n)
			strcat(buf, ", ");
		strcat(buf, m->name);
	}
	assert_int_equal(n, 12);
	assert_string_equal(hm_catalogue_names(), buf);
}

static void test_entries_sane(void **state)
{
	(void)state;
	for (const hm_model_t *m = hm_catalogue(); m->name; m++) {
		assert_true(m->params > 1e6);
		assert_true(m->bytes_per_param == 4 || m->bytes_per_param == 2);
		assert_true(m->compute_s > 0.01 && m->compute_s < 60);
		assert_non_null(m->source);
		assert_true(strlen(m->source) > 10);
		/* Names are lowercase (the CSV and the generator accept them as written). */
		for (const char *c = m->name; *c; c++)
			assert_false(*c >= 'A' && *c <= 'Z');
	}
}

static void test_find(void **state)
{
	(void)state;
	assert_non_null(hm_catalogue_find("resnet50"));
	assert_ptr_equal(hm_catalogue_find("GPT2-XL"), hm_catalogue_find("gpt2-xl"));
	assert_null(hm_catalogue_find("resnet"));
	assert_null(hm_catalogue_find(""));
	assert_null(hm_catalogue_find(NULL));
}

/* Numbers from notes/baselines-and-profiles.md, checked against the table. */
static void test_profiles_match_notes(void **state)
{
	static const struct {
		const char *name;
		double grad_bytes; /* table: fp32 gradient */
	} table[] = {
	    {"resnet50", 102e6},  {"vgg16", 553e6},       {"vgg19", 575e6},
	    {"bert-base", 440e6}, {"bert-large", 1.36e9}, {"gpt2-s", 0.50e9},
	    {"gpt2-m", 1.42e9},   {"gpt2-l", 3.10e9},     {"gpt2-xl", 6.0e9},
	};
	hm_profile_t p;
	hm_err_t err = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		assert_int_equal(hm_profile_from_model(table[i].name, &p, &err), HM_OK);
		assert_string_equal(p.model, table[i].name);
		assert_int_equal(p.nphases, 1);
		assert_int_equal(p.phases[0].coll, HM_COLL_ALLREDUCE_RING);
		assert_true(p.phases[0].overlap == 0);
		/* The table rounds to 2-3 digits. */
		assert_float_equal(p.phases[0].bytes, table[i].grad_bytes,
				   table[i].grad_bytes * 0.01);
	}
	/* Pollux step - sync. */
	assert_int_equal(hm_profile_from_model("resnet50", &p, &err), HM_OK);
	assert_float_equal(p.compute_s, 0.671 - 0.232, 1e-9);
	assert_int_equal(hm_profile_from_model("bert-base", &p, &err), HM_OK);
	assert_float_equal(p.compute_s, 1.882 - 1.199, 1e-9);
	assert_int_equal(hm_profile_from_model("YOLOv3", &p, &err), HM_OK);
	assert_float_equal(p.compute_s, 1.656 - 1.121, 1e-9);
	/* Scaled entries keep their anchor's ratio. */
	assert_int_equal(hm_profile_from_model("bert-large", &p, &err), HM_OK);
	assert_float_equal(p.compute_s, (1.882 - 1.199) * 340 / 110, 1e-9);
	assert_int_equal(hm_profile_from_model("vgg16", &p, &err), HM_OK);
	assert_float_equal(p.compute_s, (0.671 - 0.232) * 15.5 / 4.1, 1e-9);
}

static void test_unknown_model(void **state)
{
	hm_profile_t p;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(hm_profile_from_model("alexnet", &p, &err), HM_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "'alexnet'"));
	assert_non_null(strstr(err.msg, "accepted"));
	assert_non_null(strstr(err.msg, "gpt2-xl"));
	/* Garbage bytes are escaped, not copied into the message. */
	assert_int_equal(hm_profile_from_model("x\001\377", &p, &err), HM_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "x\\x01\\xff"));
	assert_int_equal(hm_profile_from_model(NULL, &p, &err), HM_ERR_NOTFOUND);
	assert_int_equal(hm_profile_from_model("resnet50", NULL, &err), HM_ERR_INVAL);
}

static void test_free_null(void **state)
{
	hm_placement_t pl = {0};
	hm_workload_t w = {0};

	(void)state;
	hm_placement_free(NULL);
	hm_placement_free(&pl);
	hm_workload_free(NULL);
	hm_workload_free(&w);
	hm_traffic_free(NULL);
	hm_cluster_state_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_match_catalogue),
	    cmocka_unit_test(test_entries_sane),
	    cmocka_unit_test(test_find),
	    cmocka_unit_test(test_profiles_match_notes),
	    cmocka_unit_test(test_unknown_model),
	    cmocka_unit_test(test_free_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
