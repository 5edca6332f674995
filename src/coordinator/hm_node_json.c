/* A node agent's view in JSON: {"node","state","last_seen_s","steps","ranks","jobs",
   "gpus","nics":[{"name","pci","numa","speed_bps"}],"gpu_nic":[..],"note"}. */
#include "hm_node_json.h"

#include <stdio.h>
#include <string.h>

#include "hm_json.h"

json_object *hm_json_node_view(const hm_coord_node_view_t *v)
{
	json_object *o = json_object_new_object(), *nics, *map;

	json_object_object_add(o, "node", json_object_new_string(v->node));
	json_object_object_add(o, "state", json_object_new_string(v->state));
	json_object_object_add(o, "last_seen_s", json_object_new_double(v->last_seen_s));
	json_object_object_add(o, "steps", json_object_new_int(v->steps));
	json_object_object_add(o, "ranks", json_object_new_int(v->ranks));
	json_object_object_add(o, "jobs", json_object_new_int(v->jobs));
	if (!v->has_topo) {
		/* Not reported: null, not zero GPUs. */
		json_object_object_add(o, "gpus", NULL);
		json_object_object_add(o, "nics", NULL);
		json_object_object_add(o, "gpu_nic", NULL);
	} else {
		json_object_object_add(o, "gpus", json_object_new_int(v->topo.ngpus));
		nics = json_object_new_array();
		for (int i = 0; i < v->topo.nnics; i++) {
			const hm_hwnic_t *n = &v->topo.nics[i];
			json_object *e = json_object_new_object();

			json_object_object_add(e, "name", json_object_new_string(n->name));
			json_object_object_add(e, "pci", json_object_new_string(n->pci));
			json_object_object_add(e, "numa", json_object_new_int(n->numa));
			json_object_object_add(e, "speed_bps", json_object_new_int64(n->speed_bps));
			json_object_array_add(nics, e);
		}
		json_object_object_add(o, "nics", nics);
		map = json_object_new_array();
		for (int g = 0; g < v->topo.ngpus; g++)
			json_object_array_add(map, json_object_new_int(v->topo.gpu_nic[g]));
		json_object_object_add(o, "gpu_nic", map);
	}
	json_object_object_add(o, "note", json_object_new_string(v->topo_note));
	return o;
}

void hm_json_node_view_parse(json_object *o, hm_coord_node_view_t *v)
{
	json_object *nics = NULL, *map = NULL;

	memset(v, 0, sizeof(*v));
	snprintf(v->node, sizeof(v->node), "%s", hm_json_str(o, "node"));
	snprintf(v->state, sizeof(v->state), "%s", hm_json_str(o, "state"));
	v->last_seen_s = hm_json_dbl(o, "last_seen_s");
	v->steps = (int)hm_json_i64(o, "steps");
	v->ranks = (int)hm_json_i64(o, "ranks");
	v->jobs = (int)hm_json_i64(o, "jobs");
	snprintf(v->topo_note, sizeof(v->topo_note), "%s", hm_json_str(o, "note"));
	if (!o || !json_object_object_get_ex(o, "nics", &nics) ||
	    !json_object_is_type(nics, json_type_array))
		return;
	v->has_topo = true;
	v->topo.ngpus = (int)hm_json_i64(o, "gpus");
	if (v->topo.ngpus < 0 || v->topo.ngpus > HM_MAX_GPUS_PER_HOST)
		v->topo.ngpus = 0;
	for (size_t i = 0; i < json_object_array_length(nics) && i < HM_MAX_NICS_PER_HOST; i++) {
		json_object *e = json_object_array_get_idx(nics, i);
		hm_hwnic_t *n = &v->topo.nics[v->topo.nnics++];

		snprintf(n->name, sizeof(n->name), "%s", hm_json_str(e, "name"));
		snprintf(n->pci, sizeof(n->pci), "%s", hm_json_str(e, "pci"));
		n->numa = (int)hm_json_i64(e, "numa");
		n->speed_bps = hm_json_i64(e, "speed_bps");
	}
	if (json_object_object_get_ex(o, "gpu_nic", &map) &&
	    json_object_is_type(map, json_type_array))
		for (int g = 0; g < v->topo.ngpus && g < (int)json_object_array_length(map); g++)
			v->topo.gpu_nic[g] =
			    (int)json_object_get_int(json_object_array_get_idx(map, g));
}
