/*
 * select_compat.h - the select plugin interface of each Slurm release (22.05 to
 * 26.05), in one place: the plugin_id Slurm treats as cons_tres, job_test's
 * trailing arguments, and the cons_tres entry points forwarded as they are.
 * Include after Slurm's "config.h"; hm_slurm_compat.h has the headers.
 */
#ifndef SELECT_COMPAT_H
#define SELECT_COMPAT_H

#include "hm_slurm_compat.h"

/*
 * The plugin_id: where Slurm asks "is this cons_tres?" by id, the answer must be
 * yes; elsewhere it asks SELECT_CR_PLUGIN (forwarded to cons_tres) or looks for
 * "cons_tres" in SelectType (it is in ours).
 *  - 25.05 on: only SelectType is loaded; running_cons_tres() wants 109 (CoreCnt
 *    reservations, gres, memory), and select_g_init() is fatal for
 *    CR_CPU/CR_CORE/CR_SOCKET without it.
 *  - 23.02 to 24.11: every select_*.so of PluginDir is loaded and their ids must
 *    be unique (fatal otherwise), so not 109; no check by id remains.
 *  - 22.05: the same uniqueness, and scontrol's CoreCnt check
 *    (state_control_corecnt_supported) accepts 101, 108, 109, 110 only. 101 and
 *    109 are taken (cons_res, cons_tres); select/cray_aries announces 108 or 110
 *    only with SelectTypeParameters=other_cons_res/other_cons_tres, meaningful on
 *    a Cray alone. 110 is the one free id cons_tres' checks accept.
 */
#if HM_SLURM_AT_LEAST(25, 5)
#define HM_SELECT_PLUGIN_ID SELECT_PLUGIN_CONS_TRES
#elif HM_SLURM_AT_LEAST(23, 2)
#define HM_SELECT_PLUGIN_ID 180
#else
#define HM_SELECT_PLUGIN_ID SELECT_PLUGIN_CRAY_CONS_TRES
#endif

/* job_test's arguments after the preemptees: the cores a reservation excludes
   (a bitmap, then resv_exc_t * from 23.11) and, from 24.11, backfill's window. */
#if HM_SLURM_AT_LEAST(24, 11)
typedef struct {
	resv_exc_t *resv_exc;
	will_run_data_t *will_run;
} hm_job_test_tail_t;
#define HM_JOB_TEST_TAIL_PARAMS        resv_exc_t *resv_exc, will_run_data_t *will_run
#define HM_JOB_TEST_TAIL_TYPES         resv_exc_t *, will_run_data_t *
#define HM_JOB_TEST_TAIL_INIT          {resv_exc, will_run}
#define HM_JOB_TEST_TAIL_ARGS(tail)    (tail)->resv_exc, (tail)->will_run
#elif HM_SLURM_AT_LEAST(23, 11)
typedef struct {
	resv_exc_t *resv_exc;
} hm_job_test_tail_t;
#define HM_JOB_TEST_TAIL_PARAMS        resv_exc_t *resv_exc
#define HM_JOB_TEST_TAIL_TYPES         resv_exc_t *
#define HM_JOB_TEST_TAIL_INIT          {resv_exc}
#define HM_JOB_TEST_TAIL_ARGS(tail)    (tail)->resv_exc
#else
typedef struct {
	bitstr_t *exc_core_bitmap;
} hm_job_test_tail_t;
#define HM_JOB_TEST_TAIL_PARAMS        bitstr_t *exc_core_bitmap
#define HM_JOB_TEST_TAIL_TYPES         bitstr_t *
#define HM_JOB_TEST_TAIL_INIT          {exc_core_bitmap}
#define HM_JOB_TEST_TAIL_ARGS(tail)    (tail)->exc_core_bitmap
#endif

/* cons_tres' select_p_job_test. */
typedef int (*hm_select_job_test_fn)(job_record_t *, bitstr_t *, uint32_t, uint32_t, uint32_t,
				     uint16_t, list_t *, list_t **, HM_JOB_TEST_TAIL_TYPES);

/*
 * The entry points forwarded to cons_tres as they are: X(ret, name, params,
 * args), in slurm_select_ops_t order; init, fini, job_test, job_fini and
 * job_mem_reduce (void) are the plugin's own. Each release's list is the one its
 * select interface resolves (a missing symbol fails the plugin's load).
 */
#define HM_SELECT_OPS_ALL(X)                                                                       \
	X(int, node_init, (void), ())                                                              \
	X(int, job_begin, (job_record_t * a), (a))                                                 \
	X(int, job_ready, (job_record_t * a), (a))                                                 \
	X(int, job_expand, (job_record_t * a, job_record_t * b), (a, b))                           \
	X(int, job_resized, (job_record_t * a, node_record_t * b), (a, b))                         \
	X(int, job_suspend, (job_record_t * a, bool b), (a, b))                                    \
	X(int, job_resume, (job_record_t * a, bool b), (a, b))                                     \
	X(int, select_nodeinfo_set_all, (void), ())                                                \
	X(int, select_nodeinfo_set, (job_record_t * a), (a))                                       \
	X(int, reconfigure, (void), ())

/* Up to 24.11 (25.05 cut the interface to 12 functions). */
#if !HM_SLURM_AT_LEAST(25, 5)
#define HM_SELECT_OPS_TO_24_11(X)                                                                  \
	X(int, state_save, (char *a), (a))                                                         \
	X(int, state_restore, (char *a), (a))                                                      \
	X(int, job_init, (list_t * a), (a))                                                        \
	X(bitstr_t *, step_pick_nodes,                                                             \
	  (job_record_t * a, select_jobinfo_t * b, uint32_t c, bitstr_t * *d), (a, b, c, d))       \
	X(int, step_start, (step_record_t * a), (a))                                               \
	X(int, step_finish, (step_record_t * a, bool b), (a, b))                                   \
	X(int, select_nodeinfo_pack, (select_nodeinfo_t * a, buf_t * b, uint16_t c), (a, b, c))    \
	X(int, select_nodeinfo_unpack, (select_nodeinfo_t * *a, buf_t * b, uint16_t c), (a, b, c)) \
	X(select_nodeinfo_t *, select_nodeinfo_alloc, (void), ())                                  \
	X(int, select_nodeinfo_free, (select_nodeinfo_t * a), (a))                                 \
	X(int, select_nodeinfo_get,                                                                \
	  (select_nodeinfo_t * a, enum select_nodedata_type b, enum node_states c, void *d),       \
	  (a, b, c, d))                                                                            \
	X(select_jobinfo_t *, select_jobinfo_alloc, (void), ())                                    \
	X(int, select_jobinfo_free, (select_jobinfo_t * a), (a))                                   \
	X(int, select_jobinfo_set, (select_jobinfo_t * a, enum select_jobdata_type b, void *c),    \
	  (a, b, c))                                                                               \
	X(int, select_jobinfo_get, (select_jobinfo_t * a, enum select_jobdata_type b, void *c),    \
	  (a, b, c))                                                                               \
	X(select_jobinfo_t *, select_jobinfo_copy, (select_jobinfo_t * a), (a))                    \
	X(int, select_jobinfo_pack, (select_jobinfo_t * a, buf_t * b, uint16_t c), (a, b, c))      \
	X(int, select_jobinfo_unpack, (select_jobinfo_t * *a, buf_t * b, uint16_t c), (a, b, c))   \
	X(int, get_info_from_plugin, (enum select_plugindata_info a, job_record_t * b, void *c),   \
	  (a, b, c))
#else
#define HM_SELECT_OPS_TO_24_11(X)
#endif

/* Up to 22.05 (23.02 removed them). */
#if !HM_SLURM_AT_LEAST(23, 2)
#define HM_SELECT_OPS_TO_22_05(X)                                                                  \
	X(int, job_signal, (job_record_t * a, int b), (a, b))                                      \
	X(char *, select_jobinfo_sprint, (select_jobinfo_t * a, char *b, size_t c, int d),         \
	  (a, b, c, d))                                                                            \
	X(char *, select_jobinfo_xstrdup, (select_jobinfo_t * a, int b), (a, b))                   \
	X(int, update_node_config, (int a), (a))
#else
#define HM_SELECT_OPS_TO_22_05(X)
#endif

/* Up to 23.02 (23.11 removed it). */
#if !HM_SLURM_AT_LEAST(23, 11)
#define HM_SELECT_OPS_TO_23_02(X)                                                                  \
	X(bitstr_t *, resv_test, (resv_desc_msg_t * a, uint32_t b, bitstr_t * c, bitstr_t * *d),   \
	  (a, b, c, d))
#else
#define HM_SELECT_OPS_TO_23_02(X)
#endif

#define HM_SELECT_OPS(X)                                                                           \
	HM_SELECT_OPS_ALL(X) HM_SELECT_OPS_TO_24_11(X) HM_SELECT_OPS_TO_22_05(X)                   \
	    HM_SELECT_OPS_TO_23_02(X)

/* 26.05 added job_mem_reduce (void): forwarded by hand. */
#define HM_SELECT_HAS_JOB_MEM_REDUCE HM_SLURM_AT_LEAST(26, 5)

#endif
