/* Priority class -> NCCL traffic class / service level (nccl_class.h). */
#define _GNU_SOURCE
#include "nccl_class.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../hm_pace_env.h" /* the class -> DSCP and SL tables */

/* RoCE traffic class = DSCP << 2. */
int hm_nccl_class_tc(int prio)
{
	int dscp = hm_pace_class_dscp(prio);

	return dscp < 0 ? -1 : dscp << 2;
}

/* SL 0 is every other traffic's: the table starts at 1 unless configured. */
int hm_nccl_class_sl(int prio)
{
	return hm_pace_class_sl(prio);
}

/* Does link_layer of every port of every device read "Ethernet" (and is there one)? */
static bool all_ports_ethernet(const char *sysfs_ib)
{
	DIR *devs = opendir(sysfs_ib), *ports;
	struct dirent *d, *q;
	char path[4096], buf[32];
	int n = 0;
	bool eth = true;

	if (!devs)
		return false;
	while (eth && (d = readdir(devs))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/ports", sysfs_ib, d->d_name);
		if (!(ports = opendir(path)))
			continue;
		while (eth && (q = readdir(ports))) {
			FILE *f;

			if (q->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/ports/%s/link_layer", sysfs_ib,
				 d->d_name, q->d_name);
			if (!(f = fopen(path, "r")))
				continue;
			eth = fgets(buf, sizeof(buf), f) && strncmp(buf, "Ethernet", 8) == 0;
			n++;
			fclose(f);
		}
		closedir(ports);
	}
	closedir(devs);
	return eth && n > 0;
}

int hm_nccl_config_traffic_class(int prio, const char *sysfs_ib)
{
	if (prio < 0 || prio > 7)
		return -1;
	return all_ports_ethernet(sysfs_ib) ? hm_nccl_class_tc(prio) : hm_nccl_class_sl(prio);
}
