/*
 * The host side's one clock: monotonic microseconds, for timeouts and delays (never for wall time).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_CLOCK_H
#define DFCCL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t df_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static inline uint64_t df_now_ms(void) { return df_now_us() / 1000; }

#endif /* DFCCL_CLOCK_H */
