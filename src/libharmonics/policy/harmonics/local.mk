# policy/harmonics: the two-tier harmonics policy. The problem both tiers share
# and the Local Scheduler (one rack, also a leader's node agent's) go in
# libhmmodel; the Global Coordinator (cross-rack jobs), the check and the
# policy's entry in libhmpolicy (policy/local.mk says why).
src_libharmonics_policy_libhmmodel_la_SOURCES += \
	src/libharmonics/policy/harmonics/hm_harmonics_model.c src/libharmonics/policy/harmonics/hm_harmonics_model.h \
	src/libharmonics/policy/harmonics/hm_harmonics_local.c src/libharmonics/policy/harmonics/hm_harmonics_local.h \
	src/libharmonics/policy/harmonics/hm_harmonics_tier.c src/libharmonics/policy/harmonics/hm_harmonics_tier.h
src_libharmonics_policy_libhmpolicy_la_SOURCES += \
	src/libharmonics/policy/harmonics/hm_harmonics_global.c src/libharmonics/policy/harmonics/hm_harmonics_global.h \
	src/libharmonics/policy/harmonics/hm_harmonics_check.c src/libharmonics/policy/harmonics/hm_harmonics_check.h \
	src/libharmonics/policy/harmonics/hm_policy_harmonics.c

UNIT_TESTS += tests/unit/test_harmonics
tests_unit_test_harmonics_SOURCES = tests/unit/test_harmonics.c tests/unit/policies_fixture.h
UNIT_TESTS += tests/unit/test_tier
tests_unit_test_tier_SOURCES = tests/unit/test_tier.c tests/unit/policies_fixture.h
