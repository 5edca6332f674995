/*
 * hm_policy_names.h - the names of the registered policies, in registry order,
 * for code that checks a policy name without linking the policies (harmonics.conf
 * and --comm-sched validation in the client library). test_coord checks that it
 * equals the registry's names (hm_policy.c).
 */
#ifndef HM_POLICY_NAMES_H
#define HM_POLICY_NAMES_H

#define HM_POLICY_NAMES "fair,optimal,cassini,crux,harmonics"

#endif
