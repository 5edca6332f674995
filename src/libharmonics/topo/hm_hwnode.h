/*
 * hm_hwnode.h - one node's GPUs and NICs and which NIC each GPU uses, read with
 * hwloc: from a recorded XML file (`lstopo --of xml`), or from the machine
 * itself (where hwloc honours HWLOC_XMLFILE). The node agent reports it to the
 * coordinator; hm_topo_apply_hwloc_xml() puts it into a simulated topology.
 *
 * GPUs: PCI devices of class 3D controller (0x0302) or processing accelerator
 * (0x1200), or any PCI device with a co-processor OS device (cudaN, openclN).
 * A VGA controller such as a BMC's is not a GPU. NICs: PCI network devices
 * (class 0x02xx) that carry an OpenFabrics (RDMA) OS device; when the node has
 * none, every PCI network device. Both lists are in PCI bus order (CUDA's
 * PCI_BUS_ID order and NCCL's). Each GPU takes the NIC with the fewest hops
 * through the hwloc tree (same PCIe switch, then root complex, then NUMA
 * node/package); ties go to the NIC with fewer GPUs so far, then the lower index.
 *
 * No allocation is kept; the output is a plain struct. Units: bit/s.
 */
#ifndef HM_HWNODE_H
#define HM_HWNODE_H

#include <stdint.h>

#include "hm_error.h"
#include "hm_topo.h"

#define HM_HWNODE_NAME_MAX 32

typedef struct {
	char name[HM_HWNODE_NAME_MAX]; /* RDMA device (mlx5_0), else network interface
					  (eth0), else PCI bus id */
	char pci[16];                  /* PCI bus id, "0000:12:00.0" */
	int numa;                      /* os index of the nearest NUMA node, -1 unknown */
	int64_t speed_bps;             /* link speed from sysfs, 0 = unknown */
} hm_hwnic_t;

typedef struct {
	int ngpus;
	int nnics;
	hm_hwnic_t nics[HM_MAX_NICS_PER_HOST];
	int gpu_nic[HM_MAX_GPUS_PER_HOST]; /* index into nics of each GPU's NIC; -1 without NICs */
	int this_system;                   /* 1 when read from the running machine */
} hm_hwnode_t;

/*
 * Read a node. xml_path: an hwloc XML file, or NULL for this machine (hwloc then
 * honours HWLOC_XMLFILE). sysfs_root: where to read NIC link speeds
 * (SYSFS/class/infiniband/DEV/ports/1/rate, SYSFS/class/net/IF/speed); NULL:
 * /sys when the topology is this machine's, else none (speeds stay 0). More than
 * HM_MAX_GPUS_PER_HOST GPUs or HM_MAX_NICS_PER_HOST NICs is HM_ERR_RANGE.
 * *out is written only on success.
 */
hm_rc_t hm_hwnode_read(const char *xml_path, const char *sysfs_root, hm_hwnode_t *out,
		       hm_err_t *err);

#endif
