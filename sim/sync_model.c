/*
 * Synchronization model (paper 2.4.1): invoked collectives execute at once,
 * with no resource limit.  A synchronization suspends a GPU that has
 * executing, unfinished collectives; the GPU then invokes nothing until all
 * of them have completed.
 *
 * Dependency graph, folded onto GPUs: a suspended GPU's not-yet-invoked
 * collectives count as invoked-not-executing parts, and they point to every
 * executing part of that GPU.  So u -> v when u executes a collective that
 * v, suspended, has not invoked.  Only suspended GPUs have incoming edges,
 * hence:
 *   - an invocation (by a GPU that is not suspended) cannot close a cycle,
 *   - completions and resumptions only remove edges,
 *   - a new cycle can only appear when a GPU gets suspended, and passes
 *     through that GPU.
 * The check after a synchronization, rooted at that GPU, is therefore the
 * whole incremental check.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "round.h"

void sync_model_invoke(struct round_state* st, uint32_t gpu, uint32_t entry) {
  const struct topology* t = st->t;
  uint32_t c = entry_coll(entry);
  st->coll[c].invoked |= 1ULL << entry_bit(entry);
  st->exec_count[gpu]++;
  if (st->coll[c].invoked != ALL_PARTS) return;
  /* Executing on every member: done. */
  uint32_t g = t->coll_group[c];
  for (uint32_t b = 0; b < group_size(t, g); b++) st->exec_count[member_gpu(t, g, b)]--;
}

static bool intersection_rule_fires(struct round_state* st, uint32_t gpu);

/* A cycle through u leaves u by an edge u -> v, and v is then a suspended
 * GPU that shares a group with u (v has not invoked a collective that u
 * executes; v != u).  Without such a peer the search cannot find anything.
 * Looking at u's few peers is much cheaper than the search, whose first
 * step scans u's unfinished invocations; most synchronizations stop here. */
static bool has_suspended_peer(const struct round_state* st, uint32_t u) {
  const struct topology* t = st->t;
  for (uint32_t m = t->gpu_group_off[u]; m < t->gpu_group_off[u + 1]; m++) {
    uint32_t g = t->gpu_groups[m];
    for (uint32_t b = 0; b < group_size(t, g); b++) {
      uint32_t v = member_gpu(t, g, b);
      if (v != u && st->suspended[v]) return true;
    }
  }
  return false;
}

void sync_model_synchronize(struct round_state* st, uint32_t gpu) {
  if (st->exec_count[gpu] == 0) return; /* nothing to wait for */
  st->suspended[gpu] = 1;
  if (st->intersection_rule) {
    st->finder.found.len = 0; /* no cycle to show */
    st->deadlocked = intersection_rule_fires(st, gpu);
    return;
  }
  if (!round_may_cycle(st)) return; /* the authors' rule above is not a cycle check: never skipped */
  if (!has_suspended_peer(st, gpu)) return;
  round_clear_roots(st);
  round_add_root(st, gpu);
  if (st->root_num && sync_model_find_cycle(st)) st->deadlocked = true;
}

static bool completed(const struct round_state* st, uint32_t c) { return st->coll[c].invoked == ALL_PARTS; }

/* Out-edges of a suspended GPU u: scan its unfinished invocations; for each,
 * the suspended members that have not invoked it. */
static void first_edge(void* ctx, uint32_t u, struct dep_iter* it) {
  struct round_state* st = ctx;
  it->mask = 0;
  it->pos = it->end = 0;
  if (!st->suspended[u] || st->exec_count[u] == 0) return;
  /* Skip the completed prefix once, so later scans start past it. */
  while (st->oldest[u] < st->next[u] && completed(st, entry_coll(st->list[st->oldest[u]]))) st->oldest[u]++;
  it->pos = st->oldest[u];
  it->end = st->next[u];
}

static bool next_edge(void* ctx, uint32_t u, struct dep_iter* it, struct dep_edge* e) {
  const struct round_state* st = ctx;
  const struct topology* t = st->t;
  (void)u;
  for (;;) {
    while (it->mask == 0) {
      if (it->pos == it->end) return false;
      uint32_t c = entry_coll(st->list[it->pos++]);
      it->via = c;
      it->mask = ~st->coll[c].invoked; /* members that have not invoked c */
    }
    uint32_t bit = (uint32_t)__builtin_ctzll(it->mask);
    it->mask &= it->mask - 1;
    uint32_t v = member_gpu(t, t->coll_group[it->via], bit);
    if (st->suspended[v]) {
      e->to = v;
      e->via = it->via;
      return true;
    }
  }
}

/* The authors' rule: S_g meets U_O (g waits for another suspended GPU) and
 * U_g meets S_O (another suspended GPU waits for g), where O merges all the
 * other suspended GPUs -- so the two need not be on one cycle. */
static bool intersection_rule_fires(struct round_state* st, uint32_t gpu) {
  struct dep_iter it;
  struct dep_edge e;
  first_edge(st, gpu, &it);
  if (!next_edge(st, gpu, &it, &e)) return false;
  for (uint32_t u = 0; u < st->t->gpu_num; u++) {
    if (u == gpu || !st->suspended[u]) continue;
    first_edge(st, u, &it);
    while (next_edge(st, u, &it, &e))
      if (e.to == gpu) return true;
  }
  return false;
}

bool sync_model_find_cycle(struct round_state* st) {
  return cycle_search(&st->finder, st, first_edge, next_edge, st->roots, st->root_num);
}
