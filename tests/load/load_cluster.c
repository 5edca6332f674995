/* The cluster tests/load/coord_load drives (load_cluster.h). */
#define _GNU_SOURCE
#include "load_cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_hostlist.h"

static int add_job(lc_t *c, uint32_t id, uint32_t uid, const int *hosts, int nhosts)
{
	lc_job_t *j = &c->jobs[c->njobs];

	if (!(j->hosts = malloc(sizeof(int) * (size_t)nhosts)))
		return -1;
	memcpy(j->hosts, hosts, sizeof(int) * (size_t)nhosts);
	j->nhosts = nhosts;
	j->id = id;
	j->uid = uid;
	c->njobs++;
	return 0;
}

/* Each host's jobs, once every job is in. */
static int index_hosts(lc_t *c)
{
	if (!(c->on = calloc((size_t)c->nhosts, sizeof(*c->on))) ||
	    !(c->non = calloc((size_t)c->nhosts, sizeof(int))))
		return -1;
	for (int j = 0; j < c->njobs; j++)
		for (int k = 0; k < c->jobs[j].nhosts; k++)
			c->non[c->jobs[j].hosts[k]]++;
	for (int h = 0; h < c->nhosts; h++) {
		if (!(c->on[h] = malloc(sizeof(int) * (size_t)(c->non[h] ? c->non[h] : 1))))
			return -1;
		c->non[h] = 0;
	}
	for (int j = 0; j < c->njobs; j++)
		for (int k = 0; k < c->jobs[j].nhosts; k++) {
			int h = c->jobs[j].hosts[k];

			c->on[h][c->non[h]++] = j;
		}
	return 0;
}

int lc_synthetic(lc_t *c, const hm_topo_t *topo, int njobs, uint32_t legit_uid, int legit_jobs)
{
	static const int sizes[] = {1, 2, 4, 8};

	memset(c, 0, sizeof(*c));
	c->nhosts = topo->nhosts;
	if (!(c->hosts = calloc((size_t)c->nhosts, sizeof(char *))) ||
	    !(c->jobs = calloc((size_t)njobs, sizeof(lc_job_t))))
		return -1;
	for (int h = 0; h < c->nhosts; h++)
		if (!(c->hosts[h] = strdup(topo->hosts[h].name)))
			return -1;
	for (int j = 0; j < njobs; j++) {
		int hosts[8], k = sizes[j % 4], first = (int)(((long)j * 7) % c->nhosts);

		for (int i = 0; i < k; i++)
			hosts[i] = (first + i) % c->nhosts;
		if (add_job(c, (uint32_t)j + 1, j < legit_jobs ? legit_uid : 2000 + (uint32_t)(j % 50),
			    hosts, k < c->nhosts ? k : c->nhosts) != 0)
			return -1;
	}
	return index_hosts(c);
}

typedef struct {
	const char *name;
	int index;
} named_t;

static int cmp_named(const void *a, const void *b)
{
	return strcmp(((const named_t *)a)->name, ((const named_t *)b)->name);
}

int lc_from_file(lc_t *c, const char *nodes_expr, const char *path, char *err, size_t len)
{
	hm_err_t e = {0};
	named_t *by_name = NULL;
	char *line = NULL, **names = NULL;
	size_t cap = 0;
	int lineno = 0, nnames = 0, jcap = 0, *hosts = NULL, ret = -1;
	FILE *f = NULL;

	memset(c, 0, sizeof(*c));
	if (hm_hostlist_expand(nodes_expr, &c->hosts, &c->nhosts, &e) != HM_OK) {
		snprintf(err, len, "--nodes '%s': %s", nodes_expr, e.msg);
		goto out;
	}
	if (!(by_name = calloc((size_t)c->nhosts, sizeof(*by_name))) ||
	    !(hosts = malloc(sizeof(int) * (size_t)c->nhosts))) {
		snprintf(err, len, "out of memory");
		goto out;
	}
	for (int h = 0; h < c->nhosts; h++)
		by_name[h] = (named_t){c->hosts[h], h};
	qsort(by_name, (size_t)c->nhosts, sizeof(*by_name), cmp_named);
	if (!(f = fopen(path, "r"))) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned long id, uid;
		char expr[4096];
		int n = 0;

		lineno++;
		if (sscanf(line, "%lu %lu %4095s", &id, &uid, expr) != 3 || id == 0 ||
		    id > UINT32_MAX || uid > UINT32_MAX) {
			snprintf(err, len, "%s:%d: not \"JOBID UID NODELIST\"", path, lineno);
			goto out;
		}
		hm_hostlist_free(names, nnames);
		names = NULL;
		if (hm_hostlist_expand(expr, &names, &nnames, &e) != HM_OK) {
			snprintf(err, len, "%s:%d: %s", path, lineno, e.msg);
			goto out;
		}
		for (int i = 0; i < nnames && n < c->nhosts; i++) {
			named_t key = {names[i], 0}, *hit;

			if (!(hit = bsearch(&key, by_name, (size_t)c->nhosts, sizeof(key), cmp_named))) {
				snprintf(err, len, "%s:%d: node %s is not in --nodes", path, lineno,
					 names[i]);
				goto out;
			}
			hosts[n++] = hit->index;
		}
		if (c->njobs == jcap) {
			lc_job_t *nj = realloc(c->jobs, sizeof(*nj) * (size_t)(jcap ? jcap * 2 : 1024));

			if (!nj) {
				snprintf(err, len, "out of memory");
				goto out;
			}
			c->jobs = nj;
			jcap = jcap ? jcap * 2 : 1024;
		}
		if (add_job(c, (uint32_t)id, (uint32_t)uid, hosts, n) != 0) {
			snprintf(err, len, "out of memory");
			goto out;
		}
	}
	if (index_hosts(c) != 0) {
		snprintf(err, len, "out of memory");
		goto out;
	}
	ret = 0;
out:
	if (f)
		fclose(f);
	hm_hostlist_free(names, nnames);
	free(line);
	free(hosts);
	free(by_name);
	return ret;
}

void lc_job_nodes(const lc_t *c, int j, char *out, size_t len)
{
	size_t p = 0;

	out[0] = '\0';
	for (int k = 0; k < c->jobs[j].nhosts && p < len; k++)
		p += (size_t)snprintf(out + p, len - p, "%s%s", k ? "," : "",
				      c->hosts[c->jobs[j].hosts[k]]);
}

void lc_free(lc_t *c)
{
	for (int j = 0; c->jobs && j < c->njobs; j++)
		free(c->jobs[j].hosts);
	for (int h = 0; c->on && h < c->nhosts; h++)
		free(c->on[h]);
	hm_hostlist_free(c->hosts, c->nhosts);
	free(c->jobs);
	free(c->on);
	free(c->non);
	memset(c, 0, sizeof(*c));
}
