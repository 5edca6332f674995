#!/usr/bin/env bash
# The slurm tier's short form of the load test against slurmctld's coordinator
# (about a minute): 32 slurmd, 200 running jobs, 5 s of agents, flood and
# hostile connections; fails when a legitimate request fails. Usage: BUILD_DIR.
# The full form: tests/load/ctld_load.sh.
HM_BUILD=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build} exec "$(dirname "$0")/ctld_load.sh" --short
