# placement: contention-aware placement (hm_place_score.h, docs/placement.md):
# the link-load view of running jobs, candidate host sets, the score. Used by
# select/harmonics_cons_tres, the coordinator's live view and the simulator.
noinst_LTLIBRARIES += src/libharmonics/placement/libhmplace.la
src_libharmonics_placement_libhmplace_la_SOURCES = \
	src/libharmonics/placement/hm_place_score.c src/libharmonics/placement/hm_place_score.h \
	src/libharmonics/placement/hm_lview.c \
	src/libharmonics/placement/hm_place_cands.c
src_libharmonics_placement_libhmplace_la_LIBADD = -lm

UNIT_TESTS += tests/unit/test_place_score
tests_unit_test_place_score_SOURCES = tests/unit/test_place_score.c tests/unit/job_topo_fixture.h
