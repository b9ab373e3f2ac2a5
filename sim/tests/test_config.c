/*
 * Unit tests of configuration loading: the authors' keys are accepted, and
 * each kind of bad input is refused with a message naming the problem.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <jansson.h>
#include <stdlib.h>
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

/* MEGATRON("") with `key` set to `value` (JSON text), replacing the key where it is there already
 * (a key given twice is an error of its own). */
static void expect_error_with(const char* key, const char* value, const char* needle) {
  json_t* root = json_loads(MEGATRON(""), 0, NULL);
  json_t* v = json_loads(value, JSON_DECODE_ANY, NULL);
  CHECK(root && v);
  if (!root || !v) return;
  json_object_set_new(root, key, v);
  char* text = json_dumps(root, JSON_COMPACT);
  expect_error(text, needle);
  free(text);
  json_decref(root);
}

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
  expect_error_with("grouping_policy", "\"Grid\"", "grouping_policy");
  expect_error("{\"model\":\"Single\",\"grouping_policy\":\"Megatron\",\"total_rounds\":1}", "disorder_prob");
  expect_error_with("disorder_prob", "1.5", "disorder_prob");
  expect_error_with("sync_prob", "-0.1", "sync_prob");
  expect_error_with("tp_group_size", "0", "tp_group_size");
  expect_error_with("coll_cnt_per_dp_group", "-3", "coll_cnt_per_dp_group");
  expect_error_with("total_rounds", "0", "total_rounds");
  expect_error_with("gpu_num", "65", "gpu_num");
  expect_error_with("order", "\"zigzag\"", "order");
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
  /* A key given twice: jansson would keep the last value without a word. */
  expect_error(MEGATRON(",\"tp_group_size\":2"), "duplicate object key near '\"tp_group_size\"'");
}

/* Configs that would take more memory than a machine has are refused before anything is allocated
 * (found by the fuzz target test/fuzz/fuzz_sim_config.c: 16 GiB of lists from a 200-byte file). */
static void test_too_large(void) {
  /* 2^24 GPUs (the most) in a grid of 64 x 64 x 4096, each in 200 collectives: 2^24 x 200 parts. */
  char json[1024];
  snprintf(json, sizeof json,
           "{\"model\":\"Single\",\"grouping_policy\":\"Megatron\",\"disorder_prob\":0,\"total_rounds\":1,"
           "\"tp_group_size\":64,\"dp_group_size\":64,\"pp_group_size\":4096,\"coll_cnt_per_tp_group\":100,"
           "\"coll_cnt_per_dp_group\":100}");
  expect_error(json, "is too many (limit 268435456)");
  /* One group of 64 GPUs with 2^23 collectives: 2^29 parts. */
  int at = snprintf(json, sizeof json,
                    "{\"model\":\"Single\",\"grouping_policy\":\"Arbitrary\",\"disorder_prob\":0,\"total_rounds\":1,"
                    "\"gpu_num\":64,\"group_num\":1,\"coll_cnt_per_group\":[8388608],\"gpu_per_group\":[[0");
  for (int gpu = 1; gpu < 64; gpu++) at += snprintf(json + at, sizeof json - at, ",%d", gpu);
  snprintf(json + at, sizeof json - at, "]]}");
  expect_error(json, "536870912 collective parts");
}

/* config_load_buffer reads exactly the bytes it is given: no NUL needed, and a NUL is an error. */
static void test_buffer(void) {
  const char* text = MEGATRON("");
  size_t n = strlen(text);
  char* copy = malloc(n + 8);
  memcpy(copy, text, n);
  memcpy(copy + n, "garbage", 8);
  struct sim_config cfg;
  char err[512];
  CHECK(config_load_buffer(copy, n, &cfg, err, sizeof err) == 0);
  config_free(&cfg);
  copy[n - 1] = '\0';
  CHECK(config_load_buffer(copy, n, &cfg, err, sizeof err) != 0);
  free(copy);
}

int main(void) {
  test_authors_config_accepted();
  test_bad_configs();
  test_too_large();
  test_buffer();
  return check_status();
}
