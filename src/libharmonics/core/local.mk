# core: errors and strict parsing of numbers/durations/sizes (libhmparse: the
# pacing runtime links these alone, without json-c or hwloc); Slurm hostlists
# and the records the two tiers exchange (hm_rack_msg: the policy, the wire codec
# and the agent all use them) in libhmcore, with header-only helpers that any
# library may include without linking it: the clock, the seeded mixer (hm_rng)
# and qsort comparators (hm_sort).
noinst_LTLIBRARIES += src/libharmonics/core/libhmparse.la
src_libharmonics_core_libhmparse_la_SOURCES = \
	src/libharmonics/core/hm_error.c src/libharmonics/core/hm_error.h \
	src/libharmonics/core/hm_parse.c src/libharmonics/core/hm_parse.h

noinst_LTLIBRARIES += src/libharmonics/core/libhmcore.la
src_libharmonics_core_libhmcore_la_SOURCES = \
	src/libharmonics/core/hm_classes.h \
	src/libharmonics/core/hm_clock.h \
	src/libharmonics/core/hm_hostlist.c src/libharmonics/core/hm_hostlist.h \
	src/libharmonics/core/hm_rack_msg.c src/libharmonics/core/hm_rack_msg.h \
	src/libharmonics/core/hm_rng.h \
	src/libharmonics/core/hm_sort.h

UNIT_TESTS += tests/unit/test_parse tests/unit/test_hostlist
tests_unit_test_parse_SOURCES = tests/unit/test_parse.c
tests_unit_test_hostlist_SOURCES = tests/unit/test_hostlist.c
