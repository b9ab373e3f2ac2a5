/*
 * dfccl-sim: the deadlock simulator of the paper's section 2.4 (Table 1).
 *
 *   dfccl-sim CONFIG.json [--rounds N] [--seed S] [--threads T]
 *             [--order interleave|concat] [--explain] [--rule exact|intersection]
 *
 * The last line of stdout is always
 *   deadlock_ratio=R deadlocks=K rounds=N ci95_low=L ci95_high=H
 * Bad input exits with status 2.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "explain.h"
#include "options.h"
#include "runner.h"
#include "stats.h"
#include "topology.h"

#define EXIT_BAD_INPUT 2

static void print_setup(const struct sim_config* cfg, const struct topology* t, const struct options* o) {
  printf("config: %s\n", o->config_path);
  printf("model: %s; grouping: ", model_name(cfg->model));
  if (cfg->grouping == GROUPING_3D) printf("3D (tp %u, dp %u, pp %u)", cfg->tp, cfg->dp, cfg->pp);
  else printf("free");
  printf("; %u GPUs, %u groups, %u collectives, %u parts\n", t->gpu_num, t->group_num, t->coll_num,
         t->order_off[t->gpu_num]);
  printf("order: %s; disorder_prob: %g; ", order_name(cfg->order), cfg->disorder_prob);
  if (cfg->model == MODEL_SYNC) printf("sync_prob: %g; ", cfg->sync_prob);
  printf("seed: %llu; threads: %u\n", (unsigned long long)cfg->seed, o->threads);
}

int main(int argc, char** argv) {
  struct options o;
  bool show_usage;
  char err[512];
  switch (options_parse(argc, argv, &o, &show_usage, err, sizeof err)) {
    case OPTIONS_RUN: break;
    case OPTIONS_HELP: options_usage(stdout); return 0;
    case OPTIONS_BAD:
      if (show_usage) options_usage(stderr);
      fprintf(stderr, "dfccl-sim: %s\n", err);
      return EXIT_BAD_INPUT;
  }
  int rc = 0;

  struct sim_config cfg;
  if (config_load_file(o.config_path, &cfg, err, sizeof err)) {
    fprintf(stderr, "dfccl-sim: %s: %s\n", o.config_path, err);
    return EXIT_BAD_INPUT;
  }
  if (o.has_rounds) cfg.rounds = o.rounds;
  if (o.has_seed) cfg.seed = o.seed;
  if (o.has_order) cfg.order = o.order;
  if (cfg.rounds == 0) {
    fprintf(stderr, "dfccl-sim: %s: missing key \"total_rounds\" (or give --rounds)\n", o.config_path);
    config_free(&cfg);
    return EXIT_BAD_INPUT;
  }

  struct topology t;
  if (topology_build(&cfg, &t, err, sizeof err)) {
    fprintf(stderr, "dfccl-sim: %s\n", err);
    config_free(&cfg);
    return 1;
  }
  struct sim_params params = {cfg.model, cfg.disorder_prob, cfg.sync_prob, o.intersection_rule};
  print_setup(&cfg, &t, &o);
  fflush(stdout);

  struct run_result res;
  if (run_rounds(&t, &params, cfg.rounds, cfg.seed, o.threads, true, &res)) {
    fprintf(stderr, "dfccl-sim: out of memory or threads\n");
    rc = 1;
    goto out;
  }
  printf("time: %.3f s, %.4f ms per round\n", res.seconds, 1e3 * res.seconds / (double)res.rounds);
  if (o.explain) {
    if (res.first_deadlock == NO_DEADLOCK) printf("no round deadlocked: nothing to explain\n");
    else if (explain_round(&t, &params, cfg.seed, res.first_deadlock, stdout)) rc = 1;
  }
  struct wilson w = wilson95(res.deadlocks, res.rounds);
  printf("deadlock_ratio=%.6f deadlocks=%llu rounds=%llu ci95_low=%.6f ci95_high=%.6f\n",
         (double)res.deadlocks / (double)res.rounds, (unsigned long long)res.deadlocks, (unsigned long long)res.rounds,
         w.low, w.high);
out:
  topology_free(&t);
  config_free(&cfg);
  return rc;
}
