# sim: max-min sharing, the flow-level simulator, the contention model and the
# fair and optimal policies.
src_libharmonics_libharmonics_la_SOURCES += \
	src/libharmonics/hm_sim_int.h \
	src/libharmonics/hm_maxmin.c

check_PROGRAMS += tests/unit/test_maxmin
TESTS += tests/unit/test_maxmin
tests_unit_test_maxmin_SOURCES = tests/unit/test_maxmin.c
tests_unit_test_maxmin_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_maxmin_LDADD = $(UNIT_LDADD)
