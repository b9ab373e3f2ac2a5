/*
 * Unit tests of configuration loading: the authors' keys are accepted, and
 * each kind of bad input is refused with a message naming the problem.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <string.h>

#include "../config.h"
#include "../topology.h"
#include "check.h"

static void expect_error(const char* json, const char* needle) {
  struct sim_config cfg;
  char err[512] = "";
  int rc = config_load_string(json, &cfg, err, sizeof err);
  CHECK(rc != 0);
  if (rc == 0) {
    config_free(&cfg);
    fprintf(stderr, "  accepted: %s\n", json);
  } else if (!strstr(err, needle)) {
    fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err, needle);
    CHECK(strstr(err, needle) != NULL);
  }
}

#define MEGATRON(extra)                                                              \
  "{\"model\":\"Single\",\"grouping_policy\":\"Megatron\",\"disorder_prob\":1e-6,"   \
  "\"total_rounds\":10,\"tp_group_size\":4,\"dp_group_size\":4,\"pp_group_size\":4," \
  "\"coll_cnt_per_tp_group\":400,\"coll_cnt_per_dp_group\":1200" extra "}"

#define FREE(members, counts)                                                              \
  "{\"model\":\"StreamWithSync\",\"grouping_policy\":\"Arbitrary\",\"disorder_prob\":0.1," \
  "\"sync_prob\":0.1,\"total_rounds\":10,\"gpu_num\":4,\"group_num\":2,"                   \
  "\"gpu_per_group\":" members ",\"coll_cnt_per_group\":" counts "}"

static void test_authors_config_accepted(void) {
  struct sim_config cfg;
  char err[512];
  /* As in the authors' files, with their process and seed keys. */
  CHECK(config_load_string(MEGATRON(",\"num_process\":32,\"fix_seed\":1,\"sync_prob\":0.0"), &cfg, err, sizeof err) ==
        0);
  CHECK(cfg.gpu_num == 64 && cfg.group_num == 32 && cfg.rounds == 10);
  CHECK(cfg.order == ORDER_INTERLEAVE);
  struct topology t;
  CHECK(topology_build(&cfg, &t, err, sizeof err) == 0);
  CHECK(t.coll_num == 16 * 400 + 16 * 1200);
  CHECK(t.order_off[t.gpu_num] == 64 * 1600);
  CHECK(t.orders_agree); /* the models' in-order shortcut applies */
  /* GPU 5 = stage 0, TP group 1 (GPUs 4..7), DP group 1 (GPUs 1,5,9,13). */
  uint32_t tp1 = t.coll_group[entry_coll(t.order[t.order_off[5]])];
  uint32_t dp1 = t.coll_group[entry_coll(t.order[t.order_off[5] + 1])];
  CHECK(tp1 == 1 && dp1 == 5);
  CHECK(member_gpu(&t, tp1, 0) == 4 && member_gpu(&t, dp1, 2) == 9);
  /* Interleave continues with the longer DP list once TP is exhausted. */
  CHECK(t.coll_group[entry_coll(t.order[t.order_off[6] - 1])] == 5);
  CHECK(t.coll_group[entry_coll(t.order[t.order_off[5] + 800])] == 5);
  topology_free(&t);

  cfg.order = ORDER_CONCAT;
  CHECK(topology_build(&cfg, &t, err, sizeof err) == 0);
  CHECK(t.coll_group[entry_coll(t.order[t.order_off[5] + 399])] == 1);
  CHECK(t.coll_group[entry_coll(t.order[t.order_off[5] + 400])] == 5);
  CHECK(t.orders_agree);
  topology_free(&t);
  config_free(&cfg);
}

static void test_bad_configs(void) {
  expect_error("{\"model\": \"Single\",", "JSON");
  expect_error("[1, 2]", "object");
  expect_error("{\"grouping_policy\":\"Megatron\"}", "\"model\"");
  expect_error("{\"model\":\"Queue\"}", "\"model\"");
  expect_error(MEGATRON(",\"grouping_policy\":\"Grid\""), "grouping_policy");
  expect_error("{\"model\":\"Single\",\"grouping_policy\":\"Megatron\",\"total_rounds\":1}", "disorder_prob");
  expect_error(MEGATRON(",\"disorder_prob\":1.5"), "disorder_prob");
  expect_error(MEGATRON(",\"sync_prob\":-0.1"), "sync_prob");
  expect_error(MEGATRON(",\"tp_group_size\":0"), "tp_group_size");
  expect_error(MEGATRON(",\"coll_cnt_per_dp_group\":-3"), "coll_cnt_per_dp_group");
  expect_error(MEGATRON(",\"total_rounds\":0"), "total_rounds");
  expect_error(MEGATRON(",\"gpu_num\":65"), "gpu_num");
  expect_error(MEGATRON(",\"order\":\"zigzag\""), "order");
  expect_error("{\"model\":\"StreamWithSync\",\"grouping_policy\":\"Megatron\",\"disorder_prob\":0,"
               "\"total_rounds\":1,\"tp_group_size\":1,\"dp_group_size\":1,\"pp_group_size\":1,"
               "\"coll_cnt_per_tp_group\":1,\"coll_cnt_per_dp_group\":1}",
               "sync_prob");
  expect_error("{\"model\":\"StreamWithSync\",\"grouping_policy\":\"Megatron\",\"disorder_prob\":0,"
               "\"sync_prob\":1,\"total_rounds\":1,\"tp_group_size\":1,\"dp_group_size\":1,"
               "\"pp_group_size\":1,\"coll_cnt_per_tp_group\":1,\"coll_cnt_per_dp_group\":1}",
               "sync_prob");
  expect_error(FREE("[[0,1],[1,2]]", "[5,5]"), "GPU 3 is in no group");
  expect_error(FREE("[[0,1],[2,4]]", "[5,5]"), "gpu_per_group[1][1]");
  expect_error(FREE("[[0,1,1],[2,3]]", "[5,5]"), "twice");
  expect_error(FREE("[[0,1],[]]", "[5,5]"), "gpu_per_group[1]");
  expect_error(FREE("[[0,1,2,3]]", "[5,5]"), "gpu_per_group");
  expect_error(FREE("[[0,1],[2,3]]", "[5]"), "coll_cnt_per_group");
  expect_error(FREE("[[0,1],[2,3]]", "[5,0]"), "coll_cnt_per_group[1]");
  expect_error(FREE("[[0,1],[2,3]]", "[5,\"x\"]"), "coll_cnt_per_group[1]");
}

int main(void) {
  test_authors_config_accepted();
  test_bad_configs();
  return check_status();
}
