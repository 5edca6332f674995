# The shared layer: what more than one process links. Four PIC convenience
# libraries by who needs what (like libharmonics' libraries, they link none of
# ours; a consumer lists them, each before the ones it uses):
#   libhmfields    the field tables that drive every record's JSON both ways
#                  (hm_fields) and the lenient member readers (hm_json); json-c
#                  only: harmonics-emujob's output links it too.
#   libhmclient    what talks to the coordinator: harmonics.conf, the wire protocol
#                  (json-c + munge), one request (client), logging, the mode and
#                  profile checks, the assignment on the wire. The SPANK plugin
#                  links it alone (with libhmfields, libhmjob, libhmcore): no
#                  policy, no engine.
#   libhmagentwire contract B (docs/protocol.md): the node agent's and the rack
#                  channel's records <-> JSON through the field tables; the agent
#                  and the coordinator's server link it.
#   libhmstatus    the status views in JSON: the server writes them, harmonicsctl
#                  reads them.
# Nothing here includes a header of src/coordinator/ or src/agent/.
HM_COMMON_CPPFLAGS = -I$(top_srcdir)/src/common
HM_COMMON_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)

noinst_LTLIBRARIES += src/common/libhmfields.la
src_common_libhmfields_la_SOURCES = \
	src/common/hm_fields.c src/common/hm_fields.h \
	src/common/hm_json.c src/common/hm_json.h
src_common_libhmfields_la_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
src_common_libhmfields_la_CFLAGS = $(HM_COMMON_CFLAGS)
src_common_libhmfields_la_LIBADD = $(JSONC_LIBS)

noinst_LTLIBRARIES += src/common/libhmclient.la
src_common_libhmclient_la_SOURCES = \
	src/common/hm_assign.c src/common/hm_assign.h \
	src/common/hm_client.c src/common/hm_client.h \
	src/common/hm_conf.c src/common/hm_conf.h \
	src/common/hm_coord_addr.c src/common/hm_coord_addr.h \
	src/common/hm_log.c src/common/hm_log.h \
	src/common/hm_proto.c src/common/hm_proto.h \
	src/common/hm_spec.c src/common/hm_spec.h
src_common_libhmclient_la_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
src_common_libhmclient_la_CFLAGS = $(HM_COMMON_CFLAGS)
src_common_libhmclient_la_LIBADD = $(JSONC_LIBS) $(MUNGE_LIBS)

noinst_LTLIBRARIES += src/common/libhmagentwire.la
src_common_libhmagentwire_la_SOURCES = \
	src/common/hm_agent_wire.c src/common/hm_agent_wire.h \
	src/common/hm_rack_wire.c src/common/hm_rack_wire.h
src_common_libhmagentwire_la_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
src_common_libhmagentwire_la_CFLAGS = $(HM_COMMON_CFLAGS)

noinst_LTLIBRARIES += src/common/libhmstatus.la
src_common_libhmstatus_la_SOURCES = \
	src/common/hm_coord_json.c src/common/hm_coord_json.h \
	src/common/hm_node_json.c src/common/hm_node_json.h \
	src/common/hm_views.h
src_common_libhmstatus_la_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
src_common_libhmstatus_la_CFLAGS = $(HM_COMMON_CFLAGS)
src_common_libhmstatus_la_LIBADD = $(JSONC_LIBS)

# The client side of any process, each library before the ones it uses.
HMCLIENT_LIBS = src/common/libhmclient.la src/common/libhmfields.la $(HM_JOB_LIBS)

# The client libraries link alone into a shared object (the SPANK plugin, the
# node agent): every symbol resolved without the engine or the policies.
check_LTLIBRARIES += tests/unit/libclient_alone.la
tests_unit_libclient_alone_la_SOURCES = tests/unit/client_alone.c
tests_unit_libclient_alone_la_CPPFLAGS = $(AM_CPPFLAGS) $(HM_COMMON_CPPFLAGS)
tests_unit_libclient_alone_la_LDFLAGS = -module -avoid-version -rpath /nowhere -Wl,--no-undefined
tests_unit_libclient_alone_la_LIBADD = $(HMCLIENT_LIBS)

UNIT_TESTS += \
	tests/unit/test_assign \
	tests/unit/test_fields \
	tests/unit/test_conf \
	tests/unit/test_coord_addr \
	tests/unit/test_proto
tests_unit_test_assign_SOURCES = tests/unit/test_assign.c
tests_unit_test_fields_SOURCES = tests/unit/test_fields.c
tests_unit_test_conf_SOURCES = tests/unit/test_conf.c
tests_unit_test_coord_addr_SOURCES = tests/unit/test_coord_addr.c tests/unit/munge_fixture.h
tests_unit_test_proto_SOURCES = tests/unit/test_proto.c tests/unit/munge_fixture.h

dist_man_MANS += docs/man/harmonics.conf.5
