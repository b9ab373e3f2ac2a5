/*
 * The cycle finder (cycle.h): its setup, cycle_find_from over a struct dep_graph, and the search's
 * rarely taken paths (a new epoch after wrap-around, keeping a cycle once found).  The search
 * itself is inline in cycle.h.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "cycle.h"

#include <stdlib.h>
#include <string.h>

int cycle_finder_init(struct cycle_finder* f, uint32_t node_num) {
  memset(f, 0, sizeof *f);
  f->node_num = node_num;
  f->seen = calloc(node_num, sizeof *f->seen);
  f->path_pos = malloc(node_num * sizeof *f->path_pos);
  f->stack = malloc(node_num * sizeof *f->stack);
  f->stack_via = malloc(node_num * sizeof *f->stack_via);
  f->found.node = malloc(node_num * sizeof *f->found.node);
  f->found.via = malloc(node_num * sizeof *f->found.via);
  if (!f->seen || !f->path_pos || !f->stack || !f->stack_via || !f->found.node || !f->found.via) {
    cycle_finder_free(f);
    return -1;
  }
  for (uint32_t i = 0; i < node_num; i++) f->path_pos[i] = NOT_ON_PATH;
  return 0;
}

void cycle_finder_free(struct cycle_finder* f) {
  free(f->seen);
  free(f->path_pos);
  free(f->stack);
  free(f->stack_via);
  free(f->found.node);
  free(f->found.via);
  memset(f, 0, sizeof *f);
}

void cycle_reset_epochs(struct cycle_finder* f) {
  /* The epoch wrapped: old stamps could alias the new epochs. */
  memset(f->seen, 0, f->node_num * sizeof *f->seen);
  f->epoch = 1;
}

/* Keeps the path from the frame at `from` to the top, closed by the edge
 * top -> from, and takes the whole path off the "on path" marks. */
void cycle_keep(struct cycle_finder* f, uint32_t from, uint32_t depth, uint32_t closing_via) {
  struct cycle* c = &f->found;
  c->len = 0;
  for (uint32_t i = from; i < depth; i++) {
    c->node[c->len] = f->stack[i].node;
    c->via[c->len] = i + 1 < depth ? f->stack_via[i] : closing_via;
    c->len++;
  }
  for (uint32_t i = 0; i < depth; i++) f->path_pos[f->stack[i].node] = NOT_ON_PATH;
}

bool cycle_find_from(struct cycle_finder* f, const struct dep_graph* g, const uint32_t* roots, uint32_t root_num) {
  return cycle_search(f, g->ctx, g->first, g->next, roots, root_num);
}
