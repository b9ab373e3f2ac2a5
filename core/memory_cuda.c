/*
 * The CUDA side of memory.c: where CUDA says a pointer lives, cudaMalloc and cudaFree, pinned host
 * memory, copies, and the wait for the calling thread's default streams.  Built only with CUDA
 * (memory_none.c otherwise), so that memory.c has no #ifdef.  A machine without a driver or a GPU
 * gets the answers of a build without CUDA: no pointer is device memory, copies are memmove,
 * there is nothing to wait for.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "internal.h"

dfcclResult_t df_gpu_pointer_kind(const void* p, dfcclMemoryKind_t* kind, int* device) {
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

int df_gpu_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0; /* no driver, no device */
  }
  return n;
}

/* cudaMalloc on `device` (-1: the current one), leaving the caller's current device as it was. */
dfcclResult_t df_gpu_alloc(int device, size_t bytes, void** ptr) {
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

dfcclResult_t df_gpu_free(void* ptr) {
  cudaError_t err = cudaFree(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return df_error(dfcclInvalidArgument, "dfcclMemFree(%p): not memory of dfcclMemAlloc (%s)", ptr,
                    cudaGetErrorString(err));
  }
  return dfcclSuccess;
}

void* df_gpu_host_alloc(size_t bytes) {
  void* base = NULL;
  if (cudaHostAlloc(&base, bytes, cudaHostAllocPortable) == cudaSuccess) return base;
  cudaGetLastError(); /* no GPU, or no pinnable memory left: plain memory still copies */
  return NULL;
}

dfcclResult_t df_gpu_host_free(void* base, const void* ptr) {
  cudaError_t err = cudaFreeHost(base);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return df_error(dfcclCudaError, "dfcclHostFree(%p): cudaFreeHost: %s", ptr, cudaGetErrorString(err));
  }
  return dfcclSuccess;
}

/* cudaMemcpy returns before a copy from pageable memory or between device buffers has landed: the
 * copy is complete when this returns, for whatever reads dst next (a kernel on another stream,
 * the daemon). */
dfcclResult_t df_gpu_copy(void* dst, const void* src, size_t bytes) {
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

/* A driver function through the runtime's entry point, so that libdfccl needs no libcuda to load on
 * machines without a driver; NULL when the driver lacks it. */
static void* driver_function(const char* name) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
  cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
#else
  cudaError_t err = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found);
#endif
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return fn;
}

/* The calling thread's CUDA context, looked up without creating one: the runtime API would
 * initialise the current device's primary context on the first stream query (a context costs
 * hundreds of MiB on a GPU the process may not use), and a thread without a context has issued no
 * CUDA work to wait for. */
typedef CUresult (*cu_ctx_get_current_fn)(CUcontext* ctx);
typedef CUresult (*cu_stream_write_value32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned flags);
static cu_ctx_get_current_fn cu_ctx_get_current;
static cu_stream_write_value32_fn cu_stream_write_value32;
static pthread_once_t driver_functions_once = PTHREAD_ONCE_INIT;

static void find_driver_functions(void) {
  cu_ctx_get_current = (cu_ctx_get_current_fn)driver_function("cuCtxGetCurrent");
  cu_stream_write_value32 = (cu_stream_write_value32_fn)driver_function("cuStreamWriteValue32");
}

static bool thread_has_cuda_context(void) {
  pthread_once(&driver_functions_once, find_driver_functions);
  if (!cu_ctx_get_current) return true; /* cannot tell: query the streams anyway */
  CUcontext current = NULL;
  return cu_ctx_get_current(&current) == CUDA_SUCCESS && current != NULL;
}

int df_gpu_default_device(int local_rank) {
  int n = df_gpu_device_count();
  if (n <= 0) return -1;
  int current = 0;
  /* cudaGetDevice answers 0 on a thread that never chose: only a context says the program did. */
  if (thread_has_cuda_context()) {
    if (cudaGetDevice(&current) == cudaSuccess) return current;
    cudaGetLastError();
  }
  return local_rank > 0 ? local_rank % n : 0;
}

/* A pageable cudaMemcpy to device memory returns once the data is staged, before its DMA lands; a
 * kernel on stream 0 returns at once: neither is ordered before the daemon, which runs on its own
 * non-blocking stream.  So a run first waits for the streams such work goes to -- free when they
 * are idle (one query each).  The legacy stream does not wait for the daemon (a non-blocking
 * stream), so this never waits for DFCCL itself.  Streams the caller created are the caller's to
 * synchronize, as with every CUDA-aware MPI. */
dfcclResult_t df_gpu_wait_default_streams(void) {
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

/* The same order kept on the GPU itself: a write of `value` into `gate` (device memory of `device`)
 * queued on the calling thread's per-thread default stream, which runs it once the work queued
 * before it there and on the legacy default stream is done (the two synchronize with each other;
 * the write is preceded by a fence, like __threadfence_system, over the stream's work).  The host
 * neither waits nor queries: a query costs ~1.3 us while a kernel is resident, and a run's gate
 * read from device memory costs the daemon a trip to L2 instead of one over the bus.  Unlike a
 * write on the legacy stream, it does not wait for streams the caller created.  False, queuing
 * nothing, when it cannot: the thread has no CUDA context or another device is current, the
 * stream is being captured, or the driver has no stream memory operations; the caller then waits
 * on the host. */
bool df_gpu_gate_after_default_streams(int device, uint32_t* gate, uint32_t value) {
  if (!thread_has_cuda_context() || !cu_stream_write_value32) return false;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (current != device) return false;
  /* A stream being captured into a graph would take the write into the graph: the host's way
   * refuses the run with CUDA's error instead. */
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(cudaStreamPerThread, &capture) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (capture != cudaStreamCaptureStatusNone) return false;
  return cu_stream_write_value32(CU_STREAM_PER_THREAD, (CUdeviceptr)gate, value, CU_STREAM_WRITE_VALUE_DEFAULT) ==
         CUDA_SUCCESS;
}
