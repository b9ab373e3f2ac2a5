/*
 * libFuzzer target: the simulator's command line (sim/options.c).
 *
 * The input is the arguments after "dfccl-sim", one per line (a NUL ends an argument, as in a real
 * argv; at most 64 arguments).  options_parse's verdict and result are compared with this file's
 * reading of the usage line and docs/simulator.md:
 *   - --rounds N (1..2^63-1), --seed S (any 64-bit value) and --threads T (1..1024) take decimal
 *     digits only: no sign, no spaces, no hexadecimal;
 *   - --order takes interleave or concat, --rule exact or intersection; --explain takes nothing;
 *   - --help or -h anywhere before an error asks for the usage;
 *   - exactly one argument that is not an option (a lone "-" is one) names the config file;
 *   - an error says which option, value or argument is wrong.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "options.h"

#define MAX_ARGS 64

/* Decimal digits only, within [min, max]. */
static bool spec_number(const char* s, uint64_t min, uint64_t max, uint64_t* out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v < min || v > max) return false;
  *out = v;
  return true;
}

/* The expected verdict; for OPTIONS_BAD, *culprit is how the message must begin. */
static enum options_status spec_parse(int argc, char** argv, struct options* o, const char** culprit) {
  memset(o, 0, sizeof *o);
  o->threads = 1;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n;
    *culprit = a;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return OPTIONS_HELP;
    if (!strcmp(a, "--explain")) {
      o->explain = true;
      continue;
    }
    bool ok = true;
    if (!strcmp(a, "--rule")) {
      ok = val && (!strcmp(val, "exact") || !strcmp(val, "intersection"));
      if (ok) o->intersection_rule = !strcmp(val, "intersection");
    } else if (!strcmp(a, "--rounds")) {
      ok = o->has_rounds = spec_number(val, 1, SIM_MAX_ROUNDS, &o->rounds);
    } else if (!strcmp(a, "--seed")) {
      ok = o->has_seed = spec_number(val, 0, UINT64_MAX, &o->seed);
    } else if (!strcmp(a, "--threads")) {
      ok = spec_number(val, 1, SIM_MAX_THREADS, &n);
      if (ok) o->threads = (unsigned)n;
    } else if (!strcmp(a, "--order")) {
      ok = val && (!strcmp(val, "interleave") || !strcmp(val, "concat"));
      if (ok) o->order = !strcmp(val, "concat") ? ORDER_CONCAT : ORDER_INTERLEAVE;
      o->has_order = ok;
    } else if (a[0] == '-' && a[1] != '\0') {
      *culprit = "unknown option";
      return OPTIONS_BAD;
    } else if (o->config_path) {
      *culprit = "more than one config file";
      return OPTIONS_BAD;
    } else {
      o->config_path = a;
      continue;
    }
    if (!ok) return OPTIONS_BAD;
    i++; /* the value */
  }
  *culprit = "no config file";
  return o->config_path ? OPTIONS_RUN : OPTIONS_BAD;
}

static const char* status_name(enum options_status s) {
  return s == OPTIONS_RUN ? "run" : s == OPTIONS_HELP ? "help" : "bad";
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* text = malloc(size + 1);
  FUZZ_REQUIRE(text != NULL, "out of memory");
  memcpy(text, data, size);
  text[size] = '\0';
  char* argv[MAX_ARGS + 2] = {"dfccl-sim"};
  int argc = 1;
  for (char* line = text; argc <= MAX_ARGS && line <= text + size;) {
    char* nl = memchr(line, '\n', (size_t)(text + size - line));
    if (nl) *nl = '\0';
    argv[argc++] = line;
    if (!nl) break;
    line = nl + 1;
  }
  argv[argc] = NULL;

  struct options got, want;
  bool show_usage;
  char err[512];
  const char* culprit = "";
  enum options_status status = options_parse(argc, argv, &got, &show_usage, err, sizeof err);
  enum options_status expected = spec_parse(argc, argv, &want, &culprit);
  FUZZ_REQUIRE(status == expected, "%s, expected %s (%s)", status_name(status), status_name(expected),
               status == OPTIONS_BAD ? err : culprit);
  if (status == OPTIONS_BAD) {
    size_t n = strlen(culprit);
    FUZZ_REQUIRE(strncmp(err, culprit, n < sizeof err - 1 ? n : sizeof err - 1) == 0,
                 "the message \"%s\" does not begin with \"%s\"", err, culprit);
  } else if (status == OPTIONS_RUN) {
    FUZZ_REQUIRE(got.config_path == want.config_path, "config \"%s\", expected \"%s\"", got.config_path,
                 want.config_path);
    FUZZ_REQUIRE(got.has_rounds == want.has_rounds && got.rounds == want.rounds, "--rounds %llu, expected %llu",
                 (unsigned long long)got.rounds, (unsigned long long)want.rounds);
    FUZZ_REQUIRE(got.has_seed == want.has_seed && got.seed == want.seed, "--seed %llu, expected %llu",
                 (unsigned long long)got.seed, (unsigned long long)want.seed);
    FUZZ_REQUIRE(got.threads == want.threads, "--threads %u, expected %u", got.threads, want.threads);
    FUZZ_REQUIRE(got.has_order == want.has_order && got.order == want.order, "--order");
    FUZZ_REQUIRE(got.explain == want.explain && got.intersection_rule == want.intersection_rule, "--explain, --rule");
  }
  free(text);
  return 0;
}
