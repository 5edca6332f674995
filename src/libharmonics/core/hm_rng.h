/*
 * hm_rng.h - splitmix64 (Steele, Lea and Flood 2014), the one mixer behind the
 * seeded draws: the simulator's jitter streams, the policies' random orders,
 * the workload generator's seeding, the benches and the random tests.
 *
 * A seed reproduces a run, so every user must draw the same bits on every
 * platform: header-only, integer arithmetic, no global state (the caller owns
 * the 64-bit state). Hash-style uses of the golden-ratio constant (seed * C + i)
 * are not this generator and stay where they are.
 */
#ifndef HM_RNG_H
#define HM_RNG_H

#include <stdint.h>

/* The next 64 bits; advances *state. */
static inline uint64_t hm_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1): the top 53 bits of the next draw. */
static inline double hm_rng_unit(uint64_t *state)
{
	return (double)(hm_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
