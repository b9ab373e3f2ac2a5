/*
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "cases.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"

const char* const kind_names[NUM_KINDS] = {"all-reduce", "all-gather",   "reduce-scatter",   "broadcast",
                                           "reduce",     "all-gather-v", "reduce-scatter-v", "all-to-all"};

static bool is_signed(dfcclDataType_t t) {
  return t != dfcclUint8 && t != dfcclUint16 && t != dfcclUint32 && t != dfcclUint64;
}

int overlapping_groups(int nranks, int members[][8], int* sizes, int max) {
  int n = 0;
  sizes[n] = nranks < 8 ? nranks : 8;
  for (int i = 0; i < sizes[n]; i++) members[n][i] = i;
  n++;
  for (int start = 0; start < nranks && n < max; start += 2) {
    int a = start, b = (start + 1) % nranks, c = (start + 2) % nranks;
    int lo = a < b ? a : b, hi = a < b ? b : a;
    members[n][0] = lo < c ? lo : c; /* ascending: DFCCL orders participants by rank */
    members[n][2] = hi > c ? hi : c;
    members[n][1] = a + b + c - members[n][0] - members[n][2];
    sizes[n++] = 3;
    if (n < max) {
      members[n][0] = lo, members[n][1] = hi;
      sizes[n++] = 2;
    }
  }
  return n;
}

bool reduces(kind k) { return k == ALL_REDUCE || k == REDUCE_SCATTER || k == REDUCE || k == REDUCE_SCATTER_V; }
bool runs_in_place(kind k) { return k != ALL_TO_ALL; }

static uint64_t mix(uint64_t h) {
  h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

/* The value of an integer type whose low `width` bits are `bits` (the others zero): negative when
 * the type is signed and the top one is set.  Exact in float64 for width <= 53, and for the sign
 * bit alone at width 64. */
static double integer_value(dfcclDataType_t t, uint64_t bits, unsigned width) {
  const uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
  if (!is_signed(t) || !((bits >> (width - 1)) & 1)) return (double)bits;
  return (double)(int64_t)(bits | ~mask);
}

/* Bitwise ops: random bits of the type's width (at most 53, which float64 holds), mostly ones for
 * band and mostly zeros for bor, so that their results over a few ranks still vary. */
static double bits_input(const test_case* c, uint64_t h) {
  unsigned width = 8 * (unsigned)dfcclTypeSize(c->dtype);
  if (width > 53) width = 53;
  const uint64_t r1 = mix(h), r2 = mix(r1), r3 = mix(r2);
  uint64_t bits = c->op == dfcclBand ? r1 | r2 | r3 : c->op == dfcclBor ? r1 & r2 & r3 : r1;
  return integer_value(c->dtype, bits & ((1ull << width) - 1), width);
}

/* Logical ops: zero often enough for both results over a few ranks (1 in 4 for land, 3 in 4 for
 * lor, 1 in 2 for lxor), else a nonzero value that a wrong op might take for zero or for one: 1, 2,
 * -1 (all ones), 0x80, 0x100 (a zero low byte), the sign bit alone. */
static double truth_input(const test_case* c, uint64_t h) {
  const uint64_t zeros_in_4 = c->op == dfcclLand ? 1 : c->op == dfcclLor ? 3 : 2;
  if (h % 4 < zeros_in_4) return 0.0;
  const unsigned width = 8 * (unsigned)dfcclTypeSize(c->dtype);
  const unsigned ones_width = width > 53 ? 53 : width;
  const uint64_t nonzero[] = {1, 2, (1ull << ones_width) - 1, 0x80, width > 8 ? 0x100 : 0x40, 1ull << (width - 1)};
  const uint64_t bits = nonzero[(h >> 2) % (sizeof nonzero / sizeof nonzero[0])];
  return integer_value(c->dtype, bits, bits == (1ull << ones_width) - 1 ? ones_width : width);
}

/* An input for (rank, case, element) whose reduction over up to 8 ranks is exact in every type:
 * sums of 0..7, products of 1..2 (and -1 for signed types), max/min of -50..50; integers of the
 * type's range for the bitwise and logical ops (defined for the integer types only). */
static double input(const test_case* c, int rank, size_t i) {
  uint64_t h = (uint64_t)(c->id + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0xbf58476d1ce4e5b9ull ^
               i * 0x94d049bb133111ebull ^ (uint64_t)c->seed * 0xd6e8feb86659fd93ull;
  h ^= h >> 29;
  const dfcclRedOp_t op = reduces(c->kind) ? c->op : dfcclSum;
  switch (df_op_family_of(op)) {
    case DF_OP_BITWISE: return bits_input(c, h);
    case DF_OP_LOGICAL: return truth_input(c, h);
    default: break;
  }
  switch (op) {
    case dfcclSum: return (double)(h % 8);
    case dfcclProd: return is_signed(c->dtype) && h % 5 == 0 ? -1.0 : (double)(h % 2 + 1);
    default: return is_signed(c->dtype) ? (double)(int)(h % 101) - 50.0 : (double)(h % 101);
  }
}

static int rank_at(const test_case* c, int position) { return c->ranks ? c->ranks[position] : position; }

static double reduce_over_ranks(const test_case* c, size_t i) {
  double acc = input(c, rank_at(c, 0), i);
  for (int k = 1; k < c->nranks; k++) acc = element_reduce(c->op, acc, input(c, rank_at(c, k), i));
  return acc;
}

/* The v kinds' blocks: position p's block has block_count(c, p) elements (sizes differ, one in three
 * is empty).  All-gather-v places them at block_displ(c, p) of the receive buffer: in reverse ring
 * order with a gap of BLOCK_GAP elements after each, which the collective must leave as it was
 * (packed cases: packed).  Reduce-scatter-v's input holds them packed (block_packed(c, p)). */
enum { BLOCK_GAP = 3 };
static size_t block_count(const test_case* c, int p) { return p % 3 == 1 ? 0 : c->count + 5 * (size_t)p; }
static size_t block_packed(const test_case* c, int p) {
  size_t d = 0;
  for (int q = 0; q < p; q++) d += block_count(c, q);
  return d;
}

static size_t block_displ(const test_case* c, int p) {
  if (c->packed) return block_packed(c, p);
  size_t d = 0;
  for (int q = c->nranks - 1; q > p; q--) d += block_count(c, q) + BLOCK_GAP;
  return d;
}

void case_blocks(const test_case* c, size_t* counts, size_t* displs) {
  for (int p = 0; p < c->nranks; p++) {
    counts[p] = block_count(c, p);
    displs[p] = c->kind == ALL_GATHER_V ? block_displ(c, p) : block_packed(c, p);
  }
}

/* All-gather-v's receive buffer: up to the end of its last block (block 0 unless packed). */
static size_t gather_extent(const test_case* c) {
  return c->packed ? block_packed(c, c->nranks) : block_displ(c, 0) + block_count(c, 0);
}

/* Element counts of this rank's send and receive buffers (0: not used by this rank). */
static void lengths(const test_case* c, int rank, size_t* send, size_t* recv) {
  size_t n = (size_t)c->nranks, count = c->count;
  bool root = rank == c->root;
  /* clang-format off */
  switch (c->kind) {
    case ALL_GATHER: *send = count; *recv = n * count; break;
    case ALL_GATHER_V: *send = block_count(c, c->position); *recv = gather_extent(c); break;
    case REDUCE_SCATTER_V: *send = block_packed(c, c->nranks); *recv = block_count(c, c->position); break;
    case REDUCE_SCATTER: *send = n * count; *recv = count; break;
    case ALL_TO_ALL: *send = n * count; *recv = n * count; break;
    case BROADCAST: *send = root ? count : 0; *recv = count; break;
    case REDUCE: *send = count; *recv = root ? count : 0; break;
    default: *send = count; *recv = count; break;
  }
  /* clang-format on */
}

/* What an output element holds before the collective (prepare's poison), in dtype. */
static double poison(dfcclDataType_t dtype) {
  unsigned char bytes[16];
  memset(bytes, 0x5a, sizeof bytes);
  return element_load(bytes, dtype, 0);
}

/* The expected element i of this rank's receive buffer. */
static double expected(const test_case* c, size_t i) {
  if (c->kind == ALL_GATHER_V) {
    for (int p = 0; p < c->nranks; p++)
      if (i >= block_displ(c, p) && i < block_displ(c, p) + block_count(c, p))
        return input(c, rank_at(c, p), i - block_displ(c, p));
    return poison(c->dtype); /* a gap: untouched */
  }
  switch (c->kind) {
    case REDUCE_SCATTER_V: return reduce_over_ranks(c, block_packed(c, c->position) + i);
    case ALL_GATHER: return input(c, rank_at(c, (int)(i / c->count)), i % c->count);
    case ALL_TO_ALL: /* block p came from position p, which sent its block for this position */
      return input(c, rank_at(c, (int)(i / c->count)), (size_t)c->position * c->count + i % c->count);
    case REDUCE_SCATTER: return reduce_over_ranks(c, (size_t)c->position * c->count + i);
    case BROADCAST: return input(c, c->root, i);
    default: return reduce_over_ranks(c, i);
  }
}

void prepare(harness* h, test_case* c) {
  size_t esize = dfcclTypeSize(c->dtype), nsend, nrecv;
  lengths(c, h->rank, &nsend, &nrecv);
  /* In place, the input is a part of the output buffer (all-gather) or the output a part of the
   * input (reduce-scatter), or they are one buffer. */
  size_t big = (nsend > nrecv ? nsend : nrecv) + c->offset_elems;
  char* host = malloc(big * esize + 1);
  memset(host, 0x5a, big * esize); /* poison: every output element must be written */
  size_t send_at = c->offset_elems;
  if (c->in_place && c->kind == ALL_GATHER) send_at += (size_t)c->position * c->count;
  if (c->in_place && c->kind == ALL_GATHER_V) send_at += block_displ(c, c->position);
  for (size_t i = 0; i < nsend; i++) element_store(host + send_at * esize, c->dtype, i, input(c, h->rank, i));
  c->send_alloc = harness_alloc(h, big * esize);
  harness_upload(h, c->send_alloc, host, big * esize);
  if (c->in_place) {
    c->recv_alloc = c->send_alloc;
    c->send = (char*)c->send_alloc + send_at * esize;
    c->recv = (char*)c->recv_alloc + c->offset_elems * esize;
    if (c->kind == REDUCE_SCATTER) c->recv += (size_t)c->position * c->count * esize;
    if (c->kind == REDUCE_SCATTER_V) c->recv += block_packed(c, c->position) * esize;
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

long verify(harness* h, test_case* c) {
  size_t esize = dfcclTypeSize(c->dtype), nsend, nrecv;
  lengths(c, h->rank, &nsend, &nrecv);
  long wrong = 0;
  if (nrecv > 0) {
    char* host = malloc(nrecv * esize + 1);
    harness_download(h, host, c->recv, nrecv * esize);
    for (size_t i = 0; i < nrecv; i++) {
      double want = expected(c, i), got = element_load(host, c->dtype, i);
      if (got != want && wrong++ < 3)
        fprintf(stderr,
                "rank %d: %s %s %s count %zu %s offset %zu root %d on %d ranks: element %zu = %g, expected %g\n",
                h->rank, kind_names[c->kind], df_dtype_name(c->dtype), df_op_name(c->op), c->count,
                c->in_place ? "in place" : "out of place", c->offset_elems, c->root, c->nranks, i, got, want);
    }
    free(host);
  }
  harness_free(h, c->send_alloc);
  if (c->recv_alloc != c->send_alloc) harness_free(h, c->recv_alloc);
  return wrong;
}

static void register_all_gather_v(harness* h, const test_case* c, int n) {
  size_t* counts = malloc(2 * (size_t)c->nranks * sizeof *counts);
  if (!counts) abort();
  size_t* displs = counts + c->nranks;
  case_blocks(c, counts, displs);
  CHECK_DFCCL(dfcclRegisterAllGatherV(h->ctx, counts, displs, c->dtype, c->id, c->ranks, n, 0));
  free(counts);
}

static void register_reduce_scatter_v(harness* h, const test_case* c, int n) {
  size_t* counts = malloc((size_t)c->nranks * sizeof *counts);
  if (!counts) abort();
  for (int p = 0; p < c->nranks; p++) counts[p] = block_count(c, p);
  CHECK_DFCCL(dfcclRegisterReduceScatterV(h->ctx, counts, c->dtype, c->op, c->id, c->ranks, n, 0));
  free(counts);
}

void register_case(harness* h, const test_case* c) {
  int n = c->ranks ? c->nranks : 0;
  switch (c->kind) {
    case REDUCE_SCATTER_V: register_reduce_scatter_v(h, c, n); break;
    case ALL_GATHER_V: register_all_gather_v(h, c, n); break;
    case ALL_GATHER: CHECK_DFCCL(dfcclRegisterAllGather(h->ctx, c->count, c->dtype, c->id, c->ranks, n, 0)); break;
    case ALL_TO_ALL: CHECK_DFCCL(dfcclRegisterAllToAll(h->ctx, c->count, c->dtype, c->id, c->ranks, n, 0)); break;
    case REDUCE_SCATTER:
      CHECK_DFCCL(dfcclRegisterReduceScatter(h->ctx, c->count, c->dtype, c->op, c->id, c->ranks, n, 0));
      break;
    case BROADCAST:
      CHECK_DFCCL(dfcclRegisterBroadcast(h->ctx, c->count, c->dtype, c->root, c->id, c->ranks, n, 0));
      break;
    case REDUCE:
      CHECK_DFCCL(dfcclRegisterReduce(h->ctx, c->count, c->dtype, c->op, c->root, c->id, c->ranks, n, 0));
      break;
    default: CHECK_DFCCL(dfcclRegisterAllReduce(h->ctx, c->count, c->dtype, c->op, c->id, c->ranks, n, 0)); break;
  }
}

void submit_case(harness* h, dfcclComm_t comm, test_case* c, harness_counter* done) {
  submit_case_with(h, comm, c, harness_on_complete, done);
}

/* c's descriptor; the v kinds' blocks in *blocks (free it after the submission). */
static dfcclCollDesc_t case_desc(const test_case* c, size_t** blocks) {
  static const dfcclCollKind_t kinds[NUM_KINDS] = {[ALL_REDUCE] = dfcclAllReduce,
                                                   [ALL_GATHER] = dfcclAllGather,
                                                   [REDUCE_SCATTER] = dfcclReduceScatter,
                                                   [BROADCAST] = dfcclBroadcast,
                                                   [REDUCE] = dfcclReduce,
                                                   [ALL_GATHER_V] = dfcclAllGatherV,
                                                   [REDUCE_SCATTER_V] = dfcclReduceScatterV,
                                                   [ALL_TO_ALL] = dfcclAllToAll};
  int root = 0;
  for (int p = 0; p < c->nranks; p++)
    if (rank_at(c, p) == c->root) root = p;
  dfcclCollDesc_t d = {.kind = kinds[c->kind], .count = c->count, .dtype = c->dtype, .op = c->op, .root = root};
  *blocks = NULL;
  if (c->kind == ALL_GATHER_V || c->kind == REDUCE_SCATTER_V) { /* read during the call only */
    *blocks = malloc(2 * (size_t)c->nranks * sizeof **blocks);
    if (!*blocks) abort();
    case_blocks(c, *blocks, *blocks + c->nranks);
    d.counts = *blocks;
    d.displs = c->kind == ALL_GATHER_V && !c->packed ? *blocks + c->nranks : NULL;
  }
  return d;
}

void submit_case_with(harness* h, dfcclComm_t comm, test_case* c, dfcclCallback_t callback, void* arg) {
  size_t* blocks;
  dfcclCollDesc_t d = case_desc(c, &blocks);
  CHECK_DFCCL(dfcclSubmit(comm, &d, c->send, c->recv, callback, arg));
  free(blocks);
  (void)h;
}

void submit_cases_with(harness* h, dfcclComm_t comm, test_case* const* cs, int n, dfcclCallback_t callback, void* arg) {
  dfcclCollDesc_t* d = malloc(sizeof *d * (size_t)n);
  size_t** blocks = malloc(sizeof *blocks * (size_t)n);
  dfcclSubmission_t* runs = calloc((size_t)n, sizeof *runs);
  if (!d || !blocks || !runs) abort();
  for (int i = 0; i < n; i++) {
    d[i] = case_desc(cs[i], &blocks[i]);
    runs[i] = (dfcclSubmission_t){&d[i], cs[i]->send, cs[i]->recv, callback, arg};
  }
  CHECK_DFCCL(dfcclSubmitBatch(comm, runs, n));
  for (int i = 0; i < n; i++) free(blocks[i]);
  free(blocks), free(d), free(runs);
  (void)h;
}

void run_case(harness* h, test_case* c, harness_counter* done) {
  typedef dfcclResult_t (*run_fn)(dfcclRankCtx_t, const void*, void*, int, dfcclCallback_t, void*);
  static const run_fn run[NUM_KINDS] = {dfcclRunAllReduce,      dfcclRunAllGather, dfcclRunReduceScatter,
                                        dfcclRunBroadcast,      dfcclRunReduce,    dfcclRunAllGatherV,
                                        dfcclRunReduceScatterV, dfcclRunAllToAll};
  CHECK_DFCCL(run[c->kind](h->ctx, c->send, c->recv, c->id, harness_on_complete, done));
}
