/*
 * hm_topo_write.c - a topology as Slurm's topology.conf (topology/tree) or
 * topology.yaml (one tree topology): racks first with their nodes, then each
 * level's switches with their children, hostlists compressed. Speeds are not written: Slurm does
 * not use LinkSpeed, and a CSV does not carry them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_hostlist.h"
#include "hm_topo.h"

/* Characters that topology.conf or a hostlist would read as syntax. */
#define BAD_NAME_CHARS " \t\r\n=,[]#\\"

static hm_rc_t check_name(const char *what, const char *name, hm_err_t *err)
{
	if (!*name || strpbrk(name, BAD_NAME_CHARS))
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s '%s' cannot be written to topology.conf: accepted are "
				  "names without blanks, '=', ',', '[', ']', '#' or '\\'",
				  what, name);
	return HM_OK;
}

/* The names below switch s (hosts of a rack, else child switches) into names. */
static int children(const hm_topo_t *t, int s, char **names)
{
	int n = 0;

	if (t->switches[s].level == 0) {
		for (int h = 0; h < t->nhosts; h++)
			if (t->hosts[h].rack == s)
				names[n++] = t->hosts[h].name;
		return n;
	}
	for (int c = 0; c < t->nswitches; c++)
		for (int p = 0; p < t->switches[c].nparents; p++)
			if (t->switches[c].parents[p] == s) {
				names[n++] = t->switches[c].name;
				break;
			}
	return n;
}

static hm_rc_t write_line(FILE *f, const char *sw, const char *key, char **names, int n,
			  hm_err_t *err)
{
	char *list = hm_hostlist_compress(names, n);
	hm_rc_t rc = HM_OK;

	if (!list)
		return hm_err_set(err, HM_ERR_NOMEM, "topology.conf: out of memory");
	if (fprintf(f, "SwitchName=%s %s=%s\n", sw, key, list) < 0)
		rc = hm_err_set(err, HM_ERR_IO, "topology.conf: write failed");
	free(list);
	return rc;
}

hm_rc_t hm_topo_write_slurm(const hm_topo_t *t, FILE *f, hm_err_t *err)
{
	int cap = (t->nhosts > t->nswitches ? t->nhosts : t->nswitches) + 1;
	char **names = malloc((size_t)cap * sizeof(char *));
	hm_rc_t rc = HM_OK;

	if (!names)
		return hm_err_set(err, HM_ERR_NOMEM, "topology.conf: out of memory");
	for (int h = 0; h < t->nhosts && rc == HM_OK; h++)
		rc = check_name("host", t->hosts[h].name, err);
	for (int s = 0; s < t->nswitches && rc == HM_OK; s++)
		rc = check_name("switch", t->switches[s].name, err);
	for (int level = 0; level < t->nlevels && rc == HM_OK; level++) {
		for (int s = 0; s < t->nswitches && rc == HM_OK; s++) {
			int n;

			if (t->switches[s].level != level)
				continue;
			n = children(t, s, names);
			if (n > 0)
				rc = write_line(f, t->switches[s].name,
						level == 0 ? "Nodes" : "Switches", names, n, err);
		}
	}
	free(names);
	return rc;
}

/* A name as a YAML scalar: plain when it is safe, else double-quoted. */
static int yaml_scalar(FILE *f, const char *s)
{
	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-[],") ==
		strlen(s) &&
	    s[0] != '-' && s[0] != '[' && s[0] != ']' && s[0] != ',')
		return fprintf(f, "%s", s);
	return fprintf(f, "\"%s\"", s); /* check_name left no '"' or '\\' */
}

hm_rc_t hm_topo_write_yaml(const hm_topo_t *t, const char *name, FILE *f, hm_err_t *err)
{
	int cap = (t->nhosts > t->nswitches ? t->nhosts : t->nswitches) + 1;
	char **names = malloc((size_t)cap * sizeof(char *));
	hm_rc_t rc = HM_OK;
	bool io = true;

	if (!names)
		return hm_err_set(err, HM_ERR_NOMEM, "topology.yaml: out of memory");
	for (int h = 0; h < t->nhosts && rc == HM_OK; h++)
		rc = check_name("host", t->hosts[h].name, err);
	for (int s = 0; s < t->nswitches && rc == HM_OK; s++)
		rc = check_name("switch", t->switches[s].name, err);
	if (rc == HM_OK && name && (!*name || strpbrk(name, BAD_NAME_CHARS "\"'")))
		rc = hm_err_set(err, HM_ERR_INVAL,
				"topology name '%s' cannot be written: accepted are names without "
				"blanks, quotes, '=', ',', '[', ']', '#' or '\\'",
				name);
	if (rc == HM_OK) {
		io = fprintf(f, "---\n- topology: ") >= 0 &&
		     yaml_scalar(f, name ? name : "default") >= 0 &&
		     fprintf(f, "\n  cluster_default: true\n  tree:\n    switches:\n") >= 0;
	}
	for (int level = 0; level < t->nlevels && rc == HM_OK && io; level++) {
		for (int s = 0; s < t->nswitches && io; s++) {
			char *list;
			int n;

			if (t->switches[s].level != level)
				continue;
			n = children(t, s, names);
			if (n == 0)
				continue;
			if (!(list = hm_hostlist_compress(names, n))) {
				rc = hm_err_set(err, HM_ERR_NOMEM, "topology.yaml: out of memory");
				break;
			}
			io = fprintf(f, "      - switch: ") >= 0 &&
			     yaml_scalar(f, t->switches[s].name) >= 0 &&
			     fprintf(f, "\n        %s: ", level == 0 ? "nodes" : "children") >= 0 &&
			     yaml_scalar(f, list) >= 0 && fprintf(f, "\n") >= 0;
			free(list);
		}
	}
	if (rc == HM_OK && !io)
		rc = hm_err_set(err, HM_ERR_IO, "topology.yaml: write failed");
	free(names);
	return rc;
}
