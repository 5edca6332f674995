/*
 * fake_coord.h - a FAKE coordinator for the node agent's tests: a real TCP
 * server on 127.0.0.1 speaking contract B (docs/protocol.md) with real munge
 * sealing, built with json-c by hand (not with the agent's codec, so that a
 * codec bug cannot hide on both sides). It is a stand-in for the coordinator's
 * server in slurmctld, which another part of issue 11 implements.
 *
 * One thread; the test steers it (answer, stay silent, refuse the node, stop
 * and restart listening on the same port, push a decision) and reads what it
 * saw (hellos, beats, the time of its last frame).
 */
#ifndef FAKE_COORD_H
#define FAKE_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

typedef enum {
	FAKE_ANSWER,    /* welcome the agent, answer each beat with agent_assign */
	FAKE_SILENT,    /* read everything, answer nothing */
	FAKE_REFUSE,    /* answer the hello with ok:false (an unknown node) and close */
	FAKE_ELSEWHERE, /* answer as FAKE_ANSWER, frames bound to another coordinator's port */
} fake_mode_t;

typedef struct fake_coord fake_coord_t;

/* Listen on 127.0.0.1 (an ephemeral port) and serve in mode. NULL on failure. */
fake_coord_t *fake_start(fake_mode_t mode, int heartbeat_ms, int valid_ms, int lead_ms);
int fake_port(const fake_coord_t *f);
void fake_set_mode(fake_coord_t *f, fake_mode_t mode);
/* The "jobs" array for node n1 answered from now on (JSON text; the fake copies it). */
void fake_set_jobs(fake_coord_t *f, const char *jobs_json);
/* Send an unsolicited agent_assign (re 0) with the current jobs; returns the CLOCK_REALTIME
   us just before sending, or -1 when no agent is connected. */
int64_t fake_push(fake_coord_t *f);
/* Close the listener and the connection (the coordinator is down) / listen again. */
void fake_down(fake_coord_t *f);
bool fake_up(fake_coord_t *f);
/* Close the agent's connection only (the listener stays). */
void fake_drop(fake_coord_t *f);

typedef struct {
	int hellos, welcomes, refusals, beats;
	int64_t last_sent_us;  /* CLOCK_REALTIME us of the fake's last frame */
	int64_t last_hello_us; /* when the last hello arrived */
	json_object *hello;    /* the last hello (a new reference; the caller puts it) */
	json_object *beat;     /* the last beat (a new reference; the caller puts it) */
	/* Sum over all beats of job 42's meas: samples and samples * iter_us. */
	double meas_samples, meas_iter_weighted;
	int max_ranks, max_steps;
	long applied_epoch; /* of job 42 in the last beat; -1 null */
	int bad_frames;     /* frames that were not contract B */
} fake_seen_t;

void fake_seen(fake_coord_t *f, fake_seen_t *out);
void fake_stop(fake_coord_t *f);

#endif
