/* A node's GPUs, NICs and GPU -> NIC affinity from hwloc (see hm_hwnode.h). */
#include "hm_hwnode.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEVS 64 /* PCI devices of one kind looked at before the limits apply */

static int cmp_pci(const void *a, const void *b)
{
	const struct hwloc_pcidev_attr_s *x = &(*(hwloc_obj_t const *)a)->attr->pcidev;
	const struct hwloc_pcidev_attr_s *y = &(*(hwloc_obj_t const *)b)->attr->pcidev;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (int)x->func - (int)y->func;
}

static hwloc_obj_t find_osdev(hwloc_obj_t pci, hwloc_obj_osdev_type_t type)
{
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
		if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == type)
			return c;
	return NULL;
}

static bool is_gpu(hwloc_obj_t pci)
{
	unsigned cls = pci->attr->pcidev.class_id;

	return cls == 0x0302 || cls == 0x1200 || find_osdev(pci, HWLOC_OBJ_OSDEV_COPROC);
}

static bool is_net(hwloc_obj_t pci)
{
	return (pci->attr->pcidev.class_id >> 8) == 0x02;
}

/* Hops from a to b through their closest common ancestor. */
static int hops(hwloc_obj_t a, hwloc_obj_t b)
{
	int da = 0;

	for (hwloc_obj_t x = a; x; x = x->parent, da++) {
		int db = 0;

		for (hwloc_obj_t y = b; y; y = y->parent, db++)
			if (x == y)
				return da + db;
	}
	return 1 << 20; /* different trees: cannot happen within one topology */
}

/* First line of a small sysfs file into buf; false when absent or empty. */
static bool read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] != '\0';
}

/* Link speed: the RDMA port's rate ("200 Gb/sec (4X HDR)"), else the interface's Mb/s. */
static int64_t nic_speed_bps(const char *sysfs, hwloc_obj_t rdma, hwloc_obj_t net)
{
	char path[512], buf[64], *end;
	double v;

	if (rdma) {
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/rate", sysfs,
			 rdma->name);
		if (read_small(path, buf, sizeof(buf))) {
			errno = 0;
			v = strtod(buf, &end);
			if (errno == 0 && end != buf && v > 0 && v < 1e5 &&
			    strncmp(end, " Gb/sec", 7) == 0)
				return (int64_t)(v * 1e9);
		}
	}
	if (net) {
		snprintf(path, sizeof(path), "%s/class/net/%s/speed", sysfs, net->name);
		if (read_small(path, buf, sizeof(buf))) {
			errno = 0;
			v = strtod(buf, &end);
			if (errno == 0 && end != buf && *end == '\0' && v > 0 && v < 1e8)
				return (int64_t)(v * 1e6);
		}
	}
	return 0;
}

static void describe_nic(hwloc_topology_t topo, hwloc_obj_t pci, const char *sysfs, hm_hwnic_t *nic)
{
	const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
	hwloc_obj_t rdma = find_osdev(pci, HWLOC_OBJ_OSDEV_OPENFABRICS);
	hwloc_obj_t net = find_osdev(pci, HWLOC_OBJ_OSDEV_NETWORK);
	hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo, pci);

	memset(nic, 0, sizeof(*nic));
	snprintf(nic->pci, sizeof(nic->pci), "%04x:%02x:%02x.%01x", a->domain, a->bus, a->dev,
		 a->func);
	snprintf(nic->name, sizeof(nic->name), "%s",
		 rdma && rdma->name ? rdma->name
		 : net && net->name ? net->name
				    : nic->pci);
	nic->numa = -1;
	if (cpu_side && cpu_side->nodeset && hwloc_bitmap_weight(cpu_side->nodeset) == 1)
		nic->numa = hwloc_bitmap_first(cpu_side->nodeset);
	nic->speed_bps = sysfs ? nic_speed_bps(sysfs, rdma, net) : 0;
}

hm_rc_t hm_hwnode_read(const char *xml_path, const char *sysfs_root, hm_hwnode_t *out,
		       hm_err_t *err)
{
	hwloc_topology_t topo = NULL;
	hwloc_obj_t gpus[MAX_DEVS], nics[MAX_DEVS], pci = NULL;
	int ngpus = 0, nnics = 0, nrdma = 0, load[MAX_DEVS] = {0};
	const char *what = xml_path ? xml_path : "this machine";
	hm_hwnode_t hw;
	hm_rc_t rc = HM_OK;

	memset(&hw, 0, sizeof(hw));
	if (hwloc_topology_init(&topo) < 0)
		return hm_err_set(err, HM_ERR_NOMEM, "%s: hwloc_topology_init failed", what);
	if (xml_path && hwloc_topology_set_xml(topo, xml_path) < 0) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: cannot use as hwloc XML: %s", xml_path,
				strerror(errno));
		goto out_with_topology;
	}
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (hwloc_topology_load(topo) < 0) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s: hwloc cannot load it (%s); expected the output of `lstopo "
				"--of xml`",
				what, strerror(errno));
		goto out_with_topology;
	}
	hw.this_system = hwloc_topology_is_thissystem(topo);
	while ((pci = hwloc_get_next_pcidev(topo, pci)) != NULL) {
		if (is_gpu(pci) && ngpus < MAX_DEVS)
			gpus[ngpus++] = pci;
		else if (is_net(pci) && nnics < MAX_DEVS)
			nics[nnics++] = pci;
	}
	/* Keep the RDMA NICs when there are any: the on-board Ethernet is for management. */
	for (int i = 0; i < nnics; i++)
		if (find_osdev(nics[i], HWLOC_OBJ_OSDEV_OPENFABRICS))
			nics[nrdma++] = nics[i];
	if (nrdma > 0)
		nnics = nrdma;
	if (ngpus > HM_MAX_GPUS_PER_HOST || nnics > HM_MAX_NICS_PER_HOST) {
		rc = hm_err_set(err, HM_ERR_RANGE,
				"%s: %d GPUs and %d NICs (accepted: at most %d GPUs and %d NICs "
				"per node)",
				what, ngpus, nnics, HM_MAX_GPUS_PER_HOST, HM_MAX_NICS_PER_HOST);
		goto out_with_topology;
	}
	qsort(gpus, (size_t)ngpus, sizeof(gpus[0]), cmp_pci);
	qsort(nics, (size_t)nnics, sizeof(nics[0]), cmp_pci);
	for (int g = 0; g < ngpus; g++)
		hw.gpu_nic[g] = -1;
	for (int g = 0; g < ngpus && nnics > 0; g++) {
		int best = 0, best_hops = hops(gpus[g], nics[0]);

		for (int n = 1; n < nnics; n++) {
			int d = hops(gpus[g], nics[n]);

			if (d < best_hops || (d == best_hops && load[n] < load[best])) {
				best = n;
				best_hops = d;
			}
		}
		load[best]++;
		hw.gpu_nic[g] = best;
	}
	for (int n = 0; n < nnics; n++)
		describe_nic(topo, nics[n],
			     sysfs_root       ? sysfs_root
			     : hw.this_system ? "/sys"
					      : NULL,
			     &hw.nics[n]);
	hw.ngpus = ngpus;
	hw.nnics = nnics;
	*out = hw;
out_with_topology:
	hwloc_topology_destroy(topo);
	return rc;
}
