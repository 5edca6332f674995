# sim: max-min sharing and the flow-level simulator, part of libhmpolicy
# (src/libharmonics/local.mk says why).
src_libharmonics_policy_libhmpolicy_la_SOURCES += \
	src/libharmonics/sim/hm_sim.c src/libharmonics/sim/hm_sim.h \
	src/libharmonics/sim/hm_sim_int.h \
	src/libharmonics/sim/hm_maxmin.c \
	src/libharmonics/sim/hm_sim_net.c \
	src/libharmonics/sim/hm_sim_sched.c \
	src/libharmonics/sim/hm_sim_place.c \
	src/libharmonics/sim/hm_sim_out.c \
	src/libharmonics/sim/hm_sim_eval.c \
	src/libharmonics/sim/hm_bound.c src/libharmonics/sim/hm_bound.h

UNIT_TESTS += tests/unit/test_maxmin tests/unit/test_sim tests/unit/test_bound
tests_unit_test_maxmin_SOURCES = tests/unit/test_maxmin.c
tests_unit_test_sim_SOURCES = tests/unit/test_sim.c
tests_unit_test_bound_SOURCES = tests/unit/test_bound.c tests/unit/policies_fixture.h

UNIT_TESTS += tests/unit/test_sim_place
tests_unit_test_sim_place_SOURCES = tests/unit/test_sim_place.c

# Speed benchmark (prints numbers, not a test): make tests/bench/bench_sim && tests/bench/bench_sim
noinst_PROGRAMS += tests/bench/bench_sim
tests_bench_bench_sim_SOURCES = tests/bench/bench_sim.c
tests_bench_bench_sim_LDADD = $(HM_SIM_LIBS)

# Every policy on random small contended instances (prints numbers): make tests/bench/bench_random
noinst_PROGRAMS += tests/bench/bench_random
tests_bench_bench_random_SOURCES = tests/bench/bench_random.c tests/unit/random_instances.h
tests_bench_bench_random_LDADD = $(HM_SIM_LIBS)
