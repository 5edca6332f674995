/*
 * Unit tests for hm_topo_write_slurm: a host CSV written as topology.conf loads
 * back as the same topology (hosts, racks, switches, parents); topology.conf
 * written again is the same text; a name topology.conf cannot carry is named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hm_topo.h"

static char *fixture(const char *name)
{
	static char path[4096];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/tests/fixtures/topo/%s", top ? top : "..", name);
	return path;
}

/* t as topology.conf text (malloc'd). */
static char *write_text(const hm_topo_t *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	hm_err_t err = {0};

	assert_non_null(f);
	if (hm_topo_write_slurm(t, f, &err) != HM_OK)
		fail_msg("write: %s", err.msg);
	fclose(f);
	return buf;
}

static hm_topo_t *load_text(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	hm_topo_t *t = NULL;
	hm_err_t err = {0};

	assert_non_null(f);
	if (hm_topo_load_slurm(f, "written", NULL, &t, &err) != HM_OK)
		fail_msg("written text does not load: %s\n%s", err.msg, text);
	fclose(f);
	return t;
}

static int sw_index(const hm_topo_t *t, const char *name)
{
	for (int s = 0; s < t->nswitches; s++)
		if (strcmp(t->switches[s].name, name) == 0)
			return s;
	return -1;
}

/* Same hosts in the same racks, same switches with the same parents (by name). */
static void assert_same(const hm_topo_t *a, const hm_topo_t *b)
{
	assert_int_equal(a->nhosts, b->nhosts);
	assert_int_equal(a->nswitches, b->nswitches);
	assert_int_equal(a->nracks, b->nracks);
	assert_int_equal(a->nlevels, b->nlevels);
	for (int h = 0; h < a->nhosts; h++) {
		int hb = hm_topo_host_index(b, a->hosts[h].name);

		assert_true(hb >= 0);
		assert_string_equal(a->switches[a->hosts[h].rack].name,
				    b->switches[b->hosts[hb].rack].name);
	}
	for (int s = 0; s < a->nswitches; s++) {
		int sb = sw_index(b, a->switches[s].name);

		assert_true(sb >= 0);
		assert_int_equal(a->switches[s].level, b->switches[sb].level);
		assert_int_equal(a->switches[s].nparents, b->switches[sb].nparents);
		for (int p = 0; p < a->switches[s].nparents; p++) {
			const char *pa = a->switches[a->switches[s].parents[p]].name;
			bool found = false;

			for (int q = 0; q < b->switches[sb].nparents; q++)
				found =
				    found ||
				    strcmp(b->switches[b->switches[sb].parents[q]].name, pa) == 0;
			assert_true(found);
		}
	}
}

static void round_trip(const char *name, const char *want_text)
{
	hm_topo_t *t = NULL, *t2;
	hm_err_t err = {0};
	char *text, *text2;

	if (hm_topo_load_file(fixture(name), NULL, &t, &err) != HM_OK)
		fail_msg("%s: %s", name, err.msg);
	text = write_text(t);
	if (want_text && strcmp(text, want_text) != 0)
		fail_msg("%s written as:\n%s\nexpected:\n%s", name, text, want_text);
	t2 = load_text(text);
	assert_same(t, t2);
	text2 = write_text(t2);
	assert_string_equal(text, text2); /* a fixed point */
	free(text);
	free(text2);
	hm_topo_free(t);
	hm_topo_free(t2);
}

static void test_csv_round_trip(void **state)
{
	(void)state;
	/* tor2 under two aggs: listed in both (ECMP kept). */
	round_trip("hosts.csv", "SwitchName=tor1 Nodes=h[01-02]\n"
				"SwitchName=tor2 Nodes=h[03-04]\n"
				"SwitchName=tor3 Nodes=h[05-06]\n"
				"SwitchName=agg1 Switches=tor[1-2]\n"
				"SwitchName=agg2 Switches=tor2\n"
				"SwitchName=agg3 Switches=tor3\n"
				"SwitchName=core1 Switches=agg[1-3]\n");
	round_trip("hosts_2level.csv", NULL);
}

static void test_conf_round_trip(void **state)
{
	(void)state;
	round_trip("tree.conf", "SwitchName=s1 Nodes=n[01-04]\n"
				"SwitchName=s2 Nodes=n[05-08]\n"
				"SwitchName=s3 Nodes=n[09-12]\n"
				"SwitchName=s4 Nodes=n[13-16]\n"
				"SwitchName=m1 Switches=s[1-2]\n"
				"SwitchName=m2 Switches=s[3-4]\n"
				"SwitchName=top Switches=m[1-2]\n");
	round_trip("flat.conf", NULL);
}

static void test_generated_round_trip(void **state)
{
	hm_topo_gen_t gen;
	hm_topo_t *t = NULL, *t2;
	hm_err_t err = {0};
	char *text;

	(void)state;
	assert_int_equal(hm_topo_gen_parse("racks=32,hosts=16,pods=2,aggs=2,cores=2", &gen, &err),
			 HM_OK);
	assert_int_equal(hm_topo_generate(&gen, &t, &err), HM_OK);
	text = write_text(t);
	t2 = load_text(text);
	assert_same(t, t2);
	free(text);
	hm_topo_free(t);
	hm_topo_free(t2);
}

/* A CSV may hold names topology.conf cannot: the writer names the first. */
static void test_bad_names(void **state)
{
	const char *csv = "host,tor\nh1,tor1\nh=2,tor1\n";
	FILE *f = fmemopen((void *)csv, strlen(csv), "r"), *out;
	hm_topo_t *t = NULL;
	hm_err_t err = {0};
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(hm_topo_load_csv(f, "eq.csv", NULL, &t, &err), HM_OK);
	fclose(f);
	out = open_memstream(&buf, &len);
	assert_int_equal(hm_topo_write_slurm(t, out, &err), HM_ERR_INVAL);
	fclose(out);
	assert_non_null(strstr(err.msg, "host 'h=2'"));
	assert_non_null(strstr(err.msg, "accepted"));
	assert_int_equal(len, 0); /* nothing written */
	free(buf);
	hm_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csv_round_trip),
	    cmocka_unit_test(test_conf_round_trip),
	    cmocka_unit_test(test_generated_round_trip),
	    cmocka_unit_test(test_bad_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
