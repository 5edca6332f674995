# topo: cluster topology (hosts, switches, directed links, routes), loaders for
# Slurm topology.conf (tree, block), topology.yaml and host CSV, the parametric generator and hwloc GPU->NIC
# affinity.
noinst_LTLIBRARIES += src/libharmonics/topo/libhmtopo.la
src_libharmonics_topo_libhmtopo_la_SOURCES = \
	src/libharmonics/topo/hm_topo.c src/libharmonics/topo/hm_topo.h \
	src/libharmonics/topo/hm_topo_build.c src/libharmonics/topo/hm_topo_build.h \
	src/libharmonics/topo/hm_topo_gen.c \
	src/libharmonics/topo/hm_topo_reshape.c \
	src/libharmonics/topo/hm_topo_slurm.c \
	src/libharmonics/topo/hm_topo_csv.c \
	src/libharmonics/topo/hm_topo_write.c \
	src/libharmonics/topo/hm_topo_block.c \
	src/libharmonics/topo/hm_topo_yaml.c \
	src/libharmonics/topo/hm_topo_partition.c \
	src/libharmonics/topo/hm_topo_plane.c \
	src/libharmonics/topo/hm_yaml.c src/libharmonics/topo/hm_yaml.h

# The hwloc loader alone, so that only its users link hwloc.
noinst_LTLIBRARIES += src/libharmonics/topo/libhmtopo_hwloc.la
src_libharmonics_topo_libhmtopo_hwloc_la_SOURCES = src/libharmonics/topo/hm_topo_hwloc.c \
	src/libharmonics/topo/hm_hwnode.c \
	src/libharmonics/topo/hm_hwnode.h
src_libharmonics_topo_libhmtopo_hwloc_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS)
src_libharmonics_topo_libhmtopo_hwloc_la_LIBADD = $(HWLOC_LIBS)

UNIT_TESTS += \
	tests/unit/test_topo \
	tests/unit/test_topo_load \
	tests/unit/test_topo_write \
	tests/unit/test_topo_hwloc \
	tests/unit/test_topo_yaml

tests_unit_test_topo_SOURCES = tests/unit/test_topo.c
tests_unit_test_topo_load_SOURCES = tests/unit/test_topo_load.c
tests_unit_test_topo_write_SOURCES = tests/unit/test_topo_write.c
tests_unit_test_topo_hwloc_SOURCES = tests/unit/test_topo_hwloc.c
tests_unit_test_topo_yaml_SOURCES = tests/unit/test_topo_yaml.c

# topology.conf, host CSV and hwloc XML fixtures (gen_hwloc_xml.py writes the XML).
EXTRA_DIST += tests/fixtures/topo
