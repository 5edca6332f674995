/*
 * hm_topo_hwloc.c - GPU -> NIC affinity of one node from an hwloc XML file
 * (`lstopo --of xml` on that node, or hwloc-gather-topology).
 *
 * GPUs: PCI devices of class 3D controller (0x0302) or processing
 * accelerator (0x1200), or any PCI device with a co-processor OS device
 * (cudaN, openclN). A VGA controller such as a BMC's is not a GPU.
 * NICs: PCI network devices (class 0x02xx) that carry an OpenFabrics (RDMA)
 * OS device; when the node has none, every PCI network device. Both lists are
 * in PCI bus order, which is CUDA's PCI_BUS_ID order and NCCL's.
 * Each GPU takes the NIC with the fewest hops through the hwloc tree (the
 * deepest common ancestor: same PCIe switch, then same root complex, then
 * same NUMA node/package); ties go to the NIC with fewer GPUs so far, then
 * the lower index.
 */
#include "hm_topo.h"

#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVS 64

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

static bool has_osdev(hwloc_obj_t pci, hwloc_obj_osdev_type_t type)
{
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
		if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == type)
			return true;
	return false;
}

static bool is_gpu(hwloc_obj_t pci)
{
	unsigned cls = pci->attr->pcidev.class_id;

	return cls == 0x0302 || cls == 0x1200 || has_osdev(pci, HWLOC_OBJ_OSDEV_COPROC);
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

hm_rc_t hm_topo_apply_hwloc_xml(hm_topo_t *t, int host, const char *xml_path, hm_err_t *err)
{
	hwloc_topology_t topo = NULL;
	hwloc_obj_t gpus[MAX_DEVS], nics[MAX_DEVS], pci = NULL;
	int ngpus = 0, nnics = 0, nrdma = 0, load[MAX_DEVS] = {0};
	int map[HM_MAX_GPUS_PER_HOST];
	hm_host_t *h;
	hm_rc_t rc = HM_OK;

	if (!t || host < 0 || host >= t->nhosts || !xml_path)
		return hm_err_set(err, HM_ERR_INVAL, "hwloc affinity: bad host %d or no file",
				  host);
	h = &t->hosts[host];
	if (hwloc_topology_init(&topo) < 0)
		return hm_err_set(err, HM_ERR_NOMEM, "%s: hwloc_topology_init failed", xml_path);
	if (hwloc_topology_set_xml(topo, xml_path) < 0) {
		rc = hm_err_set(err, HM_ERR_IO, "%s: cannot use as hwloc XML: %s", xml_path,
				strerror(errno));
		goto out_with_topology;
	}
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (hwloc_topology_load(topo) < 0) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s: hwloc cannot load this XML (%s); expected the output of "
				"`lstopo --of xml` of node '%s'",
				xml_path, strerror(errno), h->name);
		goto out_with_topology;
	}
	while ((pci = hwloc_get_next_pcidev(topo, pci)) != NULL) {
		if (is_gpu(pci) && ngpus < MAX_DEVS)
			gpus[ngpus++] = pci;
		else if (is_net(pci) && nnics < MAX_DEVS)
			nics[nnics++] = pci;
	}
	/* Keep the RDMA NICs when there are any: the on-board Ethernet is for management. */
	for (int i = 0; i < nnics; i++)
		if (has_osdev(nics[i], HWLOC_OBJ_OSDEV_OPENFABRICS))
			nics[nrdma++] = nics[i];
	if (nrdma > 0)
		nnics = nrdma;
	qsort(gpus, (size_t)ngpus, sizeof(gpus[0]), cmp_pci);
	qsort(nics, (size_t)nnics, sizeof(nics[0]), cmp_pci);
	if (ngpus != h->gpus || nnics != h->nics) {
		rc = hm_err_set(err, HM_ERR_INVAL,
				"%s: %d GPUs and %d NICs found, but host '%s' has %d GPUs and %d "
				"NICs in the topology; give the matching GPUs/NICs per host",
				xml_path, ngpus, nnics, h->name, h->gpus, h->nics);
		goto out_with_topology;
	}
	for (int g = 0; g < ngpus; g++) {
		int best = 0, best_hops = hops(gpus[g], nics[0]);

		for (int n = 1; n < nnics; n++) {
			int d = hops(gpus[g], nics[n]);

			if (d < best_hops || (d == best_hops && load[n] < load[best])) {
				best = n;
				best_hops = d;
			}
		}
		load[best]++;
		map[g] = best;
	}
	/* Commit only after everything succeeded. */
	for (int g = 0; g < ngpus; g++)
		h->gpu_nic[g] = map[g];
out_with_topology:
	hwloc_topology_destroy(topo);
	return rc;
}
