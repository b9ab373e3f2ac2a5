/*
 * Unit tests of both models: scripted rounds whose outcome is known, and
 * tiny configurations whose deadlock probability is computed by hand.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../config.h"
#include "../round.h"
#include "../runner.h"
#include "../topology.h"
#include "check.h"

struct sim {
  struct sim_config cfg;
  struct topology t;
  struct sim_params p;
  struct round_state st;
};

static int sim_open(struct sim* s, const char* json, enum sim_order order) {
  char err[256];
  memset(s, 0, sizeof *s);
  if (config_load_string(json, &s->cfg, err, sizeof err)) {
    fprintf(stderr, "bad test config: %s\n", err);
    return -1;
  }
  s->cfg.order = order;
  if (topology_build(&s->cfg, &s->t, err, sizeof err)) return -1;
  s->p = (struct sim_params){s->cfg.model, s->cfg.disorder_prob, s->cfg.sync_prob, false};
  return round_state_init(&s->st, &s->t, &s->p);
}

static void sim_close(struct sim* s) {
  round_state_free(&s->st);
  topology_free(&s->t);
  config_free(&s->cfg);
}

static uint64_t count_deadlocks(struct sim* s, uint64_t rounds, unsigned threads) {
  struct run_result r;
  if (run_rounds(&s->t, &s->p, rounds, 42, threads, false, &r)) return UINT64_MAX;
  return r.deadlocks;
}

/* Statistical check: observed count within 5 standard deviations of the
 * hand-computed probability (fixed seed, so it is decisive and stable). */
static void check_probability(struct sim* s, uint64_t rounds, double expect, const char* what) {
  uint64_t k = count_deadlocks(s, rounds, 2);
  double sd = sqrt(expect * (1.0 - expect) / (double)rounds);
  double got = (double)k / (double)rounds;
  fprintf(stderr, "%-48s expected %.5f, got %.5f (%llu/%llu)\n", what, expect, got, (unsigned long long)k,
          (unsigned long long)rounds);
  CHECK(fabs(got - expect) <= 5.0 * sd + 1e-12);
}

#define TRIANGLE(model, p, s)                                                                             \
  "{\"model\":\"" model "\",\"grouping_policy\":\"Arbitrary\",\"disorder_prob\":" #p ",\"sync_prob\":" #s \
  ",\"total_rounds\":1,\"gpu_num\":3,\"group_num\":3,"                                                    \
  "\"gpu_per_group\":[[0,1],[1,2],[0,2]],\"coll_cnt_per_group\":[1,1,1]}"

#define ONE_GROUP(model, gpus, members, colls, p, s)                                                      \
  "{\"model\":\"" model "\",\"grouping_policy\":\"Arbitrary\",\"disorder_prob\":" #p ",\"sync_prob\":" #s \
  ",\"total_rounds\":1,\"gpu_num\":" #gpus ",\"group_num\":1,"                                            \
  "\"gpu_per_group\":[" members "],\"coll_cnt_per_group\":[" #colls "]}"

/* Groups g0={0,1}, g1={1,2}, g2={0,2}, one collective each.  GPU 0 runs g2
 * first, the others keep their order: 0 -> 2 -> 1 -> 0 through three
 * groups, though no two GPUs disagree on the order of any group. */
static void test_single_three_group_cycle(void) {
  struct sim s;
  CHECK(sim_open(&s, TRIANGLE("Single", 0, 0), ORDER_INTERLEAVE) == 0);
  round_begin(&s.st, 1, 0);
  round_invoke(&s.st, 0, 1); /* g2 */
  round_invoke(&s.st, 1, 0); /* g0 */
  round_invoke(&s.st, 2, 0); /* g1 */
  round_invoke(&s.st, 0, 0); /* g0, queued behind g2 */
  round_invoke(&s.st, 1, 0); /* g1, queued behind g0 */
  CHECK(!s.st.deadlocked);   /* 0 -> 2 is still missing */
  round_invoke(&s.st, 2, 0); /* g2, queued behind g1: closes the cycle */
  CHECK(s.st.deadlocked);
  CHECK(s.st.finder.found.len == 3);
  uint32_t groups = 0;
  for (uint32_t i = 0; i < s.st.finder.found.len; i++) groups |= 1u << s.t.coll_group[s.st.finder.found.via[i]];
  CHECK(groups == 7); /* one edge per group */
  sim_close(&s);
}

static void test_single_same_order_completes(void) {
  struct sim s;
  CHECK(sim_open(&s, ONE_GROUP("Single", 2, "[0,1]", 2, 0, 0), ORDER_INTERLEAVE) == 0);
  round_begin(&s.st, 1, 0);
  round_invoke(&s.st, 0, 1);
  round_invoke(&s.st, 1, 1); /* both run the second first: consistent */
  round_invoke(&s.st, 0, 0);
  round_invoke(&s.st, 1, 0);
  CHECK(!s.st.deadlocked);
  CHECK(round_all_completed(&s.st));
  sim_close(&s);
}

/* Two GPUs synchronize while each executes what the other has not invoked. */
static void test_sync_two_gpu_cycle(void) {
  struct sim s;
  CHECK(sim_open(&s, ONE_GROUP("StreamWithSync", 2, "[0,1]", 2, 0, 0.5), ORDER_INTERLEAVE) == 0);
  round_begin(&s.st, 1, 0);
  round_invoke(&s.st, 0, 1); /* GPU 0 runs b */
  round_invoke(&s.st, 1, 0); /* GPU 1 runs a */
  round_sync(&s.st, 0);
  CHECK(s.st.suspended[0] && !s.st.deadlocked); /* GPU 1 can still invoke b */
  round_sync(&s.st, 1);
  CHECK(s.st.deadlocked);
  CHECK(s.st.finder.found.len == 2);
  sim_close(&s);
}

/* A synchronization with nothing executing does not suspend; one whose
 * collectives complete is released. */
static void test_sync_without_cycle(void) {
  struct sim s;
  CHECK(sim_open(&s, ONE_GROUP("StreamWithSync", 2, "[0,1]", 2, 0, 0.5), ORDER_INTERLEAVE) == 0);
  round_begin(&s.st, 1, 0);
  round_sync(&s.st, 0);
  CHECK(!s.st.suspended[0]);
  round_invoke(&s.st, 0, 0);
  round_sync(&s.st, 0);
  CHECK(s.st.suspended[0]);
  round_invoke(&s.st, 1, 0); /* completes a */
  CHECK(s.st.exec_count[0] == 0 && !s.st.deadlocked);
  sim_close(&s);
}

static void test_sync_three_group_cycle(void) {
  struct sim s;
  CHECK(sim_open(&s, TRIANGLE("StreamWithSync", 0, 0.5), ORDER_INTERLEAVE) == 0);
  round_begin(&s.st, 1, 0);
  round_invoke(&s.st, 0, 1); /* g2 */
  round_invoke(&s.st, 1, 0); /* g0 */
  round_invoke(&s.st, 2, 0); /* g1 */
  round_sync(&s.st, 0);
  round_sync(&s.st, 1);
  CHECK(!s.st.deadlocked);
  round_sync(&s.st, 2);
  CHECK(s.st.deadlocked);
  CHECK(s.st.finder.found.len == 3);
  sim_close(&s);
}

/* Three suspended GPUs on a path 1 -> 0 -> 2, not a cycle: the authors'
 * intersection rule calls it a deadlock, the exact check does not. */
static void test_intersection_rule_over_approximates(void) {
  const char* json = "{\"model\":\"StreamWithSync\",\"grouping_policy\":\"Arbitrary\","
                     "\"disorder_prob\":0,\"sync_prob\":0.5,\"total_rounds\":1,\"gpu_num\":4,"
                     "\"group_num\":3,\"gpu_per_group\":[[0,1],[0,2],[2,3]],"
                     "\"coll_cnt_per_group\":[1,1,1]}";
  for (int rule = 0; rule < 2; rule++) {
    struct sim s;
    CHECK(sim_open(&s, json, ORDER_INTERLEAVE) == 0);
    round_state_free(&s.st);
    s.p.intersection_rule = rule;
    CHECK(round_state_init(&s.st, &s.t, &s.p) == 0);
    round_begin(&s.st, 1, 0);
    round_invoke(&s.st, 1, 0); /* g0: waits for GPU 0 */
    round_invoke(&s.st, 0, 1); /* g1 before g0: waits for GPU 2 */
    round_invoke(&s.st, 2, 1); /* g2 before g1: waits for GPU 3 */
    round_sync(&s.st, 1);
    round_sync(&s.st, 2);
    CHECK(!s.st.deadlocked);
    round_sync(&s.st, 0); /* 1 -> 0 -> 2, and 2 waits for GPU 3 */
    CHECK(s.st.deadlocked == (rule == 1));
    round_invoke(&s.st, 3, 0); /* GPU 3 releases the path */
    CHECK(s.st.exec_count[2] == 0);
    sim_close(&s);
  }
}

/* 2 GPUs, one group, 2 collectives: deadlock iff the two first picks differ. */
static void test_single_two_gpus(void) {
  struct sim s;
  CHECK(sim_open(&s, ONE_GROUP("Single", 2, "[0,1]", 2, 0.3, 0), ORDER_INTERLEAVE) == 0);
  check_probability(&s, 40000, 2 * 0.3 * 0.7, "single, 2 GPUs, p=0.3: 2p(1-p)");
  sim_close(&s);
}

/* 3 GPUs, one group, 2 collectives: deadlock unless all first picks agree. */
static void test_single_three_gpus(void) {
  struct sim s;
  double p = 0.2;
  CHECK(sim_open(&s, ONE_GROUP("Single", 3, "[0,1,2]", 2, 0.2, 0), ORDER_INTERLEAVE) == 0);
  check_probability(&s, 40000, 1 - pow(1 - p, 3) - pow(p, 3), "single, 3 GPUs, p=0.2: 1-(1-p)^3-p^3");
  sim_close(&s);
}

/* Triangle: the orientation (each GPU's first pick) is cyclic in two of
 * eight cases: p(1-p)^2 + p^2(1-p) = p(1-p). */
static void test_single_triangle(void) {
  struct sim s;
  CHECK(sim_open(&s, TRIANGLE("Single", 0.3, 0), ORDER_INTERLEAVE) == 0);
  check_probability(&s, 40000, 0.3 * 0.7, "single, 3-group triangle, p=0.3: p(1-p)");
  sim_close(&s);
}

/* Sync, 2 GPUs, one group, 2 collectives: the first picks must differ and
 * each GPU's step right after its first invocation must be a
 * synchronization: 2p(1-p)s^2. */
static void test_sync_two_gpus(void) {
  struct sim s;
  CHECK(sim_open(&s, ONE_GROUP("StreamWithSync", 2, "[0,1]", 2, 0.5, 0.5), ORDER_INTERLEAVE) == 0);
  check_probability(&s, 40000, 2 * 0.5 * 0.5 * 0.25, "sync, 2 GPUs, p=s=0.5: 2p(1-p)s^2");
  sim_close(&s);
}

#define THREE_D(model, p, s)                                                                             \
  "{\"model\":\"" model "\",\"grouping_policy\":\"Megatron\",\"disorder_prob\":" #p ",\"sync_prob\":" #s \
  ",\"total_rounds\":1,\"tp_group_size\":2,\"dp_group_size\":3,"                                         \
  "\"pp_group_size\":2,\"coll_cnt_per_tp_group\":20,\"coll_cnt_per_dp_group\":40}"

static const char* free_64_small(const char* model, double p, double s) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "{\"model\":\"%s\",\"grouping_policy\":\"Arbitrary\",\"disorder_prob\":%g,"
           "\"sync_prob\":%g,\"total_rounds\":1,\"gpu_num\":12,\"group_num\":6,"
           "\"gpu_per_group\":[[0,1,6],[1,3,7],[0,2,8],[2,3,9],[0,3,4,5,10],[1,2,4,5,11]],"
           "\"coll_cnt_per_group\":[10,30,10,30,10,30]}",
           model, p, s);
  return buf;
}

/* No disorder: every GPU's order is a sub-order of one global order, so
 * nothing can deadlock, whatever the model, grouping and list order. */
static void test_zero_probabilities(void) {
  for (int order = 0; order < 2; order++) {
    struct sim s;
    CHECK(sim_open(&s, THREE_D("Single", 0, 0), (enum sim_order)order) == 0);
    CHECK(count_deadlocks(&s, 200, 2) == 0);
    sim_close(&s);
    CHECK(sim_open(&s, THREE_D("StreamWithSync", 0, 0.3), (enum sim_order)order) == 0);
    CHECK(count_deadlocks(&s, 200, 2) == 0);
    sim_close(&s);
    CHECK(sim_open(&s, THREE_D("StreamWithSync", 0.3, 0), (enum sim_order)order) == 0);
    CHECK(count_deadlocks(&s, 200, 2) == 0); /* no sync: no deadlock */
    sim_close(&s);
    CHECK(sim_open(&s, free_64_small("Single", 0, 0), (enum sim_order)order) == 0);
    CHECK(count_deadlocks(&s, 200, 2) == 0);
    sim_close(&s);
    CHECK(sim_open(&s, free_64_small("StreamWithSync", 0, 0.3), (enum sim_order)order) == 0);
    CHECK(count_deadlocks(&s, 200, 2) == 0);
    sim_close(&s);
    CHECK(sim_open(&s, free_64_small("StreamWithSync", 0.3, 0), (enum sim_order)order) == 0);
    CHECK(count_deadlocks(&s, 200, 2) == 0);
    sim_close(&s);
  }
}

/* A round without deadlock ends with every collective completed. */
static void test_clean_rounds_complete(void) {
  const char* cfgs[] = {THREE_D("Single", 0.01, 0), THREE_D("StreamWithSync", 0.05, 0.05)};
  for (int i = 0; i < 2; i++) {
    struct sim s;
    CHECK(sim_open(&s, cfgs[i], ORDER_INTERLEAVE) == 0);
    int clean = 0;
    for (uint64_t r = 0; r < 200; r++)
      if (!round_run(&s.st, 9, r)) {
        clean++;
        CHECK(round_all_completed(&s.st));
      }
    CHECK(clean > 0);
    sim_close(&s);
  }
}

/* Same seed and rounds, any thread count: the same result. */
static void test_threads_do_not_change_results(void) {
  struct sim s;
  CHECK(sim_open(&s, free_64_small("StreamWithSync", 0.02, 0.05), ORDER_INTERLEAVE) == 0);
  struct run_result one, two, three;
  CHECK(run_rounds(&s.t, &s.p, 3000, 7, 1, false, &one) == 0);
  CHECK(run_rounds(&s.t, &s.p, 3000, 7, 2, false, &two) == 0);
  CHECK(run_rounds(&s.t, &s.p, 3000, 7, 3, false, &three) == 0);
  CHECK(one.deadlocks > 0);
  CHECK(one.deadlocks == two.deadlocks && one.deadlocks == three.deadlocks);
  CHECK(one.first_deadlock == two.first_deadlock && one.first_deadlock == three.first_deadlock);
  sim_close(&s);
}

int main(void) {
  test_single_three_group_cycle();
  test_single_same_order_completes();
  test_sync_two_gpu_cycle();
  test_sync_without_cycle();
  test_sync_three_group_cycle();
  test_intersection_rule_over_approximates();
  test_single_two_gpus();
  test_single_three_gpus();
  test_single_triangle();
  test_sync_two_gpus();
  test_zero_probabilities();
  test_clean_rounds_complete();
  test_threads_do_not_change_results();
  return check_status();
}
