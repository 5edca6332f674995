/* Member accessors with defaults (hm_json.h). */
#include "hm_json.h"

int64_t hm_json_i64(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

double hm_json_dbl(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

const char *hm_json_str(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) &&
		       json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

bool hm_json_bool(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}
