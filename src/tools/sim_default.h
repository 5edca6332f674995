/* The built-in default scenario of harmonics-sim (see sim_default.c). */
#ifndef SIM_DEFAULT_H
#define SIM_DEFAULT_H

extern const char sim_default_topo_gen[]; /* generator spec (hm_topo_gen_parse) */
extern const char sim_default_trace[];	  /* trace CSV text (hm_workload_load_csv) */

#endif
