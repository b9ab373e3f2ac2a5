/*
 * Builds the topology (topology.h) from a configuration: the groups (3D or free), the collective
 * ids, each GPU's expected invocation order and the check that all orders agree; names collectives
 * for --explain.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 3D grouping: per pipeline stage, dp TP groups of tp consecutive GPUs, then
 * tp DP groups (the j-th GPU of every TP group of that stage).  Group ids
 * follow the authors' numbering, so ascending group id puts a GPU's TP group
 * before its DP group. */
static void build_3d_groups(const struct sim_config* cfg, struct topology* t) {
  uint32_t g = 0, at = 0;
  for (uint32_t stage = 0; stage < cfg->pp; stage++) {
    uint32_t first = stage * cfg->tp * cfg->dp;
    for (uint32_t j = 0; j < cfg->dp; j++, g++) {
      t->member_off[g] = at;
      t->coll_cnt[g] = cfg->coll_per_tp_group;
      for (uint32_t i = 0; i < cfg->tp; i++) t->members[at++] = first + j * cfg->tp + i;
    }
    for (uint32_t j = 0; j < cfg->tp; j++, g++) {
      t->member_off[g] = at;
      t->coll_cnt[g] = cfg->coll_per_dp_group;
      for (uint32_t k = 0; k < cfg->dp; k++) t->members[at++] = first + k * cfg->tp + j;
    }
  }
  t->member_off[g] = at;
}

static void build_free_groups(const struct sim_config* cfg, struct topology* t) {
  memcpy(t->member_off, cfg->member_off, (cfg->group_num + 1) * sizeof *t->member_off);
  memcpy(t->members, cfg->members, cfg->member_off[cfg->group_num] * sizeof *t->members);
  memcpy(t->coll_cnt, cfg->coll_per_group, cfg->group_num * sizeof *t->coll_cnt);
}

/* Ids by index first, then group (see topology.h). */
static void number_collectives(struct topology* t) {
  uint32_t longest = 0;
  for (uint32_t g = 0; g < t->group_num; g++)
    if (t->coll_cnt[g] > longest) longest = t->coll_cnt[g];
  uint32_t id = 0;
  for (uint32_t i = 0; i < longest; i++)
    for (uint32_t g = 0; g < t->group_num; g++)
      if (i < t->coll_cnt[g]) {
        t->coll_id[t->coll_base[g] + i] = id;
        t->coll_group[id] = g;
        t->coll_index[id] = i;
        id++;
      }
}

static uint32_t coll_of(const struct topology* t, uint32_t g, uint32_t i) { return t->coll_id[t->coll_base[g] + i]; }

/* Per-GPU order: the GPU's groups in ascending id, merged one collective of
 * each group in turn (interleave) or group after group (concat). */
static void build_orders(const struct sim_config* cfg, struct topology* t, const uint32_t* mem_off,
                         const uint32_t* mem_group, const uint32_t* mem_bit) {
  uint32_t at = 0;
  for (uint32_t gpu = 0; gpu < t->gpu_num; gpu++) {
    t->order_off[gpu] = at;
    uint32_t first = mem_off[gpu], last = mem_off[gpu + 1];
    if (cfg->order == ORDER_CONCAT) {
      for (uint32_t m = first; m < last; m++)
        for (uint32_t i = 0; i < t->coll_cnt[mem_group[m]]; i++)
          t->order[at++] = entry_make(coll_of(t, mem_group[m], i), mem_bit[m]);
      continue;
    }
    uint32_t longest = 0;
    for (uint32_t m = first; m < last; m++)
      if (t->coll_cnt[mem_group[m]] > longest) longest = t->coll_cnt[mem_group[m]];
    for (uint32_t i = 0; i < longest; i++)
      for (uint32_t m = first; m < last; m++)
        if (i < t->coll_cnt[mem_group[m]]) t->order[at++] = entry_make(coll_of(t, mem_group[m], i), mem_bit[m]);
  }
  t->order_off[t->gpu_num] = at;
}

/* The orders built above follow one global order of the collectives:
 * (index in its group, group id) for interleave, and (group id, index) for
 * concat.  Check that every GPU's list ascends it, so that the models'
 * shortcut rests on the lists as built, not on a proof about build_orders.
 *
 * Why it matters: with no GPU out of order, every GPU has invoked a prefix
 * of its list.  Along a wait-for edge u -> v (witness c, executing on u, not
 * yet running on v), v's own witness for its next edge was invoked by v
 * before c, so it comes before c in v's list and hence in the global order.
 * Witnesses strictly decrease along any path, so no path closes a cycle. */
static bool orders_share_one_order(const struct sim_config* cfg, const struct topology* t) {
  for (uint32_t gpu = 0; gpu < t->gpu_num; gpu++) {
    uint64_t prev = 0;
    for (uint32_t at = t->order_off[gpu]; at < t->order_off[gpu + 1]; at++) {
      uint32_t c = entry_coll(t->order[at]);
      uint64_t g = t->coll_group[c], i = t->coll_index[c];
      uint64_t key = cfg->order == ORDER_CONCAT ? g << 32 | i : i << 32 | g;
      if (at > t->order_off[gpu] && key <= prev) return false;
      prev = key;
    }
  }
  return true;
}

int topology_build(const struct sim_config* cfg, struct topology* t, char* err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->gpu_num = cfg->gpu_num;
  t->group_num = cfg->group_num;
  t->grouping = cfg->grouping;
  t->tp = cfg->tp;
  t->dp = cfg->dp;

  size_t member_total = cfg->grouping == GROUPING_3D ? (size_t)cfg->gpu_num * 2 : cfg->member_off[cfg->group_num];
  t->member_off = calloc(t->group_num + 1, sizeof *t->member_off);
  t->members = calloc(member_total, sizeof *t->members);
  t->all_members = calloc(t->group_num, sizeof *t->all_members);
  t->coll_base = calloc(t->group_num, sizeof *t->coll_base);
  t->coll_cnt = calloc(t->group_num, sizeof *t->coll_cnt);
  t->order_off = calloc(t->gpu_num + 1, sizeof *t->order_off);
  uint32_t* mem_off = calloc(t->gpu_num + 1, sizeof *mem_off);
  uint32_t* mem_group = calloc(member_total, sizeof *mem_group);
  uint32_t* mem_bit = calloc(member_total, sizeof *mem_bit);
  if (!t->member_off || !t->members || !t->all_members || !t->coll_base || !t->coll_cnt || !t->order_off || !mem_off ||
      !mem_group || !mem_bit)
    goto oom;

  if (cfg->grouping == GROUPING_3D) build_3d_groups(cfg, t);
  else build_free_groups(cfg, t);

  size_t parts = 0;
  for (uint32_t g = 0; g < t->group_num; g++) {
    uint32_t n = group_size(t, g);
    t->all_members[g] = n == 64 ? ~0ULL : (1ULL << n) - 1;
    t->coll_base[g] = t->coll_num;
    t->coll_num += t->coll_cnt[g];
    parts += (size_t)n * t->coll_cnt[g];
  }
  t->coll_id = calloc(t->coll_num, sizeof *t->coll_id);
  t->coll_group = calloc(t->coll_num, sizeof *t->coll_group);
  t->coll_index = calloc(t->coll_num, sizeof *t->coll_index);
  t->order = calloc(parts, sizeof *t->order);
  if (!t->coll_id || !t->coll_group || !t->coll_index || !t->order) goto oom;
  number_collectives(t);

  /* Each GPU's memberships, in ascending group id (counting sort). */
  for (uint32_t g = 0; g < t->group_num; g++)
    for (uint32_t b = 0; b < group_size(t, g); b++) mem_off[member_gpu(t, g, b) + 1]++;
  for (uint32_t gpu = 0; gpu < t->gpu_num; gpu++) mem_off[gpu + 1] += mem_off[gpu];
  uint32_t* fill = calloc(t->gpu_num, sizeof *fill);
  if (!fill) goto oom;
  for (uint32_t g = 0; g < t->group_num; g++)
    for (uint32_t b = 0; b < group_size(t, g); b++) {
      uint32_t gpu = member_gpu(t, g, b);
      uint32_t m = mem_off[gpu] + fill[gpu]++;
      mem_group[m] = g;
      mem_bit[m] = b;
    }
  free(fill);

  build_orders(cfg, t, mem_off, mem_group, mem_bit);
  t->orders_agree = orders_share_one_order(cfg, t);
  t->gpu_group_off = mem_off;
  t->gpu_groups = mem_group;
  free(mem_bit);
  return 0;

oom:
  free(mem_off);
  free(mem_group);
  free(mem_bit);
  topology_free(t);
  snprintf(err, errlen, "out of memory building the topology");
  return -1;
}

void topology_free(struct topology* t) {
  free(t->member_off);
  free(t->members);
  free(t->all_members);
  free(t->coll_base);
  free(t->coll_cnt);
  free(t->coll_id);
  free(t->coll_group);
  free(t->coll_index);
  free(t->gpu_group_off);
  free(t->gpu_groups);
  free(t->order_off);
  free(t->order);
  memset(t, 0, sizeof *t);
}

void topology_name_coll(const struct topology* t, uint32_t coll, char* buf, size_t len) {
  uint32_t g = t->coll_group[coll];
  uint32_t index = t->coll_index[coll];
  if (t->grouping == GROUPING_3D) {
    uint32_t per_stage = t->tp + t->dp;
    uint32_t stage = g / per_stage, j = g % per_stage;
    if (j < t->dp) snprintf(buf, len, "TP group %u of stage %u, collective %u", j, stage, index);
    else snprintf(buf, len, "DP group %u of stage %u, collective %u", j - t->dp, stage, index);
  } else {
    snprintf(buf, len, "group %u, collective %u", g, index);
  }
}
