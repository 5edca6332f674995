/*
 * hm_spec.h - what a job may ask for: its --comm-sched mode and its
 * --comm-profile spec. Checked by the SPANK plugin at submission, by
 * harmonics.conf (Policy, DefaultMode, DefaultProfile) and by the engine. Part
 * of the client library: it needs the catalogue, never the policies (their
 * names come from hm_policy_names.h).
 *
 * Mode: "off", "auto" or a policy name (case-insensitive). Profile: a catalogue
 * model name, or comma-separated iter=<duration>,comm=<fraction>,bytes=<size>
 * [,overlap=<fraction>] (compute = iter * (1 - comm), one ring all-reduce of
 * bytes). Errors name the bad value and the accepted ones.
 */
#ifndef HM_SPEC_H
#define HM_SPEC_H

#include <stdbool.h>

#include "hm_error.h"
#include "hm_job.h"

hm_rc_t hm_spec_mode_check(const char *mode, hm_err_t *err);
/* "off,auto,fair,optimal,..." (static). */
const char *hm_spec_mode_names(void);
/* A registered policy's name (exact, lower-case); NULL is not. */
bool hm_spec_policy_known(const char *name);
hm_rc_t hm_spec_profile_parse(const char *spec, hm_profile_t *out, hm_err_t *err);

#endif
