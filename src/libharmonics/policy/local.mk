# policy, in two libraries:
#   libhmmodel   the model the policies share (hm_pol_common), Crux's k and DAG
#                compression, and the harmonics model with the Local Scheduler
#                (policy/harmonics/local.mk adds them): what a rack leader's
#                node agent runs, without the simulator or the other policies.
#   libhmpolicy  the registry and documented defaults, the evaluator, the fair,
#                optimal, cassini and crux policies, harmonics' Global
#                Coordinator and check, and the simulator (sim/local.mk), which
#                stay one library: the simulator calls the policies and optimal
#                and the check judge candidates in the simulator's own model.
noinst_LTLIBRARIES += src/libharmonics/policy/libhmmodel.la
src_libharmonics_policy_libhmmodel_la_SOURCES = \
	src/libharmonics/policy/hm_policy.h \
	src/libharmonics/policy/hm_pol_common.c src/libharmonics/policy/hm_pol_common.h \
	src/libharmonics/policy/hm_prio.h \
	src/libharmonics/policy/hm_prio_k.c \
	src/libharmonics/policy/hm_prio_dag.c
src_libharmonics_policy_libhmmodel_la_LIBADD = -lm

noinst_LTLIBRARIES += src/libharmonics/policy/libhmpolicy.la
src_libharmonics_policy_libhmpolicy_la_SOURCES = \
	src/libharmonics/policy/hm_policy.c src/libharmonics/policy/hm_policy.h \
	src/libharmonics/policy/hm_policy_names.h \
	src/libharmonics/policy/hm_pol_eval.c src/libharmonics/policy/hm_pol_eval.h \
	src/libharmonics/policy/hm_policy_fair.c \
	src/libharmonics/policy/hm_policy_optimal.c \
	src/libharmonics/policy/hm_cassini.h \
	src/libharmonics/policy/hm_policy_cassini.c \
	src/libharmonics/policy/hm_policy_crux.c
src_libharmonics_policy_libhmpolicy_la_LIBADD = $(PTHREAD_LIBS) -lm

UNIT_TESTS += \
	tests/unit/test_optimal \
	tests/unit/test_crux \
	tests/unit/test_cassini \
	tests/unit/test_policies_random \
	tests/unit/test_known_answers
tests_unit_test_optimal_SOURCES = tests/unit/test_optimal.c
tests_unit_test_crux_SOURCES = tests/unit/test_crux.c
tests_unit_test_cassini_SOURCES = tests/unit/test_cassini.c tests/unit/policies_fixture.h
tests_unit_test_policies_random_SOURCES = tests/unit/test_policies_random.c \
	tests/unit/policies_fixture.h
tests_unit_test_known_answers_SOURCES = tests/unit/test_known_answers.c \
	tests/unit/random_instances.h
