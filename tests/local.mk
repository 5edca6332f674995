# Test tiers outside `make check` (run by scripts/check.sh) and their inputs.
EXTRA_DIST += tests/cli/run.sh tests/fixtures/cli tests/fuzz/fuzz_parsers.c .ci/run
# The emulated testbed (scripts/testbed.sh; tier "testbed"): scripts and scenarios.
EXTRA_DIST += tests/testbed
