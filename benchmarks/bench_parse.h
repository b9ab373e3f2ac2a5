/*
 * The benchmarks' number parsing for options: byte sizes with K/M/G suffixes, bounded integers and
 * doubles.  Each returns 0, or -1 for text that is not such a number.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_BENCH_PARSE_H
#define DFCCL_BENCH_PARSE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* "64", "1K", "16M", "2G" (powers of 1024; a trailing "B" is allowed). */
static inline int parse_bytes(const char* s, size_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || s[0] == '-') return -1;
  unsigned long long mult = 1;
  switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    default: break;
  }
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0' || (v != 0 && mult > (unsigned long long)SIZE_MAX / v)) return -1;
  *out = (size_t)(v * mult);
  return 0;
}

static inline int parse_int(const char* s, int lo, int hi, int* out) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static inline int parse_double(const char* s, double lo, double* out) {
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo)) return -1;
  *out = v;
  return 0;
}

#endif /* DFCCL_BENCH_PARSE_H */
