/*
 * Minimal test helpers: a failed CHECK reports and marks the test failed;
 * the test's main returns check_status() (automake: 0 pass, 1 fail).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_TEST_CHECK_H
#define DFCCL_SIM_TEST_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      check_failures++;                                                        \
    }                                                                          \
  } while (0)

static inline int check_status(void) {
  if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}

#endif
