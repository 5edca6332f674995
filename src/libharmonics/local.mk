# libharmonics: topology, workloads, policies and the simulator. No Slurm, no
# sockets. Not one library but one libtool convenience library (PIC) per area,
# because a shared object takes every object of a convenience library it links:
# the SPANK plugin must not carry the simulator. Each subfolder's local.mk adds
# its library, its sources and its tests:
#   core/      libhmparse       errors, strict parsing
#              libhmcore        hostlists, the records the two tiers exchange
#   topo/      libhmtopo        cluster topology and its loaders (no hwloc)
#              libhmtopo_hwloc  the hwloc GPU->NIC loader alone (links hwloc)
#   workload/  libhmjob         jobs, profiles and the model catalogue
#              libhmworkload    traffic, placement, trace CSV, generator
#   placement/ libhmplace       contention-aware placement: link-load view, candidates, score
#   policy/    libhmmodel       the shared model, Crux's k and DAG compression, the
#                               harmonics model and Local Scheduler (a leader's
#                               node agent links these, no simulator)
#              libhmpolicy      the registry, the five policies (policy/harmonics/
#   sim/                        adds the harmonics policy) and max-min sharing and
#                               the flow-level simulator: one library, as they use
#                               each other (optimal and the harmonics check judge
#                               candidates in the simulator's own model,
#                               hm_sim_eval; the simulator calls the policies), and
#                               archives in a cycle do not link
# The libraries never LIBADD each other (a shared object linking two that did
# would get one's objects twice): a consumer lists what it needs, each library
# before the ones it uses. The sets below are the usual lists, in that order.
HM_PARSE_LIBS = src/libharmonics/core/libhmparse.la
HM_CORE_LIBS = src/libharmonics/core/libhmcore.la $(HM_PARSE_LIBS)
HM_JOB_LIBS = src/libharmonics/workload/libhmjob.la $(HM_CORE_LIBS)
HM_TOPO_LIBS = src/libharmonics/topo/libhmtopo.la $(HM_CORE_LIBS)
HM_TOPO_HWLOC_LIBS = src/libharmonics/topo/libhmtopo_hwloc.la
HM_WORKLOAD_LIBS = src/libharmonics/workload/libhmworkload.la \
	src/libharmonics/workload/libhmjob.la $(HM_TOPO_LIBS)
HM_PLACE_LIBS = src/libharmonics/placement/libhmplace.la $(HM_WORKLOAD_LIBS)
HM_MODEL_LIBS = src/libharmonics/policy/libhmmodel.la src/libharmonics/placement/libhmplace.la \
	$(HM_WORKLOAD_LIBS)
HM_POLICY_LIBS = src/libharmonics/policy/libhmpolicy.la $(HM_MODEL_LIBS)
HM_SIM_LIBS = $(HM_POLICY_LIBS)

include $(srcdir)/src/libharmonics/core/local.mk
include $(srcdir)/src/libharmonics/topo/local.mk
include $(srcdir)/src/libharmonics/workload/local.mk
include $(srcdir)/src/libharmonics/placement/local.mk
include $(srcdir)/src/libharmonics/policy/local.mk
include $(srcdir)/src/libharmonics/policy/harmonics/local.mk
include $(srcdir)/src/libharmonics/sim/local.mk
