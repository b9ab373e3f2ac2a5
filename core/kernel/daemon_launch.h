/*
 * Entry points of the daemon for the host-side runtime: the CUDA kernel launch and the host
 * execution target's block threads.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_DAEMON_LAUNCH_H
#define DFCCL_KERNEL_DAEMON_LAUNCH_H

#include "daemon.h"

#define DF_CUDA_THREADS 512

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DFCCL_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
/* args: the daemon's arguments in host memory, passed by value. */
cudaError_t df_cuda_launch_daemon(const df_daemon_args* args, int grid, cudaStream_t stream);
size_t df_cuda_daemon_shared_bytes(void);
/* result[0] = ns taken by `polls` acquire loads of *word (one thread). */
cudaError_t df_cuda_measure_poll(const uint64_t* word, uint64_t polls, uint64_t* result, cudaStream_t stream);
#endif

/* Runs daemon block `block` of `nblocks` on the calling thread until it quits. */
void df_host_daemon_block(const df_daemon_args* args, int block, int nblocks);
size_t df_host_daemon_shared_bytes(void);

#ifdef __cplusplus
}
#endif
#endif /* DFCCL_KERNEL_DAEMON_LAUNCH_H */
