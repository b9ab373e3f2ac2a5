/*
 * dfccl-sim's command line:
 *
 *   dfccl-sim CONFIG.json [--rounds N] [--seed S] [--threads T]
 *             [--order interleave|concat] [--explain] [--rule exact|intersection]
 *
 * Parsed without side effects (no exit, no output), so that main decides what to print and the
 * fuzz target test/fuzz/fuzz_sim_options.c can feed it any argv.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_OPTIONS_H
#define DFCCL_SIM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

#define SIM_MAX_THREADS 1024u

struct options {
  const char* config_path; /* points into argv */
  uint64_t rounds, seed;
  bool has_rounds, has_seed, has_order, explain, intersection_rule;
  unsigned threads;
  enum sim_order order;
};

enum options_status {
  OPTIONS_RUN,  /* *o says what to run */
  OPTIONS_HELP, /* --help or -h: print the usage on stdout, exit 0 */
  OPTIONS_BAD,  /* err says why (exit status 2); show_usage: print the usage on stderr too */
};

enum options_status options_parse(int argc, char* const* argv, struct options* o, bool* show_usage, char* err,
                                  size_t errlen);
void options_usage(FILE* out);

#endif
