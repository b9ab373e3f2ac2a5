/*
 * Shared pieces of DFCCL's MPI test programs: start-up, buffers on the context's target, waiting
 * for callbacks, and a watchdog that turns a hang into a clear failure.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_HARNESS_H
#define DFCCL_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "dfccl.h"
#include "options.h"

#define HARNESS_WATCHDOG_EXIT 42

typedef struct {
  dfcclRankCtx_t ctx;
  dfcclInitArgs_t init;
  int rank, nranks;
  bool gpu; /* buffers are device memory */
  const char* program;
} harness;

/* MPI_Init, bootstrap, dfcclInit on the target DFCCL_TARGET names (GPU: local rank % devices).
 * Prints which target runs (rank 0).  Exits on failure. */
void harness_init(harness* h, int* argc, char*** argv, const char* program);
/* The environment harness_init reads, after MPI_Init: whether DFCCL_TARGET asks for the GPU
 * (unset, empty or "cuda"; "host" for the host target), and the watchdog's TEST_WATCHDOG_S.  A bad
 * value is refused before anything touches CUDA: rank 0 names it, every rank exits with 2. */
bool harness_environment(const char* program);
/* The program's options (options.h), read after harness_init: rank 0 reports a bad one, and every
 * rank tears the harness down and exits with 2. */
options harness_options(harness* h, const char* usage, int argc, char** argv, const char* spec);
/* dfcclDestroy, bootstrap fini, MPI_Finalize.  Returns the exit status to use: `failures`
 * summed over ranks == 0 ? 0 : 1. */
int harness_finish(harness* h, long failures);

/* Exits the process with HARNESS_WATCHDOG_EXIT if harness_progress() is not called for `seconds`
 * (TEST_WATCHDOG_S overrides, once harness_environment has read it). */
void harness_watchdog_start(double seconds, const char* what);
void harness_progress(void);
/* Seconds on the monotonic clock: for timing what a test or benchmark does. */
double harness_now_s(void);

/* Buffers on the target: device memory for the GPU, host memory otherwise. */
void* harness_alloc(const harness* h, size_t bytes);
void harness_free(const harness* h, void* p);
void harness_upload(const harness* h, void* dst, const void* src, size_t bytes);
void harness_download(const harness* h, void* dst, const void* src, size_t bytes);
/* The GPU's used memory in MiB (all processes'; cudaMemGetInfo), 0 on the host target. */
double harness_gpu_used_mib(const harness* h);

/* Completion counting: pass &counter as the callback argument of harness_on_complete. */
typedef struct {
  atomic_int done;
  atomic_int errors;
} harness_counter;
void harness_on_complete(int collId, dfcclResult_t status, void* arg);
/* Waits until counter->done >= target, ticking the watchdog while completions arrive. */
void harness_wait(harness_counter* counter, int target);

/* Aborts the job with a message if r is not dfcclSuccess. */
void harness_check(dfcclResult_t r, const char* what, int line);
#define CHECK_DFCCL(call) harness_check((call), #call, __LINE__)

/* Prints this rank's daemon counters and returns them summed over all ranks (on rank 0). */
dfcclStats_t harness_report_stats(const harness* h);

/* Deterministic randomness for the disordered programs. */
uint64_t harness_random(uint64_t* state);
void harness_permutation(int* order, int n, uint64_t seed);
/* The random-order programs' order of n collectives in an iteration: a permutation of seed, iteration
 * and rank, a new one every iteration.  Pass `rank` 0 on every rank for one order everywhere (the
 * control without disorder). */
void harness_iteration_order(int* order, int n, uint64_t seed, int iteration, int rank);

/* The disordered programs' inputs: value(rank, iteration, collective, element), small integers.
 * Checks a sum all-reduce result (int32, or float: its sums of small integers are exact too);
 * returns the wrong elements (the first few are printed). */
typedef int32_t (*harness_value_fn)(int rank, int iteration, int coll, size_t i);
long harness_check_sum(const harness* h, harness_value_fn value, int iteration, int coll, const int32_t* got,
                       size_t count);
long harness_check_sum_float(const harness* h, harness_value_fn value, int iteration, int coll, const float* got,
                             size_t count);
/* The random-order programs' value: (rank + 1) x a number in [1, 101] that depends on the iteration,
 * the collective and the element, so that sums over up to 500 ranks are exact in int32 and float. */
int32_t harness_order_value(int rank, int iteration, int coll, size_t i);
/* Rank 0 prints "iteration k/n done" every `every` iterations and at the end. */
void harness_iteration_done(const harness* h, int iteration, int iterations, int every);

#endif /* DFCCL_TEST_HARNESS_H */
