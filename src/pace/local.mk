# Pacing runtime (libharmonics-pace), NCCL interposer (libharmonics-nccl.so),
# harmonics-emujob and their tests. Owner: pace.

# ---- libharmonics-pace: installed, exports hm_pace_* only --------------------
# hm_parse/hm_error are compiled in (not the whole libharmonics) so that training
# processes do not pull json-c/hwloc; the version script keeps them hidden.
lib_LTLIBRARIES += src/pace/libharmonics-pace.la
include_HEADERS = src/pace/hm_pace.h src/pace/hm_pace_env.h
src_pace_libharmonics_pace_la_SOURCES = \
	src/pace/hm_pace.h \
	src/pace/hm_pace_env.h \
	src/pace/pace.c \
	src/pace/pace_assign.c \
	src/pace/pace_assign.h \
	src/pace/pace_internal.h \
	src/pace/pace_report.c \
	src/libharmonics/hm_error.c \
	src/libharmonics/hm_parse.c
src_pace_libharmonics_pace_la_CFLAGS = $(AM_CFLAGS)
src_pace_libharmonics_pace_la_LIBADD = -lm
src_pace_libharmonics_pace_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/src/pace/libharmonics-pace.sym
EXTRA_src_pace_libharmonics_pace_la_DEPENDENCIES = src/pace/libharmonics-pace.sym
EXTRA_DIST += src/pace/libharmonics-pace.sym

# ---- unit tests ----------------------------------------------------------------
# test_pace links the library's internals (assignment parser, and the parse
# helpers it needs) directly; neither test needs the rest of libharmonics.
PACE_TEST_LDADD = src/pace/libharmonics-pace.la $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/unit/test_pace tests/unit/test_pace_align
TESTS += tests/unit/test_pace tests/unit/test_pace_align
tests_unit_test_pace_SOURCES = tests/unit/test_pace.c src/pace/pace_assign.c \
	src/libharmonics/hm_error.c src/libharmonics/hm_parse.c
tests_unit_test_pace_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace
tests_unit_test_pace_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_pace_LDADD = $(PACE_TEST_LDADD)
tests_unit_test_pace_align_SOURCES = tests/unit/test_pace_align.c
tests_unit_test_pace_align_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace
tests_unit_test_pace_align_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_pace_align_LDADD = $(PACE_TEST_LDADD)
