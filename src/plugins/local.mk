# Slurm plugins: harmonics.so (SPANK), sched_harmonics.so, select_harmonics_cons_tres.so.
# Each links the convenience libraries it needs (their objects are copied in) and
# exports only its plugin symbols (version scripts). Slurm symbols resolve at
# dlopen time against the loading daemon or libslurmfull, so nothing is linked.
slurmplugindir = $(SLURM_PLUGINDIR)
slurmplugin_LTLIBRARIES =
PLUGIN_LDFLAGS = -module -avoid-version -shared

EXTRA_DIST += src/plugins/spank/harmonics_spank.sym src/plugins/sched/sched_harmonics.sym \
	src/plugins/select/select_harmonics.sym src/plugins/jobsubmit/job_submit_harmonics.sym

# The Slurm-side contract the plugins share (job-control environment keys, the
# PluginDir loader), without Slurm: unit-tested.
PLUGIN_COMMON_CPPFLAGS = -I$(top_srcdir)/src/plugins/common
noinst_LTLIBRARIES += src/plugins/common/libhmplugin.la
src_plugins_common_libhmplugin_la_SOURCES = src/plugins/common/hm_plugin.c \
	src/plugins/common/hm_plugin.h
src_plugins_common_libhmplugin_la_LIBADD = -ldl

# sched/harmonics' side of the live view (hm_live.h), without Slurm: unit-tested.
noinst_LTLIBRARIES += src/plugins/sched/libhmlivepub.la
src_plugins_sched_libhmlivepub_la_SOURCES = src/plugins/sched/hm_live_pub.c \
	src/plugins/sched/hm_live_pub.h src/plugins/common/hm_live.h
src_plugins_sched_libhmlivepub_la_CPPFLAGS = $(HMCOORD_CPPFLAGS) \
	$(PLUGIN_COMMON_CPPFLAGS)
src_plugins_sched_libhmlivepub_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)

UNIT_TESTS += tests/unit/test_live_pub
tests_unit_test_live_pub_SOURCES = tests/unit/test_live_pub.c tests/unit/coord_fixture.h
tests_unit_test_live_pub_CPPFLAGS = $(AM_CPPFLAGS) $(UNIT_CPPFLAGS) -I$(top_srcdir)/src/plugins/sched
tests_unit_test_live_pub_LDADD = src/plugins/sched/libhmlivepub.la $(LDADD)

# sched/harmonics' coordinator, enabled or disabled with the cause (fail-open
# start and reconfigure), without Slurm: unit-tested.
noinst_LTLIBRARIES += src/plugins/sched/libhmschedrun.la
src_plugins_sched_libhmschedrun_la_SOURCES = src/plugins/sched/hm_sched_run.c \
	src/plugins/sched/hm_sched_run.h
src_plugins_sched_libhmschedrun_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_plugins_sched_libhmschedrun_la_CFLAGS = $(HMCOORD_CFLAGS) $(PTHREAD_CFLAGS)

UNIT_TESTS += tests/unit/test_sched_run
tests_unit_test_sched_run_SOURCES = tests/unit/test_sched_run.c tests/unit/coord_fixture.h \
	tests/unit/munge_fixture.h
tests_unit_test_sched_run_CPPFLAGS = $(AM_CPPFLAGS) $(UNIT_CPPFLAGS) -I$(top_srcdir)/src/plugins/sched
tests_unit_test_sched_run_LDADD = src/plugins/sched/libhmschedrun.la $(LDADD)

# select/harmonics_cons_tres' decisions without Slurm (plan, overlay, AdminComment).
noinst_LTLIBRARIES += src/plugins/select/libhmselect.la
src_plugins_select_libhmselect_la_SOURCES = src/plugins/select/hm_select.c \
	src/plugins/select/hm_select.h
src_plugins_select_libhmselect_la_CPPFLAGS = $(AM_CPPFLAGS) $(PLUGIN_COMMON_CPPFLAGS)

UNIT_TESTS += tests/unit/test_select
tests_unit_test_select_SOURCES = tests/unit/test_select.c tests/unit/job_topo_fixture.h
tests_unit_test_select_CPPFLAGS = $(AM_CPPFLAGS) $(UNIT_CPPFLAGS) -I$(top_srcdir)/src/plugins/select
tests_unit_test_select_LDADD = src/plugins/select/libhmselect.la $(LDADD)

# Time the select plugin adds per placement (prints numbers, not a test):
# make tests/bench/bench_place && tests/bench/bench_place
noinst_PROGRAMS += tests/bench/bench_place
tests_bench_bench_place_SOURCES = tests/bench/bench_place.c
tests_bench_bench_place_CPPFLAGS = $(AM_CPPFLAGS) $(PLUGIN_COMMON_CPPFLAGS) \
	-I$(top_srcdir)/src/plugins/select
tests_bench_bench_place_LDADD = src/plugins/select/libhmselect.la $(HM_PLACE_LIBS) -lm

UNIT_TESTS += tests/unit/test_plugin
tests_unit_test_plugin_SOURCES = tests/unit/test_plugin.c
# The module test_plugin loads through a PluginDir list.
check_LTLIBRARIES += tests/unit/plugin_probe.la
tests_unit_plugin_probe_la_SOURCES = tests/unit/plugin_probe.c
tests_unit_plugin_probe_la_LDFLAGS = -module -avoid-version -rpath /nowhere

# Slurm-free option logic of the SPANK plugin, unit-tested.
noinst_LTLIBRARIES += src/plugins/spank/libhmspankopts.la
src_plugins_spank_libhmspankopts_la_SOURCES = src/plugins/spank/hm_spank_opts.c \
	src/plugins/spank/hm_spank_opts.h \
	src/plugins/spank/hm_spank_preload.c \
	src/plugins/spank/hm_spank_preload.h \
	src/plugins/spank/hm_spank_dir.c \
	src/plugins/spank/hm_spank_dir.h \
	src/plugins/spank/hm_spank_slurmuser.c \
	src/plugins/spank/hm_spank_slurmuser.h
src_plugins_spank_libhmspankopts_la_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS) \
	$(PLUGIN_COMMON_CPPFLAGS)

UNIT_TESTS += tests/unit/test_spank_opts
tests_unit_test_spank_opts_SOURCES = tests/unit/test_spank_opts.c
UNIT_TESTS += tests/unit/test_spank_dir
tests_unit_test_spank_dir_SOURCES = tests/unit/test_spank_dir.c

if HAVE_SPANK
# The NCCL runtime the plugin preloads into --comm-sched tasks: the installed
# libharmonics-nccl.so, none when it is not built (no nccl.h at configure time).
if HAVE_NCCL
HM_NCCL_PRELOAD = $(libdir)/libharmonics-nccl.so
else
HM_NCCL_PRELOAD =
endif
slurmplugin_LTLIBRARIES += src/plugins/spank/harmonics.la
src_plugins_spank_harmonics_la_SOURCES = \
	src/plugins/spank/harmonics_spank.c \
	src/plugins/spank/spank_conf.c \
	src/plugins/spank/spank_plugin.h \
	src/plugins/spank/spank_compat.h \
	src/plugins/spank/spank_preload.c \
	src/plugins/spank/spank_slurmd.c \
	src/plugins/spank/spank_step.c \
	src/plugins/spank/spank_submit.c
src_plugins_spank_harmonics_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) \
	$(HM_COMMON_CPPFLAGS) -I$(top_srcdir)/src/pace -I$(top_srcdir)/src/agent \
	$(PLUGIN_COMMON_CPPFLAGS) -DHM_AGENT_PATH='"$(pkglibdir)/harmonics_agent.so"' \
	-DHM_NCCL_PRELOAD_PATH='"$(HM_NCCL_PRELOAD)"' \
	-DHM_NCCL_PROFILER_PATH='"$(libdir)/libnccl-profiler-harmonics.so"'
src_plugins_spank_harmonics_la_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_plugins_spank_harmonics_la_LDFLAGS = $(PLUGIN_LDFLAGS) \
	-Wl,--version-script=$(top_srcdir)/src/plugins/spank/harmonics_spank.sym
# The client side only: no engine, no policy, no simulator (nm shows none).
src_plugins_spank_harmonics_la_LIBADD = src/plugins/spank/libhmspankopts.la $(HMCLIENT_LIBS) -ldl
EXTRA_src_plugins_spank_harmonics_la_DEPENDENCIES = src/plugins/spank/harmonics_spank.sym
endif

if HAVE_SLURM_SOURCE
# Compiled against the configured Slurm tree (its config.h, internal headers).
SLURM_PLUGIN_CPPFLAGS = $(SLURM_SRC_CPPFLAGS) $(HM_LIB_CPPFLAGS) \
	-I$(top_srcdir)/src/coordinator $(HM_COMMON_CPPFLAGS) $(PLUGIN_COMMON_CPPFLAGS) -DHM_SLURM_VERSION_BUILT='"$(SLURM_VERSION_BUILT)"' \
	-DHM_VERSION='"$(PACKAGE_VERSION)"'
# The coordinator's Slurm side, in both plugins that can host it.
HM_CTLD_HOST_SOURCES = src/plugins/sched/hm_ctld_host.c src/plugins/sched/hm_ctld_host.h
HM_CTLD_HOST_LIBS = src/plugins/sched/libhmschedrun.la src/plugins/sched/libhmlivepub.la \
	src/plugins/common/libhmplugin.la $(HMCOORD_LIBS)

# job_submit/harmonics: the coordinator's host where SchedulerType stays
# sched/backfill (heterogeneous jobs).
slurmplugin_LTLIBRARIES += src/plugins/jobsubmit/job_submit_harmonics.la
src_plugins_jobsubmit_job_submit_harmonics_la_SOURCES = \
	src/plugins/jobsubmit/job_submit_harmonics.c $(HM_CTLD_HOST_SOURCES) \
	src/plugins/sched/hm_slurm_compat.c src/plugins/sched/hm_slurm_compat.h
src_plugins_jobsubmit_job_submit_harmonics_la_CPPFLAGS = $(SLURM_PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/src/plugins/sched
src_plugins_jobsubmit_job_submit_harmonics_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes
src_plugins_jobsubmit_job_submit_harmonics_la_LDFLAGS = $(PLUGIN_LDFLAGS) \
	-Wl,--version-script=$(top_srcdir)/src/plugins/jobsubmit/job_submit_harmonics.sym
src_plugins_jobsubmit_job_submit_harmonics_la_LIBADD = $(HM_CTLD_HOST_LIBS) -ldl
EXTRA_src_plugins_jobsubmit_job_submit_harmonics_la_DEPENDENCIES = \
	src/plugins/jobsubmit/job_submit_harmonics.sym

slurmplugin_LTLIBRARIES += src/plugins/sched/sched_harmonics.la
src_plugins_sched_sched_harmonics_la_SOURCES = src/plugins/sched/sched_harmonics.c \
	$(HM_CTLD_HOST_SOURCES) src/plugins/sched/hm_slurm_compat.c src/plugins/sched/hm_slurm_compat.h
src_plugins_sched_sched_harmonics_la_CPPFLAGS = $(SLURM_PLUGIN_CPPFLAGS)
src_plugins_sched_sched_harmonics_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes
src_plugins_sched_sched_harmonics_la_LDFLAGS = $(PLUGIN_LDFLAGS) \
	-Wl,--version-script=$(top_srcdir)/src/plugins/sched/sched_harmonics.sym
src_plugins_sched_sched_harmonics_la_LIBADD = src/plugins/sched/libhmschedrun.la \
	src/plugins/sched/libhmlivepub.la \
	src/plugins/common/libhmplugin.la $(HMCOORD_LIBS)
EXTRA_src_plugins_sched_sched_harmonics_la_DEPENDENCIES = src/plugins/sched/sched_harmonics.sym

slurmplugin_LTLIBRARIES += src/plugins/select/select_harmonics_cons_tres.la
src_plugins_select_select_harmonics_cons_tres_la_SOURCES = \
	src/plugins/select/select_harmonics_cons_tres.c \
	src/plugins/select/select_place.c src/plugins/select/select_place.h \
	src/plugins/select/select_compat.h \
	src/plugins/sched/hm_slurm_compat.c src/plugins/sched/hm_slurm_compat.h
src_plugins_select_select_harmonics_cons_tres_la_CPPFLAGS = $(SLURM_PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/src/plugins/sched
src_plugins_select_select_harmonics_cons_tres_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes
src_plugins_select_select_harmonics_cons_tres_la_LDFLAGS = $(PLUGIN_LDFLAGS) \
	-Wl,--version-script=$(top_srcdir)/src/plugins/select/select_harmonics.sym
# Placement without the engine or the policies: the score, traffic, topology.
src_plugins_select_select_harmonics_cons_tres_la_LIBADD = src/plugins/select/libhmselect.la \
	src/plugins/common/libhmplugin.la $(HM_PLACE_LIBS) -lm
EXTRA_src_plugins_select_select_harmonics_cons_tres_la_DEPENDENCIES = \
	src/plugins/select/select_harmonics.sym
endif

# Raw socket helper of the Slurm test tier (forged requests, a mute coordinator).
noinst_PROGRAMS += tests/slurm/hm_sockprobe
tests_slurm_hm_sockprobe_SOURCES = tests/slurm/hm_sockprobe.c
tests_slurm_hm_sockprobe_LDADD = $(HM_CORE_LIBS) $(MUNGE_LIBS)
EXTRA_DIST += tests/slurm/matrix.sh tests/slurm/run.sh tests/slurm/live.sh tests/slurm/leaders.sh tests/slurm/rejoin.sh tests/slurm/place.sh tests/slurm/failopen.sh tests/slurm/hetjob.sh tests/slurm/checks.sh tests/slurm/cluster.sh tests/slurm/README.md tests/slurm/jobs/batch_env.sh tests/slurm/jobs/preload_env.sh \
	tests/slurm/jobs/bad_directive.sh
EXTRA_DIST += tests/slurm/torch_live.sh
EXTRA_DIST += tests/slurm/site.sh tests/slurm/backup.sh tests/slurm/runtime.sh
EXTRA_DIST += tests/slurm/regress.sh
EXTRA_DIST += tests/slurm/topo_planes.sh
