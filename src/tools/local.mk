# Command-line tools.
bin_PROGRAMS += src/tools/harmonics-sim
src_tools_harmonics_sim_SOURCES = \
	src/tools/harmonics-sim.c \
	src/tools/sim_default.c \
	src/tools/sim_default.h \
	src/tools/sim_report.c \
	src/tools/sim_report.h
src_tools_harmonics_sim_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_tools_harmonics_sim_LDADD = src/libharmonics/libharmonics.la $(JSONC_LIBS) -lm
dist_man_MANS += docs/man/harmonics-sim.1
