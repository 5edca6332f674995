# The Global Coordinator: the engine (job table, decisions, AdminComment, state
# file) and the server thread, in one PIC convenience library the sched plugin
# links. What it shares with other processes (configuration, wire protocol,
# field tables, the agent's records, the status views) is src/common/.
HMCOORD_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/coordinator $(HM_COMMON_CPPFLAGS)
HMCOORD_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)

noinst_LTLIBRARIES += src/coordinator/libhmcoord.la
src_coordinator_libhmcoord_la_SOURCES = \
	src/coordinator/hm_coord.c src/coordinator/hm_coord.h \
	src/coordinator/hm_coord_comment.c \
	src/coordinator/hm_coord_index.c \
	src/coordinator/hm_coord_int.h \
	src/coordinator/hm_coord_leaders.c \
	src/coordinator/hm_coord_tier.c \
	src/coordinator/hm_coord_live.c \
	src/coordinator/hm_coord_nodes.c src/coordinator/hm_coord_nodes.h \
	src/coordinator/hm_coord_pace.c \
	src/coordinator/hm_coord_state.c \
	src/coordinator/hm_coord_sync.c \
	src/coordinator/hm_coord_view.c \
	src/coordinator/hm_coord_explain.c \
	src/coordinator/hm_coord_burst.c \
	src/coordinator/hm_coord_gpus.c \
	src/coordinator/hm_metrics.c src/coordinator/hm_metrics.h \
	src/coordinator/hm_metrics_http.c \
	src/coordinator/hm_server.c src/coordinator/hm_server.h \
	src/coordinator/hm_server_int.h src/coordinator/hm_server_io.h \
	src/coordinator/hm_server_admit.c \
	src/coordinator/hm_server_ops.c
src_coordinator_libhmcoord_la_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_coordinator_libhmcoord_la_CFLAGS = $(HMCOORD_CFLAGS)
src_coordinator_libhmcoord_la_LIBADD = $(JSONC_LIBS) $(PTHREAD_LIBS) -lm

# The usual set, each library before the ones it uses.
# No library twice: a shared object takes each listed one whole.
HMCOORD_LIBS = src/coordinator/libhmcoord.la src/common/libhmstatus.la src/common/libhmagentwire.la \
	src/common/libhmclient.la src/common/libhmfields.la $(HM_POLICY_LIBS)

# Unit tests (munge-dependent ones skip with a message when munged is not running).
UNIT_TESTS += \
	tests/unit/test_coord \
	tests/unit/test_coord_sync \
	tests/unit/test_coord_nodes \
	tests/unit/test_coord_burst \
	tests/unit/test_coord_leaders \
	tests/unit/test_coord_live \
	tests/unit/test_server \
	tests/unit/test_server_agent \
	tests/unit/test_server_admit \
	tests/unit/test_server_queue \
	tests/unit/test_coord_hw \
	tests/unit/test_coord_pace \
	tests/unit/test_server_liveness \
	tests/unit/test_coord_planes \
	tests/unit/test_coord_index \
	tests/unit/test_coord_unlocked
tests_unit_test_coord_unlocked_SOURCES = tests/unit/test_coord_unlocked.c tests/unit/coord_fixture.h
tests_unit_test_coord_index_SOURCES = tests/unit/test_coord_index.c tests/unit/coord_fixture.h
tests_unit_test_coord_planes_SOURCES = tests/unit/test_coord_planes.c tests/unit/coord_fixture.h
tests_unit_test_coord_pace_SOURCES = tests/unit/test_coord_pace.c tests/unit/coord_fixture.h \
	tests/unit/policies_fixture.h
tests_unit_test_coord_hw_SOURCES = tests/unit/test_coord_hw.c tests/unit/coord_fixture.h
tests_unit_test_coord_SOURCES = tests/unit/test_coord.c tests/unit/coord_fixture.h
tests_unit_test_server_agent_SOURCES = tests/unit/test_server_agent.c tests/unit/coord_fixture.h \
	tests/unit/server_fixture.h \
	tests/unit/munge_fixture.h
tests_unit_test_coord_nodes_SOURCES = tests/unit/test_coord_nodes.c tests/unit/coord_fixture.h
tests_unit_test_coord_burst_SOURCES = tests/unit/test_coord_burst.c tests/unit/coord_fixture.h
tests_unit_test_coord_leaders_SOURCES = tests/unit/test_coord_leaders.c tests/unit/coord_fixture.h
tests_unit_test_coord_sync_SOURCES = tests/unit/test_coord_sync.c tests/unit/coord_fixture.h
tests_unit_test_coord_live_SOURCES = tests/unit/test_coord_live.c tests/unit/coord_fixture.h
tests_unit_test_server_SOURCES = tests/unit/test_server.c tests/unit/coord_fixture.h \
	tests/unit/munge_fixture.h tests/unit/server_fixture.h
tests_unit_test_server_liveness_SOURCES = tests/unit/test_server_liveness.c \
	tests/unit/coord_fixture.h tests/unit/munge_fixture.h tests/unit/server_fixture.h
tests_unit_test_server_admit_SOURCES = tests/unit/test_server_admit.c tests/unit/coord_fixture.h \
	tests/unit/munge_fixture.h tests/unit/server_fixture.h
tests_unit_test_server_queue_SOURCES = tests/unit/test_server_queue.c
EXTRA_DIST += tests/fixtures/coord

dist_man_MANS += docs/man/harmonics.8 docs/man/harmonicsctl.1

# harmonicsctl end to end against a coordinator outside Slurm.
check_PROGRAMS += tests/unit/coord_serve
tests_unit_coord_serve_SOURCES = tests/unit/coord_serve.c tests/unit/coord_fixture.h
tests_unit_coord_serve_LDADD = $(HMCOORD_LIBS)
TESTS += tests/unit/harmonicsctl_e2e.sh
EXTRA_DIST += tests/unit/harmonicsctl_e2e.sh tests/unit/coord_serve_e2e.sh
TESTS += tests/unit/metrics_e2e.sh
EXTRA_DIST += tests/unit/metrics_e2e.sh contrib/grafana/harmonics.json

# Timing of decisions and of a register round trip (not a test: prints numbers).
noinst_PROGRAMS += tests/coord/coord_bench
tests_coord_coord_bench_SOURCES = tests/coord/coord_bench.c tests/unit/coord_fixture.h
tests_coord_coord_bench_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_coord_coord_bench_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_coord_coord_bench_LDADD = $(HMCOORD_LIBS)

# The metrics over a short run of the engine (not a test: a table for
# scripts/metrics-plot.sh, docs/metrics.md).
noinst_PROGRAMS += tests/coord/metrics_run
tests_coord_metrics_run_SOURCES = tests/coord/metrics_run.c tests/unit/coord_fixture.h
tests_coord_metrics_run_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_coord_metrics_run_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_coord_metrics_run_LDADD = $(HMCOORD_LIBS) -lm

# One epoch round with a leader per rack against one coordinator, 16 to 1,024
# racks (not a test: prints numbers; docs/eval/tiers-measured.md).
# make tests/bench/bench_tiers && tests/bench/bench_tiers   (needs munged)
noinst_PROGRAMS += tests/bench/bench_tiers
tests_bench_bench_tiers_SOURCES = tests/bench/bench_tiers.c
tests_bench_bench_tiers_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_bench_bench_tiers_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_bench_bench_tiers_LDADD = $(HMCOORD_LIBS) -lm

# The coordinator under load and attack (issue 28 item 6): 1,024 agents, 10,000
# jobs, hostile connections and one user's registration flood; prints numbers.
# tests/load/coord_load.sh [--short | coord_load options]   (root; starts a private munged)
check_PROGRAMS += tests/load/coord_load
tests_load_coord_load_SOURCES = tests/load/coord_load.c tests/load/load_cluster.c tests/load/load_cluster.h
tests_load_coord_load_CPPFLAGS = $(HMCOORD_CPPFLAGS)
tests_load_coord_load_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_load_coord_load_LDADD = $(HMCOORD_LIBS) -lm
TESTS += tests/load/coord_load_short.sh
EXTRA_DIST += tests/load/coord_load.sh tests/load/coord_load_short.sh tests/load/ctld_load.sh \
	tests/load/ctld_load_short.sh
