/*
 * The daemon kernel's body for one block: this block's coordinates, then the scheduler.  One
 * definition for the kernel of daemon_cuda.cu and for the copy that benchmarks/overheads.cu
 * compiles to read the kernel's attributes (the real kernel is static in the library).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_DAEMON_KERNEL_CUH
#define DFCCL_KERNEL_DAEMON_KERNEL_CUH

#include "scheduler.h"

static __device__ __forceinline__ void df_daemon_kernel_body(const df_daemon_args* args) {
  __shared__ df_block_shared shared;
  df_block blk;
  blk.tid = (int)threadIdx.x;
  blk.nthreads = (int)blockDim.x;
  blk.bid = (int)blockIdx.x;
  blk.nblocks = (int)gridDim.x;
  df_daemon_block_main(args, &blk, &shared);
}

#endif /* DFCCL_KERNEL_DAEMON_KERNEL_CUH */
