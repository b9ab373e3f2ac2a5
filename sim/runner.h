/*
 * Runs many rounds on several threads.
 *
 * Threads claim chunks of round indices; each round seeds its own generator
 * from (seed, round index), so the count of deadlocks -- and which round
 * deadlocked first -- do not depend on the thread count.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_RUNNER_H
#define DFCCL_SIM_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "round.h"
#include "topology.h"

#define NO_DEADLOCK UINT64_MAX

struct run_result {
  uint64_t rounds;
  uint64_t deadlocks;
  uint64_t first_deadlock; /* lowest deadlocked round index, or NO_DEADLOCK */
  double seconds;
};

/* 0 on success, -1 if memory or threads could not be had. */
int run_rounds(const struct topology* t, const struct sim_params* p, uint64_t rounds, uint64_t seed, unsigned threads,
               bool progress, struct run_result* out);

#endif
