/*
 * dfccl_bench collectives: names, sizes, bus bandwidth factors and buffer layouts.
 *
 * Sizes follow nccl-tests: the size of a line is the per-rank buffer of the collective, which for
 * all-gather and reduce-scatter is the whole gathered (receive) or scattered (send) buffer of
 * nranks x count elements.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "bench.h"

static const struct {
  const char* name;
  const char* option;
  int reduces, rooted;
} colls[BENCH_NCOLLS] = {
    [BENCH_ALLREDUCE] = {"all-reduce", "allreduce", 1, 0},
    [BENCH_ALLGATHER] = {"all-gather", "allgather", 0, 0},
    [BENCH_REDUCESCATTER] = {"reduce-scatter", "reducescatter", 1, 0},
    [BENCH_BROADCAST] = {"broadcast", "broadcast", 0, 1},
    [BENCH_REDUCE] = {"reduce", "reduce", 1, 1},
    [BENCH_ALLTOALL] = {"all-to-all", "alltoall", 0, 0},
};

static int valid(bench_coll c) { return (unsigned)c < BENCH_NCOLLS; }

const char* bench_coll_name(bench_coll c) { return valid(c) ? colls[c].name : "?"; }
const char* bench_coll_option(bench_coll c) { return valid(c) ? colls[c].option : "?"; }
int bench_coll_reduces(bench_coll c) { return valid(c) && colls[c].reduces; }
int bench_coll_rooted(bench_coll c) { return valid(c) && colls[c].rooted; }
int bench_coll_in_place(bench_coll c) { return valid(c) && c != BENCH_ALLTOALL; }

/* The bytes a rank's links carry, relative to the size, for ring algorithms on n ranks. */
double bench_coll_busbw_factor(bench_coll c, int nranks) {
  double n = nranks;
  switch (c) {
    case BENCH_ALLREDUCE: return 2.0 * (n - 1.0) / n;
    case BENCH_ALLGATHER:
    case BENCH_REDUCESCATTER:
    case BENCH_ALLTOALL: return (n - 1.0) / n; /* as nccl-tests: what leaves each rank */
    default: return 1.0;
  }
}

size_t bench_coll_count_unit(bench_coll c, int nranks) {
  return c == BENCH_ALLGATHER || c == BENCH_REDUCESCATTER || c == BENCH_ALLTOALL ? (size_t)nranks : 1u;
}

/* In place as MPI and NCCL define it: all-gather sends from its own slot of recvbuff, reduce-scatter
 * receives into its own slot of sendbuff, the others use one buffer. */
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
      l->recvCount = n * count;
      if (inPlace) l->sendOffset = slot;
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
