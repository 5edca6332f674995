# libharmonics: topology, workloads, policies and the simulator. No Slurm, no
# sockets. A libtool convenience library (PIC) so that tools, tests and plugins
# link it. Each subfolder's local.mk adds its sources and its tests:
#   core/      errors, strict parsing, hostlists
#   topo/      cluster topology and its loaders
#   workload/  jobs, the model catalogue, traffic, placement, traces, generator
#   sim/       max-min sharing and the flow-level simulator
#   policy/    the policy registry, the shared model, fair, optimal, cassini, crux
#   policy/harmonics/  the two-tier harmonics policy
noinst_LTLIBRARIES += src/libharmonics/libharmonics.la
src_libharmonics_libharmonics_la_SOURCES =
src_libharmonics_libharmonics_la_LIBADD = $(JSONC_LIBS) $(HWLOC_LIBS) -lm
src_libharmonics_libharmonics_la_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(HWLOC_CFLAGS)

# Unit tests link the library and cmocka.
UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
UNIT_LDADD = src/libharmonics/libharmonics.la $(CMOCKA_LIBS) -lm

include $(srcdir)/src/libharmonics/core/local.mk
include $(srcdir)/src/libharmonics/topo/local.mk
include $(srcdir)/src/libharmonics/workload/local.mk
include $(srcdir)/src/libharmonics/sim/local.mk
include $(srcdir)/src/libharmonics/policy/local.mk
include $(srcdir)/src/libharmonics/policy/harmonics/local.mk
