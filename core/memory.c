/*
 * Where a buffer lives, memory DFCCL's runs take, copies between host and device memory, and the
 * order of DFCCL's accesses after the caller's CUDA work: what glue code (the Open MPI component)
 * needs to route a call by its buffers and to stage buffers into the right memory, and what every
 * run does first.  Here: the arguments' checks, the host target's device memory (host_memory.c)
 * and dfcclHostAlloc's blocks (kept for reuse by host_blocks.c); what CUDA says and does is behind
 * df_gpu_* (memory_cuda.c), which a build without CUDA answers with "no GPU here"
 * (memory_none.c): every pointer is host memory, copies are memmove and there is nothing to wait
 * for.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Each function asks the host target's device memory first, then the GPU. */

int dfcclDeviceCount(void) { return df_gpu_device_count(); }
int dfcclDefaultDevice(int localRank) { return df_gpu_default_device(localRank); }

dfcclResult_t dfcclPointerGetKind(const void* p, dfcclMemoryKind_t* kind, int* device) {
  if (!kind || !device) return df_error(dfcclInvalidArgument, "dfcclPointerGetKind: NULL %s", kind ? "device" : "kind");
  *kind = dfcclMemoryHost;
  *device = -1;
  if (p == NULL) return dfcclSuccess;
  if (df_host_memory_contains(p)) {
    *kind = dfcclMemoryDevice;
    *device = DFCCL_HOST_DEVICE;
    return dfcclSuccess;
  }
  return df_gpu_pointer_kind(p, kind, device);
}

dfcclResult_t dfcclMemAlloc(dfcclTarget_t target, int device, size_t bytes, void** ptr) {
  if (!ptr) return df_error(dfcclInvalidArgument, "dfcclMemAlloc: ptr is NULL");
  *ptr = NULL;
  DF_CHECK(df_config_target(target, &target));
  if (target == dfcclTargetHost) return df_host_memory_alloc(bytes, ptr);
  return df_gpu_alloc(device, bytes, ptr);
}

dfcclResult_t dfcclMemFree(void* ptr) {
  if (ptr == NULL || df_host_memory_free(ptr)) return dfcclSuccess;
  return df_gpu_free(ptr);
}

/* A dfcclHostAlloc block starts with a header that says how it was allocated, and how large it is
 * (host_blocks.c keeps blocks by size): DF_HOST_BLOCK_ALIGN bytes, so that the memory after it
 * keeps that alignment. */
enum { DF_HOST_BLOCK_ALIGN = 64 };
typedef struct {
  uint32_t magic;
  bool pinned;
  size_t bytes; /* asked for */
} df_host_block;
#define DF_HOST_BLOCK_MAGIC 0xdfcc1b0cu

dfcclResult_t dfcclHostAlloc(size_t bytes, void** ptr) {
  if (!ptr) return df_error(dfcclInvalidArgument, "dfcclHostAlloc: ptr is NULL");
  *ptr = NULL;
  if (bytes > SIZE_MAX - DF_HOST_BLOCK_ALIGN)
    return df_error(dfcclInvalidArgument, "dfcclHostAlloc: %zu bytes is too large", bytes);
  size_t total = bytes + DF_HOST_BLOCK_ALIGN;
  void* base = df_gpu_host_alloc(total);
  bool pinned = base != NULL;
  if (base == NULL)
    base = aligned_alloc(DF_HOST_BLOCK_ALIGN,
                         (total + DF_HOST_BLOCK_ALIGN - 1) / DF_HOST_BLOCK_ALIGN * DF_HOST_BLOCK_ALIGN);
  if (base == NULL) return df_error(dfcclOutOfResources, "dfcclHostAlloc: out of host memory for %zu bytes", bytes);
  df_host_block* header = base;
  header->magic = DF_HOST_BLOCK_MAGIC;
  header->pinned = pinned;
  header->bytes = bytes;
  *ptr = (char*)base + DF_HOST_BLOCK_ALIGN;
  return dfcclSuccess;
}

/* The header of a dfcclHostAlloc block, or NULL (said, naming the caller). */
static df_host_block* host_block_of(void* ptr, const char* caller) {
  df_host_block* header = (df_host_block*)((char*)ptr - DF_HOST_BLOCK_ALIGN);
  if (header->magic == DF_HOST_BLOCK_MAGIC) return header;
  df_error(dfcclInvalidArgument, "%s(%p): not memory of dfcclHostAlloc", caller, ptr);
  return NULL;
}

dfcclResult_t df_host_alloc_size(void* ptr, size_t* bytes, const char* caller) {
  df_host_block* header = host_block_of(ptr, caller);
  if (header == NULL) return dfcclInvalidArgument;
  *bytes = header->bytes;
  return dfcclSuccess;
}

dfcclResult_t dfcclHostFree(void* ptr) {
  if (ptr == NULL) return dfcclSuccess;
  df_host_block* header = host_block_of(ptr, "dfcclHostFree");
  if (header == NULL) return dfcclInvalidArgument;
  header->magic = 0;
  if (header->pinned) return df_gpu_host_free(header, ptr);
  free(header);
  return dfcclSuccess;
}

dfcclResult_t dfcclCopy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return dfcclSuccess;
  if (!dst || !src) return df_error(dfcclInvalidArgument, "dfcclCopy: NULL %s", dst ? "src" : "dst");
  return df_gpu_copy(dst, src, bytes);
}

/* DFCCL_STREAM_ORDER, read once (the wait is on every call's path). */
static pthread_once_t stream_order_once = PTHREAD_ONCE_INIT;
static bool stream_order_on = true;
static dfcclResult_t stream_order_error = dfcclSuccess;
static char stream_order_message[256];

static void read_stream_order(void) {
  stream_order_error = df_env_stream_order(&stream_order_on);
  if (stream_order_error != dfcclSuccess)
    snprintf(stream_order_message, sizeof stream_order_message, "%s", dfcclGetLastErrorMessage());
}

dfcclResult_t dfcclWaitDefaultStreams(void) {
  pthread_once(&stream_order_once, read_stream_order);
  if (stream_order_error != dfcclSuccess) /* a malformed variable is an error even without CUDA */
    return df_error(stream_order_error, "%s", stream_order_message);
  return stream_order_on ? df_gpu_wait_default_streams() : dfcclSuccess;
}
