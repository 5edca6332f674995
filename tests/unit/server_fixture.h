/*
 * Shared by the server tests: a real coordinator and server on 127.0.0.1 (an
 * ephemeral port) with real munge, skipped without root or munged.
 * Header-only (static) for the test programs.
 */
#ifndef SERVER_FIXTURE_H
#define SERVER_FIXTURE_H

#include <stdio.h>
#include <unistd.h>

#include "coord_fixture.h"
#include "hm_server.h"
#include "munge_fixture.h"

#define NOBODY 65534
#define OWNER  1000

static hm_coord_t *coord;
static hm_server_t *srv;
static int port;

/* The configuration of a loopback server; false (the tests skip) without root
   (they drop to uid NOBODY) or munged. */
static inline bool srv_fixture_conf(const char *test, hm_conf_t *conf)
{
	if (getuid() != 0) {
		fprintf(stderr, "SKIP: %s needs root (it drops to uid %d)\n", test, NOBODY);
		return false;
	}
	if (!munge_up())
		return false;
	fixture_conf(conf);
	snprintf(conf->listen_addr, sizeof(conf->listen_addr), "127.0.0.1");
	conf->listen_port = 0;
	return true;
}

/* Start the server on coord; 0, or -1 with the reason on stderr. */
static inline int srv_fixture_start(const hm_conf_t *conf, uint32_t slurm_uid)
{
	hm_err_t err = {0};

	if (hm_server_start(coord, conf, slurm_uid, &srv, &err) != HM_OK) {
		fprintf(stderr, "server: %s\n", err.msg);
		return -1;
	}
	port = hm_server_port(srv);
	return port > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	hm_server_stop(srv);
	hm_coord_destroy(coord);
	return 0;
}

#define NEED_SERVER()                                                                              \
	do {                                                                                       \
		if (!srv)                                                                          \
			skip();                                                                    \
	} while (0)

#endif
