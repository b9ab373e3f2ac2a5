/*
 * Correctness matrix of the five collectives: every data type x op x count (0, 1, odd, not a
 * multiple of the vector width, several FIFO slots and channels) x in place / out of place x
 * buffer offset (aligned and not) x root, many collectives in flight at once; then collectives on
 * subsets of the ranks, two disjoint groups at the same time.  Inputs are small integers, so every
 * result is exact in every type and is compared exactly with a float64 reference.
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

#include "dtypes.h"
#include "harness.h"

typedef enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, NUM_KINDS } kind;
static const char* kind_names[] = {"all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce"};
static const char* type_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"};
static const char* op_names[] = {"sum", "prod", "max", "min"};

typedef struct {
  int id;
  kind kind;
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  size_t count;        /* as registered: per rank for all-gather and reduce-scatter */
  bool in_place;
  size_t offset_elems; /* buffers start this many elements into their allocation */
  int root;            /* world rank, broadcast and reduce */
  const int* ranks;    /* participants, ascending; NULL: all */
  int nranks;
  int position;        /* this rank's index among them */
  void *send_alloc, *recv_alloc;
  char *send, *recv;   /* the buffers passed to dfcclRun* */
} test_case;

static bool is_signed(dfcclDataType_t t) {
  return t == dfcclInt8 || t == dfcclInt32 || t == dfcclInt64 || t >= dfcclFloat16;
}

static bool reduces(kind k) { return k == ALL_REDUCE || k == REDUCE_SCATTER || k == REDUCE; }

/* A small integer for (rank, case, element) whose reduction over up to 8 ranks is exact in every
 * type: sums of 0..7, products of 1..2 (and -1 for signed types), max/min of -50..50. */
static double input(const test_case* c, int rank, size_t i) {
  uint64_t h = (uint64_t)(c->id + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0xbf58476d1ce4e5b9ull ^
               i * 0x94d049bb133111ebull;
  h ^= h >> 29;
  switch (reduces(c->kind) ? c->op : dfcclSum) {
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

static int rank_at(const test_case* c, int position) { return c->ranks ? c->ranks[position] : position; }

static double reduce_over_ranks(const test_case* c, size_t i) {
  double acc = input(c, rank_at(c, 0), i);
  for (int k = 1; k < c->nranks; k++) {
    double v = input(c, rank_at(c, k), i);
    switch (c->op) {
      case dfcclSum: acc += v; break;
      case dfcclProd: acc *= v; break;
      case dfcclMax: acc = v > acc ? v : acc; break;
      default: acc = v < acc ? v : acc; break;
    }
  }
  return acc;
}

/* Element counts of this rank's send and receive buffers (0: not used by this rank). */
static void lengths(const test_case* c, int rank, size_t* send, size_t* recv) {
  size_t n = (size_t)c->nranks, count = c->count;
  bool root = rank == c->root;
  switch (c->kind) {
    case ALL_GATHER: *send = count; *recv = n * count; break;
    case REDUCE_SCATTER: *send = n * count; *recv = count; break;
    case BROADCAST: *send = root ? count : 0; *recv = count; break;
    case REDUCE: *send = count; *recv = root ? count : 0; break;
    default: *send = count; *recv = count; break;
  }
}

/* The expected element i of this rank's receive buffer. */
static double expected(const test_case* c, size_t i) {
  switch (c->kind) {
    case ALL_GATHER: return input(c, rank_at(c, (int)(i / c->count)), i % c->count);
    case REDUCE_SCATTER: return reduce_over_ranks(c, (size_t)c->position * c->count + i);
    case BROADCAST: return input(c, c->root, i);
    default: return reduce_over_ranks(c, i);
  }
}

static void prepare(harness* h, test_case* c) {
  size_t esize = dfcclTypeSize(c->dtype), nsend, nrecv;
  lengths(c, h->rank, &nsend, &nrecv);
  /* In place, the input is a part of the output buffer (all-gather) or the output a part of the
   * input (reduce-scatter), or they are one buffer. */
  size_t big = (nsend > nrecv ? nsend : nrecv) + c->offset_elems;
  char* host = malloc(big * esize + 1);
  memset(host, 0x5a, big * esize); /* poison: every output element must be written */
  size_t send_at = c->offset_elems;
  if (c->in_place && c->kind == ALL_GATHER) send_at += (size_t)c->position * c->count;
  for (size_t i = 0; i < nsend; i++) store(c->dtype, host + send_at * esize, i, input(c, h->rank, i));
  c->send_alloc = harness_alloc(h, big * esize);
  harness_upload(h, c->send_alloc, host, big * esize);
  if (c->in_place) {
    c->recv_alloc = c->send_alloc;
    c->send = (char*)c->send_alloc + send_at * esize;
    c->recv = (char*)c->recv_alloc + c->offset_elems * esize;
    if (c->kind == REDUCE_SCATTER) c->recv += (size_t)c->position * c->count * esize;
  } else {
    memset(host, 0x5a, big * esize);
    c->recv_alloc = harness_alloc(h, big * esize);
    harness_upload(h, c->recv_alloc, host, big * esize);
    c->send = (char*)c->send_alloc + send_at * esize;
    c->recv = (char*)c->recv_alloc + c->offset_elems * esize;
  }
  if (nsend == 0 && !c->in_place) c->send = NULL; /* not used by this rank: may be NULL */
  if (nrecv == 0 && !c->in_place) c->recv = NULL;
  free(host);
}

static long verify(harness* h, test_case* c) {
  size_t esize = dfcclTypeSize(c->dtype), nsend, nrecv;
  lengths(c, h->rank, &nsend, &nrecv);
  long wrong = 0;
  if (nrecv > 0) {
    char* host = malloc(nrecv * esize + 1);
    harness_download(h, host, c->recv, nrecv * esize);
    for (size_t i = 0; i < nrecv; i++) {
      double want = expected(c, i), got = load(c->dtype, host, i);
      if (got != want && wrong++ < 3)
        fprintf(stderr, "rank %d: %s %s %s count %zu %s offset %zu root %d on %d ranks: element %zu = %g, expected %g\n",
                h->rank, kind_names[c->kind], type_names[c->dtype], op_names[c->op], c->count,
                c->in_place ? "in place" : "out of place", c->offset_elems, c->root, c->nranks, i, got, want);
    }
    free(host);
  }
  harness_free(h, c->send_alloc);
  if (c->recv_alloc != c->send_alloc) harness_free(h, c->recv_alloc);
  return wrong;
}

static void register_case(harness* h, const test_case* c) {
  int n = c->ranks ? c->nranks : 0;
  switch (c->kind) {
    case ALL_GATHER: CHECK_DFCCL(dfcclRegisterAllGather(h->ctx, c->count, c->dtype, c->id, c->ranks, n, 0)); break;
    case REDUCE_SCATTER:
      CHECK_DFCCL(dfcclRegisterReduceScatter(h->ctx, c->count, c->dtype, c->op, c->id, c->ranks, n, 0));
      break;
    case BROADCAST: CHECK_DFCCL(dfcclRegisterBroadcast(h->ctx, c->count, c->dtype, c->root, c->id, c->ranks, n, 0)); break;
    case REDUCE: CHECK_DFCCL(dfcclRegisterReduce(h->ctx, c->count, c->dtype, c->op, c->root, c->id, c->ranks, n, 0)); break;
    default: CHECK_DFCCL(dfcclRegisterAllReduce(h->ctx, c->count, c->dtype, c->op, c->id, c->ranks, n, 0)); break;
  }
}

static void run_case(harness* h, test_case* c, harness_counter* done) {
  typedef dfcclResult_t (*run_fn)(dfcclRankCtx_t, const void*, void*, int, dfcclCallback_t, void*);
  static const run_fn run[NUM_KINDS] = {dfcclRunAllReduce, dfcclRunAllGather, dfcclRunReduceScatter,
                                        dfcclRunBroadcast, dfcclRunReduce};
  CHECK_DFCCL(run[c->kind](h->ctx, c->send, c->recv, c->id, harness_on_complete, done));
}

/* Registers, runs (a batch at a time, all in flight together) and checks the cases. */
static long run_cases(harness* h, test_case* cases, int n, int batch) {
  long wrong = 0;
  harness_counter done = {0};
  int submitted = 0;
  for (int i = 0; i < n; i++) register_case(h, &cases[i]);
  for (int first = 0; first < n; first += batch) {
    int last = first + batch < n ? first + batch : n;
    for (int i = first; i < last; i++) prepare(h, &cases[i]);
    for (int i = first; i < last; i++, submitted++) run_case(h, &cases[i], &done);
    harness_wait(&done, submitted);
    harness_progress();
    for (int i = first; i < last; i++) wrong += verify(h, &cases[i]);
  }
  return wrong + atomic_load(&done.errors);
}

/* The matrix over all ranks for the kinds selected.  Reductions go over every op; the others
 * move data only and use one.  All-reduce gets all four (in/out of place) x (offset 0/1)
 * variants, the others two (out of place at offset 0, in place at offset 1). */
static int build_matrix(const harness* h, test_case* cases, bool all_reduce, bool others, bool quick) {
  static const size_t counts_full[] = {0, 1, 2, 7, 17, 1000, 20001};
  static const size_t counts_quick[] = {0, 1, 17, 5003};
  const size_t* counts = quick ? counts_quick : counts_full;
  int ncounts = quick ? 4 : 7, n = 0;
  for (int k = 0; k < NUM_KINDS; k++) {
    if (k == ALL_REDUCE ? !all_reduce : !others) continue;
    int nops = reduces((kind)k) ? dfcclNumOps : 1, nvariants = k == ALL_REDUCE ? 4 : 2;
    for (int t = 0; t < dfcclNumTypes; t++)
      for (int o = 0; o < nops; o++)
        for (int j = k == ALL_REDUCE ? 0 : 1; j < ncounts; j++) {
          if (k != ALL_REDUCE && counts[j] == 20001) continue; /* x nranks: big enough at 1000 */
          for (int v = 0; v < nvariants; v++) {
            test_case* c = &cases[n];
            memset(c, 0, sizeof *c);
            c->id = n;
            c->kind = (kind)k;
            c->dtype = (dfcclDataType_t)t;
            c->op = (dfcclRedOp_t)o;
            c->count = counts[j];
            c->in_place = nvariants == 4 ? (v & 1) : v;
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
  for (int opt; (opt = getopt(argc, argv, "qk:")) != -1;) {
    if (opt == 'q') quick = true;
    if (opt == 'k') {
      all_reduce = strcmp(optarg, "others") != 0;
      others = strcmp(optarg, "allreduce") != 0;
    }
  }
  harness_watchdog_start(120, "collectives matrix");
  test_case* cases = calloc(2048, sizeof *cases);
  int n = build_matrix(&h, cases, all_reduce, others, quick);
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
      sub[m++] = (test_case){.id = 100000 + k, .kind = k % 2 ? ALL_GATHER : ALL_REDUCE, .dtype = dfcclFloat32,
                             .op = dfcclSum, .count = 40000 + (size_t)k * 3, .ranks = pair, .nranks = 2,
                             .position = h.rank % 2};
    long w = run_cases(&h, sub, m, 8);
    m = 0;
    if (h.rank != 2) {
      int position = h.rank == 3 ? 2 : h.rank;
      sub[m++] = (test_case){.id = 200000, .kind = REDUCE, .dtype = dfcclInt64, .op = dfcclMax, .count = 33333,
                             .root = 3, .ranks = three, .nranks = 3, .position = position};
      sub[m++] = (test_case){.id = 200001, .kind = BROADCAST, .dtype = dfcclBfloat16, .count = 4097, .root = 1,
                             .ranks = three, .nranks = 3, .position = position};
      w += run_cases(&h, sub, m, 8);
    }
    wrong += w;
    if (h.rank == 0) printf("subsets: two disjoint pairs at once and a group of 3 checked\n");
  }
  free(cases);
  if (h.rank == 0) printf("%s\n", wrong ? "WRONG RESULTS" : "all results exact");
  return harness_finish(&h, wrong);
}
