# Pacing runtime (libharmonics-pace), NCCL interposer (libharmonics-nccl.so),
# harmonics-emujob (built as src/tools/harmonics-emujob, beside the other tools) and their tests.

# ---- libharmonics-pace: installed, exports hm_pace_* only --------------------
# It links libhmparse alone (not the whole libharmonics) so that training
# processes do not pull json-c/hwloc; the version script keeps it hidden.
lib_LTLIBRARIES += src/pace/libharmonics-pace.la
include_HEADERS = src/pace/hm_pace.h src/pace/hm_pace_env.h
src_pace_libharmonics_pace_la_SOURCES = \
	src/pace/hm_pace.h \
	src/pace/hm_pace_env.h \
	src/pace/pace.c \
	src/pace/pace_internal.h \
	src/pace/pace_report.c
src_pace_libharmonics_pace_la_CFLAGS = $(AM_CFLAGS)
src_pace_libharmonics_pace_la_LIBADD = src/pace/libhmpaceassign.la $(HM_PARSE_LIBS) -lm
# 1:0:0: slot ids became times (a meaning change) and hm_pace_stats_t grew.
# 3:0:1: hm_pace_plan_shared and hm_pace_set_nccl_class added (soname unchanged).
# 4:0:2: hm_pace_burst_measured added (soname unchanged).
src_pace_libharmonics_pace_la_LDFLAGS = -version-info 4:0:2 \
	-Wl,--version-script=$(srcdir)/src/pace/libharmonics-pace.sym
EXTRA_src_pace_libharmonics_pace_la_DEPENDENCIES = src/pace/libharmonics-pace.sym
EXTRA_DIST += src/pace/libharmonics-pace.sym

# ---- the runtime's parser of assign files: the runtime, its tests and the node
# agent (which checks every file it writes with it) link it, with libhmparse.
noinst_LTLIBRARIES += src/pace/libhmpaceassign.la
src_pace_libhmpaceassign_la_SOURCES = src/pace/pace_assign.c src/pace/pace_assign.h

# ---- the node agent's reader of report files: a convenience library ------------
# Not the runtime: the agent (and tests) link it with libhmparse.
noinst_LTLIBRARIES += src/pace/libharmonics-pace-report.la
src_pace_libharmonics_pace_report_la_SOURCES = \
	src/pace/pace_report_read.c src/pace/pace_report_read.h
src_pace_libharmonics_pace_report_la_LIBADD = -lm

# ---- unit tests ----------------------------------------------------------------
# test_pace links the library's internals (assignment parser, and the parse
# helpers it needs) ahead of the runtime itself, whose version script hides
# them; neither test needs the rest of libharmonics.
PACE_TEST_LDADD = src/pace/libhmpaceassign.la $(HM_PARSE_LIBS) src/pace/libharmonics-pace.la \
	$(CMOCKA_LIBS) -lm
UNIT_TESTS += tests/unit/test_pace tests/unit/test_pace_align tests/unit/test_pace_switch
tests_unit_test_pace_SOURCES = tests/unit/test_pace.c tests/unit/pace_fixture.h
tests_unit_test_pace_LDADD = $(PACE_TEST_LDADD)
tests_unit_test_pace_switch_SOURCES = tests/unit/test_pace_switch.c tests/unit/pace_fixture.h
tests_unit_test_pace_switch_LDADD = $(PACE_TEST_LDADD)
UNIT_TESTS += tests/unit/test_pace_report_read
tests_unit_test_pace_report_read_SOURCES = tests/unit/test_pace_report_read.c \
	tests/unit/pace_fixture.h
tests_unit_test_pace_report_read_LDADD = src/pace/libharmonics-pace-report.la \
	$(PACE_TEST_LDADD)
# One slot for all ranks of a collective (the interposer's shared plan).
check_PROGRAMS += tests/pace/test_plan_shared
TESTS += tests/pace/test_plan_shared
tests_pace_test_plan_shared_SOURCES = tests/pace/test_plan_shared.c
tests_pace_test_plan_shared_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace
tests_pace_test_plan_shared_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_pace_test_plan_shared_LDADD = $(PACE_TEST_LDADD)
# The class -> NCCL knob mapping needs no NCCL: tested whether or not the interposer is built.
UNIT_TESTS += tests/unit/test_nccl_class
tests_unit_test_nccl_class_SOURCES = tests/unit/test_nccl_class.c src/pace/nccl/nccl_class.c \
	src/pace/nccl/nccl_class.h
tests_unit_test_pace_align_SOURCES = tests/unit/test_pace_align.c
tests_unit_test_pace_align_LDADD = $(PACE_TEST_LDADD)

# ---- NCCL interposer: built against the real nccl.h when configure found it ------
if HAVE_NCCL
lib_LTLIBRARIES += src/pace/libharmonics-nccl.la
src_pace_libharmonics_nccl_la_SOURCES = \
	src/pace/nccl/nccl_class.c src/pace/nccl/nccl_class.h \
	src/pace/nccl/nccl_comm.c src/pace/nccl/nccl_comm.h \
	src/pace/nccl/nccl_hold.c src/pace/nccl/nccl_hold.h \
	src/pace/nccl/nccl_interpose.c \
	src/pace/nccl/nccl_real.c src/pace/nccl/nccl_real.h
src_pace_libharmonics_nccl_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace $(NCCL_CPPFLAGS)
src_pace_libharmonics_nccl_la_CFLAGS = $(AM_CFLAGS)
src_pace_libharmonics_nccl_la_LIBADD = src/pace/libharmonics-pace.la $(HM_PARSE_LIBS) -ldl
src_pace_libharmonics_nccl_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,-z,defs -Wl,--version-script=$(srcdir)/src/pace/nccl/libharmonics-nccl.sym
EXTRA_src_pace_libharmonics_nccl_la_DEPENDENCIES = src/pace/nccl/libharmonics-nccl.sym

# STAND-IN NCCL/CUDA library: tests only, never installed (tests/pace/standin.h).
check_LTLIBRARIES += tests/pace/libstandin_nccl_cuda.la
tests_pace_libstandin_nccl_cuda_la_SOURCES = tests/pace/standin_nccl.c tests/pace/standin.h \
	tests/pace/standin_comm.c tests/pace/standin_comm.h
tests_pace_libstandin_nccl_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS)
tests_pace_libstandin_nccl_cuda_la_LDFLAGS = -shared -avoid-version -rpath $(abs_builddir)/tests/pace

check_PROGRAMS += tests/pace/test_nccl_interposer
# nccl_class.c is compiled in to compute the traffic class the interposer should forward.
tests_pace_test_nccl_interposer_SOURCES = tests/pace/test_nccl_interposer.c \
	src/pace/nccl/nccl_class.c
tests_pace_test_nccl_interposer_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace \
	-I$(top_srcdir)/src/pace/nccl -I$(top_srcdir)/tests/pace $(NCCL_CPPFLAGS)
tests_pace_test_nccl_interposer_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_pace_test_nccl_interposer_LDADD = tests/pace/libstandin_nccl_cuda.la \
	src/pace/libharmonics-pace.la $(CMOCKA_LIBS) -ldl
# Runs the test binary under LD_PRELOAD of the interposer (lib_LTLIBRARIES: built by all).
TESTS += tests/pace/nccl_preload.sh

# NCCL out of dlsym(RTLD_NEXT)'s sight: the stand-in again, named libnccl.so.2 and
# older than nccl.h (STANDIN_OLD_NCCL), a dependency of an "extension" that
# test_nccl_local dlopens RTLD_LOCAL (tests/pace/nccl_local_ext.h).
check_LTLIBRARIES += tests/pace/localnccl/libnccl.la tests/pace/nccl_local_ext.la
tests_pace_localnccl_libnccl_la_SOURCES = tests/pace/standin_nccl.c tests/pace/standin.h \
	tests/pace/standin_comm.c tests/pace/standin_comm.h
tests_pace_localnccl_libnccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS) -DSTANDIN_OLD_NCCL
tests_pace_localnccl_libnccl_la_LDFLAGS = -shared -version-info 2:0:0 \
	-rpath $(abs_builddir)/tests/pace/localnccl
tests_pace_nccl_local_ext_la_SOURCES = tests/pace/nccl_local_ext.c tests/pace/nccl_local_ext.h
tests_pace_nccl_local_ext_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/pace $(NCCL_CPPFLAGS)
tests_pace_nccl_local_ext_la_LDFLAGS = -module -shared -avoid-version -rpath $(abs_builddir)/tests/pace
tests_pace_nccl_local_ext_la_LIBADD = tests/pace/localnccl/libnccl.la
check_PROGRAMS += tests/pace/test_nccl_local
tests_pace_test_nccl_local_SOURCES = tests/pace/test_nccl_local.c
tests_pace_test_nccl_local_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/pace $(NCCL_CPPFLAGS)
tests_pace_test_nccl_local_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_pace_test_nccl_local_LDADD = $(CMOCKA_LIBS) -ldl
TESTS += tests/pace/nccl_local.sh
# A stand-in 2-D parallel job (TP within a node, DP across nodes) over the old
# stand-in libnccl.so.2: run through Slurm by tests/slurm/nccl_standin.sh and
# locally by tests/pace/nccl_job_local.sh.
check_PROGRAMS += tests/pace/nccl_job
tests_pace_nccl_job_SOURCES = tests/pace/nccl_job.c
tests_pace_nccl_job_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/pace $(NCCL_CPPFLAGS)
tests_pace_nccl_job_LDADD = tests/pace/localnccl/libnccl.la -ldl
TESTS += tests/pace/nccl_job_local.sh
endif
EXTRA_DIST += src/pace/nccl/libharmonics-nccl.sym tests/pace/nccl_preload.sh \
	tests/pace/nccl_local.sh tests/pace/nccl_job_local.sh tests/pace/nccl_job_check.sh \
	tests/slurm/nccl_standin.sh

# ---- NCCL profiler plugin: needs no NCCL header (nprof_abi.h), always built ----
# NCCL dlopens it by NCCL_PROFILER_PLUGIN (the SPANK plugin sets the full path).
lib_LTLIBRARIES += src/pace/libnccl-profiler-harmonics.la
src_pace_libnccl_profiler_harmonics_la_SOURCES = \
	src/pace/nccl/profiler/nprof_abi.h \
	src/pace/nccl/profiler/nprof_burst.c src/pace/nccl/profiler/nprof_burst.h \
	src/pace/nccl/profiler/nprof_chain.c src/pace/nccl/profiler/nprof_chain.h \
	src/pace/nccl/profiler/nprof_plugin.c
src_pace_libnccl_profiler_harmonics_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace
src_pace_libnccl_profiler_harmonics_la_CFLAGS = $(AM_CFLAGS)
src_pace_libnccl_profiler_harmonics_la_LIBADD = src/pace/libharmonics-pace.la $(HM_PARSE_LIBS) -ldl
src_pace_libnccl_profiler_harmonics_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,-z,defs -Wl,--version-script=$(srcdir)/src/pace/nccl/profiler/libnccl-profiler-harmonics.sym
EXTRA_src_pace_libnccl_profiler_harmonics_la_DEPENDENCIES = \
	src/pace/nccl/profiler/libnccl-profiler-harmonics.sym
EXTRA_DIST += src/pace/nccl/profiler/libnccl-profiler-harmonics.sym
# STAND-IN chained profiler plugin (the user's own), tests only, never installed.
check_LTLIBRARIES += tests/pace/libnccl-profiler-standin.la
tests_pace_libnccl_profiler_standin_la_SOURCES = tests/pace/standin_profiler.c \
	tests/pace/standin_profiler.h
tests_pace_libnccl_profiler_standin_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/src/pace/nccl/profiler
tests_pace_libnccl_profiler_standin_la_LDFLAGS = -module -shared -avoid-version \
	-rpath $(abs_builddir)/tests/pace
check_PROGRAMS += tests/pace/test_nccl_profiler
tests_pace_test_nccl_profiler_SOURCES = tests/pace/test_nccl_profiler.c
tests_pace_test_nccl_profiler_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace \
	-I$(top_srcdir)/src/pace/nccl/profiler -I$(top_srcdir)/tests/pace
tests_pace_test_nccl_profiler_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_pace_test_nccl_profiler_LDADD = src/pace/libharmonics-pace.la $(CMOCKA_LIBS) -ldl
TESTS += tests/pace/nccl_profiler.sh
EXTRA_DIST += tests/pace/nccl_profiler.sh

# ---- harmonics-emujob: the emulated training job over the runtime -------------
bin_PROGRAMS += src/tools/harmonics-emujob
src_tools_harmonics_emujob_SOURCES = \
	src/pace/emujob/harmonics-emujob.c \
	src/pace/emujob/ej.h \
	src/pace/emujob/ej_net.c \
	src/pace/emujob/ej_opts.c \
	src/pace/emujob/ej_run.c
src_tools_harmonics_emujob_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace \
	-I$(top_srcdir)/src/pace/emujob $(HM_COMMON_CPPFLAGS)
src_tools_harmonics_emujob_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonics_emujob_LDADD = src/pace/libharmonics-pace.la src/common/libhmfields.la \
	$(HM_JOB_LIBS) $(JSONC_LIBS) -lm

# Loopback end-to-end: checked all-reduce, JSON, paced slots, reports, strict options.
TESTS += tests/pace/emujob_local.sh
EXTRA_DIST += tests/pace/emujob_local.sh
dist_man_MANS += docs/man/harmonics-emujob.1

# Root-only network-namespace test and the GPU check: the lead's scripts/check.sh
# runs tests/emulation/netns_stagger.sh BUILDDIR; tests/gpu/check_nccl_gpu.sh on a GPU.
EXTRA_DIST += tests/emulation/netns_stagger.sh tests/emulation/run.sh tests/pace/run.sh \
	tests/gpu/check_nccl_gpu.sh \
	tests/gpu/nccl_paced.c tests/pace/standin.h tests/pace/fuzz.sh tests/pace/fuzz_pace_assign.c \
	tests/pace/fuzz_pace_report.c
