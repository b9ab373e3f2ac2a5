/*
 * The daemon kernel: one persistent kernel per GPU, one block per channel, 512 threads a block.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "daemon_kernel.cuh"
#include "daemon_launch.h"

static __global__ void __launch_bounds__(DF_CUDA_THREADS, 1) df_daemon_kernel(const df_daemon_args* args) {
  df_daemon_kernel_body(args);
}

extern "C" cudaError_t df_cuda_launch_daemon(const df_daemon_args* device_args, int grid, cudaStream_t stream) {
  void* params[] = {(void*)&device_args};
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
