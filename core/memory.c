/*
 * Where a buffer lives, memory DFCCL's runs take, copies between host and device memory, and the
 * order of DFCCL's accesses after the caller's CUDA work: what glue code (the Open MPI component)
 * needs to route a call by its buffers and to stage buffers into the right memory, and what every
 * run does first.  Without CUDA every pointer is host memory (or the host target's device memory,
 * host_memory.c), copies are memmove and there is nothing to wait for.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef DFCCL_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>

/* CUDA's answer for p: device or managed memory of a GPU, else host memory. */
static dfcclResult_t cuda_pointer_kind(const void* p, dfcclMemoryKind_t* kind, int* device) {
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

/* cudaMalloc on `device` (-1: the current one), leaving the caller's current device as it was. */
static dfcclResult_t cuda_alloc(int device, size_t bytes, void** ptr) {
  int current = 0;
  cudaError_t err = cudaGetDevice(&current);
  if (err == cudaSuccess && device >= 0 && device != current) err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaMalloc(ptr, bytes ? bytes : 16);
  if (err != cudaSuccess) {
    cudaGetLastError();
    dfcclResult_t r = df_error(dfcclCudaError, "cudaMalloc of %zu bytes on device %d: %s", bytes,
                               device >= 0 ? device : current, cudaGetErrorString(err));
    cudaSetDevice(current);
    return r;
  }
  if (device >= 0 && device != current) cudaSetDevice(current);
  return dfcclSuccess;
}

static dfcclResult_t cuda_free(void* ptr) {
  cudaError_t err = cudaFree(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return df_error(dfcclInvalidArgument, "dfcclMemFree(%p): not memory of dfcclMemAlloc (%s)", ptr,
                    cudaGetErrorString(err));
  }
  return dfcclSuccess;
}

/* The calling thread's CUDA context, looked up without creating one: the runtime API would
 * initialise the current device's primary context on the first stream query (a context costs
 * hundreds of MiB on a GPU the process may not use), and a thread without a context has issued no
 * CUDA work to wait for.  Through the driver's entry point, so that libdfccl needs no libcuda to
 * load on machines without a driver. */
typedef CUresult (*cu_ctx_get_current_fn)(CUcontext* ctx);
static cu_ctx_get_current_fn cu_ctx_get_current;
static pthread_once_t cu_ctx_get_current_once = PTHREAD_ONCE_INIT;

static void find_cu_ctx_get_current(void) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
  cudaError_t err = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found);
#else
  cudaError_t err = cudaGetDriverEntryPoint("cuCtxGetCurrent", &fn, cudaEnableDefault, &found);
#endif
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    fn = NULL;
  }
  cu_ctx_get_current = (cu_ctx_get_current_fn)fn;
}

static bool thread_has_cuda_context(void) {
  pthread_once(&cu_ctx_get_current_once, find_cu_ctx_get_current);
  if (!cu_ctx_get_current) return true; /* cannot tell: query the streams anyway */
  CUcontext current = NULL;
  return cu_ctx_get_current(&current) == CUDA_SUCCESS && current != NULL;
}

/* A pageable cudaMemcpy to device memory returns once the data is staged, before its DMA lands; a
 * kernel on stream 0 returns at once: neither is ordered before the daemon, which runs on its own
 * non-blocking stream.  So a run first waits for the streams such work goes to -- free when they
 * are idle (one query each).  The legacy stream does not wait for the daemon (a non-blocking
 * stream), so this never waits for DFCCL itself.  Streams the caller created are the caller's to
 * synchronize, as with every CUDA-aware MPI. */
dfcclResult_t df_cuda_wait_default_streams(void) {
  if (!thread_has_cuda_context()) return dfcclSuccess;
  static const struct {
    cudaStream_t stream;
    const char* name;
  } defaults[] = {{cudaStreamLegacy, "legacy"}, {cudaStreamPerThread, "per-thread"}};
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
    cudaError_t err = cudaStreamQuery(defaults[i].stream);
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
      cudaGetLastError();
      return dfcclSuccess; /* no GPU here: no CUDA work either */
    }
    if (err == cudaErrorNotReady) err = cudaStreamSynchronize(defaults[i].stream);
    if (err != cudaSuccess)
      return df_error(dfcclCudaError, "waiting for the calling thread's %s default stream: %s", defaults[i].name,
                      cudaGetErrorString(err));
  }
  return dfcclSuccess;
}

/* cudaMemcpy returns before a copy from pageable memory or between device buffers has landed: the
 * copy is complete when this returns, for whatever reads dst next (a kernel on another stream,
 * the daemon). */
static dfcclResult_t cuda_copy(void* dst, const void* src, size_t bytes) {
  cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    memmove(dst, src, bytes); /* no GPU here: both are host memory */
    return dfcclSuccess;
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(cudaStreamLegacy);
  if (err != cudaSuccess)
    return df_error(dfcclCudaError, "cudaMemcpy(%p <- %p, %zu bytes): %s", dst, src, bytes, cudaGetErrorString(err));
  return dfcclSuccess;
}

#else
int dfcclDeviceCount(void) { return 0; }
#endif

/* ---- the public functions: the host target's device memory first, then CUDA's ---- */

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
#ifdef DFCCL_HAVE_CUDA
  return cuda_pointer_kind(p, kind, device);
#else
  return dfcclSuccess;
#endif
}

dfcclResult_t dfcclMemAlloc(dfcclTarget_t target, int device, size_t bytes, void** ptr) {
  if (!ptr) return df_error(dfcclInvalidArgument, "dfcclMemAlloc: ptr is NULL");
  *ptr = NULL;
  DF_CHECK(df_config_target(target, &target));
  if (target == dfcclTargetHost) return df_host_memory_alloc(bytes, ptr);
#ifdef DFCCL_HAVE_CUDA
  return cuda_alloc(device, bytes, ptr);
#else
  (void)device;
  return df_error(dfcclUnsupported, "dfcclMemAlloc: this DFCCL was built without CUDA");
#endif
}

dfcclResult_t dfcclMemFree(void* ptr) {
  if (ptr == NULL || df_host_memory_free(ptr)) return dfcclSuccess;
#ifdef DFCCL_HAVE_CUDA
  return cuda_free(ptr);
#else
  return df_error(dfcclInvalidArgument, "dfcclMemFree(%p): not memory of dfcclMemAlloc", ptr);
#endif
}

/* A dfcclHostAlloc block starts with a header that says how it was allocated: DF_HOST_BLOCK_ALIGN
 * bytes, so that the memory after it keeps that alignment. */
enum { DF_HOST_BLOCK_ALIGN = 64 };
typedef struct {
  uint32_t magic;
  bool pinned;
} df_host_block;
#define DF_HOST_BLOCK_MAGIC 0xdfcc1b0cu

dfcclResult_t dfcclHostAlloc(size_t bytes, void** ptr) {
  if (!ptr) return df_error(dfcclInvalidArgument, "dfcclHostAlloc: ptr is NULL");
  *ptr = NULL;
  if (bytes > SIZE_MAX - DF_HOST_BLOCK_ALIGN)
    return df_error(dfcclInvalidArgument, "dfcclHostAlloc: %zu bytes is too large", bytes);
  size_t total = bytes + DF_HOST_BLOCK_ALIGN;
  void* base = NULL;
  bool pinned = false;
#ifdef DFCCL_HAVE_CUDA
  if (cudaHostAlloc(&base, total, cudaHostAllocPortable) == cudaSuccess) pinned = true;
  else {
    cudaGetLastError(); /* no GPU, or no pinnable memory left: plain memory still copies */
    base = NULL;
  }
#endif
  if (base == NULL)
    base = aligned_alloc(DF_HOST_BLOCK_ALIGN,
                         (total + DF_HOST_BLOCK_ALIGN - 1) / DF_HOST_BLOCK_ALIGN * DF_HOST_BLOCK_ALIGN);
  if (base == NULL) return df_error(dfcclOutOfResources, "dfcclHostAlloc: out of host memory for %zu bytes", bytes);
  df_host_block* header = base;
  header->magic = DF_HOST_BLOCK_MAGIC;
  header->pinned = pinned;
  *ptr = (char*)base + DF_HOST_BLOCK_ALIGN;
  return dfcclSuccess;
}

dfcclResult_t dfcclHostFree(void* ptr) {
  if (ptr == NULL) return dfcclSuccess;
  df_host_block* header = (df_host_block*)((char*)ptr - DF_HOST_BLOCK_ALIGN);
  if (header->magic != DF_HOST_BLOCK_MAGIC)
    return df_error(dfcclInvalidArgument, "dfcclHostFree(%p): not memory of dfcclHostAlloc", ptr);
  header->magic = 0;
#ifdef DFCCL_HAVE_CUDA
  if (header->pinned) {
    cudaError_t err = cudaFreeHost(header);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return df_error(dfcclCudaError, "dfcclHostFree(%p): cudaFreeHost: %s", ptr, cudaGetErrorString(err));
    }
    return dfcclSuccess;
  }
#endif
  free(header);
  return dfcclSuccess;
}

dfcclResult_t dfcclCopy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return dfcclSuccess;
  if (!dst || !src) return df_error(dfcclInvalidArgument, "dfcclCopy: NULL %s", dst ? "src" : "dst");
#ifdef DFCCL_HAVE_CUDA
  return cuda_copy(dst, src, bytes);
#else
  memmove(dst, src, bytes);
  return dfcclSuccess;
#endif
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
#ifdef DFCCL_HAVE_CUDA
  return stream_order_on ? df_cuda_wait_default_streams() : dfcclSuccess;
#else
  return dfcclSuccess;
#endif
}
