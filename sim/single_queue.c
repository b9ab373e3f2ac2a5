/*
 * Single-queue model (paper 2.4.1): a GPU executes one collective at a time;
 * invoked collectives wait in invocation order and the head executes.
 *
 * Dependency graph, folded onto GPUs: an executing part points to its
 * invoked-but-not-executing counterparts, and such a part points to the one
 * executing part of its GPU.  So GPU u waits for GPU v exactly when u's head
 * is queued, not at the head, on v:  u -> v.  A cycle of GPUs is a cycle of
 * parts and back, so the check is exact.
 *
 * New edges after an invocation of c by g: into g, from members executing c
 * (if c is queued on g), and out of every GPU whose head changed (g, if c
 * became its head, and members of collectives that completed).  These GPUs
 * are the roots of the check.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "round.h"

/* Members on which u's head is invoked but queued: u's out-edges. */
static uint64_t head_waits(const struct round_state* st, uint32_t u) {
  if (st->head[u] == st->next[u]) return 0;
  const struct coll_state* cs = &st->coll[entry_coll(st->list[st->head[u]])];
  return cs->invoked & ~cs->executing;
}

/* The head of gpu's queue starts executing; true if that completes it. */
static bool start_head(struct round_state* st, uint32_t gpu) {
  uint32_t entry = st->list[st->head[gpu]];
  uint32_t c = entry_coll(entry);
  st->coll[c].executing |= 1ULL << entry_bit(entry);
  return st->coll[c].executing == ALL_PARTS;
}

/* Collective c completed: pop it from every member's queue; each member's
 * next entry becomes its head, which may complete in turn.  Every member is
 * a root of the next check. */
static void complete(struct round_state* st, uint32_t c, bool collect_roots) {
  const struct topology* t = st->t;
  uint32_t pending = 0;
  st->completions[pending++] = c;
  while (pending > 0) {
    c = st->completions[--pending];
    uint32_t g = t->coll_group[c];
    for (uint32_t b = 0; b < group_size(t, g); b++) {
      uint32_t h = member_gpu(t, g, b);
      st->head[h]++;
      if (collect_roots) round_add_root(st, h);
      if (st->head[h] < st->next[h] && start_head(st, h))
        st->completions[pending++] = entry_coll(st->list[st->head[h]]);
    }
  }
}

/* A GPU on a cycle has an out-edge (its head waits for a queued part) and
 * an in-edge, which needs a part queued behind its own head.  Most roots
 * lack one of the two, and dropping them often saves the search. */
static void drop_roots_off_any_cycle(struct round_state* st) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < st->root_num; i++) {
    uint32_t u = st->roots[i];
    if (st->head[u] + 1 < st->next[u] && head_waits(st, u)) st->roots[kept++] = u;
  }
  st->root_num = kept;
}

void single_queue_invoke(struct round_state* st, uint32_t gpu, uint32_t entry) {
  uint32_t c = entry_coll(entry);
  struct coll_state* cs = &st->coll[c];
  cs->invoked |= 1ULL << entry_bit(entry);

  /* Before the first disorder no cycle can exist (round.h): keep the
   * state up to date, but collect no roots and search nothing. */
  bool check = round_may_cycle(st);
  if (check) round_clear_roots(st);
  if (st->head[gpu] != st->next[gpu] - 1) {
    /* Queued behind the head.  New edges enter this part from the
     * members executing c; with none, no cycle can have appeared. */
    if (!check || cs->executing == 0) return;
    round_add_root(st, gpu);
  } else if (!start_head(st, gpu)) {
    /* c is the new head and waits: new edges leave gpu only. */
    if (!check || (cs->invoked & ~cs->executing) == 0) return;
    round_add_root(st, gpu);
  } else {
    complete(st, c, check);
    if (!check) return;
  }
  drop_roots_off_any_cycle(st);
  if (st->root_num && single_queue_find_cycle(st)) st->deadlocked = true;
}

static void first_edge(void* ctx, uint32_t u, struct dep_iter* it) {
  const struct round_state* st = ctx;
  it->mask = head_waits(st, u);
  if (it->mask) it->via = entry_coll(st->list[st->head[u]]);
}

static bool next_edge(void* ctx, uint32_t u, struct dep_iter* it, struct dep_edge* e) {
  const struct round_state* st = ctx;
  (void)u;
  if (it->mask == 0) return false;
  uint32_t bit = (uint32_t)__builtin_ctzll(it->mask);
  it->mask &= it->mask - 1;
  e->to = member_gpu(st->t, st->t->coll_group[it->via], bit);
  e->via = it->via;
  return true;
}

bool single_queue_find_cycle(struct round_state* st) {
  return cycle_search(&st->finder, st, first_edge, next_edge, st->roots, st->root_num);
}
