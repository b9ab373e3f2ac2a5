/*
 * dfccl-sim's command line (options.h).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void options_usage(FILE* out) {
  fprintf(out, "usage: dfccl-sim CONFIG.json [--rounds N] [--seed S] [--threads T]\n"
               "                 [--order interleave|concat] [--explain]\n"
               "                 [--rule exact|intersection]   (intersection: the authors'\n"
               "                 over-approximating sync-model rule, for comparison only)\n");
}

static enum options_status bad(char* err, size_t errlen, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return OPTIONS_BAD;
}

/* Decimal digits only, in [min, max].  strtoull alone would skip leading spaces and take a sign, so
 * that " -1" would be 2^64-1. */
static bool parse_u64(const char* s, uint64_t min, uint64_t max, uint64_t* out) {
  if (!s || *s < '0' || *s > '9') return false;
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

enum options_status options_parse(int argc, char* const* argv, struct options* o, bool* show_usage, char* err,
                                  size_t errlen) {
  memset(o, 0, sizeof *o);
  o->threads = 1;
  *show_usage = false;
  if (errlen > 0) err[0] = '\0';
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      return OPTIONS_HELP;
    } else if (strcmp(a, "--explain") == 0) {
      o->explain = true;
    } else if (strcmp(a, "--rule") == 0) {
      if (val && strcmp(val, "exact") == 0) o->intersection_rule = false;
      else if (val && strcmp(val, "intersection") == 0) o->intersection_rule = true;
      else return bad(err, errlen, "--rule needs \"exact\" or \"intersection\"");
      i++;
    } else if (strcmp(a, "--rounds") == 0) {
      if (!parse_u64(val, 1, SIM_MAX_ROUNDS, &o->rounds))
        return bad(err, errlen, "--rounds needs an integer in 1..%llu", (unsigned long long)SIM_MAX_ROUNDS);
      o->has_rounds = true;
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (!parse_u64(val, 0, UINT64_MAX, &o->seed)) return bad(err, errlen, "--seed needs a non-negative integer");
      o->has_seed = true;
      i++;
    } else if (strcmp(a, "--threads") == 0) {
      if (!parse_u64(val, 1, SIM_MAX_THREADS, &n))
        return bad(err, errlen, "--threads needs an integer in 1..%u", SIM_MAX_THREADS);
      o->threads = (unsigned)n;
      i++;
    } else if (strcmp(a, "--order") == 0) {
      if (order_parse(val, &o->order)) return bad(err, errlen, "--order needs \"interleave\" or \"concat\"");
      o->has_order = true;
      i++;
    } else if (a[0] == '-' && a[1] != '\0') {
      *show_usage = true;
      return bad(err, errlen, "unknown option %s", a);
    } else if (o->config_path) {
      *show_usage = true;
      return bad(err, errlen, "more than one config file given (%s)", a);
    } else {
      o->config_path = a;
    }
  }
  if (!o->config_path) {
    *show_usage = true;
    return bad(err, errlen, "no config file given");
  }
  return OPTIONS_RUN;
}
