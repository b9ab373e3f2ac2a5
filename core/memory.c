/*
 * Where a buffer lives, and copies between host and device memory: what glue code (the Open MPI
 * component) needs to route a call by its buffers and to stage device buffers through host memory.
 * Without CUDA every pointer is host memory and copies are memcpy.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <string.h>

#include "internal.h"

#ifdef DFCCL_HAVE_CUDA
#include <cuda_runtime.h>

dfcclResult_t dfcclPointerGetKind(const void* p, dfcclMemoryKind_t* kind, int* device) {
  if (!kind || !device) return df_error(dfcclInvalidArgument, "dfcclPointerGetKind: NULL %s", kind ? "device" : "kind");
  *kind = dfcclMemoryHost;
  *device = -1;
  if (p == NULL) return dfcclSuccess;
  struct cudaPointerAttributes attr;
  cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) {
    cudaGetLastError(); /* not sticky: clear it for the caller's next CUDA call */
    /* No driver or no device: nothing can be device memory here. */
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInvalidValue)
      return dfcclSuccess;
    return df_error(dfcclCudaError, "cudaPointerGetAttributes(%p): %s", p, cudaGetErrorString(err));
  }
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) {
    *kind = attr.type == cudaMemoryTypeDevice ? dfcclMemoryDevice : dfcclMemoryManaged;
    *device = attr.device;
  }
  return dfcclSuccess; /* cudaMemoryTypeHost (pinned) and unregistered memory are host memory */
}

int dfcclDeviceCount(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0; /* no driver, no device */
  }
  return n;
}

dfcclResult_t dfcclCopy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return dfcclSuccess;
  if (!dst || !src) return df_error(dfcclInvalidArgument, "dfcclCopy: NULL %s", dst ? "src" : "dst");
  cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    memmove(dst, src, bytes); /* no GPU here: both are host memory */
    return dfcclSuccess;
  }
  if (err != cudaSuccess)
    return df_error(dfcclCudaError, "cudaMemcpy(%p <- %p, %zu bytes): %s", dst, src, bytes, cudaGetErrorString(err));
  return dfcclSuccess;
}

#else

int dfcclDeviceCount(void) { return 0; }

dfcclResult_t dfcclPointerGetKind(const void* p, dfcclMemoryKind_t* kind, int* device) {
  (void)p;
  if (!kind || !device) return df_error(dfcclInvalidArgument, "dfcclPointerGetKind: NULL %s", kind ? "device" : "kind");
  *kind = dfcclMemoryHost;
  *device = -1;
  return dfcclSuccess;
}

dfcclResult_t dfcclCopy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return dfcclSuccess;
  if (!dst || !src) return df_error(dfcclInvalidArgument, "dfcclCopy: NULL %s", dst ? "src" : "dst");
  memmove(dst, src, bytes);
  return dfcclSuccess;
}

#endif
