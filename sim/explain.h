/*
 * --explain: replay one round and print the cycle that deadlocked it, one
 * line per collective part: GPU, collective, state.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_EXPLAIN_H
#define DFCCL_SIM_EXPLAIN_H

#include <stdint.h>
#include <stdio.h>

#include "round.h"
#include "topology.h"

/* 0 on success, -1 if memory could not be had. */
int explain_round(const struct topology* t, const struct sim_params* p, uint64_t seed, uint64_t round, FILE* out);

void explain_cycle(const struct round_state* st, FILE* out);

#endif
