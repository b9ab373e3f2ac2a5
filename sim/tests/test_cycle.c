/*
 * Unit tests of the cycle detector on hand-built wait-for graphs.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "../cycle.h"
#include "check.h"

#define MAX_NODES 16

/* An adjacency matrix; edge u -> v is witnessed by collective `via[u][v]`. */
struct matrix {
  uint32_t n;
  int edge[MAX_NODES][MAX_NODES];
  uint32_t via[MAX_NODES][MAX_NODES];
};

static void first(void* ctx, uint32_t u, struct dep_iter* it) {
  (void)ctx;
  (void)u;
  it->pos = 0;
}

static bool next(void* ctx, uint32_t u, struct dep_iter* it, struct dep_edge* e) {
  const struct matrix* m = ctx;
  while (it->pos < m->n) {
    uint32_t v = it->pos++;
    if (m->edge[u][v]) {
      e->to = v;
      e->via = m->via[u][v];
      return true;
    }
  }
  return false;
}

static void add(struct matrix* m, uint32_t u, uint32_t v, uint32_t via) {
  m->edge[u][v] = 1;
  m->via[u][v] = via;
}

static bool search(struct cycle_finder* f, struct matrix* m, const uint32_t* roots, uint32_t n) {
  struct dep_graph g = {m, first, next};
  return cycle_find_from(f, &g, roots, n);
}

/* The found cycle must follow real edges and close. */
static bool cycle_is_real(const struct cycle* c, const struct matrix* m) {
  if (c->len == 0) return false;
  for (uint32_t i = 0; i < c->len; i++) {
    uint32_t u = c->node[i], v = c->node[(i + 1) % c->len];
    if (!m->edge[u][v] || m->via[u][v] != c->via[i]) return false;
  }
  return true;
}

static void test_acyclic(struct cycle_finder* f) {
  struct matrix m = {.n = 5};
  add(&m, 0, 1, 10);
  add(&m, 0, 2, 11);
  add(&m, 1, 3, 12);
  add(&m, 2, 3, 13);
  add(&m, 3, 4, 14); /* a diamond and a tail: shared descendants, no cycle */
  uint32_t all[] = {0, 1, 2, 3, 4};
  CHECK(!search(f, &m, all, 5));
}

static void test_two_gpu_cycle(struct cycle_finder* f) {
  struct matrix m = {.n = 2};
  add(&m, 0, 1, 7);
  add(&m, 1, 0, 8);
  uint32_t root[] = {1};
  CHECK(search(f, &m, root, 1));
  CHECK(f->found.len == 2);
  CHECK(cycle_is_real(&f->found, &m));
}

/* GPU0 -A-> GPU1 -B-> GPU2 -C-> GPU0 with groups A={0,1}, B={1,2}, C={2,0}:
 * every pair of GPUs shares one group with one collective, so no pairwise
 * order comparison sees anything; only the cycle does. */
static void test_three_group_cycle(struct cycle_finder* f) {
  enum { A = 100, B = 200, C = 300 };
  struct matrix m = {.n = 3};
  add(&m, 0, 1, A);
  add(&m, 1, 2, B);
  add(&m, 2, 0, C);
  for (uint32_t r = 0; r < 3; r++) {
    CHECK(search(f, &m, &r, 1));
    CHECK(f->found.len == 3);
    CHECK(cycle_is_real(&f->found, &m));
  }
  /* Break one edge: no cycle from anywhere. */
  m.edge[1][2] = 0;
  uint32_t all[] = {0, 1, 2};
  CHECK(!search(f, &m, all, 3));
}

/* The search only sees what the roots reach: the incremental contract. */
static void test_unreachable_cycle(struct cycle_finder* f) {
  struct matrix m = {.n = 4};
  add(&m, 2, 3, 1);
  add(&m, 3, 2, 2);
  add(&m, 0, 1, 3);
  uint32_t root[] = {0};
  CHECK(!search(f, &m, root, 1));
  uint32_t roots[] = {0, 3};
  CHECK(search(f, &m, roots, 2));
  CHECK(cycle_is_real(&f->found, &m));
}

/* The tail leading into a cycle is not part of it. */
static void test_cycle_behind_tail(struct cycle_finder* f) {
  struct matrix m = {.n = 5};
  add(&m, 0, 1, 1);
  add(&m, 1, 2, 2);
  add(&m, 2, 3, 3);
  add(&m, 3, 4, 4);
  add(&m, 4, 2, 5);
  uint32_t root[] = {0};
  CHECK(search(f, &m, root, 1));
  CHECK(f->found.len == 3);
  CHECK(cycle_is_real(&f->found, &m));
}

/* Random graphs against a brute-force answer: is some node on a cycle and
 * reachable from the root? (Transitive closure, Warshall.) */
static void test_random_against_closure(struct cycle_finder* f) {
  srand(12345);
  for (int trial = 0; trial < 3000; trial++) {
    struct matrix m = {.n = 2 + (uint32_t)(rand() % (MAX_NODES - 1))};
    int density = 1 + rand() % 4;
    for (uint32_t u = 0; u < m.n; u++)
      for (uint32_t v = 0; v < m.n; v++)
        if (u != v && rand() % (2 * (int)m.n) < density) add(&m, u, v, u * 100 + v);
    int reach[MAX_NODES][MAX_NODES];
    for (uint32_t u = 0; u < m.n; u++)
      for (uint32_t v = 0; v < m.n; v++) reach[u][v] = m.edge[u][v];
    for (uint32_t k = 0; k < m.n; k++)
      for (uint32_t u = 0; u < m.n; u++)
        for (uint32_t v = 0; v < m.n; v++) reach[u][v] |= reach[u][k] && reach[k][v];
    uint32_t root = (uint32_t)rand() % m.n;
    bool expect = false;
    for (uint32_t v = 0; v < m.n; v++) expect |= (v == root || reach[root][v]) && reach[v][v];
    bool got = search(f, &m, &root, 1);
    CHECK(got == expect);
    if (got) CHECK(cycle_is_real(&f->found, &m));
  }
}

/* Visited stamps survive the epoch counter wrapping around. */
static void test_epoch_wrap(struct cycle_finder* f) {
  f->epoch = UINT32_MAX - 2;
  for (int i = 0; i < 6; i++) {
    test_acyclic(f);
    test_two_gpu_cycle(f);
  }
}

int main(void) {
  struct cycle_finder f;
  if (cycle_finder_init(&f, MAX_NODES)) return 99;
  test_acyclic(&f);
  test_two_gpu_cycle(&f);
  test_three_group_cycle(&f);
  test_unreachable_cycle(&f);
  test_cycle_behind_tail(&f);
  test_random_against_closure(&f);
  test_epoch_wrap(&f);
  cycle_finder_free(&f);
  return check_status();
}
