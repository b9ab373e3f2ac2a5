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
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "explain.h"
#include "runner.h"
#include "stats.h"
#include "topology.h"

#define EXIT_BAD_INPUT 2

struct options {
  const char* config_path;
  uint64_t rounds, seed;
  bool has_rounds, has_seed, has_order, explain, intersection_rule;
  unsigned threads;
  enum sim_order order;
};

static void usage(FILE* out) {
  fprintf(out, "usage: dfccl-sim CONFIG.json [--rounds N] [--seed S] [--threads T]\n"
               "                 [--order interleave|concat] [--explain]\n"
               "                 [--rule exact|intersection]   (intersection: the authors'\n"
               "                 over-approximating sync-model rule, for comparison only)\n");
}

static int bad_input(const char* fmt, const char* arg) {
  fprintf(stderr, "dfccl-sim: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  return EXIT_BAD_INPUT;
}

static bool parse_u64(const char* s, uint64_t min, uint64_t* out) {
  char* end;
  if (!s || *s == '\0' || *s == '-') return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end != '\0' || v < min) return false;
  *out = v;
  return true;
}

/* 0 when parsed, otherwise the exit status to use. */
static int parse_args(int argc, char** argv, struct options* o) {
  memset(o, 0, sizeof *o);
  o->threads = 1;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--explain") == 0) {
      o->explain = true;
    } else if (strcmp(a, "--rule") == 0) {
      if (val && strcmp(val, "exact") == 0) o->intersection_rule = false;
      else if (val && strcmp(val, "intersection") == 0) o->intersection_rule = true;
      else return bad_input("--rule needs \"exact\" or \"intersection\"", NULL);
      i++;
    } else if (strcmp(a, "--rounds") == 0) {
      if (!parse_u64(val, 1, &o->rounds)) return bad_input("--rounds needs a positive integer", NULL);
      o->has_rounds = true;
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (!parse_u64(val, 0, &o->seed)) return bad_input("--seed needs a non-negative integer", NULL);
      o->has_seed = true;
      i++;
    } else if (strcmp(a, "--threads") == 0) {
      if (!parse_u64(val, 1, &n) || n > 1024) return bad_input("--threads needs an integer in 1..1024", NULL);
      o->threads = (unsigned)n;
      i++;
    } else if (strcmp(a, "--order") == 0) {
      if (order_parse(val, &o->order)) return bad_input("--order needs \"interleave\" or \"concat\"", NULL);
      o->has_order = true;
      i++;
    } else if (a[0] == '-' && a[1] != '\0') {
      usage(stderr);
      return bad_input("unknown option %s", a);
    } else if (o->config_path) {
      usage(stderr);
      return bad_input("more than one config file given (%s)", a);
    } else {
      o->config_path = a;
    }
  }
  if (!o->config_path) {
    usage(stderr);
    return EXIT_BAD_INPUT;
  }
  return 0;
}

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
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;

  struct sim_config cfg;
  char err[512];
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
