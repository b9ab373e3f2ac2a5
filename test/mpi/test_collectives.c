/*
 * Correctness matrix of the collectives (cases.h's eight kinds): every data type x op the type has x count (0, 1,
 * odd, not a multiple of the vector width, several FIFO slots and channels) x in place / out of
 * place x buffer offset (aligned and not) x root, many collectives in flight at once; then
 * collectives on subsets of the ranks, two disjoint groups at the same time.  Inputs are integers,
 * so every result is exact in every type and is compared exactly with a float64 reference.
 *
 *   mpirun -np N test_collectives [-k allreduce|others|all] [-q]     (-q: fewer counts)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "dtypes.h"

/* Registers, runs (a batch at a time, all in flight together), checks and deregisters the cases,
 * at most WINDOW registered at once (the core holds 2048).  The cases of one call share their
 * participants (one deregistration names them all). */
enum { WINDOW = 1024 };
static long run_cases(harness* h, test_case* cases, int n, int batch) {
  long wrong = 0;
  harness_counter done = {0};
  int submitted = 0;
  int* ids = malloc(WINDOW * sizeof *ids);
  if (!ids) abort();
  for (int window = 0; window < n; window += WINDOW) {
    int end = window + WINDOW < n ? window + WINDOW : n;
    for (int i = window; i < end; i++) register_case(h, &cases[i]);
    for (int first = window; first < end; first += batch) {
      int last = first + batch < end ? first + batch : end;
      for (int i = first; i < last; i++) prepare(h, &cases[i]);
      for (int i = first; i < last; i++, submitted++) run_case(h, &cases[i], &done);
      harness_wait(&done, submitted);
      harness_progress();
      for (int i = first; i < last; i++) wrong += verify(h, &cases[i]);
    }
    for (int i = window; i < end; i++) ids[i - window] = cases[i].id;
    CHECK_DFCCL(dfcclDeregister(h->ctx, ids, end - window));
  }
  free(ids);
  return wrong + atomic_load(&done.errors);
}

/* The bitwise and logical ops reach the daemon through the same collectives, chunks and slots as
 * the arithmetic ones; only the element operation differs, which test_reduce checks in every
 * layout.  So they get a lighter sweep: one (count, variant) per (type, op), cycling through the
 * variants and two counts -- 17 (within one slot) and the largest (several slots and channels) --
 * so that each op meets every variant at both counts across the eight integer types. */
static bool in_light_sweep(size_t count, size_t largest, int t, int o, int v, int nvariants) {
  const int k = t + o;
  return v == k % nvariants && count == ((k / nvariants) % 2 ? (size_t)17 : largest);
}

/* The matrix over all ranks for the kinds selected (only counted when cases is NULL).  Reductions
 * go over every op the type has; the others move data only and use one.  All-reduce gets all four
 * (in/out of place) x (offset 0/1) variants, the others two (out of place at offset 0, in place at
 * offset 1). */
static int build_matrix(const harness* h, test_case* cases, bool all_reduce, bool others, bool quick) {
  static const size_t counts_full[] = {0, 1, 2, 7, 17, 1000, 20001};
  static const size_t counts_quick[] = {0, 1, 17, 5003};
  const size_t* counts = quick ? counts_quick : counts_full;
  int ncounts = quick ? 4 : 7, n = 0;
  for (int k = 0; k < NUM_KINDS; k++) {
    if (k == ALL_REDUCE ? !all_reduce : !others) continue;
    int nops = reduces((kind)k) ? dfcclNumOps : 1, nvariants = k == ALL_REDUCE ? 4 : 2;
    size_t largest = k != ALL_REDUCE && counts[ncounts - 1] == 20001 ? counts[ncounts - 2] : counts[ncounts - 1];
    for (int t = 0; t < dfcclNumTypes; t++)
      for (int o = 0; o < nops; o++)
        for (int j = k == ALL_REDUCE ? 0 : 1; j < ncounts; j++) {
          if (!df_op_defined_for((dfcclRedOp_t)o, (dfcclDataType_t)t)) continue;
          if (k != ALL_REDUCE && counts[j] == 20001) continue; /* x nranks: big enough at 1000 */
          for (int v = 0; v < nvariants; v++) {
            if (df_op_family_of((dfcclRedOp_t)o) != DF_OP_ARITHMETIC &&
                !in_light_sweep(counts[j], largest, t, o, v, nvariants))
              continue;
            if (!cases) {
              n++;
              continue;
            }
            test_case* c = &cases[n];
            memset(c, 0, sizeof *c);
            c->id = n;
            c->kind = (kind)k;
            c->dtype = (dfcclDataType_t)t;
            c->op = (dfcclRedOp_t)o;
            c->count = counts[j];
            c->in_place = runs_in_place(c->kind) && (nvariants == 4 ? (v & 1) : v);
            c->offset_elems = nvariants == 4 ? (size_t)(v >> 1) : (size_t)v;
            c->root = n % h->nranks; /* every rank is a root somewhere */
            c->nranks = h->nranks;
            c->position = h->rank;
            n++;
          }
        }
  }
  return n;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_collectives");
  bool quick = false, all_reduce = true, others = true;
  options o = harness_options(&h, "usage: test_collectives [-k allreduce|others|all] [-q]", argc, argv, "qk:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'q') quick = true;
    if (opt == 'k') {
      static const char* const kinds[] = {"allreduce", "others", "all", NULL};
      int kind = option_choice(&o, kinds);
      all_reduce = kind != 1;
      others = kind != 0;
    }
  }
  harness_watchdog_start(120, "collectives matrix");
  int n = build_matrix(&h, NULL, all_reduce, others, quick);
  test_case* cases = calloc((size_t)n + 8, sizeof *cases); /* + 8: the subset cases below */
  if (!cases) {
    fprintf(stderr, "test_collectives: out of memory for %d test cases\n", n);
    abort();
  }
  build_matrix(&h, cases, all_reduce, others, quick);
  long wrong = run_cases(&h, cases, n, 48);
  if (h.rank == 0) printf("matrix: %d collectives checked on %d ranks\n", n, h.nranks);

  /* Subsets: two disjoint pairs at once (all-reduce, all-gather), then a group of three with a
   * reduce to a root that is not rank 0 and a broadcast. */
  if (h.nranks >= 4 && others) {
    static const int low[] = {0, 1}, high[] = {2, 3}, three[] = {0, 1, 3};
    const int* pair = h.rank < 2 ? low : high;
    test_case* sub = cases;
    int m = 0;
    for (int k = 0; k < 4; k++)
      sub[m++] = (test_case){.id = 100000 + k,
                             .kind = k % 2 ? ALL_GATHER : ALL_REDUCE,
                             .dtype = dfcclFloat32,
                             .op = dfcclSum,
                             .count = 40000 + (size_t)k * 3,
                             .ranks = pair,
                             .nranks = 2,
                             .position = h.rank % 2};
    long w = run_cases(&h, sub, m, 8);
    m = 0;
    if (h.rank != 2) {
      int position = h.rank == 3 ? 2 : h.rank;
      sub[m++] = (test_case){.id = 200000,
                             .kind = REDUCE,
                             .dtype = dfcclInt64,
                             .op = dfcclMax,
                             .count = 33333,
                             .root = 3,
                             .ranks = three,
                             .nranks = 3,
                             .position = position};
      sub[m++] = (test_case){.id = 200001,
                             .kind = BROADCAST,
                             .dtype = dfcclBfloat16,
                             .count = 4097,
                             .root = 1,
                             .ranks = three,
                             .nranks = 3,
                             .position = position};
      w += run_cases(&h, sub, m, 8);
    }
    wrong += w;
    if (h.rank == 0) printf("subsets: two disjoint pairs at once and a group of 3 checked\n");
  }
  free(cases);
  if (h.rank == 0) printf("%s\n", wrong ? "WRONG RESULTS" : "all results exact");
  return harness_finish(&h, wrong);
}
