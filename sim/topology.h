/*
 * Groups, collectives and each GPU's expected invocation order.
 *
 * Built once per run from the configuration and shared read-only by all
 * threads.  A collective is (group g, index i in g); its id, which indexes
 * the per-round state, is coll_id[coll_base[g] + i].  Ids are given by index
 * first, then group: all groups' i-th collectives are neighbours.  GPUs
 * progress through their lists at similar rates, so the collectives in use
 * at any moment sit in a small stretch of memory rather than one cache line
 * per group (with 896 groups, that difference is most of the cost of a
 * step).  Ids never reach the output; names use (group, index).
 * Inside a group, a member is known by its bit (its position in the member
 * list), so the state of one collective on all its members fits in a 64-bit
 * mask.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_TOPOLOGY_H
#define DFCCL_SIM_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* An entry of a GPU's list: a collective and this GPU's bit in its group. */
static inline uint32_t entry_make(uint32_t coll, uint32_t bit) { return coll << 6 | bit; }
static inline uint32_t entry_coll(uint32_t e) { return e >> 6; }
static inline uint32_t entry_bit(uint32_t e) { return e & 63u; }

struct topology {
  uint32_t gpu_num, group_num, coll_num;

  uint32_t* member_off; /* group -> members[member_off[g] ..] */
  uint32_t* members;
  uint64_t* all_members; /* group -> mask with one bit per member */
  uint32_t* coll_base;   /* group -> its first slot in coll_id */
  uint32_t* coll_cnt;
  uint32_t* coll_id;    /* coll_base[g] + index -> collective id */
  uint32_t* coll_group; /* collective id -> group */
  uint32_t* coll_index; /* collective id -> index in its group */

  uint32_t* gpu_group_off; /* GPU -> its groups, ascending: */
  uint32_t* gpu_groups;    /*   gpu_groups[gpu_group_off[gpu] ..] */

  uint32_t* order_off; /* GPU -> order[order_off[gpu] .. order_off[gpu + 1]) */
  uint32_t* order;     /* entries, in the GPU's expected invocation order */

  /* True when all GPUs' expected orders follow one global order of the
   * collectives (checked, not assumed; see orders_share_one_order).
   * Then a round cannot deadlock before some GPU takes a collective out
   * of its expected order, and the models skip their cycle checks until
   * one does (round.h, in_order).  False is always safe. */
  bool orders_agree;

  /* Only for naming collectives in --explain. */
  enum sim_grouping grouping;
  uint32_t tp, dp;
};

int topology_build(const struct sim_config* cfg, struct topology* t, char* err, size_t errlen);
void topology_free(struct topology* t);

static inline uint32_t group_size(const struct topology* t, uint32_t g) {
  return t->member_off[g + 1] - t->member_off[g];
}

static inline uint32_t member_gpu(const struct topology* t, uint32_t g, uint32_t bit) {
  return t->members[t->member_off[g] + bit];
}

/* "TP group 3 (stage 0), collective 17" and the like. */
void topology_name_coll(const struct topology* t, uint32_t coll, char* buf, size_t len);

#endif
