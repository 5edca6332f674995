/*
 * hm_topo_hwloc.c - GPU -> NIC affinity of one host of a topology from an hwloc
 * XML file (`lstopo --of xml` on that node, or hwloc-gather-topology). The
 * node is read by hm_hwnode_read() (hm_hwnode.h says how GPUs, NICs and the
 * nearest NIC are found); this file checks it against the host and commits.
 */
#include "hm_hwnode.h"
#include "hm_topo.h"

hm_rc_t hm_topo_apply_hwloc_xml(hm_topo_t *t, int host, const char *xml_path, hm_err_t *err)
{
	hm_hwnode_t hw;
	hm_host_t *h;
	hm_rc_t rc;

	if (!t || host < 0 || host >= t->nhosts || !xml_path)
		return hm_err_set(err, HM_ERR_INVAL, "hwloc affinity: bad host %d or no file",
				  host);
	h = &t->hosts[host];
	if ((rc = hm_hwnode_read(xml_path, NULL, &hw, err)) != HM_OK) {
		hm_err_prefix(err, "node '%s'", h->name);
		return rc;
	}
	if (hw.ngpus != h->gpus || hw.nnics != h->nics)
		return hm_err_set(err, HM_ERR_INVAL,
				  "%s: %d GPUs and %d NICs found, but host '%s' has %d GPUs and "
				  "%d NICs in the topology; give the matching GPUs/NICs per host",
				  xml_path, hw.ngpus, hw.nnics, h->name, h->gpus, h->nics);
	for (int g = 0; g < hw.ngpus; g++)
		h->gpu_nic[g] = hw.gpu_nic[g];
	return HM_OK;
}
