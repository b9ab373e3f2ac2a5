/*
 * Shared declarations of dfccl_bench, the collective benchmark (see README.md).
 *
 *   bench_args.c   options
 *   bench_coll.c   the collectives: names, sizes, bus bandwidth, buffer layouts
 *   bench_data.c   data types, the check pattern, buffers on the execution target
 *   bench_dfccl.c  DFCCL: context, registration, runs waited for through their callbacks
 *   bench_nccl.c   NCCL (built with -DDFCCL_HAVE_NCCL)
 *   dfccl_bench.c  timing, output, main
 *
 * Every .c file defines _POSIX_C_SOURCE before its first #include.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_BENCH_H
#define DFCCL_BENCH_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dfccl.h"

#ifdef DFCCL_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef DFCCL_HAVE_NCCL
#ifndef DFCCL_HAVE_CUDA
#error "DFCCL_HAVE_NCCL needs DFCCL_HAVE_CUDA"
#endif
#include <nccl.h>
#endif

/* ---- errors: print with the rank and abort the whole job, so no rank hangs ---- */

extern int bench_rank; /* MPI_COMM_WORLD rank, for messages */

#if defined(__GNUC__)
#define BENCH_NORETURN __attribute__((noreturn, format(printf, 3, 4)))
#else
#define BENCH_NORETURN
#endif
void bench_die(const char* file, int line, const char* fmt, ...) BENCH_NORETURN;
#define BENCH_DIE(...) bench_die(__FILE__, __LINE__, __VA_ARGS__)

/* MPI_COMM_WORLD must have MPI_ERRORS_RETURN for CHECK_MPI to see errors (main sets it). */
const char* bench_mpi_error_string(int rc, char* buf, int len);
#define CHECK_MPI(call)                                                                                    \
  do {                                                                                                     \
    int mpi_rc_ = (call);                                                                                  \
    if (mpi_rc_ != MPI_SUCCESS) {                                                                          \
      char mpi_msg_[MPI_MAX_ERROR_STRING];                                                                 \
      BENCH_DIE("%s failed: %s", #call, bench_mpi_error_string(mpi_rc_, mpi_msg_, (int)sizeof(mpi_msg_))); \
    }                                                                                                      \
  } while (0)

#define CHECK_DFCCL(call)                                                                             \
  do {                                                                                                \
    dfcclResult_t df_rc_ = (call);                                                                    \
    if (df_rc_ != dfcclSuccess)                                                                       \
      BENCH_DIE("%s failed: %s: %s", #call, dfcclGetErrorString(df_rc_), dfcclGetLastErrorMessage()); \
  } while (0)

#ifdef DFCCL_HAVE_CUDA
#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t cu_rc_ = (call);                                                                   \
    if (cu_rc_ != cudaSuccess)                                                                     \
      BENCH_DIE("%s failed: %s: %s", #call, cudaGetErrorName(cu_rc_), cudaGetErrorString(cu_rc_)); \
  } while (0)
#endif

double bench_now_sec(void); /* CLOCK_MONOTONIC, seconds */

/* ---- collectives (bench_coll.c) ---- */

typedef enum {
  BENCH_ALLREDUCE = 0,
  BENCH_ALLGATHER,
  BENCH_REDUCESCATTER,
  BENCH_BROADCAST,
  BENCH_REDUCE,
  BENCH_ALLTOALL,
  BENCH_ALLGATHERV,
  BENCH_NCOLLS
} bench_coll;

const char* bench_coll_name(bench_coll c);   /* "all-gather" */
const char* bench_coll_option(bench_coll c); /* "allgather", as -C takes it */
int bench_coll_reduces(bench_coll c);        /* has a reduction operation */
int bench_coll_rooted(bench_coll c);         /* broadcast, reduce */
int bench_coll_in_place(bench_coll c);       /* runs in place (all-to-all does not, in DFCCL) */
/* What its table says before the column headings (how NCCL runs it, uneven blocks), or NULL. */
const char* bench_coll_note(bench_coll c);
/* busbw = algbw * factor: 2(n-1)/n, (n-1)/n or 1. */
double bench_coll_busbw_factor(bench_coll c, int nranks);
/* Elements per count: a size of `bytes` is count = bytes / (type size * this) (nranks for
 * all-gather, reduce-scatter and all-to-all, whose size is the whole gathered, scattered or
 * exchanged buffer; n(n+1)/2 for all-gather-v, whose blocks are 1, 2, ..., n counts; else 1). */
size_t bench_coll_count_unit(bench_coll c, int nranks);

/* The blocks of the gathered buffer of all-gather and all-gather-v, in elements: rank r contributes
 * count elements at r x count (all-gather), or (r + 1) x count elements packed in rank order, at
 * r(r+1)/2 x count (all-gather-v: uneven, so that it is a v collective; the largest block is n
 * times the smallest).  The other collectives have no blocks: their block is count at 0. */
size_t bench_coll_block_count(bench_coll c, size_t count, int rank);
size_t bench_coll_block_displ(bench_coll c, size_t count, int rank);
/* The rank whose block holds element k of the gathered buffer of nranks blocks. */
int bench_coll_block_of(bench_coll c, size_t count, int nranks, size_t k);

/* Where one rank's run reads and writes.  sendbuff lies in the send buffer, or in the receive
 * buffer when in place; recvbuff lies in the receive buffer.  Offsets and spans in elements. */
typedef struct {
  bench_coll coll;
  size_t count; /* the count passed to DFCCL and NCCL; all-gather-v: the unit of its blocks */
  size_t typeSize;
  int inPlace;
  size_t sendOffset, sendCount; /* sendbuff and the elements read from it */
  size_t recvOffset, recvCount; /* recvbuff and the elements written to it */
  int hasInput;                 /* 0 on broadcast's non-roots: sendbuff is not read */
  int hasOutput;                /* 0 on reduce's non-roots: recvbuff is not written */
} bench_layout;

void bench_coll_layout(bench_layout* l, bench_coll c, size_t count, size_t typeSize, int rank, int nranks, int root,
                       int inPlace);

/* ---- options (bench_args.c) ---- */

typedef enum { BENCH_TARGET_CUDA, BENCH_TARGET_HOST } bench_target;

typedef struct {
  size_t minBytes, maxBytes;
  double factor;
  int iters, warmup;
  int check;
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  bench_target target;
  int runNccl;
  int printStats;
  double timeoutSec;       /* give up on a DFCCL run after this long */
  int colls[BENCH_NCOLLS]; /* colls[c]: run collective c */
  int root;                /* world rank: root of broadcast and reduce */
  int viaComm;             /* -A comm: DFCCL through a communicator and descriptors, not registrations */
  int takeCompletions;     /* -P 1: the waiting thread takes completions itself (dfcclProgress)    */
} bench_opts;

/* 0: run; 1: help was printed, exit 0.  A bad option ends the program with exit status 2 (rank 0
 * says why; test/common/options.h). */
int bench_parse_args(int argc, char** argv, int nranks, bench_opts* opts);

const char* bench_type_name(dfcclDataType_t dtype);
size_t bench_type_size(dfcclDataType_t dtype);
const char* bench_op_name(dfcclRedOp_t op);
const char* bench_target_name(bench_target target);

/* ---- check pattern (bench_data.c) ----
 * Input element i (of its send buffer) of rank r is a small integer-valued number, exactly
 * representable in every type, chosen so that every partial result of a reduction over all ranks
 * is exact too; the expected reduction (computed in float64) is periodic in i.  Collectives without
 * a reduction use the sum pattern with one term.  The expected output element k of a rank:
 *   all-reduce, reduce (root)  reduction of element k
 *   reduce-scatter             reduction of element rank*count + k
 *   all-gather(-v)             input element k - displ(j) of the rank j whose block holds k
 *   all-to-all                 input element rank*count + k % count of rank k / count
 *   broadcast                  input element k of the root */

typedef struct {
  bench_coll coll;
  dfcclDataType_t dtype;
  dfcclRedOp_t op; /* sum for collectives without a reduction */
  int rank, nranks, root;
  int modulus, offset; /* sum/max/min: ((rank+1)(j+1) + 7j) mod modulus - offset, j = i mod modulus */
  size_t period;
  double* expected; /* reductions: expected[i % period]; NULL otherwise */
} bench_pattern;

void bench_pattern_init(bench_pattern* p, bench_coll coll, dfcclDataType_t dtype, dfcclRedOp_t op, int rank, int nranks,
                        int root);
void bench_pattern_fini(bench_pattern* p);
void bench_pattern_fill(const bench_pattern* p, void* host, size_t count);
/* Wrong elements among the `count` output elements in host (`collCount`: the layout's count). */
size_t bench_pattern_count_wrong(const bench_pattern* p, const void* host, size_t count, size_t collCount);

/* ---- buffers on the execution target (bench_data.c) ---- */

typedef struct {
  bench_target target;
  size_t bytes;
  void* send;    /* on the target */
  void* recv;    /* on the target */
  void* staging; /* host copy for fill and check (cuda target only) */
#ifdef DFCCL_HAVE_CUDA
  cudaStream_t stream; /* copies and NCCL */
#endif
} bench_buffers;

void bench_buffers_alloc(bench_buffers* b, bench_target target, size_t bytes);
void bench_buffers_free(bench_buffers* b);
/* sendbuff and recvbuff of the layout. */
void* bench_buffers_send(const bench_buffers* b, const bench_layout* l);
void* bench_buffers_recv(const bench_buffers* b, const bench_layout* l);
/* Resets the output (all bytes 0xff), then fills the input when the rank has one. */
void bench_buffers_prepare(bench_buffers* b, const bench_pattern* p, const bench_layout* l);
/* Wrong elements of the output; 0 where the rank has none. */
size_t bench_buffers_count_wrong(bench_buffers* b, const bench_pattern* p, const bench_layout* l);

/* ---- DFCCL (bench_dfccl.c) ---- */

typedef struct bench_dfccl bench_dfccl;
bench_dfccl* bench_dfccl_init(const bench_opts* o, int device);
void bench_dfccl_register(bench_dfccl* d, bench_coll coll, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op,
                          int root, int collId);
/* `times` runs of collId, each submitted after the previous one's completion callback. */
void bench_dfccl_run(bench_dfccl* d, bench_coll coll, int collId, const void* send, void* recv, int times);
dfcclRankCtx_t bench_dfccl_ctx(const bench_dfccl* d);
void bench_dfccl_fini(bench_dfccl* d);

/* ---- NCCL (bench_nccl.c) ---- */

#ifdef DFCCL_HAVE_NCCL
typedef struct bench_nccl bench_nccl;
bench_nccl* bench_nccl_init(int rank, int nranks, cudaStream_t stream);
/* `times` runs back to back on the stream, then one stream synchronization. */
void bench_nccl_run(bench_nccl* n, bench_coll coll, const void* send, void* recv, size_t count, dfcclDataType_t dtype,
                    dfcclRedOp_t op, int root, int times);
void bench_nccl_fini(bench_nccl* n);
void bench_nccl_version(char* buf, size_t len);
#endif

#endif /* DFCCL_BENCH_H */
