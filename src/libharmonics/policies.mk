# policies: cassini, crux and the two-tier harmonics policy (Local Scheduler and
# Global Coordinator engines), their tests, and harmonics-bench.
src_libharmonics_libharmonics_la_SOURCES += \
	src/libharmonics/hm_pol_common.c \
	src/libharmonics/hm_pol_common.h \
	src/libharmonics/hm_harmonics_model.c \
	src/libharmonics/hm_harmonics_model.h \
	src/libharmonics/hm_harmonics_local.c \
	src/libharmonics/hm_harmonics_local.h \
	src/libharmonics/hm_harmonics_global.c \
	src/libharmonics/hm_harmonics_global.h \
	src/libharmonics/hm_policy_harmonics.c
src_libharmonics_libharmonics_la_SOURCES += \
	src/libharmonics/hm_cassini.h \
	src/libharmonics/hm_policy_cassini.c \
	src/libharmonics/hm_crux.h \
	src/libharmonics/hm_policy_crux.c

check_PROGRAMS += tests/unit/test_crux
TESTS += tests/unit/test_crux
tests_unit_test_crux_SOURCES = tests/unit/test_crux.c
tests_unit_test_crux_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_crux_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_harmonics
TESTS += tests/unit/test_harmonics
tests_unit_test_harmonics_SOURCES = tests/unit/test_harmonics.c tests/unit/policies_fixture.h
tests_unit_test_harmonics_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_harmonics_LDADD = $(UNIT_LDADD)


bin_PROGRAMS += src/tools/harmonics-bench
src_tools_harmonics_bench_SOURCES = src/tools/harmonics-bench.c
src_tools_harmonics_bench_LDADD = src/libharmonics/libharmonics.la -lm

check_PROGRAMS += tests/unit/test_cassini
TESTS += tests/unit/test_cassini
tests_unit_test_cassini_SOURCES = tests/unit/test_cassini.c tests/unit/policies_fixture.h
tests_unit_test_cassini_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cassini_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_policies_random
TESTS += tests/unit/test_policies_random
tests_unit_test_policies_random_SOURCES = tests/unit/test_policies_random.c \
	tests/unit/policies_fixture.h
tests_unit_test_policies_random_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_policies_random_LDADD = $(UNIT_LDADD)
dist_man_MANS += docs/man/harmonics-bench.1
