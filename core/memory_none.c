/*
 * A build without CUDA: no GPU here.  No pointer is GPU memory, dfcclMemAlloc has only the host
 * target's memory, host memory is never pinned, copies are memmove and there are no streams to
 * wait for.  The counterpart of memory_cuda.c, so that memory.c has no #ifdef.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <string.h>

#include "internal.h"

dfcclResult_t df_gpu_pointer_kind(const void* p, dfcclMemoryKind_t* kind, int* device) {
  (void)p, (void)kind, (void)device;
  return dfcclSuccess; /* host memory, as the caller set */
}

int df_gpu_device_count(void) { return 0; }

int df_gpu_default_device(int local_rank) {
  (void)local_rank;
  return -1;
}

dfcclResult_t df_gpu_alloc(int device, size_t bytes, void** ptr) {
  (void)device, (void)bytes, (void)ptr;
  return df_error(dfcclUnsupported, "dfcclMemAlloc: this DFCCL was built without CUDA");
}

dfcclResult_t df_gpu_free(void* ptr) {
  return df_error(dfcclInvalidArgument, "dfcclMemFree(%p): not memory of dfcclMemAlloc", ptr);
}

void* df_gpu_host_alloc(size_t bytes) {
  (void)bytes;
  return NULL; /* plain memory: dfcclHostAlloc falls back to it */
}

dfcclResult_t df_gpu_host_free(void* base, const void* ptr) {
  (void)base;
  return df_error(dfcclInternalError, "dfcclHostFree(%p): pinned memory in a build without CUDA", ptr);
}

dfcclResult_t df_gpu_copy(void* dst, const void* src, size_t bytes) {
  memmove(dst, src, bytes);
  return dfcclSuccess;
}

dfcclResult_t df_gpu_wait_default_streams(void) { return dfcclSuccess; }
