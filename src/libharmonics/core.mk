# libharmonics: model, policies, simulator engine. No Slurm, no sockets.
# A libtool convenience library (PIC) so that tools, tests and plugins link it.
noinst_LTLIBRARIES += src/libharmonics/libharmonics.la
src_libharmonics_libharmonics_la_SOURCES = \
	src/libharmonics/hm_error.c \
	src/libharmonics/hm_error.h \
	src/libharmonics/hm_parse.c \
	src/libharmonics/hm_parse.h \
	src/libharmonics/hm_policy.c \
	src/libharmonics/hm_policy.h \
	src/libharmonics/hm_topo.h \
	src/libharmonics/hm_hostlist.h \
	src/libharmonics/hm_job.h \
	src/libharmonics/hm_sim.h
src_libharmonics_libharmonics_la_LIBADD = $(JSONC_LIBS) $(HWLOC_LIBS) -lm
src_libharmonics_libharmonics_la_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(HWLOC_CFLAGS)

# Unit tests link the library and cmocka.
UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
UNIT_LDADD = src/libharmonics/libharmonics.la $(CMOCKA_LIBS) -lm

check_PROGRAMS += tests/unit/test_parse
TESTS += tests/unit/test_parse
tests_unit_test_parse_SOURCES = tests/unit/test_parse.c
tests_unit_test_parse_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_parse_LDADD = $(UNIT_LDADD)
