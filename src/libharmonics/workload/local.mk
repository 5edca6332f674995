# workload: training jobs, the model catalogue, traffic derivation, workloads
# (trace CSV, generator) and the default placement (hm_job.h).
# libhmjob is what a client needs to check a declared profile (hm_job.h);
# libhmworkload the rest.
noinst_LTLIBRARIES += src/libharmonics/workload/libhmjob.la
src_libharmonics_workload_libhmjob_la_SOURCES = \
	src/libharmonics/workload/hm_job.c src/libharmonics/workload/hm_job.h \
	src/libharmonics/workload/hm_job_int.h \
	src/libharmonics/workload/hm_catalogue.c
noinst_LTLIBRARIES += src/libharmonics/workload/libhmworkload.la
src_libharmonics_workload_libhmworkload_la_SOURCES = \
	src/libharmonics/workload/hm_traffic.c \
	src/libharmonics/workload/hm_burst_est.c src/libharmonics/workload/hm_burst_est.h \
	src/libharmonics/workload/hm_workload_csv.c \
	src/libharmonics/workload/hm_workload_gen.c \
	src/libharmonics/workload/hm_place.c

UNIT_TESTS += \
	tests/unit/test_job \
	tests/unit/test_traffic \
	tests/unit/test_burst_est \
	tests/unit/test_workload \
	tests/unit/test_place

tests_unit_test_job_SOURCES = tests/unit/test_job.c
tests_unit_test_traffic_SOURCES = tests/unit/test_traffic.c tests/unit/job_topo_fixture.h
tests_unit_test_burst_est_SOURCES = tests/unit/test_burst_est.c tests/unit/job_topo_fixture.h
tests_unit_test_workload_SOURCES = tests/unit/test_workload.c tests/unit/job_topo_fixture.h
tests_unit_test_place_SOURCES = tests/unit/test_place.c tests/unit/job_topo_fixture.h

# Trace fixtures (docs/models.md and docs/workloads.md ship with docs/).
EXTRA_DIST += tests/fixtures/traces
