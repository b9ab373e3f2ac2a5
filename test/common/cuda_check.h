/*
 * CHECK_CUDA for the standalone CUDA programs (GPU unit tests, microbenchmarks; C or CUDA C++): print
 * where and why, exit with status 2.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_CUDA_CHECK_H
#define DFCCL_TEST_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#define CHECK_CUDA(call)                                                                                 \
  do {                                                                                                   \
    cudaError_t status_ = (call);                                                                        \
    if (status_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_)); \
      exit(2);                                                                                           \
    }                                                                                                    \
  } while (0)

#endif /* DFCCL_TEST_CUDA_CHECK_H */
