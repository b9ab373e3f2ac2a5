/*
 * Per-round random numbers.
 *
 * Every round draws from its own generator, seeded from (seed, round index)
 * alone.  That is what makes a run's result independent of how rounds are
 * spread over threads: round r sees the same numbers whichever thread runs it.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_RNG_H
#define DFCCL_SIM_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct rng {
  uint64_t s[4]; /* xoshiro256** state */
};

/* splitmix64: the recommended way to expand one 64-bit seed into a state. */
static inline uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline void rng_seed_round(struct rng* r, uint64_t seed, uint64_t round) {
  uint64_t x = seed;
  uint64_t mixed = splitmix64(&x) ^ (round * 0xd1342543de82ef95ULL);
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&mixed);
}

static inline uint64_t rotl64(uint64_t v, int k) { return (v << k) | (v >> (64 - k)); }

static inline uint64_t rng_next(struct rng* r) {
  uint64_t* s = r->s;
  uint64_t result = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return result;
}

/* A probability as a 64-bit threshold, so a Bernoulli draw is one compare.
 * `certain` covers p = 1, which no threshold below 2^64 can express. */
struct chance {
  uint64_t threshold;
  bool certain;
};

static inline struct chance chance_of(double p) {
  struct chance c = {0, false};
  if (p >= 1.0) c.certain = true;
  else if (p > 0.0) c.threshold = (uint64_t)(p * 18446744073709551616.0);
  return c;
}

/* p = 0 draws nothing: the single-queue model (sync_prob 0) and runs
 * without disorder spend no time on draws that cannot succeed. */
static inline bool rng_happens(struct rng* r, struct chance c) {
  return c.certain || (c.threshold != 0 && rng_next(r) < c.threshold);
}

#endif
