/*
 * The Wilson score interval behind the reported ci95_low and ci95_high (stats.h).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "stats.h"

#include <math.h>

struct wilson wilson95(uint64_t successes, uint64_t trials) {
  const double z = 1.959963984540054; /* two-sided 95 % normal quantile */
  struct wilson w = {0.0, 1.0};
  if (trials == 0) return w;
  double n = (double)trials, p = (double)successes / n;
  double denom = 1.0 + z * z / n;
  double centre = (p + z * z / (2.0 * n)) / denom;
  double half = z * sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom;
  w.low = centre - half < 0.0 ? 0.0 : centre - half;
  w.high = centre + half > 1.0 ? 1.0 : centre + half;
  return w;
}
