/*
 * Built as a shared object from the client libraries alone, with
 * --no-undefined: the SPANK plugin and the node agent (a separate shared object)
 * must be able to link them without the engine or the policies.
 */
#include "hm_spec.h"

const char *client_alone_modes(void);

const char *client_alone_modes(void)
{
	return hm_spec_mode_names();
}
