# Unit tests (tests/unit/*.c): the fragment of the area a test tests adds it to
# UNIT_TESTS and lists its sources; it builds with these defaults. GNU make
# applies the flags to the objects under tests/unit/ (target-specific
# variables); LDADD is automake's default for a program without its own. A test
# with other needs sets _CPPFLAGS or _LDADD (the pace tests compile the
# runtime's sources in).
UNIT_CPPFLAGS = -I$(top_srcdir)/src/common -I$(top_srcdir)/src/coordinator -I$(top_srcdir)/src/agent \
	-I$(top_srcdir)/src/pace -I$(top_srcdir)/src/pace/nccl \
	-I$(top_srcdir)/src/plugins/common -I$(top_srcdir)/src/plugins/spank
tests/unit/%.$(OBJEXT): AM_CPPFLAGS += $(UNIT_CPPFLAGS)
tests/unit/%.$(OBJEXT): AM_CFLAGS += $(CMOCKA_CFLAGS) $(JSONC_CFLAGS) $(HWLOC_CFLAGS)
# Every library a unit test may use, each before the ones it uses (a test
# takes only the objects it calls).
LDADD = src/plugins/spank/libhmspankopts.la src/plugins/common/libhmplugin.la \
	src/agent/libhmagent.la src/coordinator/libhmcoord.la src/common/libhmstatus.la \
	src/common/libhmagentwire.la src/pace/libhmpaceassign.la src/pace/libharmonics-pace-report.la \
	src/common/libhmclient.la src/common/libhmfields.la $(HM_TOPO_HWLOC_LIBS) $(HM_SIM_LIBS) \
	$(HWLOC_LIBS) $(JSONC_LIBS) $(MUNGE_LIBS) $(CMOCKA_LIBS)
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

# Test tiers outside `make check` (run by scripts/check.sh) and their inputs.
EXTRA_DIST += tests/cli/run.sh tests/fixtures/cli tests/fuzz/fuzz_parsers.c .ci/run
# The emulated testbed (scripts/testbed.sh; tier "testbed"): scripts and scenarios.
EXTRA_DIST += tests/testbed
# The fault tier (scripts/check.sh fault): scripts and the clock shim's source.
EXTRA_DIST += tests/fault
