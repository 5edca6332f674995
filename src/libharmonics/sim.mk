# sim: max-min sharing, the flow-level simulator, the contention model and the
# fair and optimal policies.
src_libharmonics_libharmonics_la_SOURCES += \
	src/libharmonics/hm_sim_int.h \
	src/libharmonics/hm_maxmin.c \
	src/libharmonics/hm_sim.c \
	src/libharmonics/hm_sim_net.c \
	src/libharmonics/hm_sim_sched.c \
	src/libharmonics/hm_sim_out.c \
	src/libharmonics/hm_model.h \
	src/libharmonics/hm_model.c \
	src/libharmonics/hm_policy_fair.c \
	src/libharmonics/hm_policy_optimal.c

check_PROGRAMS += tests/unit/test_maxmin
TESTS += tests/unit/test_maxmin
tests_unit_test_maxmin_SOURCES = tests/unit/test_maxmin.c
tests_unit_test_maxmin_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_maxmin_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_sim
TESTS += tests/unit/test_sim
tests_unit_test_sim_SOURCES = tests/unit/test_sim.c
tests_unit_test_sim_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sim_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_optimal
TESTS += tests/unit/test_optimal
tests_unit_test_optimal_SOURCES = tests/unit/test_optimal.c
tests_unit_test_optimal_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_optimal_LDADD = $(UNIT_LDADD)

# Speed benchmark (prints numbers, not a test): make tests/bench/bench_sim && tests/bench/bench_sim
noinst_PROGRAMS += tests/bench/bench_sim
tests_bench_bench_sim_SOURCES = tests/bench/bench_sim.c
tests_bench_bench_sim_LDADD = src/libharmonics/libharmonics.la -lm
