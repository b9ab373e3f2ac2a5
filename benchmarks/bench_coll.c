/*
 * dfccl_bench collectives: names, sizes, bus bandwidth factors and buffer layouts.
 *
 * Sizes follow nccl-tests: the size of a line is the per-rank buffer of the collective, which for
 * all-gather and reduce-scatter is the whole gathered (receive) or scattered (send) buffer of
 * nranks x count elements, for all-to-all the sent (and received) buffer, and for all-gather-v the
 * whole gathered buffer of its uneven blocks, n(n+1)/2 x count elements.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "bench.h"

/* NCCL has neither all-to-all nor all-gather-v: the notes say what stands in for them (what
 * nccl-tests and frameworks run), so that a reader of the table knows what NCCL's columns are. */
static const struct {
  const char* name;
  const char* option;
  int reduces, rooted;
  const char* note;
} colls[BENCH_NCOLLS] = {
    [BENCH_ALLREDUCE] = {"all-reduce", "allreduce", 1, 0, NULL},
    [BENCH_ALLGATHER] = {"all-gather", "allgather", 0, 0, NULL},
    [BENCH_REDUCESCATTER] = {"reduce-scatter", "reducescatter", 1, 0, NULL},
    [BENCH_BROADCAST] = {"broadcast", "broadcast", 0, 1, NULL},
    [BENCH_REDUCE] = {"reduce", "reduce", 1, 1, NULL},
    [BENCH_ALLTOALL] = {"all-to-all", "alltoall", 0, 0,
                        "NCCL runs it as a group of one ncclSend and one ncclRecv per peer; no in-place column "
                        "(DFCCL's does not run in place)"},
    [BENCH_ALLGATHERV] = {"all-gather-v", "allgatherv", 0, 0,
                          "rank r sends (r + 1) x count elements, packed in rank order (size: the gathered "
                          "buffer); NCCL runs it as a group of one ncclBroadcast per rank"},
};

static int valid(bench_coll c) { return (unsigned)c < BENCH_NCOLLS; }

const char* bench_coll_name(bench_coll c) { return valid(c) ? colls[c].name : "?"; }
const char* bench_coll_option(bench_coll c) { return valid(c) ? colls[c].option : "?"; }
int bench_coll_reduces(bench_coll c) { return valid(c) && colls[c].reduces; }
int bench_coll_rooted(bench_coll c) { return valid(c) && colls[c].rooted; }
int bench_coll_in_place(bench_coll c) { return valid(c) && c != BENCH_ALLTOALL; }
const char* bench_coll_note(bench_coll c) { return valid(c) ? colls[c].note : NULL; }

/* The bytes a rank's links carry, relative to the size, for ring algorithms on n ranks. */
double bench_coll_busbw_factor(bench_coll c, int nranks) {
  double n = nranks;
  switch (c) {
    case BENCH_ALLREDUCE: return 2.0 * (n - 1.0) / n;
    case BENCH_ALLGATHER:
    case BENCH_ALLGATHERV: /* of the size, which is the real gathered buffer: its blocks' sum */
    case BENCH_REDUCESCATTER:
    case BENCH_ALLTOALL: return (n - 1.0) / n; /* as nccl-tests: what leaves each rank */
    default: return 1.0;
  }
}

size_t bench_coll_count_unit(bench_coll c, int nranks) {
  size_t n = (size_t)nranks;
  switch (c) {
    case BENCH_ALLGATHER:
    case BENCH_REDUCESCATTER:
    case BENCH_ALLTOALL: return n;
    case BENCH_ALLGATHERV: return n * (n + 1u) / 2u; /* 1 + 2 + ... + n */
    default: return 1u;
  }
}

size_t bench_coll_block_count(bench_coll c, size_t count, int rank) {
  return c == BENCH_ALLGATHERV ? ((size_t)rank + 1u) * count : count;
}

size_t bench_coll_block_displ(bench_coll c, size_t count, int rank) {
  size_t r = (size_t)rank;
  switch (c) {
    case BENCH_ALLGATHER: return r * count;
    case BENCH_ALLGATHERV: return r * (r + 1u) / 2u * count; /* after blocks of 1, 2, ..., r counts */
    default: return 0;
  }
}

/* All-gather-v: a walk over the ranks (nranks is small; a check asks once per output element). */
int bench_coll_block_of(bench_coll c, size_t count, int nranks, size_t k) {
  if (c != BENCH_ALLGATHERV) return count > 0 && k / count < (size_t)nranks ? (int)(k / count) : nranks - 1;
  int r = 0;
  while (r + 1 < nranks && bench_coll_block_displ(c, count, r + 1) <= k) r++;
  return r;
}

/* In place as MPI and NCCL define it: all-gather(-v) sends from its own block of recvbuff,
 * reduce-scatter receives into its own slot of sendbuff, the others use one buffer. */
void bench_coll_layout(bench_layout* l, bench_coll c, size_t count, size_t typeSize, int rank, int nranks, int root,
                       int inPlace) {
  size_t n = (size_t)nranks, slot = (size_t)rank * count;
  memset(l, 0, sizeof(*l));
  l->coll = c;
  l->count = count;
  l->typeSize = typeSize;
  l->inPlace = inPlace;
  l->sendCount = l->recvCount = count;
  l->hasInput = l->hasOutput = 1;
  switch (c) {
    case BENCH_ALLGATHER:
    case BENCH_ALLGATHERV:
      l->sendCount = bench_coll_block_count(c, count, rank);
      l->recvCount = bench_coll_count_unit(c, nranks) * count;
      if (inPlace) l->sendOffset = bench_coll_block_displ(c, count, rank);
      break;
    case BENCH_REDUCESCATTER:
      l->sendCount = n * count;
      if (inPlace) l->recvOffset = slot;
      break;
    case BENCH_ALLTOALL: l->sendCount = l->recvCount = n * count; break; /* never in place */
    case BENCH_BROADCAST: l->hasInput = rank == root; break;
    case BENCH_REDUCE: l->hasOutput = rank == root; break;
    default: break;
  }
}
