/*
 * hm_topo_partition.c - which topology.yaml topology a partition uses: its
 * Topology= in slurm.conf (25.05+), PartitionName=DEFAULT lines giving the
 * default for the lines after them, as Slurm reads them. Only PartitionName
 * lines are looked at; keys are case-insensitive, '#' starts a comment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_parse.h"
#include "hm_topo.h"
#include "hm_topo_build.h"

hm_rc_t hm_topo_partition_topology(const char *slurm_conf, const char *partition, char *name,
				   size_t len, hm_err_t *err)
{
	FILE *f;
	char *buf = NULL, *line, dflt[256] = "";
	size_t cap = 0;
	int lineno = 0;
	bool found = false;
	hm_rc_t rc = HM_OK;

	if (!slurm_conf || !partition || !name || len == 0)
		return hm_err_set(err, HM_ERR_INVAL, "partition topology: NULL argument");
	*name = '\0';
	if (!(f = fopen(slurm_conf, "r")))
		return hm_err_set(err, HM_ERR_IO, "%s: cannot open: %s", slurm_conf,
				  strerror(errno));
	while (!found &&
	       (rc = hm_topo_read_line(f, slurm_conf, lineno + 1, &buf, &cap, &line, err)) ==
		   HM_OK &&
	       line) {
		char *save = NULL, *tok, *key, *val, *hash = strchr(line, '#'), topo[256] = "";
		bool is_default = false, mine = false, part = false;

		lineno++;
		if (hash)
			*hash = '\0';
		for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
			if (!hm_split_kv(tok, &key, &val))
				continue;
			if (!part) {
				if (strcasecmp(key, "PartitionName") != 0)
					break;
				part = true;
				is_default = strcasecmp(val, "DEFAULT") == 0;
				mine = strcmp(val, partition) == 0;
			} else if (strcasecmp(key, "Topology") == 0) {
				snprintf(topo, sizeof(topo), "%s", val);
			}
		}
		if (is_default && *topo)
			snprintf(dflt, sizeof(dflt), "%s", topo);
		if (mine) {
			snprintf(name, len, "%s", *topo ? topo : dflt);
			found = true;
		}
	}
	if (rc == HM_OK && !found)
		rc = hm_err_set(err, HM_ERR_NOTFOUND, "%s: no partition '%s' (PartitionName=%s)",
				slurm_conf, partition, partition);
	free(buf);
	fclose(f);
	return rc;
}
