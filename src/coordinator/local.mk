# Global Coordinator: harmonics.conf, wire protocol (json-c + munge), engine, server,
# client. A PIC convenience library; consumers (the plugins, harmonicsctl, tests)
# link ONLY src/coordinator/libhmcoord.la: it already carries libharmonics.la, so
# linking both would duplicate every libharmonics symbol in a shared object.
noinst_LTLIBRARIES += src/coordinator/libhmcoord.la
src_coordinator_libhmcoord_la_SOURCES = \
	src/coordinator/hm_client.c \
	src/coordinator/hm_client.h \
	src/coordinator/hm_conf.c \
	src/coordinator/hm_conf.h \
	src/coordinator/hm_coord.c \
	src/coordinator/hm_coord.h \
	src/coordinator/hm_coord_comment.c \
	src/coordinator/hm_coord_int.h \
	src/coordinator/hm_coord_json.c \
	src/coordinator/hm_coord_json.h \
	src/coordinator/hm_coord_spec.c \
	src/coordinator/hm_coord_state.c \
	src/coordinator/hm_coord_view.c \
	src/coordinator/hm_log.c \
	src/coordinator/hm_log.h \
	src/coordinator/hm_proto.c \
	src/coordinator/hm_proto.h \
	src/coordinator/hm_server.c \
	src/coordinator/hm_server.h
src_coordinator_libhmcoord_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/coordinator
src_coordinator_libhmcoord_la_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
src_coordinator_libhmcoord_la_LIBADD = src/libharmonics/libharmonics.la $(JSONC_LIBS) \
	$(MUNGE_LIBS) $(PTHREAD_LIBS) -lm

HMCOORD_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/coordinator
HMCOORD_LIBS = src/coordinator/libhmcoord.la $(JSONC_LIBS) $(MUNGE_LIBS) $(PTHREAD_LIBS) -lm
