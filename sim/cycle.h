/*
 * Incremental cycle detection in a wait-for graph between GPUs.
 *
 * The models keep an invariant: before an event the dependency graph has no
 * cycle (a cycle ends the round).  An event adds edges only at a few GPUs,
 * the "roots" (the invoking GPU, GPUs whose queue head changed, a GPU that
 * just got suspended); every new edge starts or ends at a root.  So a new
 * cycle, if any, passes through a root, and one depth-first search from the
 * roots -- over what is reachable from them, not over the whole graph -- is
 * an exact check.  Visited marks are epoch stamps, so nothing is cleared
 * between checks and no memory is allocated after setup.
 *
 * The graph is never stored: a model exposes its out-edges through an
 * iterator computed from its own state.  An edge u -> v carries a witness
 * collective `via`: the one executing on u that waits for its part on v.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_CYCLE_H
#define DFCCL_SIM_CYCLE_H

#include <stdbool.h>
#include <stdint.h>

struct dep_edge {
  uint32_t to;
  uint32_t via;
};

/* Iteration state over one node's out-edges; its meaning is the model's. */
struct dep_iter {
  uint64_t mask;
  uint32_t pos, end, via;
};

struct dep_graph {
  void* ctx;
  void (*first)(void* ctx, uint32_t node, struct dep_iter* it);
  bool (*next)(void* ctx, uint32_t node, struct dep_iter* it, struct dep_edge* e);
};

/* A cycle node[0] -> node[1] -> ... -> node[len-1] -> node[0]; via[i]
 * witnesses the edge leaving node[i]. */
struct cycle {
  uint32_t len;
  uint32_t* node;
  uint32_t* via;
};

struct dfs_frame {
  uint32_t node;
  struct dep_iter it;
};

struct cycle_finder {
  uint32_t node_num;
  uint32_t epoch;
  uint32_t* seen;     /* == epoch: visited in the current search */
  uint32_t* path_pos; /* position on the DFS path, or UINT32_MAX */
  struct dfs_frame* stack;
  uint32_t* stack_via; /* witness of the edge from frame i to frame i+1 */
  struct cycle found;
};

#define NOT_ON_PATH UINT32_MAX

typedef void (*dep_first_fn)(void* ctx, uint32_t node, struct dep_iter* it);
typedef bool (*dep_next_fn)(void* ctx, uint32_t node, struct dep_iter* it, struct dep_edge* e);

int cycle_finder_init(struct cycle_finder* f, uint32_t node_num);
void cycle_finder_free(struct cycle_finder* f);

/* True iff a cycle is reachable from one of the roots; it is then left in
 * f->found. */
bool cycle_find_from(struct cycle_finder* f, const struct dep_graph* g, const uint32_t* roots, uint32_t root_num);

/* Used by cycle_search, rarely: a new epoch after wrap-around, and keeping
 * the cycle once found. */
void cycle_reset_epochs(struct cycle_finder* f);
void cycle_keep(struct cycle_finder* f, uint32_t from, uint32_t depth, uint32_t closing_via);

/* The search itself.  It is inline so that a model passing its own static
 * edge functions gets them inlined: the check runs after most invocations
 * and an indirect call per edge would be a good part of its cost. */
static inline bool cycle_search(struct cycle_finder* f, void* ctx, dep_first_fn first, dep_next_fn next,
                                const uint32_t* roots, uint32_t root_num) {
  if (++f->epoch == 0) cycle_reset_epochs(f);
  for (uint32_t r = 0; r < root_num; r++) {
    if (f->seen[roots[r]] == f->epoch) continue; /* fully explored from an earlier root */
    uint32_t depth = 0;
    f->stack[depth].node = roots[r];
    first(ctx, roots[r], &f->stack[depth].it);
    f->seen[roots[r]] = f->epoch;
    f->path_pos[roots[r]] = depth++;

    while (depth > 0) {
      struct dfs_frame* top = &f->stack[depth - 1];
      struct dep_edge e;
      if (!next(ctx, top->node, &top->it, &e)) {
        f->path_pos[top->node] = NOT_ON_PATH;
        depth--;
        continue;
      }
      if (f->path_pos[e.to] != NOT_ON_PATH) { /* back edge: a cycle */
        cycle_keep(f, f->path_pos[e.to], depth, e.via);
        return true;
      }
      if (f->seen[e.to] == f->epoch) continue; /* explored already: no cycle through it */
      f->stack_via[depth - 1] = e.via;
      f->seen[e.to] = f->epoch;
      f->path_pos[e.to] = depth;
      f->stack[depth].node = e.to;
      first(ctx, e.to, &f->stack[depth].it);
      depth++;
    }
  }
  return false;
}

#endif
