/*
 * The job table's index: job id -> slot in c->jobs, open addressing with
 * linear probing. A sync with Slurm looks up every running job; with 10,000
 * of them a linear search was 50 million compares per sync under the engine's
 * mutex (tests/load/ctld_load.sh).
 */
#include <stdlib.h>

#include "hm_coord_int.h"

/* A key is job id + 1: 0 marks an empty cell, and a job id of 0 still fits. */
static size_t cell_of(uint64_t key, size_t mask)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static void place(hm_coord_index_t *x, uint64_t key, int slot)
{
	size_t mask = x->cap - 1, i = cell_of(key, mask);

	while (x->keys[i] && x->keys[i] != key)
		i = (i + 1) & mask;
	if (!x->keys[i])
		x->n++;
	x->keys[i] = key;
	x->slots[i] = slot;
}

/* A table twice as large (at least 64 cells), the present entries moved in. */
static int grow(hm_coord_index_t *x)
{
	hm_coord_index_t y = {.cap = x->cap ? x->cap * 2 : 64};

	if (!(y.keys = calloc(y.cap, sizeof(*y.keys))) ||
	    !(y.slots = malloc(y.cap * sizeof(*y.slots)))) {
		free(y.keys);
		return -1;
	}
	for (size_t i = 0; i < x->cap; i++)
		if (x->keys[i])
			place(&y, x->keys[i], x->slots[i]);
	free(x->keys);
	free(x->slots);
	*x = y;
	return 0;
}

/* The cell holding job_id, or -1. */
static long cell_find(const hm_coord_index_t *x, uint32_t job_id)
{
	uint64_t key = (uint64_t)job_id + 1;
	size_t mask = x->cap - 1, i;

	if (!x->cap)
		return -1;
	for (i = cell_of(key, mask); x->keys[i]; i = (i + 1) & mask)
		if (x->keys[i] == key)
			return (long)i;
	return -1;
}

int hm_coord_index_put(hm_coord_index_t *x, uint32_t job_id, int slot)
{
	long i = cell_find(x, job_id);

	if (i >= 0) { /* a move: never needs memory */
		x->slots[i] = slot;
		return 0;
	}
	if ((x->n + 1) * 2 > x->cap && grow(x) != 0)
		return -1;
	place(x, (uint64_t)job_id + 1, slot);
	return 0;
}

int hm_coord_index_get(const hm_coord_index_t *x, uint32_t job_id)
{
	long i = cell_find(x, job_id);

	return i >= 0 ? x->slots[i] : -1;
}

/* Removal without tombstones: the cells after the hole that probed past it move back. */
void hm_coord_index_del(hm_coord_index_t *x, uint32_t job_id)
{
	long at = cell_find(x, job_id);
	size_t mask = x->cap - 1, i, j;

	if (at < 0)
		return;
	i = (size_t)at;
	x->keys[i] = 0;
	x->n--;
	for (j = (i + 1) & mask; x->keys[j]; j = (j + 1) & mask) {
		size_t home = cell_of(x->keys[j], mask);

		/* j's entry may fill the hole at i unless its home lies in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			x->keys[i] = x->keys[j];
			x->slots[i] = x->slots[j];
			x->keys[j] = 0;
			i = j;
		}
	}
}

void hm_coord_index_clear(hm_coord_index_t *x)
{
	free(x->keys);
	free(x->slots);
	*x = (hm_coord_index_t){0};
}
