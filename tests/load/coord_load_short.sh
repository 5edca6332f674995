#!/usr/bin/env bash
# make check's short form of the load test (a few seconds): 64 agents, 500 jobs,
# 16 hostile connections, a 16-thread registration flood, 3 s; fails when a
# legitimate request fails. The full form: tests/load/coord_load.sh.
HM_BUILD=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)/build} \
	exec "$(dirname "$0")/coord_load.sh" --short
