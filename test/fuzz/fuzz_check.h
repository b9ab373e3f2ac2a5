/*
 * What the fuzz targets share: a broken invariant is a crash (libFuzzer saves the input that broke
 * it), with one line that says which invariant and why.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_FUZZ_CHECK_H
#define DFCCL_FUZZ_CHECK_H

#include <sanitizer/common_interface_defs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The line goes where the sanitizers' reports go: fuzz.sh runs the targets with -close_fd_mask=3
 * (the simulator notes ignored keys on stderr, millions of times), and libFuzzer keeps only that
 * channel open.  abort(), not assert(): the check holds in every build, NDEBUG or not. */
__attribute__((noreturn, format(printf, 4, 5))) static inline void fuzz_broken(const char* file, int line,
                                                                               const char* cond, const char* fmt, ...) {
  char message[1024];
  int n = snprintf(message, sizeof message, "%s:%d: invariant broken: %s: ", file, line, cond);
  if (n > 0 && (size_t)n < sizeof message) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message + n, sizeof message - (size_t)n, fmt, ap);
    va_end(ap);
  }
  __sanitizer_report_error_summary(message);
  abort();
}

#define FUZZ_REQUIRE(cond, ...)                                       \
  do {                                                                \
    if (!(cond)) fuzz_broken(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

#endif
