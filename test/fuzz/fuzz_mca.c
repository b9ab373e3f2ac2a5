/*
 * libFuzzer target: coll/dfccl's integer MCA parameters (ompi_coll_dfccl/coll_dfccl_params_parse.c),
 * the text Open MPI hands over for coll_dfccl_priority, _verbose, _max_colls, _hang_report, _timeout
 * and _concurrent_runs.  (The boolean and enumerated parameters are Open MPI's own enumerators.)
 *
 * The input's first byte picks a range: one of the parameters' own, or [min, max] from the next 8
 * bytes; the rest, up to a NUL, is the value's text.  Checked against this file's reading of the
 * component's README ("Parameters"):
 *   - a value is decimal digits with a '-' in front at most, and within the range; it is taken
 *     exactly, and anything else is refused without touching the result;
 *   - an accepted value printed with %d (as coll_dfccl_context.c hands it to the core's environment)
 *     reads back as itself;
 *   - the range's description fits the component's 48-byte buffer and names both bounds.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_dfccl_params_parse.h"
#include "fuzz_check.h"

/* The parameters' ranges, as coll_dfccl_component.c registers them. */
static const struct {
  int min, max;
} ranges[] = {
    {0, 100},      /* priority */
    {0, INT_MAX},  /* verbose */
    {1, 2048},     /* max_colls */
    {0, 31536000}, /* hang_report, timeout: a year of seconds */
    {1, 16},       /* concurrent_runs */
};
enum { NRANGES = sizeof ranges / sizeof ranges[0] };

/* What the README says a value is; false for anything else. */
static bool spec_int(const char* text, int min, int max, int* out) {
  const char* p = text[0] == '-' ? text + 1 : text;
  if (*p == '\0') return false;
  int64_t magnitude = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    magnitude = magnitude * 10 + (*p - '0');
    if (magnitude > (int64_t)INT_MAX + 1) return false; /* beyond any int */
  }
  int64_t v = text[0] == '-' ? -magnitude : magnitude;
  if (v < min || v > max) return false;
  *out = (int)v;
  return true;
}

static int32_t read_i32(const uint8_t* p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static void check_description(int min, int max) {
  char buf[48], bound[16];
  int n = mca_coll_dfccl_describe_int_range(min, max, buf, sizeof buf);
  FUZZ_REQUIRE(n > 0 && (size_t)n < sizeof buf, "the description of [%d, %d] takes %d bytes", min, max, n);
  snprintf(bound, sizeof bound, "%d", min);
  FUZZ_REQUIRE(strstr(buf, bound) != NULL, "\"%s\" does not name %d", buf, min);
  snprintf(bound, sizeof bound, "%d", max);
  FUZZ_REQUIRE(max == INT_MAX || strstr(buf, bound) != NULL, "\"%s\" does not name %d", buf, max);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  unsigned pick = data[0] % (NRANGES + 1);
  data++, size--;
  int min, max;
  if (pick < NRANGES) {
    min = ranges[pick].min;
    max = ranges[pick].max;
  } else {
    if (size < 8) return 0;
    min = read_i32(data);
    max = read_i32(data + 4);
    if (min > max) {
      int t = min;
      min = max;
      max = t;
    }
    data += 8, size -= 8;
  }
  char* text = malloc(size + 1);
  FUZZ_REQUIRE(text != NULL, "out of memory");
  memcpy(text, data, size);
  text[size] = '\0';

  const int untouched = 0x5a5a5a5a;
  int got = untouched, want = untouched;
  bool taken = mca_coll_dfccl_parse_int(text, min, max, &got);
  bool valid = spec_int(text, min, max, &want);
  FUZZ_REQUIRE(taken == valid, "\"%s\" in [%d, %d] %s", text, min, max, taken ? "taken" : "refused");
  FUZZ_REQUIRE(got == want, "\"%s\" read as %d, expected %d", text, got, want);
  if (taken) {
    char printed[16];
    int again = untouched;
    snprintf(printed, sizeof printed, "%d", got);
    FUZZ_REQUIRE(mca_coll_dfccl_parse_int(printed, min, max, &again) && again == got, "%d printed as \"%s\" reads %d",
                 got, printed, again);
  }
  check_description(min, max);
  free(text);
  return 0;
}
