/*
 * The deadlock ratio's 95 % confidence interval (Wilson score interval:
 * unlike the normal approximation it stays inside [0, 1] and behaves at
 * ratios near 0, which is where most Table 1 cells are).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_STATS_H
#define DFCCL_SIM_STATS_H

#include <stdint.h>

struct wilson {
  double low, high;
};

struct wilson wilson95(uint64_t successes, uint64_t trials);

#endif
