# Command-line tools: thin entry files; the logic lives in the libraries.
# hm_tool.h: the end of option parsing every tool shares (--help, bad usage).
EXTRA_DIST += src/tools/hm_tool.h
bin_PROGRAMS += src/tools/harmonics-sim
src_tools_harmonics_sim_SOURCES = \
	src/tools/harmonics-sim.c \
	src/tools/sim_default.c src/tools/sim_default.h \
	src/tools/sim_report.c src/tools/sim_report.h
src_tools_harmonics_sim_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonics_sim_LDADD = $(HM_SIM_LIBS) $(JSONC_LIBS)
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
src_tools_harmonicsctl_CPPFLAGS = $(HMCOORD_CPPFLAGS)
src_tools_harmonicsctl_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonicsctl_LDADD = src/coordinator/libhmstatus.la src/agent/libhmagentwire.la \
	$(HMCLIENT_LIBS) $(HM_TOPO_LIBS)

# harmonics-emujob: the emulated training job (its tests are in src/pace/local.mk).
bin_PROGRAMS += src/tools/harmonics-emujob
src_tools_harmonics_emujob_SOURCES = \
	src/tools/harmonics-emujob.c \
	src/pace/emujob/ej.h \
	src/pace/emujob/ej_net.c \
	src/pace/emujob/ej_opts.c \
	src/pace/emujob/ej_run.c
src_tools_harmonics_emujob_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/pace \
	-I$(top_srcdir)/src/pace/emujob -I$(top_srcdir)/src/coordinator
src_tools_harmonics_emujob_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonics_emujob_LDADD = src/pace/libharmonics-pace.la src/coordinator/libhmfields.la \
	$(HM_JOB_LIBS) $(JSONC_LIBS) -lm

# harmonics-agent: one node agent outside slurmd, for tests and debugging (not
# installed; the agent itself is src/agent).
noinst_PROGRAMS += src/tools/harmonics-agent
src_tools_harmonics_agent_SOURCES = src/tools/harmonics-agent.c
src_tools_harmonics_agent_CPPFLAGS = $(AGENT_CPPFLAGS)
src_tools_harmonics_agent_LDADD = $(AGENT_LIBS)
