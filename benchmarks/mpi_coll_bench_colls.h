/*
 * mpi_allreduce_bench's collectives: the seven MPI collectives of dfccl_bench that coll/dfccl routes
 * to DFCCL, each with its names, its size and bus bandwidth conventions (dfccl_bench's, from
 * bench_coll.c, so that rows of the two programs line up by size), where one rank's call reads and
 * writes, the MPI call itself and the exact check pattern.  No CUDA here: mpi_allreduce_bench.c
 * moves the data; these functions only say how much of it and where.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_MPI_COLL_BENCH_COLLS_H
#define DFCCL_MPI_COLL_BENCH_COLLS_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

/* dfccl_bench's collectives (bench_coll), without its header: this program is plain MPI. */
typedef enum {
  COLL_ALLREDUCE,
  COLL_ALLGATHER,
  COLL_REDUCESCATTER,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_ALLTOALL,
  COLL_ALLGATHERV,
  COLL_COUNT
} coll_kind;

/* The names -C takes, in table order. */
#define COLL_OPTION_NAMES "allreduce allgather reducescatter broadcast reduce alltoall allgatherv"

const char* coll_option(coll_kind c);         /* "allgather", as -C names it */
const char* coll_title(coll_kind c);          /* "all-gather", dfccl_bench's table title */
const char* coll_mpi_name(coll_kind c);       /* "MPI_Allgather" */
const char* coll_description(coll_kind c);    /* the line above its table */
const char* coll_routed_counter(coll_kind c); /* "coll_dfccl_allgather_routed" (MPI_T) */
bool coll_rooted(coll_kind c);                /* broadcast, reduce */

/* -C's value: one collective or "all" sets selected[]; false for anything else. */
bool coll_parse(const char* name, bool selected[COLL_COUNT]);

/* busbw = algbw * factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather(-v), reduce-scatter and
 * all-to-all, 1 for broadcast and reduce (dfccl_bench's factors). */
double coll_busbw_factor(coll_kind c, int nranks);

/* Floats per count: a size of `bytes` is count = bytes / (sizeof(float) * this), nranks for
 * all-gather, reduce-scatter and all-to-all (whose size is the whole gathered, scattered or sent
 * buffer), n(n+1)/2 for all-gather-v (rank r's block is (r + 1) x count), else 1. */
size_t coll_count_unit(coll_kind c, int nranks);

/* What one rank's call reads and writes.  The input is the start of the send buffer, except for
 * broadcast, whose one buffer (the receive buffer) holds the root's input; the output is the start
 * of the receive buffer. */
typedef struct {
  coll_kind coll;
  int rank, nranks, root;
  size_t count;     /* the count passed to MPI (all-gather: per rank; reduce-scatter: recvcount;
                       all-to-all: per pair; all-gather-v: the unit of its blocks)               */
  size_t inCount;   /* floats the call reads on this rank; 0: none (broadcast's non-roots)       */
  size_t outCount;  /* floats the call writes on this rank; 0: none (reduce's non-roots,
                       broadcast's root)                                                         */
  bool inputInRecv; /* broadcast: the input lies in the receive buffer                           */
  /* All-gather-v: MPI's recvcounts and displs (packed in rank order); NULL for the others. */
  int *counts, *displs;
} coll_layout;

/* false when there is no memory for all-gather-v's arrays. */
bool coll_layout_init(coll_layout* l, coll_kind c, size_t count, int rank, int nranks, int root);
void coll_layout_fini(coll_layout* l);

/* The MPI call, float (sum for the reductions), on `send` and `recv` (device or host memory);
 * broadcast passes only `recv`.  MPI's return code. */
int coll_call(const coll_layout* l, const void* send, void* recv, MPI_Comm comm);

/* Input element i of `rank`: a small integer, so that every sum over the ranks is exact in float. */
float coll_input(int rank, size_t i);

/* The expected output element k (k < l->outCount) of the rank. */
float coll_expected(const coll_layout* l, size_t k);

#endif /* DFCCL_MPI_COLL_BENCH_COLLS_H */
