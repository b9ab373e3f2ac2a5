/*
 * One simulated round (round.h): the per-round state, its reset, and the passes in which the GPUs
 * take turns invoking or synchronizing until all are done or a cycle appears.  The models' halves
 * are in single_queue.c and sync_model.c.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
/* madvise() and MADV_HUGEPAGE are not in C11. */
#define _DEFAULT_SOURCE
#include "round.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The per-round copy of the lists and the collective states are large
 * (20 and 12 MiB for 3072 GPUs), and each GPU's turn touches them at a
 * place far from the previous GPU's: with 4 KiB pages many steps miss the
 * TLB.  Huge pages, where the kernel grants them on request (transparent
 * huge pages in "madvise" mode), remove those misses: about 10 % on the
 * 3072-GPU cells.  Small arrays are left alone. */
#define HUGE_PAGE ((size_t)2 << 20)

static void* alloc_big(size_t bytes) {
  if (bytes < HUGE_PAGE) return malloc(bytes);
  size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  void* p = aligned_alloc(HUGE_PAGE, rounded);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, rounded, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
  return p;
}

int round_state_init(struct round_state* st, const struct topology* t, const struct sim_params* p) {
  memset(st, 0, sizeof *st);
  st->t = t;
  st->model = p->model;
  st->disorder = chance_of(p->disorder_prob);
  st->sync = chance_of(p->model == MODEL_SYNC ? p->sync_prob : 0.0);
  st->intersection_rule = p->model == MODEL_SYNC && p->intersection_rule;

  uint32_t n = t->gpu_num;
  size_t parts = t->order_off[n];
  st->list = alloc_big(parts * sizeof *st->list);
  st->next = malloc(n * sizeof *st->next);
  st->coll = alloc_big(t->coll_num * sizeof *st->coll);
  st->roots = malloc(n * sizeof *st->roots);
  st->active = malloc(n * sizeof *st->active);
  st->root_stamp = calloc(n, sizeof *st->root_stamp);
  int ok = st->list && st->next && st->coll && st->roots && st->root_stamp && st->active;
  if (p->model == MODEL_SINGLE_QUEUE) {
    st->head = malloc(n * sizeof *st->head);
    /* A collective on this stack is the head on all its members, and a
     * GPU has one head, so at most gpu_num are pending at once. */
    st->completions = malloc(n * sizeof *st->completions);
    ok = ok && st->head && st->completions;
  } else {
    st->suspended = malloc(n);
    st->exec_count = malloc(n * sizeof *st->exec_count);
    st->oldest = malloc(n * sizeof *st->oldest);
    ok = ok && st->suspended && st->exec_count && st->oldest;
  }
  if (!ok || cycle_finder_init(&st->finder, n)) {
    round_state_free(st);
    return -1;
  }
  return 0;
}

void round_state_free(struct round_state* st) {
  free(st->list);
  free(st->next);
  free(st->coll);
  free(st->roots);
  free(st->active);
  free(st->root_stamp);
  free(st->head);
  free(st->completions);
  free(st->suspended);
  free(st->exec_count);
  free(st->oldest);
  cycle_finder_free(&st->finder);
  memset(st, 0, sizeof *st);
}

void round_begin(struct round_state* st, uint64_t seed, uint64_t round) {
  const struct topology* t = st->t;
  uint32_t n = t->gpu_num;

  rng_seed_round(&st->rng, seed, round);
  memcpy(st->list, t->order, t->order_off[n] * sizeof *st->list);
  memcpy(st->next, t->order_off, n * sizeof *st->next);
  for (uint32_t c = 0; c < t->coll_num; c++) {
    uint64_t beyond = ~t->all_members[t->coll_group[c]];
    st->coll[c] = (struct coll_state){beyond, beyond};
  }
  if (st->model == MODEL_SINGLE_QUEUE) {
    memcpy(st->head, t->order_off, n * sizeof *st->head);
  } else {
    memset(st->suspended, 0, n);
    memset(st->exec_count, 0, n * sizeof *st->exec_count);
    memcpy(st->oldest, t->order_off, n * sizeof *st->oldest);
  }
  st->unfinished = n;
  for (uint32_t g = 0; g < n; g++) st->active[g] = g;
  st->active_num = n;
  st->in_order = true;
  st->steps = 0;
  st->deadlocked = false;
}

/* Walk the remaining list from the front, skipping each position with
 * probability disorder_prob; the last one is always taken. */
uint32_t round_pick(struct round_state* st, uint32_t gpu) {
  uint32_t left = round_remaining(st, gpu), k = 0;
  while (k + 1 < left && rng_happens(&st->rng, st->disorder)) k++;
  return k;
}

/* Removes the k-th remaining entry and appends it to the invoked part; the
 * skipped entries keep their order. */
static uint32_t take(struct round_state* st, uint32_t gpu, uint32_t k) {
  uint32_t* front = &st->list[st->next[gpu]];
  uint32_t entry = front[k];
  if (k > 0) {
    st->in_order = false;
    memmove(front + 1, front, k * sizeof *front);
    front[0] = entry;
  }
  if (++st->next[gpu] == st->t->order_off[gpu + 1]) st->unfinished--;
  return entry;
}

/* Each GPU walks its own stretch of `list`, one entry per pass, interleaved
 * with thousands of other GPUs: the hardware prefetcher cannot follow, and
 * with 3072 GPUs a new list line is a miss to memory.  The GPU's next list
 * line (16 entries on) will be needed some passes later; asking for it now
 * hides that latency (3072-GPU sync cell: about 25 % less time per round).
 * The next line of collective states (4 ids on: the same index of the
 * following groups, see topology.h) is asked for too; that measured a few
 * per cent at most.  A prefetch past a GPU's stretch is merely useless, so
 * the only bound checked is the array's. */
#define LIST_AHEAD 16 /* entries in a 64-byte line */
#define COLL_AHEAD 4  /* collective states in a 64-byte line */

static inline void prefetch_ahead(const struct round_state* st, uint32_t gpu, uint32_t entry) {
  const struct topology* t = st->t;
  uint32_t at = st->next[gpu] + LIST_AHEAD;
  if (at < t->order_off[t->gpu_num]) prefetch_line(&st->list[at]);
  uint32_t c = entry_coll(entry) + COLL_AHEAD;
  if (c < t->coll_num) prefetch_line(&st->coll[c]);
}

void round_invoke(struct round_state* st, uint32_t gpu, uint32_t k) {
  uint32_t entry = take(st, gpu, k);
  prefetch_ahead(st, gpu, entry);
  st->steps++;
  if (st->model == MODEL_SINGLE_QUEUE) single_queue_invoke(st, gpu, entry);
  else sync_model_invoke(st, gpu, entry);
}

void round_sync(struct round_state* st, uint32_t gpu) {
  st->steps++;
  sync_model_synchronize(st, gpu);
}

/* One step of a GPU that is neither finished nor suspended. */
static void step(struct round_state* st, uint32_t gpu) {
  if (st->model == MODEL_SYNC && rng_happens(&st->rng, st->sync)) round_sync(st, gpu);
  else round_invoke(st, gpu, round_pick(st, gpu));
}

/* Large configurations are bound by memory latency: start loading the
 * state the next GPU's likely invocation (its first remaining entry) needs. */
static inline void prefetch_next_turn(const struct round_state* st, uint32_t gpu) {
  if (st->next[gpu] < st->t->order_off[gpu + 1]) prefetch_line(&st->coll[entry_coll(st->list[st->next[gpu]])]);
}

/* An unfinished GPU's turn: false while it stays suspended. */
static inline bool takes_turn(struct round_state* st, uint32_t gpu) {
  if (st->model == MODEL_SYNC && st->suspended[gpu]) {
    if (st->exec_count[gpu] > 0) return false;
    st->suspended[gpu] = 0; /* resumes, and takes its turn */
  }
  return true;
}

bool round_run(struct round_state* st, uint64_t seed, uint64_t round) {
  const struct topology* t = st->t;
  round_begin(st, seed, round);
  while (st->unfinished > 0) {
    uint64_t before = st->steps;
    uint32_t kept = 0; /* compacts `active` in place, keeping the order */
    for (uint32_t i = 0; i < st->active_num; i++) {
      uint32_t gpu = st->active[i];
      if (i + 1 < st->active_num) prefetch_next_turn(st, st->active[i + 1]);
      if (takes_turn(st, gpu)) {
        step(st, gpu);
        if (st->deadlocked) return true;
      }
      if (st->next[gpu] < t->order_off[gpu + 1]) st->active[kept++] = gpu;
    }
    st->active_num = kept;
    /* Without a cycle some GPU can always step; a pass without one
     * means the cycle check missed something. */
    if (st->steps == before) {
      fprintf(stderr, "dfccl-sim: internal error: round %llu stalled without a cycle\n", (unsigned long long)round);
      abort();
    }
  }
  return false;
}

bool round_all_completed(const struct round_state* st) {
  const struct topology* t = st->t;
  for (uint32_t c = 0; c < t->coll_num; c++) {
    if (st->coll[c].invoked != ALL_PARTS) return false;
    if (st->model == MODEL_SINGLE_QUEUE && st->coll[c].executing != ALL_PARTS) return false;
  }
  if (st->model == MODEL_SINGLE_QUEUE) {
    for (uint32_t g = 0; g < t->gpu_num; g++)
      if (st->head[g] != st->next[g]) return false;
  } else {
    for (uint32_t g = 0; g < t->gpu_num; g++)
      if (st->exec_count[g] != 0) return false;
  }
  return true;
}
