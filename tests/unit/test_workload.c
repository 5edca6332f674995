/* Unit tests for workloads: the trace CSV loader and the seeded generator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_job.h"
#include "job_topo_fixture.h"

static hm_rc_t load_file(const char *name, hm_workload_t *w, hm_err_t *err)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	FILE *f;
	hm_rc_t rc;

	snprintf(path, sizeof(path), "%s/tests/fixtures/traces/%s", top ? top : "..", name);
	f = fopen(path, "r");
	assert_non_null(f);
	rc = hm_workload_load_csv(f, name, w, err);
	fclose(f);
	return rc;
}

/* Load len bytes of text (NULs included) as trace "t.csv". */
static hm_rc_t load_mem(const char *text, size_t len, hm_workload_t *w, hm_err_t *err)
{
	FILE *f = fmemopen((void *)text, len, "r");
	hm_rc_t rc;

	assert_non_null(f);
	rc = hm_workload_load_csv(f, "t.csv", w, err);
	fclose(f);
	return rc;
}

static hm_rc_t load_str(const char *text, hm_workload_t *w, hm_err_t *err)
{
	/* fmemopen refuses a zero size: an empty file is a real empty file. */
	if (!*text) {
		FILE *f = tmpfile();
		hm_rc_t rc;

		assert_non_null(f);
		rc = hm_workload_load_csv(f, "t.csv", w, err);
		fclose(f);
		return rc;
	}
	return load_mem(text, strlen(text), w, err);
}

static void test_csv_good(void **state)
{
	hm_workload_t w;
	hm_err_t err = {0};
	const hm_job_t *j;

	(void)state;
	assert_int_equal(load_file("good.csv", &w, &err), HM_OK);
	assert_int_equal(w.njobs, 5);
	/* Sorted by arrival, stable: custom before pinned (both 30 s, file order). */
	assert_string_equal(w.jobs[0].name, "small");
	assert_string_equal(w.jobs[1].name, "custom");
	assert_string_equal(w.jobs[2].name, "pinned");
	assert_string_equal(w.jobs[3].name, "bert");
	assert_string_equal(w.jobs[4].name, "late");
	for (int i = 0; i < 5; i++)
		assert_int_equal(w.jobs[i].id, i);

	j = &w.jobs[0];
	assert_true(j->arrival_s == 0);
	assert_int_equal(j->gpus, 1);
	assert_string_equal(j->profile.model, "resnet50");
	assert_true(j->iterations == 0);
	assert_float_equal(j->duration_s, 3600, 1e-9);
	assert_null(j->nodes);

	j = &w.jobs[1];
	assert_float_equal(j->arrival_s, 30, 1e-9);
	assert_int_equal(j->gpus, 16);
	assert_string_equal(j->profile.model, "custom");
	assert_float_equal(j->profile.compute_s, 0.25, 1e-12);
	assert_int_equal(j->profile.nphases, 1);
	assert_int_equal(j->profile.phases[0].coll, HM_COLL_ALLREDUCE_RING);
	assert_float_equal(j->profile.phases[0].bytes, 1.2e9, 1);
	assert_float_equal(j->profile.phases[0].overlap, 0.4, 1e-12);
	assert_float_equal(j->iterations, 1000, 0);

	j = &w.jobs[2];
	assert_string_equal(j->nodes, "n[0001-0002]");
	assert_string_equal(j->profile.model, "vgg16");

	j = &w.jobs[3];
	assert_float_equal(j->arrival_s, 120, 1e-9);
	assert_float_equal(j->profile.phases[0].bytes, 340e6 * 4, 1);
	assert_float_equal(j->profile.phases[0].overlap, 0, 0);

	j = &w.jobs[4];
	assert_float_equal(j->arrival_s, 1000, 1e-9);
	assert_float_equal(j->profile.compute_s, 0.1, 1e-12);
	assert_float_equal(j->profile.phases[0].bytes, 5e8, 1);
	hm_workload_free(&w);
	hm_workload_free(&w);
}

static void test_csv_minimal_and_quotes(void **state)
{
	static const char text[] = "arrival_s , GPUS,model,iterations,nodes\r\n"
				   "0,3,gpt2-xl,1e3,\"n[1-2],n9\"\r\n"
				   "1,2,bert-base,7,n[3-4]\r\n";
	hm_workload_t w;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(load_str(text, &w, &err), HM_OK);
	assert_int_equal(w.njobs, 2);
	assert_string_equal(w.jobs[0].name, "job0"); /* default name: the row */
	assert_string_equal(w.jobs[0].nodes, "n[1-2],n9");
	assert_string_equal(w.jobs[1].nodes, "n[3-4]"); /* brackets keep the comma-free form */
	assert_float_equal(w.jobs[0].iterations, 1000, 0);
	hm_workload_free(&w);
}

/* Bad input: (text, expected substrings of the message). */
static void expect_bad(const char *text, const char *s1, const char *s2)
{
	hm_workload_t w;
	hm_err_t err = {0};

	assert_int_not_equal(load_str(text, &w, &err), HM_OK);
	assert_int_equal(w.njobs, 0);
	assert_null(w.jobs);
	if (!strstr(err.msg, s1) || (s2 && !strstr(err.msg, s2)))
		fail_msg("message '%s' lacks '%s' / '%s'", err.msg, s1, s2 ? s2 : "");
}

static void test_csv_bad(void **state)
{
	(void)state;
	expect_bad("", "empty file", "arrival_s");
	expect_bad("# only a comment\n\n", "empty file", NULL);
	expect_bad("arrival_s,gpus,model,iterations\n", "no job rows", NULL);
	/* Truncated row and truncated quote. */
	expect_bad("arrival_s,gpus,model,iterations\n0,1,resnet50", "t.csv:2", "header has 4");
	expect_bad("arrival_s,gpus,model,iterations,nodes\n0,1,resnet50,5,\"n[1-2]", "t.csv:2",
		   "unterminated quote");
	/* Unknown model: the accepted list. */
	expect_bad("arrival_s,gpus,model,iterations\n0,1,resnet50,5\n0,1,alexnet,5\n", "t.csv:3",
		   "accepted: resnet50, vgg16");
	/* Negative and non-numeric GPUs name the column, the value and the range. */
	expect_bad("arrival_s,gpus,model,iterations\n0,-4,resnet50,5\n", "t.csv:2: gpus: -4",
		   "accepted [1,");
	expect_bad("arrival_s,gpus,model,iterations\n0,four,resnet50,5\n", "'four'", NULL);
	/* Units. */
	expect_bad("arrival_s,gpus,compute_s,comm_bytes,iterations\n0,1,1s,1.2XB,5\n", "comm_bytes",
		   "'1.2XB'");
	expect_bad("arrival_s,gpus,compute_s,comm_bytes,iterations\n0,1,1 parsec,1GB,5\n",
		   "compute_s", "accepted");
	expect_bad("arrival_s,gpus,model,iterations\n-5,1,resnet50,5\n", "arrival_s", NULL);
	/* Missing and unknown columns. */
	expect_bad("arrival_s,model,iterations\n0,resnet50,5\n", "missing column 'gpus'", NULL);
	expect_bad("arrival_s,gpus,compute_s,iterations\n0,1,1s,5\n", "missing column 'comm_bytes'",
		   NULL);
	expect_bad("arrival_s,gpus,iterations\n0,1,5\n", "missing column 'model'", NULL);
	expect_bad("arrival_s,gpus,model\n0,1,resnet50\n", "missing column 'iterations'", NULL);
	expect_bad("arrival_s,gpus,model,iterations,colour\n0,1,resnet50,5,red\n",
		   "unknown column 'colour'", "known columns: arrival_s");
	expect_bad("arrival_s,gpus,gpus,model,iterations\n0,1,1,resnet50,5\n", "twice", NULL);
	/* Either/or columns. */
	expect_bad("arrival_s,gpus,model,iterations,duration_s\n0,1,resnet50,5,1h\n",
		   "exactly one of iterations and duration_s", "both");
	expect_bad("arrival_s,gpus,model,iterations,duration_s\n0,1,resnet50,,\n", "neither", NULL);
	expect_bad("arrival_s,gpus,model,compute_s,comm_bytes,iterations\n0,1,resnet50,1s,1GB,5\n",
		   "both model", NULL);
	expect_bad("arrival_s,gpus,model,compute_s,comm_bytes,iterations\n0,1,,1s,,5\n",
		   "'comm_bytes' is empty", NULL);
	expect_bad("arrival_s,gpus,model,iterations\n0,1,,5\n", "t.csv:2: model: empty",
		   "accepted: resnet50");
	expect_bad("arrival_s,gpus,model,iterations,overlap\n0,1,resnet50,5,120%\n", "overlap",
		   NULL);
	expect_bad("arrival_s,gpus,model,iterations\n0,1,resnet50,0\n", "iterations", NULL);
	/* Names and nodes. */
	expect_bad("arrival_s,gpus,model,iterations,name\n0,1,resnet50,5,"
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		   "column 'name'", "up to 63");
	expect_bad("arrival_s,gpus,model,iterations,nodes\n0,1,resnet50,5,n[1-2]\n", "2 hosts",
		   "1 GPUs");
	expect_bad("arrival_s,gpus,model,iterations,nodes\n0,4,resnet50,5,n[2-1]\n", "t.csv:2",
		   NULL);
	expect_bad("arrival_s,gpus,model,iterations\n0,1,resnet50,5,6\n", "5 fields", NULL);
	/* Garbage bytes are refused and shown escaped. */
	expect_bad("arrival_s,gpus,model,iterations\n0,\x01\xff,resnet50,5\n", "byte 0x01",
		   "'\\x01\\xff'");
	expect_bad("arrival_s,gpus,model,iterations\n0,1,resn\xc3\xa9t,5\n", "byte 0xc3", NULL);
}

static void test_csv_binary_and_huge(void **state)
{
	static const char nul[] = "arrival_s,gpus,model,iterations\n0,1\0,resnet50,5\n";
	size_t big = 100000;
	char *huge = malloc(big + 64);
	hm_workload_t w;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(load_mem(nul, sizeof(nul) - 1, &w, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "t.csv:2: NUL byte"));
	assert_non_null(huge);
	strcpy(huge, "arrival_s,gpus,model,iterations\n0,1,resnet50,");
	memset(huge + strlen(huge), '9', big);
	huge[big + 40] = '\0';
	assert_int_equal(load_str(huge, &w, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "t.csv:2: line longer than"));
	/* Random bytes never crash the loader (fixed seed, many shapes). */
	for (unsigned s = 1; s < 300; s++) {
		size_t n = 1 + s % 200;
		uint64_t x = s * 0x9e3779b97f4a7c15ULL;

		strcpy(huge, "arrival_s,gpus,model,iterations,nodes,name\n");
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			huge[43 + i] = "0123456789,,\"[]-n\n.x\x01\xfe"[x % 23];
		}
		(void)load_mem(huge, 43 + n, &w, &err);
		hm_workload_free(&w);
	}
	free(huge);
}

static void test_csv_fixtures_bad(void **state)
{
	hm_workload_t w;
	hm_err_t err = {0};

	(void)state;
	assert_int_equal(load_file("unknown_model.csv", &w, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "unknown_model.csv:3"));
	assert_non_null(strstr(err.msg, "'alexnet'"));
	assert_non_null(strstr(err.msg, "gpt2-xl"));
	assert_int_equal(load_file("missing_gpus.csv", &w, &err), HM_ERR_PARSE);
	assert_non_null(strstr(err.msg, "missing_gpus.csv:1: missing column 'gpus'"));
	assert_int_equal(load_file("example.csv", &w, &err), HM_OK);
	assert_int_equal(w.njobs, 12);
	hm_workload_free(&w);
}

static void test_gen_deterministic(void **state)
{
	hm_topo_t *t = fixture_topo("racks=4,hosts=8,gpus=8");
	const char *spec = "jobs=200,arrival=poisson:30s,gpus=mix,models=all,iters=100-2000";
	hm_workload_t a, b, c;
	hm_err_t err = {0};
	int differ = 0;

	(void)state;
	assert_int_equal(hm_workload_generate(spec, t, 7, &a, &err), HM_OK);
	assert_int_equal(hm_workload_generate(spec, t, 7, &b, &err), HM_OK);
	assert_int_equal(hm_workload_generate(spec, t, 8, &c, &err), HM_OK);
	assert_int_equal(a.njobs, 200);
	assert_memory_equal(a.jobs, b.jobs, sizeof(*a.jobs) * 200);
	for (int i = 0; i < 200; i++) {
		differ += a.jobs[i].arrival_s != c.jobs[i].arrival_s ||
			  strcmp(a.jobs[i].profile.model, c.jobs[i].profile.model) != 0;
		assert_true(a.jobs[i].iterations >= 100 && a.jobs[i].iterations <= 2000);
		assert_int_equal(a.jobs[i].id, i);
		if (i)
			assert_true(a.jobs[i].arrival_s >= a.jobs[i - 1].arrival_s);
		assert_non_null(hm_catalogue_find(a.jobs[i].profile.model));
	}
	assert_true(differ > 150);
	hm_workload_free(&a);
	hm_workload_free(&b);
	hm_workload_free(&c);
	hm_topo_free(t);
}

static void test_gen_mix(void **state)
{
	hm_topo_t *t = fixture_topo("racks=2,hosts=4,gpus=8"); /* 64 GPUs */
	hm_workload_t w;
	hm_err_t err = {0};
	int ones = 0, big = 0, n = 20000, seen_model[12] = {0};
	double last = 0;

	(void)state;
	assert_int_equal(
	    hm_workload_generate("jobs=20000,gpus=mix,arrival=poisson:10s", t, 1, &w, &err), HM_OK);
	for (int i = 0; i < n; i++) {
		int g = w.jobs[i].gpus;

		ones += g == 1;
		big += g >= 8;
		assert_true(g >= 1 && g <= 64); /* 128 capped by the cluster */
		for (int m = 0; m < 12; m++)
			seen_model[m] +=
			    strcmp(w.jobs[i].profile.model, hm_catalogue()[m].name) == 0;
		last = w.jobs[i].arrival_s;
	}
	/* Philly: 76,627 / 82,247 = 93.2% one GPU; 8+ GPUs: 1,938 / 82,247 = 2.4%. */
	assert_true(ones > 0.92 * n && ones < 0.945 * n);
	assert_true(big > 0.018 * n && big < 0.030 * n);
	for (int m = 0; m < 12; m++)
		assert_true(seen_model[m] > n / 12 * 0.85);
	/* Poisson arrivals with a 10 s mean gap. */
	assert_true(last / (n - 1) > 9.5 && last / (n - 1) < 10.5);
	hm_workload_free(&w);

	assert_int_equal(hm_workload_generate("jobs=500,gpus=multi", t, 3, &w, &err), HM_OK);
	for (int i = 0; i < w.njobs; i++)
		assert_true(w.jobs[i].gpus >= 2);
	hm_workload_free(&w);

	assert_int_equal(hm_workload_generate("jobs=300,gpus=8/16,models=bert-large/GPT2-M,"
					      "arrival=fixed:1min,duration=2h,overlap=25%,"
					      "compute_scale=0.5",
					      t, 3, &w, &err),
			 HM_OK);
	for (int i = 0; i < w.njobs; i++) {
		assert_true(w.jobs[i].gpus == 8 || w.jobs[i].gpus == 16);
		assert_true(strcmp(w.jobs[i].profile.model, "bert-large") == 0 ||
			    strcmp(w.jobs[i].profile.model, "gpt2-m") == 0);
		assert_float_equal(w.jobs[i].arrival_s, 60.0 * i, 1e-6);
		assert_float_equal(w.jobs[i].duration_s, 7200, 1e-9);
		assert_true(w.jobs[i].iterations == 0);
		assert_float_equal(w.jobs[i].profile.phases[0].overlap, 0.25, 1e-12);
		assert_float_equal(w.jobs[i].profile.compute_s,
				   hm_catalogue_find(w.jobs[i].profile.model)->compute_s / 2,
				   1e-12);
	}
	hm_workload_free(&w);

	assert_int_equal(hm_workload_generate("jobs=5,gpus=500,arrival=burst", t, 3, &w, &err),
			 HM_OK);
	for (int i = 0; i < w.njobs; i++) {
		assert_int_equal(w.jobs[i].gpus, 64);
		assert_true(w.jobs[i].arrival_s == 0);
	}
	hm_workload_free(&w);
	/* Defaults: 40 jobs. */
	assert_int_equal(hm_workload_generate("", t, 3, &w, &err), HM_OK);
	assert_int_equal(w.njobs, 40);
	hm_workload_free(&w);
	hm_topo_free(t);
}

static void gen_bad(const char *spec, const char *s1, const char *s2)
{
	hm_workload_t w;
	hm_err_t err = {0};

	assert_int_not_equal(hm_workload_generate(spec, NULL, 1, &w, &err), HM_OK);
	assert_null(w.jobs);
	if (!strstr(err.msg, s1) || (s2 && !strstr(err.msg, s2)))
		fail_msg("spec '%s': message '%s' lacks '%s' / '%s'", spec, err.msg, s1,
			 s2 ? s2 : "");
}

static void test_gen_bad(void **state)
{
	(void)state;
	gen_bad("jobs=10,color=red", "unknown key 'color'", "accepted keys: jobs, arrival");
	gen_bad("jobs=0", "jobs", NULL);
	gen_bad("jobs=ten", "'ten'", NULL);
	gen_bad("arrival=weibull:3s", "'weibull:3s'", "poisson:<mean gap>");
	gen_bad("arrival=poisson:3 parsecs", "arrival gap", NULL);
	gen_bad("gpus=0", "gpus", NULL);
	gen_bad("gpus=lots", "'lots'", NULL);
	gen_bad("models=resnet50/alexnet", "'alexnet'", "resnet18");
	gen_bad("iters=100,duration=1h", "not both", NULL);
	gen_bad("iters=200-100", "iters", NULL);
	gen_bad("jobs=1,jobs=2", "twice", NULL);
	gen_bad("jobs", "not key=value", NULL);
	gen_bad("overlap=2", "overlap", NULL);
	gen_bad("compute_scale=0", "compute_scale", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csv_good),         cmocka_unit_test(test_csv_minimal_and_quotes),
	    cmocka_unit_test(test_csv_bad),          cmocka_unit_test(test_csv_binary_and_huge),
	    cmocka_unit_test(test_csv_fixtures_bad), cmocka_unit_test(test_gen_deterministic),
	    cmocka_unit_test(test_gen_mix),          cmocka_unit_test(test_gen_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
