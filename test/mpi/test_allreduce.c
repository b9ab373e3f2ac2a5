/*
 * All-reduce correctness matrix: every data type x op x count (0, 1, odd, not a multiple of the
 * vector width, several FIFO slots and channels) x in place / out of place x buffer offset (aligned
 * and not), many collectives in flight at once; then collectives on subsets of the ranks, two
 * disjoint groups at the same time.  Inputs are small integers, so every result is exact in every
 * type and is compared exactly with a float64 reference.
 *
 *   mpirun -np N test_allreduce [-q]     (-q: fewer counts)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtypes.h"
#include "harness.h"

typedef struct {
  int id;
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  size_t count;
  bool in_place;
  size_t offset_elems;
  const int* ranks; /* NULL: all */
  int nranks;
  void *send_alloc, *recv_alloc; /* allocations; buffers start offset_elems in */
} test_case;

static const char* type_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"};
static const char* op_names[] = {"sum", "prod", "max", "min"};

static bool is_signed(dfcclDataType_t t) {
  return t == dfcclInt8 || t == dfcclInt32 || t == dfcclInt64 || t >= dfcclFloat16;
}

/* A small integer for (rank, case, element) whose reduction over up to 8 ranks is exact in every
 * type: sums of 0..7, products of 1..2 (and -1 for signed types), max/min of -50..50. */
static double input(const test_case* c, int rank, size_t i) {
  uint64_t h = (uint64_t)(c->id + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0xbf58476d1ce4e5b9ull ^ i * 0x94d049bb133111ebull;
  h ^= h >> 29;
  switch (c->op) {
    case dfcclSum: return (double)(h % 8);
    case dfcclProd: return is_signed(c->dtype) && h % 5 == 0 ? -1.0 : (double)(h % 2 + 1);
    default: return is_signed(c->dtype) ? (double)(int)(h % 101) - 50.0 : (double)(h % 101);
  }
}

static void store(dfcclDataType_t t, void* base, size_t i, double v) {
  switch (t) {
    case dfcclInt8: ((int8_t*)base)[i] = (int8_t)v; break;
    case dfcclUint8: ((uint8_t*)base)[i] = (uint8_t)v; break;
    case dfcclInt32: ((int32_t*)base)[i] = (int32_t)v; break;
    case dfcclUint32: ((uint32_t*)base)[i] = (uint32_t)v; break;
    case dfcclInt64: ((int64_t*)base)[i] = (int64_t)v; break;
    case dfcclUint64: ((uint64_t*)base)[i] = (uint64_t)v; break;
    case dfcclFloat16: ((uint16_t*)base)[i] = df_f32_to_f16_rn((float)v); break;
    case dfcclBfloat16: ((uint16_t*)base)[i] = df_f32_to_bf16_rn((float)v); break;
    case dfcclFloat32: ((float*)base)[i] = (float)v; break;
    default: ((double*)base)[i] = v; break;
  }
}

static double load(dfcclDataType_t t, const void* base, size_t i) {
  switch (t) {
    case dfcclInt8: return ((const int8_t*)base)[i];
    case dfcclUint8: return ((const uint8_t*)base)[i];
    case dfcclInt32: return ((const int32_t*)base)[i];
    case dfcclUint32: return ((const uint32_t*)base)[i];
    case dfcclInt64: return (double)((const int64_t*)base)[i];
    case dfcclUint64: return (double)((const uint64_t*)base)[i];
    case dfcclFloat16: return df_f16_to_f32(((const uint16_t*)base)[i]);
    case dfcclBfloat16: return df_bf16_to_f32(((const uint16_t*)base)[i]);
    case dfcclFloat32: return ((const float*)base)[i];
    default: return ((const double*)base)[i];
  }
}

static double expected(const test_case* c, size_t i, int nranks, const int* ranks) {
  double acc = input(c, ranks ? ranks[0] : 0, i);
  for (int k = 1; k < nranks; k++) {
    double v = input(c, ranks ? ranks[k] : k, i);
    switch (c->op) {
      case dfcclSum: acc += v; break;
      case dfcclProd: acc *= v; break;
      case dfcclMax: acc = v > acc ? v : acc; break;
      default: acc = v < acc ? v : acc; break;
    }
  }
  return acc;
}

static char* buffer(void* alloc, const test_case* c) {
  return (char*)alloc + c->offset_elems * dfcclTypeSize(c->dtype);
}

static void prepare(harness* h, test_case* c) {
  size_t esize = dfcclTypeSize(c->dtype), bytes = (c->count + c->offset_elems) * esize;
  char* host = calloc(1, bytes + 1);
  for (size_t i = 0; i < c->count; i++) store(c->dtype, host + c->offset_elems * esize, i, input(c, h->rank, i));
  c->send_alloc = harness_alloc(h, bytes);
  harness_upload(h, c->send_alloc, host, bytes);
  if (c->in_place) {
    c->recv_alloc = c->send_alloc;
  } else {
    memset(host, 0x5a, bytes); /* poison: every element must be written */
    c->recv_alloc = harness_alloc(h, bytes);
    harness_upload(h, c->recv_alloc, host, bytes);
  }
  free(host);
}

static long verify(harness* h, test_case* c) {
  size_t esize = dfcclTypeSize(c->dtype), bytes = (c->count + c->offset_elems) * esize;
  char* host = malloc(bytes + 1);
  harness_download(h, host, c->recv_alloc, bytes);
  long wrong = 0;
  for (size_t i = 0; i < c->count; i++) {
    double want = expected(c, i, c->ranks ? c->nranks : h->nranks, c->ranks);
    double got = load(c->dtype, host + c->offset_elems * esize, i);
    if (got != want && wrong++ < 3)
      fprintf(stderr, "rank %d: %s %s count %zu %s offset %zu on %d ranks: element %zu = %g, expected %g\n", h->rank,
              type_names[c->dtype], op_names[c->op], c->count, c->in_place ? "in place" : "out of place",
              c->offset_elems, c->ranks ? c->nranks : h->nranks, i, got, want);
  }
  free(host);
  harness_free(h, c->send_alloc);
  if (c->recv_alloc != c->send_alloc) harness_free(h, c->recv_alloc);
  return wrong;
}

/* Registers, runs (batch at a time, all in flight together) and checks the cases. */
static long run_cases(harness* h, test_case* cases, int n, int batch) {
  long wrong = 0;
  harness_counter done = {0};
  int submitted = 0;
  for (int i = 0; i < n; i++)
    CHECK_DFCCL(dfcclRegisterAllReduce(h->ctx, cases[i].count, cases[i].dtype, cases[i].op, cases[i].id,
                                       cases[i].ranks, cases[i].ranks ? cases[i].nranks : 0, 0));
  for (int first = 0; first < n; first += batch) {
    int last = first + batch < n ? first + batch : n;
    for (int i = first; i < last; i++) prepare(h, &cases[i]);
    for (int i = first; i < last; i++) {
      test_case* c = &cases[i];
      CHECK_DFCCL(dfcclRunAllReduce(h->ctx, buffer(c->send_alloc, c), buffer(c->recv_alloc, c), c->id,
                                    harness_on_complete, &done));
      submitted++;
    }
    harness_wait(&done, submitted);
    harness_progress();
    for (int i = first; i < last; i++) wrong += verify(h, &cases[i]);
  }
  return wrong + atomic_load(&done.errors);
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_allreduce");
  bool quick = false;
  for (int opt; (opt = getopt(argc, argv, "q")) != -1;)
    if (opt == 'q') quick = true;
  harness_watchdog_start(120, "all-reduce matrix");

  static const size_t counts_full[] = {0, 1, 2, 7, 17, 1000, 70001};
  static const size_t counts_quick[] = {0, 1, 17, 5003};
  const size_t* counts = quick ? counts_quick : counts_full;
  int ncounts = quick ? 4 : 7;
  int max_cases = dfcclNumTypes * dfcclNumOps * ncounts * 4 + 16;
  test_case* cases = calloc((size_t)max_cases, sizeof *cases);
  int n = 0;
  for (int t = 0; t < dfcclNumTypes; t++)
    for (int o = 0; o < dfcclNumOps; o++)
      for (int k = 0; k < ncounts; k++)
        for (int variant = 0; variant < 4; variant++) {
          test_case* c = &cases[n];
          c->id = n;
          c->dtype = (dfcclDataType_t)t;
          c->op = (dfcclRedOp_t)o;
          c->count = counts[k];
          c->in_place = variant & 1;
          c->offset_elems = (variant >> 1) ? 1 : 0;
          n++;
        }
  long wrong = run_cases(&h, cases, n, 48);
  if (h.rank == 0) printf("matrix: %d all-reduces checked on %d ranks\n", n, h.nranks);

  /* Subsets: two disjoint groups at once, then a group of all but one rank. */
  if (h.nranks >= 4) {
    static const int low[] = {0, 1}, high[] = {2, 3};
    int m = 0;
    test_case* sub = cases;
    memset(sub, 0, sizeof *sub * 8);
    const int* mine = h.rank < 2 ? low : high;
    for (int k = 0; k < 4; k++) {
      sub[m] = (test_case){.id = 100000 + k, .dtype = dfcclFloat32, .op = dfcclSum, .count = 40000 + (size_t)k * 3,
                           .ranks = mine, .nranks = 2};
      m++;
    }
    if (h.rank < 2 || h.rank == 3) {
      static int skip2[] = {3, 0, 1}; /* any order: DFCCL sorts participants */
      sub[m] = (test_case){.id = 200000, .dtype = dfcclInt64, .op = dfcclMax, .count = 33333, .ranks = skip2, .nranks = 3};
      m++;
    }
    /* The reference sorts too. */
    static int sorted_skip2[] = {0, 1, 3};
    long w = run_cases(&h, sub, m - (h.rank < 2 || h.rank == 3 ? 1 : 0), 8);
    if (h.rank < 2 || h.rank == 3) {
      test_case* c = &sub[m - 1];
      CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, c->count, c->dtype, c->op, c->id, c->ranks, c->nranks, 0));
      harness_counter done = {0};
      prepare(&h, c);
      CHECK_DFCCL(dfcclRunAllReduce(h.ctx, c->send_alloc, c->recv_alloc, c->id, harness_on_complete, &done));
      harness_wait(&done, 1);
      c->ranks = sorted_skip2;
      w += verify(&h, c);
    }
    wrong += w;
    if (h.rank == 0) printf("subsets: two disjoint pairs at once and a group of 3 checked\n");
  }
  free(cases);
  if (h.rank == 0) printf("%s\n", wrong ? "WRONG RESULTS" : "all results exact");
  return harness_finish(&h, wrong);
}
