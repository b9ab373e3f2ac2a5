/*
 * The unit tests' failure count: FAIL says what went wrong (a printf format, one line on stderr)
 * and counts it; the test reports the count and exits nonzero when it is not 0.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_UNIT_CHECK_H
#define DFCCL_TEST_UNIT_CHECK_H

#include <stdio.h>

static int failures;
#define FAIL(...)                 \
  do {                            \
    fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr);          \
    failures++;                   \
  } while (0)

#endif /* DFCCL_TEST_UNIT_CHECK_H */
