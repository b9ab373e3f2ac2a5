/*
 * Shared declarations of dfccl_bench, the all-reduce benchmark (see README.md).
 *
 *   bench_args.c   options
 *   bench_data.c   data types, the check pattern, buffers on the execution target
 *   bench_nccl.c   NCCL (built with -DDFCCL_HAVE_NCCL)
 *   dfccl_bench.c  DFCCL, timing, output, main
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
#define CHECK_MPI(call)                                                                    \
  do {                                                                                     \
    int mpi_rc_ = (call);                                                                  \
    if (mpi_rc_ != MPI_SUCCESS) {                                                          \
      char mpi_msg_[MPI_MAX_ERROR_STRING];                                                 \
      BENCH_DIE("%s failed: %s", #call,                                                    \
                bench_mpi_error_string(mpi_rc_, mpi_msg_, (int)sizeof(mpi_msg_)));         \
    }                                                                                      \
  } while (0)

#define CHECK_DFCCL(call)                                                                  \
  do {                                                                                     \
    dfcclResult_t df_rc_ = (call);                                                         \
    if (df_rc_ != dfcclSuccess)                                                            \
      BENCH_DIE("%s failed: %s: %s", #call, dfcclGetErrorString(df_rc_),                   \
                dfcclGetLastErrorMessage());                                               \
  } while (0)

#ifdef DFCCL_HAVE_CUDA
#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t cu_rc_ = (call);                                                           \
    if (cu_rc_ != cudaSuccess)                                                             \
      BENCH_DIE("%s failed: %s: %s", #call, cudaGetErrorName(cu_rc_),                      \
                cudaGetErrorString(cu_rc_));                                               \
  } while (0)
#endif

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
  double timeoutSec; /* give up on a DFCCL run after this long */
} bench_opts;

/* 0: run; 1: help was printed, exit 0; 2: bad options (rank 0 printed why), exit 1. */
int bench_parse_args(int argc, char** argv, bench_opts* opts);

const char* bench_type_name(dfcclDataType_t dtype);
size_t bench_type_size(dfcclDataType_t dtype);
const char* bench_op_name(dfcclRedOp_t op);
const char* bench_target_name(bench_target target);

/* ---- check pattern (bench_data.c) ----
 * Input element i of rank r is a small integer-valued number, exactly representable in every type,
 * chosen so that every partial result of the reduction over all ranks is exact too; the expected
 * result (computed in float64) is periodic in i. */

typedef struct {
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  int rank, nranks;
  int modulus, offset;   /* sum/max/min: ((rank+1)(j+1) + 7j) mod modulus - offset, j = i mod modulus */
  size_t period;
  double* expected;      /* expected[i % period] */
} bench_pattern;

void bench_pattern_init(bench_pattern* p, dfcclDataType_t dtype, dfcclRedOp_t op, int rank, int nranks);
void bench_pattern_fini(bench_pattern* p);
void bench_pattern_fill(const bench_pattern* p, void* host, size_t count);
size_t bench_pattern_count_wrong(const bench_pattern* p, const void* host, size_t count);

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
/* Fills the input of `count` elements (recv when in place, else send) and, out of place, resets recv. */
void bench_buffers_prepare(bench_buffers* b, const bench_pattern* p, size_t count, int inPlace);
/* Wrong elements among the first `count` of recv. */
size_t bench_buffers_count_wrong(bench_buffers* b, const bench_pattern* p, size_t count);

/* ---- NCCL (bench_nccl.c) ---- */

#ifdef DFCCL_HAVE_NCCL
typedef struct bench_nccl bench_nccl;
bench_nccl* bench_nccl_init(int rank, int nranks, cudaStream_t stream);
void bench_nccl_allreduce(bench_nccl* n, const void* send, void* recv, size_t count, dfcclDataType_t dtype,
                          dfcclRedOp_t op, int times);
void bench_nccl_fini(bench_nccl* n);
void bench_nccl_version(char* buf, size_t len);
#endif

#endif /* DFCCL_BENCH_H */
