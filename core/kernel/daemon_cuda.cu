/*
 * The daemon kernel: one persistent kernel per GPU, one block per channel, 512 threads a block.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "daemon_kernel.cuh"
#include "daemon_launch.h"

/* The arguments are a kernel parameter, not a struct in device memory: the daemon reads them all the
 * time (every table is reached through them), and a load of global memory after an acquire -- which
 * a daemon block makes at every look at a peer or at the host -- misses the SM's L1, which the
 * acquire invalidated, and waits for L2.  A parameter is read through the constant cache, which no
 * acquire touches; __grid_constant__ lets the daemon take its address without a per-thread copy. */
static_assert(sizeof(df_daemon_args) <= 4096, "the daemon's arguments fit a kernel's parameters");
static_assert(sizeof(df_coll_static) == 128, "a static context is two 64-byte lines");

static __global__ void __launch_bounds__(DF_CUDA_THREADS, 1)
    df_daemon_kernel(const __grid_constant__ df_daemon_args args) {
  df_daemon_kernel_body(&args);
}

extern "C" cudaError_t df_cuda_launch_daemon(const df_daemon_args* args, int grid, cudaStream_t stream) {
  void* params[] = {(void*)args};
  return cudaLaunchKernel((const void*)df_daemon_kernel, dim3((unsigned)grid), dim3(DF_CUDA_THREADS), params, 0,
                          stream);
}

extern "C" size_t df_cuda_daemon_shared_bytes(void) { return sizeof(df_block_shared); }

/* Calibration: how long one poll of a connector counter takes on this GPU (the daemon's spin
 * thresholds are counted in polls, the wanted waits are times). */
static __global__ void df_poll_cost_kernel(const uint64_t* word, uint64_t polls, uint64_t* result) {
  uint64_t sum = 0, start = df_time_ns();
  for (uint64_t i = 0; i < polls; i++) sum += df_load_acquire_u64(word);
  uint64_t elapsed = df_time_ns() - start;
  result[0] = elapsed;
  result[1] = sum; /* keeps the loads */
}

extern "C" cudaError_t df_cuda_measure_poll(const uint64_t* word, uint64_t polls, uint64_t* result,
                                            cudaStream_t stream) {
  df_poll_cost_kernel<<<1, 1, 0, stream>>>(word, polls, result);
  return cudaGetLastError();
}
