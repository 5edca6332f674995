/* A node agent's view in JSON: {"node","state","last_seen_s","steps","ranks","jobs",
   "gpus","nics":[{"name","pci","numa","speed_bps"}],"gpu_nic":[..],"note"}; the
   hardware members are the hello's (hm_aw_topo_*), null when not reported; then
   "clock_offset_us" (absent when not reported) and "clock_skewed". */
#include "hm_node_json.h"

#include <string.h>

#include "hm_fields.h"

static const hm_field_t node_view_fields[] = {
    HM_FIELD(hm_coord_node_view_t, node, "node", HM_F_STR),
    HM_FIELD(hm_coord_node_view_t, state, "state", HM_F_STR),
    HM_FIELD(hm_coord_node_view_t, last_seen_s, "last_seen_s", HM_F_DBL),
    HM_FIELD(hm_coord_node_view_t, steps, "steps", HM_F_INT),
    HM_FIELD(hm_coord_node_view_t, ranks, "ranks", HM_F_INT),
    HM_FIELD(hm_coord_node_view_t, jobs, "jobs", HM_F_INT),
};
static const hm_field_t node_note_field =
    HM_FIELD(hm_coord_node_view_t, topo_note, "note", HM_F_STR);
/* The node's clock minus the coordinator's (absent: not reported) and whether it is skewed. */
static const hm_field_t node_clock_fields[] = {
    HM_FIELD_WHEN(hm_coord_node_view_t, clock_offset_us, "clock_offset_us", HM_F_I64, HM_F_IF,
		  has_clock),
    HM_FIELD(hm_coord_node_view_t, clock_skewed, "clock_skewed", HM_F_BOOL),
};

json_object *hm_json_node_view(const hm_coord_node_view_t *v)
{
	json_object *o = hm_fields_new(node_view_fields, HM_NFIELDS(node_view_fields), v);

	if (v->has_topo) {
		hm_aw_topo_encode(o, &v->topo);
	} else {
		/* Not reported: null, not zero GPUs. */
		json_object_object_add(o, "gpus", NULL);
		json_object_object_add(o, "nics", NULL);
		json_object_object_add(o, "gpu_nic", NULL);
	}
	hm_fields_encode(o, &node_note_field, 1, v);
	hm_fields_encode(o, node_clock_fields, HM_NFIELDS(node_clock_fields), v);
	return o;
}

void hm_json_node_view_parse(json_object *o, hm_coord_node_view_t *v)
{
	hm_err_t err = {0};

	memset(v, 0, sizeof(*v));
	hm_fields_read(o, node_view_fields, HM_NFIELDS(node_view_fields), v);
	hm_fields_read(o, &node_note_field, 1, v);
	hm_fields_read(o, node_clock_fields, HM_NFIELDS(node_clock_fields), v);
	/* The coordinator wrote it: a view that does not decode shows no hardware. */
	v->has_topo = hm_aw_topo_decode(o, &v->topo, "node", &err) == HM_OK;
	if (!v->has_topo)
		memset(&v->topo, 0, sizeof(v->topo));
}
