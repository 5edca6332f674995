# The coordinator's side of Slurm, in three PIC convenience libraries by who
# needs what (like libharmonics' libraries, they link none of ours):
#   libhmfields  the field tables that drive every record's JSON both ways
#                (hm_fields) and the lenient member readers (hm_json); json-c
#                only: harmonics-emujob's output links it too.
#   libhmclient  what talks to the coordinator: harmonics.conf, the wire protocol
#                (json-c + munge), one request (client), logging, the mode and
#                profile checks, the assignment on the wire. The SPANK plugin
#                links it alone (with libhmfields, libhmjob, libhmcore): no
#                policy, no engine.
#   libhmstatus  the status views in JSON: the server writes them, harmonicsctl
#                reads them.
#   libhmcoord   the engine (job table, decisions, AdminComment, state file) and
#                the server thread: the sched plugin.
HMCOORD_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/coordinator -I$(top_srcdir)/src/agent
HMCOORD_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)

noinst_LTLIBRARIES += src/coordinator/libhmfields.la
src_coordinator_libhmfields_la_SOURCES = \
	src/coordinator/hm_fields.c src/coordinator/hm_fields.h \
	src/coordinator/hm_json.c src/coordinator/hm_json.h
src_coordinator_libhmfields_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_coordinator_libhmfields_la_CFLAGS = $(HMCOORD_CFLAGS)
src_coordinator_libhmfields_la_LIBADD = $(JSONC_LIBS)

noinst_LTLIBRARIES += src/coordinator/libhmclient.la
src_coordinator_libhmclient_la_SOURCES = \
	src/coordinator/hm_assign.c src/coordinator/hm_assign.h \
	src/coordinator/hm_client.c src/coordinator/hm_client.h \
	src/coordinator/hm_conf.c src/coordinator/hm_conf.h \
	src/coordinator/hm_log.c src/coordinator/hm_log.h \
	src/coordinator/hm_proto.c src/coordinator/hm_proto.h \
	src/coordinator/hm_spec.c src/coordinator/hm_spec.h
src_coordinator_libhmclient_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_coordinator_libhmclient_la_CFLAGS = $(HMCOORD_CFLAGS)
src_coordinator_libhmclient_la_LIBADD = $(JSONC_LIBS) $(MUNGE_LIBS)

noinst_LTLIBRARIES += src/coordinator/libhmstatus.la
src_coordinator_libhmstatus_la_SOURCES = \
	src/coordinator/hm_coord_json.c src/coordinator/hm_coord_json.h \
	src/coordinator/hm_node_json.c src/coordinator/hm_node_json.h
src_coordinator_libhmstatus_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_coordinator_libhmstatus_la_CFLAGS = $(HMCOORD_CFLAGS)
src_coordinator_libhmstatus_la_LIBADD = $(JSONC_LIBS)

noinst_LTLIBRARIES += src/coordinator/libhmcoord.la
src_coordinator_libhmcoord_la_SOURCES = \
	src/coordinator/hm_coord.c src/coordinator/hm_coord.h \
	src/coordinator/hm_coord_comment.c \
	src/coordinator/hm_coord_int.h \
	src/coordinator/hm_coord_leaders.c \
	src/coordinator/hm_coord_tier.c \
	src/coordinator/hm_coord_live.c \
	src/coordinator/hm_coord_nodes.c src/coordinator/hm_coord_nodes.h \
	src/coordinator/hm_coord_state.c \
	src/coordinator/hm_coord_sync.c \
	src/coordinator/hm_coord_view.c \
	src/coordinator/hm_server.c src/coordinator/hm_server.h \
	src/coordinator/hm_server_int.h \
	src/coordinator/hm_server_ops.c
src_coordinator_libhmcoord_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_coordinator_libhmcoord_la_CFLAGS = $(HMCOORD_CFLAGS)
src_coordinator_libhmcoord_la_LIBADD = $(JSONC_LIBS) $(PTHREAD_LIBS) -lm

# The usual sets, each library before the ones it uses.
HMCLIENT_LIBS = src/coordinator/libhmclient.la src/coordinator/libhmfields.la $(HM_JOB_LIBS)
HMCOORD_LIBS = src/coordinator/libhmcoord.la src/coordinator/libhmstatus.la src/agent/libhmagentwire.la \
	src/coordinator/libhmclient.la src/coordinator/libhmfields.la $(HM_POLICY_LIBS)

# The client libraries link alone into a shared object (the SPANK plugin, the
# node agent): every symbol resolved without the engine or the policies.
check_LTLIBRARIES += tests/unit/libclient_alone.la
tests_unit_libclient_alone_la_SOURCES = tests/unit/client_alone.c
tests_unit_libclient_alone_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_unit_libclient_alone_la_LDFLAGS = -module -avoid-version -rpath /nowhere -Wl,--no-undefined
tests_unit_libclient_alone_la_LIBADD = $(HMCLIENT_LIBS)

# Unit tests (munge-dependent ones skip with a message when munged is not running).
UNIT_TESTS += \
	tests/unit/test_assign \
	tests/unit/test_fields \
	tests/unit/test_conf \
	tests/unit/test_proto \
	tests/unit/test_coord \
	tests/unit/test_coord_sync \
	tests/unit/test_coord_nodes \
	tests/unit/test_coord_leaders \
	tests/unit/test_coord_live \
	tests/unit/test_server \
	tests/unit/test_server_agent
tests_unit_test_assign_SOURCES = tests/unit/test_assign.c
tests_unit_test_fields_SOURCES = tests/unit/test_fields.c
tests_unit_test_conf_SOURCES = tests/unit/test_conf.c
tests_unit_test_proto_SOURCES = tests/unit/test_proto.c tests/unit/munge_fixture.h
tests_unit_test_coord_SOURCES = tests/unit/test_coord.c tests/unit/coord_fixture.h
tests_unit_test_server_agent_SOURCES = tests/unit/test_server_agent.c tests/unit/coord_fixture.h \
	tests/unit/server_fixture.h \
	tests/unit/munge_fixture.h
tests_unit_test_coord_nodes_SOURCES = tests/unit/test_coord_nodes.c tests/unit/coord_fixture.h
tests_unit_test_coord_leaders_SOURCES = tests/unit/test_coord_leaders.c tests/unit/coord_fixture.h
tests_unit_test_coord_sync_SOURCES = tests/unit/test_coord_sync.c tests/unit/coord_fixture.h
tests_unit_test_coord_live_SOURCES = tests/unit/test_coord_live.c tests/unit/coord_fixture.h
tests_unit_test_server_SOURCES = tests/unit/test_server.c tests/unit/coord_fixture.h \
	tests/unit/munge_fixture.h tests/unit/server_fixture.h
EXTRA_DIST += tests/fixtures/coord

dist_man_MANS += docs/man/harmonics.conf.5 docs/man/harmonics.8 docs/man/harmonicsctl.1

# harmonicsctl end to end against a coordinator outside Slurm.
check_PROGRAMS += tests/unit/coord_serve
tests_unit_coord_serve_SOURCES = tests/unit/coord_serve.c tests/unit/coord_fixture.h
tests_unit_coord_serve_LDADD = $(HMCOORD_LIBS)
TESTS += tests/unit/harmonicsctl_e2e.sh
EXTRA_DIST += tests/unit/harmonicsctl_e2e.sh

# Timing of decisions and of a register round trip (not a test: prints numbers).
noinst_PROGRAMS += tests/coord/coord_bench
tests_coord_coord_bench_SOURCES = tests/coord/coord_bench.c tests/unit/coord_fixture.h
tests_coord_coord_bench_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_coord_coord_bench_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_coord_coord_bench_LDADD = $(HMCOORD_LIBS)

# One epoch round with a leader per rack against one coordinator, 16 to 1,024
# racks (not a test: prints numbers; docs/eval/tiers-measured.md).
# make tests/bench/bench_tiers && tests/bench/bench_tiers   (needs munged)
noinst_PROGRAMS += tests/bench/bench_tiers
tests_bench_bench_tiers_SOURCES = tests/bench/bench_tiers.c
tests_bench_bench_tiers_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_bench_bench_tiers_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_bench_bench_tiers_LDADD = $(HMCOORD_LIBS) -lm
