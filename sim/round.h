/*
 * One simulated round (paper 2.4.1): GPUs take turns in id order, one step
 * each per pass, until every GPU has invoked all its collectives or the
 * dependency graph has a cycle.
 *
 * State shared by both models.  `list` is a per-round copy of the expected
 * orders; a GPU's part of it is split at next[gpu]: in front, the
 * collectives it invoked, in invocation order; behind, those it still has
 * to invoke, in expected order (skipped ones stay in front of the rest).
 * The invoked part doubles as the single-queue FIFO, and as the place to find
 * a suspended GPU's executing collectives in the synchronization model.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_ROUND_H
#define DFCCL_SIM_ROUND_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "cycle.h"
#include "rng.h"
#include "topology.h"

struct sim_params {
  enum sim_model model;
  double disorder_prob;
  double sync_prob;
  /* Not the model: the authors' deadlock rule for the synchronization
   * model, kept only to explain where their numbers come from (see
   * docs/simulator.md).  At a suspension of g it declares a deadlock
   * when g has an out-edge and an in-edge, closed cycle or not. */
  bool intersection_rule;
};

/* One collective's parts, as member bits (bit b: the group's b-th GPU).
 * Bits beyond the group's size start set, so "on every member" is simply
 * all ones: the hot paths never look up the collective's group size. */
struct coll_state {
  uint64_t invoked;
  uint64_t executing; /* single-queue: where it is the queue head;
                       * synchronization model: unused (= invoked) */
};

#define ALL_PARTS UINT64_MAX

struct round_state {
  const struct topology* t;
  enum sim_model model;
  struct chance disorder, sync;
  bool intersection_rule;
  struct rng rng;

  uint32_t* list;
  uint32_t* next;      /* GPU -> index in list of its first remaining entry */
  uint32_t unfinished; /* GPUs that still have collectives to invoke */
  /* Those GPUs, in id order, as of the start of the pass: passes skip
   * finished GPUs without looking at them.  In the free topologies most
   * GPUs finish long before the GPUs that are in several groups. */
  uint32_t* active;
  uint32_t active_num;
  uint64_t steps;

  struct coll_state* coll;

  /* False until some GPU takes a collective other than the first of its
   * remaining list.  While false, no cycle can exist if the topology's
   * orders agree (topology.h), so the cycle checks are skipped; the
   * first check runs at the event that takes one out of order. */
  bool in_order;

  /* Single-queue model: the queue of GPU g is list[head[g] .. next[g]),
   * and its head is executing. */
  uint32_t* head;
  uint32_t* completions; /* work stack of collectives that just completed */

  /* Synchronization model. */
  uint8_t* suspended;
  uint32_t* exec_count; /* GPU -> invoked collectives not yet completed */
  uint32_t* oldest;     /* GPU -> no unfinished invocation before this index */

  /* Roots of the next cycle check, without duplicates. */
  uint32_t* roots;
  uint32_t root_num;
  uint32_t* root_stamp;
  uint32_t root_epoch;

  struct cycle_finder finder;
  bool deadlocked; /* finder.found holds the cycle */
};

int round_state_init(struct round_state* st, const struct topology* t, const struct sim_params* p);
void round_state_free(struct round_state* st);

/* Runs round `round` of a run seeded with `seed`; true iff it deadlocked. */
bool round_run(struct round_state* st, uint64_t seed, uint64_t round);

/* The pieces round_run is made of, also driven directly by unit tests. */
void round_begin(struct round_state* st, uint64_t seed, uint64_t round);
uint32_t round_pick(struct round_state* st, uint32_t gpu); /* disorder walk */
void round_invoke(struct round_state* st, uint32_t gpu, uint32_t k);
void round_sync(struct round_state* st, uint32_t gpu);
bool round_all_completed(const struct round_state* st);

static inline uint32_t round_remaining(const struct round_state* st, uint32_t gpu) {
  return st->t->order_off[gpu + 1] - st->next[gpu];
}

/* Model-specific halves (single_queue.c, sync_model.c). */
void single_queue_invoke(struct round_state* st, uint32_t gpu, uint32_t entry);
bool single_queue_find_cycle(struct round_state* st);
void sync_model_invoke(struct round_state* st, uint32_t gpu, uint32_t entry);
void sync_model_synchronize(struct round_state* st, uint32_t gpu);
bool sync_model_find_cycle(struct round_state* st);

/* Shared helpers for the models. */

/* Starts loading the cache line that holds p.  Not __builtin_prefetch
 * alone: GCC 12 at -O2 deems a static function whose only effect is that
 * builtin to have no effect at all, and deletes the call, prefetch and all
 * (it did so to every prefetch here).  A volatile asm cannot be deleted. */
static inline void prefetch_line(const void* p) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__ volatile("prefetcht0 %0" : : "m"(*(const char*)p));
#else
  __builtin_prefetch(p);
#endif
}

/* Whether the event being handled needs a cycle check at all. */
static inline bool round_may_cycle(const struct round_state* st) { return !st->in_order || !st->t->orders_agree; }

static inline void round_add_root(struct round_state* st, uint32_t gpu) {
  if (st->root_stamp[gpu] != st->root_epoch) {
    st->root_stamp[gpu] = st->root_epoch;
    st->roots[st->root_num++] = gpu;
  }
}

static inline void round_clear_roots(struct round_state* st) {
  st->root_num = 0;
  if (++st->root_epoch == 0) {
    for (uint32_t g = 0; g < st->t->gpu_num; g++) st->root_stamp[g] = 0;
    st->root_epoch = 1;
  }
}

#endif
