# The node agent (issue 11): contract B's codec, the agent as a library, the
# shared object the SPANK plugin loads in slurmd (harmonics-agent, the standalone
# entry for tests, is in src/tools/local.mk).
# It links the client side (hm_proto, hm_conf, munge, json-c), the node reader
# (hwloc), the pace report reader and, for a rack's leader, the Local Scheduler
# with the model it needs (libhmmodel, which libtool takes whole into the shared
# object); never the coordinator's engine, the simulator or the other policies.

# Contract B's codec (libhmagentwire) is the shared layer's: src/common/.
AGENT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/agent $(HM_COMMON_CPPFLAGS) \
	-I$(top_srcdir)/src/pace
AGENT_LIBS = src/agent/libhmagent.la src/common/libhmagentwire.la \
	src/pace/libhmpaceassign.la src/pace/libharmonics-pace-report.la $(HM_TOPO_HWLOC_LIBS) \
	src/libharmonics/policy/libhmmodel.la src/libharmonics/placement/libhmplace.la \
	src/libharmonics/workload/libhmworkload.la src/libharmonics/topo/libhmtopo.la \
	$(HMCLIENT_LIBS) $(HWLOC_LIBS) -lm

# The agent (Slurm-free). It checks every assign file it writes with the
# runtime's own parser (src/pace/libhmpaceassign).
noinst_LTLIBRARIES += src/agent/libhmagent.la
src_agent_libhmagent_la_SOURCES = \
	src/agent/agent.h \
	src/agent/agent_conn.c src/agent/agent_conn.h \
	src/agent/agent_files.c src/agent/agent_files.h \
	src/agent/agent_jobs.c src/agent/agent_jobs.h \
	src/agent/agent_meas.c \
	src/agent/agent_metrics.c src/agent/agent_metrics.h \
	src/agent/agent_loop.c \
	src/agent/agent_rack.c src/agent/agent_rack.h \
	src/agent/agent_node.c \
	src/agent/agent_util.c \
	src/agent/hm_agent.h
src_agent_libhmagent_la_CPPFLAGS = $(AGENT_CPPFLAGS)
src_agent_libhmagent_la_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(HWLOC_CFLAGS)

# harmonics_agent.so: dlopen'ed by the SPANK plugin in slurmd; exports hm_agent.h only.
pkglib_LTLIBRARIES = src/agent/harmonics_agent.la
src_agent_harmonics_agent_la_SOURCES = src/agent/harmonics_agent.c
src_agent_harmonics_agent_la_CPPFLAGS = $(AGENT_CPPFLAGS)
src_agent_harmonics_agent_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
src_agent_harmonics_agent_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/src/agent/harmonics_agent.sym
src_agent_harmonics_agent_la_LIBADD = $(AGENT_LIBS)
EXTRA_src_agent_harmonics_agent_la_DEPENDENCIES = src/agent/harmonics_agent.sym
EXTRA_DIST += src/agent/harmonics_agent.sym


# ---- tests ----------------------------------------------------------------------
UNIT_TESTS += tests/unit/test_agent_files
tests_unit_test_agent_files_SOURCES = tests/unit/test_agent_files.c
UNIT_TESTS += tests/unit/test_agent_jobs
tests_unit_test_agent_jobs_SOURCES = tests/unit/test_agent_jobs.c
UNIT_TESTS += tests/unit/test_agent_metrics
tests_unit_test_agent_metrics_SOURCES = tests/unit/test_agent_metrics.c
UNIT_TESTS += tests/unit/test_agent_util
tests_unit_test_agent_util_SOURCES = tests/unit/test_agent_util.c
UNIT_TESTS += tests/unit/test_agent_rack
tests_unit_test_agent_rack_SOURCES = tests/unit/test_agent_rack.c tests/unit/munge_fixture.h

# End to end against a FAKE coordinator (real TCP, real munge), through the .so's ABI.
check_PROGRAMS += tests/agent/test_agent_live
TESTS += tests/agent/test_agent_live
tests_agent_test_agent_live_SOURCES = tests/agent/test_agent_live.c tests/agent/fake_coord.c \
	tests/agent/fake_coord.h
tests_agent_test_agent_live_CPPFLAGS = $(AGENT_CPPFLAGS)
tests_agent_test_agent_live_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_agent_test_agent_live_LDADD = $(HMCOORD_LIBS) -ldl
EXTRA_tests_agent_test_agent_live_DEPENDENCIES = src/agent/harmonics_agent.la
# Fuzzer of the agent's parsers (clang + libFuzzer): tests/agent/fuzz.sh [SECONDS].
EXTRA_DIST += tests/agent/fuzz.sh tests/agent/fuzz_agent_wire.c
# The layering: include folders and what the agent's shared object carries.
TESTS += tests/unit/layers.sh
EXTRA_DIST += tests/unit/layers.sh
# harmonics-agent (built by src/tools/local.mk) from the command line.
TESTS += tests/agent/agent_cli.sh
EXTRA_DIST += tests/agent/agent_cli.sh
