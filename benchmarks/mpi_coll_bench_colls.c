/*
 * mpi_allreduce_bench's collectives (see mpi_coll_bench_colls.h).
 *
 * Sizes and layouts follow dfccl_bench (benchmarks/README.md, "Sizes"), restricted to what MPI
 * defines: broadcast has one buffer, so the root's input is its output and only the other ranks'
 * outputs are checked; reduce writes on the root only.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L /* bench.h's rule */
#include "mpi_coll_bench_colls.h"

#include "bench.h" /* bench_coll.c: names, sizes, bus bandwidth and layouts, as dfccl_bench has them */

#include <stdlib.h>
#include <string.h>

_Static_assert((int)COLL_ALLREDUCE == (int)BENCH_ALLREDUCE && (int)COLL_ALLGATHER == (int)BENCH_ALLGATHER &&
                   (int)COLL_REDUCESCATTER == (int)BENCH_REDUCESCATTER && (int)COLL_BROADCAST == (int)BENCH_BROADCAST &&
                   (int)COLL_REDUCE == (int)BENCH_REDUCE && (int)COLL_ALLTOALL == (int)BENCH_ALLTOALL &&
                   (int)COLL_ALLGATHERV == (int)BENCH_ALLGATHERV && (int)COLL_COUNT == (int)BENCH_NCOLLS,
               "coll_kind is bench_coll");

static const struct {
  const char* mpi;
  const char* description;
  const char* counter; /* coll/dfccl's pvar: coll_dfccl_<entry point>_routed */
} colls[COLL_COUNT] = {
    [COLL_ALLREDUCE] = {"MPI_Allreduce", "MPI_Allreduce, float sum, out of place", "coll_dfccl_allreduce_routed"},
    [COLL_ALLGATHER] = {"MPI_Allgather",
                        "MPI_Allgather, float, out of place; count = sendcount = recvcount, size = the gathered "
                        "buffer (nranks x count floats)",
                        "coll_dfccl_allgather_routed"},
    [COLL_REDUCESCATTER] = {"MPI_Reduce_scatter_block",
                            "MPI_Reduce_scatter_block, float sum, out of place; count = recvcount, size = the "
                            "scattered buffer (nranks x count floats)",
                            "coll_dfccl_reduce_scatter_block_routed"},
    [COLL_BROADCAST] = {"MPI_Bcast",
                        "MPI_Bcast, float, one buffer (the root's input; the other ranks' outputs are checked)",
                        "coll_dfccl_bcast_routed"},
    [COLL_REDUCE] = {"MPI_Reduce", "MPI_Reduce, float sum, out of place (the root's output is checked)",
                     "coll_dfccl_reduce_routed"},
    [COLL_ALLTOALL] = {"MPI_Alltoall",
                       "MPI_Alltoall, float, out of place; count = sendcount = recvcount per pair of ranks, size = "
                       "the sent buffer (nranks x count floats)",
                       "coll_dfccl_alltoall_routed"},
    [COLL_ALLGATHERV] = {"MPI_Allgatherv",
                         "MPI_Allgatherv, float, out of place; rank r sends (r + 1) x count floats, packed in rank "
                         "order (recvcounts, displs), size = the gathered buffer (n(n+1)/2 x count floats)",
                         "coll_dfccl_allgatherv_routed"},
};

static bool valid(coll_kind c) { return (unsigned)c < COLL_COUNT; }
static bench_coll bench(coll_kind c) { return (bench_coll)c; }

const char* coll_option(coll_kind c) { return valid(c) ? bench_coll_option(bench(c)) : "?"; }
const char* coll_title(coll_kind c) { return valid(c) ? bench_coll_name(bench(c)) : "?"; }
const char* coll_mpi_name(coll_kind c) { return valid(c) ? colls[c].mpi : "?"; }
const char* coll_description(coll_kind c) { return valid(c) ? colls[c].description : "?"; }
const char* coll_routed_counter(coll_kind c) { return valid(c) ? colls[c].counter : "?"; }
bool coll_rooted(coll_kind c) { return valid(c) && bench_coll_rooted(bench(c)); }
double coll_busbw_factor(coll_kind c, int nranks) { return bench_coll_busbw_factor(bench(c), nranks); }
size_t coll_count_unit(coll_kind c, int nranks) { return bench_coll_count_unit(bench(c), nranks); }

bool coll_parse(const char* name, bool selected[COLL_COUNT]) {
  bool all = strcmp(name, "all") == 0, found = all;
  for (int c = 0; c < COLL_COUNT; c++) {
    selected[c] = all || strcmp(name, coll_option((coll_kind)c)) == 0;
    found |= selected[c];
  }
  return found;
}

/* dfccl_bench's out-of-place layout, but for MPI_Bcast's one buffer: the root's input is its
 * output, which nobody writes.  All-gather-v's blocks are dfccl_bench's too (bench_coll.c), as MPI
 * takes them: int counts and displacements (the program keeps every count within an int). */
bool coll_layout_init(coll_layout* l, coll_kind c, size_t count, int rank, int nranks, int root) {
  bench_layout b;
  bench_coll_layout(&b, bench(c), count, sizeof(float), rank, nranks, root, 0);
  bool broadcast = c == COLL_BROADCAST;
  *l = (coll_layout){.coll = c,
                     .rank = rank,
                     .nranks = nranks,
                     .root = root,
                     .count = count,
                     .inCount = b.hasInput ? b.sendCount : 0,
                     .outCount = b.hasOutput && !(broadcast && rank == root) ? b.recvCount : 0,
                     .inputInRecv = broadcast};
  if (c != COLL_ALLGATHERV) return true;
  l->counts = malloc(2u * (size_t)nranks * sizeof *l->counts);
  if (l->counts == NULL) return false;
  l->displs = l->counts + nranks;
  for (int r = 0; r < nranks; r++) {
    l->counts[r] = (int)bench_coll_block_count(bench(c), count, r);
    l->displs[r] = (int)bench_coll_block_displ(bench(c), count, r);
  }
  return true;
}

void coll_layout_fini(coll_layout* l) {
  free(l->counts);
  l->counts = l->displs = NULL;
}

/* Counts fit an int: the program refuses a -e beyond INT_MAX floats. */
int coll_call(const coll_layout* l, const void* send, void* recv, MPI_Comm comm) {
  int n = (int)l->count;
  switch (l->coll) {
    case COLL_ALLREDUCE: return MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, comm);
    case COLL_ALLGATHER: return MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, comm);
    case COLL_REDUCESCATTER: return MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, comm);
    case COLL_BROADCAST: return MPI_Bcast(recv, n, MPI_FLOAT, l->root, comm);
    case COLL_REDUCE: return MPI_Reduce(send, recv, n, MPI_FLOAT, MPI_SUM, l->root, comm);
    case COLL_ALLTOALL: return MPI_Alltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, comm);
    case COLL_ALLGATHERV:
      return MPI_Allgatherv(send, l->counts[l->rank], MPI_FLOAT, recv, l->counts, l->displs, MPI_FLOAT, comm);
    default: return MPI_ERR_ARG;
  }
}

float coll_input(int rank, size_t i) { return (float)((long)((i * 31 + (size_t)rank * 17) % 11) - 5); }

/* Element i of the sum over the ranks: at most 5 x nranks in magnitude, exact in float. */
static float sum_over_ranks(int nranks, size_t i) {
  long sum = 0;
  for (int r = 0; r < nranks; r++) sum += (long)coll_input(r, i);
  return (float)sum;
}

float coll_expected(const coll_layout* l, size_t k) {
  switch (l->coll) {
    case COLL_ALLGATHER:
    case COLL_ALLGATHERV: { /* block j is rank j's input */
      int from = bench_coll_block_of(bench(l->coll), l->count, l->nranks, k);
      return coll_input(from, k - bench_coll_block_displ(bench(l->coll), l->count, from));
    }
    case COLL_ALLTOALL: /* block j came from rank j, which sent its block for this rank */
      return coll_input((int)(k / l->count), (size_t)l->rank * l->count + k % l->count);
    case COLL_REDUCESCATTER: return sum_over_ranks(l->nranks, (size_t)l->rank * l->count + k);
    case COLL_BROADCAST: return coll_input(l->root, k);
    default: return sum_over_ranks(l->nranks, k); /* all-reduce, reduce (root) */
  }
}
