/*
 * hm_yaml.h - internal: a strict reader for the YAML subset that Slurm's
 * topology.yaml uses (25.05+). Not installed.
 *
 * Accepted: block mappings and sequences by indentation (spaces only), the
 * compact "- key: value" form, plain, 'single' and "double" quoted scalars on
 * one line, one-line flow sequences of scalars ([4, 16]), '#' comments, one
 * document with optional "---" and "...". Everything else YAML has (anchors,
 * aliases, tags, block scalars | >, flow mappings, multi-line scalars, several
 * documents, directives, tabs in indentation) is an error naming file:line
 * and the construct, as are duplicate keys. Slurm reads the file with libyaml:
 * a file this reader accepts means the same to both.
 *
 * Ownership: hm_yaml_read() returns a tree owned by the caller, released with
 * hm_yaml_free(). Strings and arrays belong to the tree.
 */
#ifndef HM_YAML_H
#define HM_YAML_H

#include <stdbool.h>
#include <stdio.h>

#include "hm_error.h"

#define HM_YAML_MAX_DEPTH 16 /* nesting levels (topology.yaml needs 6) */

typedef enum { HM_YAML_SCALAR, HM_YAML_SEQ, HM_YAML_MAP } hm_yaml_kind_t;

typedef struct hm_yaml hm_yaml_t;
struct hm_yaml {
	hm_yaml_kind_t kind;
	int line;    /* where the node starts */
	char *str;   /* SCALAR: its text (empty for a null value); MAP: unused */
	bool quoted; /* SCALAR: was quoted (never a null or a number then) */
	int n;       /* SEQ: items; MAP: entries */
	hm_yaml_t **items;
	char **keys;    /* MAP: entry keys, in file order */
	int *key_lines; /* MAP: the line of each key */
};

/* Read one document from f; fname names it in messages. On error *out is NULL. */
hm_rc_t hm_yaml_read(FILE *f, const char *fname, hm_yaml_t **out, hm_err_t *err);
void hm_yaml_free(hm_yaml_t *y); /* NULL is fine */

/* A map's value for key (exact match), NULL when absent; *line gets the key's line. */
const hm_yaml_t *hm_yaml_get(const hm_yaml_t *map, const char *key, int *line);

const char *hm_yaml_kind_name(hm_yaml_kind_t kind);

#endif
