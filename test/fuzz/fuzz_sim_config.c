/*
 * libFuzzer target: the simulator's JSON config (sim/config.c, config_load_buffer, the path every
 * config file takes), then what the simulator builds from an accepted one (sim/topology.c) and a
 * few rounds on it (sim/round.c, sim/explain.c).
 *
 * The input is the file's bytes.  Checked, beyond the sanitizers:
 *   - a refused config has a message;
 *   - an accepted one holds what docs/simulator.md promises the simulator: probabilities in
 *     [0, 1] (sync_prob < 1 for the synchronization model), groups of 1..64 distinct GPUs that cover
 *     0..gpu_num-1, at least one collective per group, fewer than 2^26 collectives and at most 2^28
 *     collective parts in all (so no config asks for more memory than a machine has);
 *   - its topology lists, for each GPU, exactly its groups' collectives, each naming this GPU's bit,
 *     in an order that all GPUs share.
 * The topology is built only up to 2^20 parts, and rounds run only up to 2^12: bigger configs are
 * valid, and cost memory and time in proportion, which would only slow the fuzzer down.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "explain.h"
#include "fuzz_check.h"
#include "round.h"
#include "topology.h"

#define BUILD_PARTS (1u << 20)
#define ROUND_PARTS (1u << 12)
#define ROUNDS 4

static FILE* nowhere; /* --explain's output */

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  nowhere = fopen("/dev/null", "w");
  FUZZ_REQUIRE(nowhere != NULL, "cannot open /dev/null");
  return 0;
}

static bool prob(double p) { return p >= 0.0 && p <= 1.0; }

/* The collectives and parts of an accepted config, checking its groups on the way. */
static void check_config(const struct sim_config* cfg, uint64_t* colls, uint64_t* parts) {
  FUZZ_REQUIRE(cfg->model == MODEL_SINGLE_QUEUE || cfg->model == MODEL_SYNC, "model %d", (int)cfg->model);
  FUZZ_REQUIRE(cfg->order == ORDER_INTERLEAVE || cfg->order == ORDER_CONCAT, "order %d", (int)cfg->order);
  FUZZ_REQUIRE(prob(cfg->disorder_prob) && prob(cfg->sync_prob), "disorder_prob %g, sync_prob %g", cfg->disorder_prob,
               cfg->sync_prob);
  FUZZ_REQUIRE(cfg->model != MODEL_SYNC || cfg->sync_prob < 1.0, "a GPU that always synchronizes");
  FUZZ_REQUIRE(cfg->rounds <= SIM_MAX_ROUNDS, "%llu rounds", (unsigned long long)cfg->rounds);
  FUZZ_REQUIRE(cfg->gpu_num >= 1 && cfg->gpu_num <= (1u << 24) && cfg->group_num >= 1, "%u GPUs, %u groups",
               cfg->gpu_num, cfg->group_num);
  *colls = *parts = 0;
  if (cfg->grouping == GROUPING_3D) {
    FUZZ_REQUIRE(
        cfg->tp >= 1 && cfg->tp <= SIM_MAX_GROUP_SIZE && cfg->dp >= 1 && cfg->dp <= SIM_MAX_GROUP_SIZE && cfg->pp >= 1,
        "tp %u, dp %u, pp %u", cfg->tp, cfg->dp, cfg->pp);
    FUZZ_REQUIRE((uint64_t)cfg->tp * cfg->dp * cfg->pp == cfg->gpu_num, "tp*dp*pp != %u GPUs", cfg->gpu_num);
    FUZZ_REQUIRE((uint64_t)(cfg->tp + cfg->dp) * cfg->pp == cfg->group_num, "%u groups", cfg->group_num);
    FUZZ_REQUIRE(cfg->coll_per_tp_group >= 1 && cfg->coll_per_dp_group >= 1, "a group without collectives");
    *colls =
        (uint64_t)cfg->pp * ((uint64_t)cfg->dp * cfg->coll_per_tp_group + (uint64_t)cfg->tp * cfg->coll_per_dp_group);
    *parts = (uint64_t)cfg->gpu_num * ((uint64_t)cfg->coll_per_tp_group + cfg->coll_per_dp_group);
  } else {
    FUZZ_REQUIRE(cfg->grouping == GROUPING_FREE, "grouping %d", (int)cfg->grouping);
    uint8_t* covered = calloc(cfg->gpu_num, 1);
    FUZZ_REQUIRE(covered != NULL, "out of memory");
    FUZZ_REQUIRE(cfg->member_off[0] == 0, "member_off[0] = %u", cfg->member_off[0]);
    for (uint32_t g = 0; g < cfg->group_num; g++) {
      uint32_t first = cfg->member_off[g], last = cfg->member_off[g + 1];
      FUZZ_REQUIRE(last > first && last - first <= SIM_MAX_GROUP_SIZE, "group %u has %d GPUs", g, (int)(last - first));
      for (uint32_t m = first; m < last; m++) {
        FUZZ_REQUIRE(cfg->members[m] < cfg->gpu_num, "group %u lists GPU %u", g, cfg->members[m]);
        for (uint32_t k = first; k < m; k++)
          FUZZ_REQUIRE(cfg->members[k] != cfg->members[m], "group %u lists GPU %u twice", g, cfg->members[m]);
        covered[cfg->members[m]] = 1;
      }
      FUZZ_REQUIRE(cfg->coll_per_group[g] >= 1, "group %u without collectives", g);
      *colls += cfg->coll_per_group[g];
      *parts += (uint64_t)cfg->coll_per_group[g] * (last - first);
    }
    for (uint32_t gpu = 0; gpu < cfg->gpu_num; gpu++) FUZZ_REQUIRE(covered[gpu], "GPU %u in no group", gpu);
    free(covered);
  }
  FUZZ_REQUIRE(*colls < SIM_MAX_COLLECTIVES, "%llu collectives", (unsigned long long)*colls);
  FUZZ_REQUIRE(*parts <= SIM_MAX_PARTS, "%llu collective parts", (unsigned long long)*parts);
}

static void check_topology(const struct topology* t, uint64_t colls, uint64_t parts) {
  FUZZ_REQUIRE(t->coll_num == colls, "%u collectives built, %llu configured", t->coll_num, (unsigned long long)colls);
  FUZZ_REQUIRE(t->order_off[0] == 0 && t->order_off[t->gpu_num] == parts, "%u parts built, %llu configured",
               t->order_off[t->gpu_num], (unsigned long long)parts);
  FUZZ_REQUIRE(t->orders_agree, "the orders as built always share one global order (topology.c)");
  for (uint32_t g = 0; g < t->group_num; g++) {
    uint32_t n = group_size(t, g);
    FUZZ_REQUIRE(n >= 1 && n <= 64 && (uint32_t)__builtin_popcountll(t->all_members[g]) == n,
                 "group %u: %u members, mask %llx", g, n, (unsigned long long)t->all_members[g]);
  }
  for (uint32_t gpu = 0; gpu < t->gpu_num; gpu++) {
    /* The collectives of its groups, each once. */
    uint64_t expected = 0;
    for (uint32_t m = t->gpu_group_off[gpu]; m < t->gpu_group_off[gpu + 1]; m++)
      expected += t->coll_cnt[t->gpu_groups[m]];
    uint32_t first = t->order_off[gpu], last = t->order_off[gpu + 1];
    FUZZ_REQUIRE(last >= first && last - first == expected, "GPU %u lists %u parts, its groups have %llu", gpu,
                 last - first, (unsigned long long)expected);
    for (uint32_t at = first; at < last; at++) {
      uint32_t c = entry_coll(t->order[at]), bit = entry_bit(t->order[at]);
      FUZZ_REQUIRE(c < t->coll_num, "GPU %u lists collective %u of %u", gpu, c, t->coll_num);
      uint32_t g = t->coll_group[c];
      FUZZ_REQUIRE(g < t->group_num && bit < group_size(t, g) && member_gpu(t, g, bit) == gpu,
                   "GPU %u lists collective %u of group %u as member bit %u", gpu, c, g, bit);
      FUZZ_REQUIRE(t->coll_index[c] < t->coll_cnt[g] && t->coll_id[t->coll_base[g] + t->coll_index[c]] == c,
                   "collective %u: ids and (group, index) disagree", c);
    }
  }
  char name[128];
  for (uint32_t c = 0; c < t->coll_num; c++) topology_name_coll(t, c, name, sizeof name);
}

static void run_rounds_on(const struct sim_config* cfg, const struct topology* t) {
  for (int rule = 0; rule < (cfg->model == MODEL_SYNC ? 2 : 1); rule++) {
    struct sim_params p = {cfg->model, cfg->disorder_prob, cfg->sync_prob, rule == 1};
    struct round_state st;
    FUZZ_REQUIRE(round_state_init(&st, t, &p) == 0, "out of memory for %u parts", t->order_off[t->gpu_num]);
    for (uint64_t r = 0; r < ROUNDS; r++) {
      if (round_run(&st, cfg->seed, r))
        FUZZ_REQUIRE(explain_round(t, &p, cfg->seed, r, nowhere) == 0, "round %d", (int)r);
      else FUZZ_REQUIRE(round_all_completed(&st), "round %d ended without a deadlock or every collective", (int)r);
    }
    round_state_free(&st);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct sim_config cfg;
  char err[512] = "";
  if (config_load_buffer((const char*)data, size, &cfg, err, sizeof err) != 0) {
    FUZZ_REQUIRE(err[0] != '\0', "refused without a message");
    return 0;
  }
  uint64_t colls, parts;
  check_config(&cfg, &colls, &parts);
  if (parts <= BUILD_PARTS) {
    struct topology t;
    FUZZ_REQUIRE(topology_build(&cfg, &t, err, sizeof err) == 0, "%s", err);
    check_topology(&t, colls, parts);
    if (parts <= ROUND_PARTS) run_rounds_on(&cfg, &t);
    topology_free(&t);
  }
  config_free(&cfg);
  return 0;
}
