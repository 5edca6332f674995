# Command-line tools: thin entry files; the logic lives in the libraries.
# hm_tool.h: the end of option parsing every tool shares (--help, bad usage).
EXTRA_DIST += src/tools/hm_tool.h
bin_PROGRAMS += src/tools/harmonics-sim
src_tools_harmonics_sim_SOURCES = \
	src/tools/harmonics-sim.c \
	src/tools/sim_default.c src/tools/sim_default.h \
	src/tools/sim_report.c src/tools/sim_report.h
# --json's records are field tables (libhmfields, json-c only).
src_tools_harmonics_sim_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
src_tools_harmonics_sim_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonics_sim_LDADD = src/common/libhmfields.la $(HM_SIM_LIBS) $(JSONC_LIBS)
dist_man_MANS += docs/man/harmonics-sim.1

# harmonics-bench: decision time and quality of the policies.
bin_PROGRAMS += src/tools/harmonics-bench
src_tools_harmonics_bench_SOURCES = src/tools/harmonics-bench.c
src_tools_harmonics_bench_LDADD = $(HM_POLICY_LIBS)
dist_man_MANS += docs/man/harmonics-bench.1

# harmonicsctl: a thin entry file; the logic is hm_ctl.c. A client: no engine;
# the topology loaders and writer for "harmonicsctl topology".
bin_PROGRAMS += src/tools/harmonicsctl
src_tools_harmonicsctl_SOURCES = src/tools/harmonicsctl.c src/tools/hm_ctl.c src/tools/hm_ctl.h
src_tools_harmonicsctl_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
src_tools_harmonicsctl_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonicsctl_LDADD = src/common/libhmstatus.la src/common/libhmagentwire.la \
	$(HMCLIENT_LIBS) $(HM_TOPO_LIBS)

# harmonics-emujob, the emulated training job, is built by src/pace/local.mk.

# harmonics-agent: one node agent outside slurmd, for tests and debugging (not
# installed; the agent itself is src/agent).
noinst_PROGRAMS += src/tools/harmonics-agent
src_tools_harmonics_agent_SOURCES = src/tools/harmonics-agent.c
src_tools_harmonics_agent_CPPFLAGS = $(AGENT_CPPFLAGS)
src_tools_harmonics_agent_LDADD = $(AGENT_LIBS)
