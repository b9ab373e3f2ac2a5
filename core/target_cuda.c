/*
 * The CUDA execution target: the daemon is a persistent kernel on a non-blocking stream, its
 * tables are device memory, the queues are pinned host memory mapped into the device, and
 * connectors are device memory shared with other processes through CUDA IPC (NVLink or PCIe
 * peer-to-peer, or the same GPU).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "internal.h"
#include "kernel/daemon_launch.h"

typedef struct {
  cudaStream_t daemon_stream;  /* non-blocking: never serialised with the legacy stream  */
  cudaStream_t control_stream; /* copies to and from the daemon's tables                 */
} cuda_state;

_Static_assert(sizeof(cudaIpcMemHandle_t) <= DF_HANDLE_BYTES, "IPC handle does not fit");

#define CUDA_TRY(call)                                                                                             \
  do {                                                                                                             \
    cudaError_t cuda_try_err_ = (call);                                                                            \
    if (cuda_try_err_ != cudaSuccess)                                                                              \
      return df_error(dfcclCudaError, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(cuda_try_err_), __FILE__, \
                      __LINE__);                                                                                   \
  } while (0)

static cuda_state* state_of(df_ctx* ctx) { return (cuda_state*)ctx->target_state; }

/* CUDA's current device is per thread; the poller and the callers' threads all need ours. */
static dfcclResult_t use_device(df_ctx* ctx) {
  CUDA_TRY(cudaSetDevice(ctx->device));
  return dfcclSuccess;
}

/* Which GPU the daemon runs on, and whether the GPU time-slices between processes: without MPS,
 * kernels of different processes never run at the same time (connectors.c tells ring neighbours
 * on the same GPU apart with this). */
static dfcclResult_t identify(df_ctx* ctx) {
  struct cudaDeviceProp prop;
  CUDA_TRY(cudaGetDeviceProperties(&prop, ctx->device));
  _Static_assert(sizeof prop.uuid == sizeof ctx->device_uuid, "GPU UUID size");
  memcpy(ctx->device_uuid, &prop.uuid, sizeof ctx->device_uuid);
  int mps = 0;
#if CUDART_VERSION >= 12030
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, ctx->device) != cudaSuccess) {
    cudaGetLastError(); /* an older driver: take the GPU for time-sliced, which is only slower if wrong */
    mps = 0;
  }
#endif
  ctx->timesliced = !mps;
  return dfcclSuccess;
}

static dfcclResult_t cuda_open(df_ctx* ctx, int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    return df_error(dfcclUnsupported, "no usable CUDA device (%s); the host target is DFCCL_TARGET=host",
                    err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
  if (device < 0) CUDA_TRY(cudaGetDevice(&device));
  if (device >= count)
    return df_error(dfcclInvalidArgument, "CUDA device %d does not exist (%d devices)", device, count);
  ctx->device = device;
  DF_CHECK(use_device(ctx));
  int unified = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device));
  if (!unified) return df_error(dfcclUnsupported, "device %d lacks unified addressing", device);
  DF_CHECK(identify(ctx));
  cuda_state* s = calloc(1, sizeof *s);
  if (!s) return df_error(dfcclOutOfResources, "out of memory for the CUDA target");
  ctx->target_state = s;
  CUDA_TRY(cudaStreamCreateWithFlags(&s->daemon_stream, cudaStreamNonBlocking));
  CUDA_TRY(cudaStreamCreateWithFlags(&s->control_stream, cudaStreamNonBlocking));
  return dfcclSuccess;
}

static void cuda_close(df_ctx* ctx) {
  cuda_state* s = state_of(ctx);
  if (!s) return;
  cudaSetDevice(ctx->device);
  if (s->daemon_stream) {
    cudaStreamSynchronize(s->daemon_stream);
    cudaStreamDestroy(s->daemon_stream);
  }
  if (s->control_stream) cudaStreamDestroy(s->control_stream);
  free(s);
  ctx->target_state = NULL;
}

static dfcclResult_t cuda_alloc(df_ctx* ctx, size_t bytes, void** ptr) {
  DF_CHECK(use_device(ctx));
  CUDA_TRY(cudaMalloc(ptr, bytes ? bytes : 16));
  CUDA_TRY(cudaMemsetAsync(*ptr, 0, bytes, state_of(ctx)->control_stream));
  CUDA_TRY(cudaStreamSynchronize(state_of(ctx)->control_stream));
  return dfcclSuccess;
}

static void cuda_free(df_ctx* ctx, void* ptr) {
  if (!ptr) return;
  cudaSetDevice(ctx->device);
  cudaFree(ptr);
}

static dfcclResult_t cuda_alloc_mapped(df_ctx* ctx, size_t bytes, void** host, void** daemon) {
  DF_CHECK(use_device(ctx));
  CUDA_TRY(cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  memset(*host, 0, bytes);
  CUDA_TRY(cudaHostGetDevicePointer(daemon, *host, 0));
  return dfcclSuccess;
}

static void cuda_free_mapped(df_ctx* ctx, void* host) {
  (void)ctx;
  if (host) cudaFreeHost(host);
}

static dfcclResult_t cuda_copy(df_ctx* ctx, void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  DF_CHECK(use_device(ctx));
  cudaStream_t s = state_of(ctx)->control_stream;
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, s));
  CUDA_TRY(cudaStreamSynchronize(s));
  return dfcclSuccess;
}

static dfcclResult_t cuda_copy_in(df_ctx* ctx, void* dst, const void* src, size_t bytes) {
  return cuda_copy(ctx, dst, src, bytes, cudaMemcpyHostToDevice);
}

static dfcclResult_t cuda_copy_out(df_ctx* ctx, void* dst, const void* src, size_t bytes) {
  return cuda_copy(ctx, dst, src, bytes, cudaMemcpyDeviceToHost);
}

static dfcclResult_t cuda_alloc_shared(df_ctx* ctx, size_t bytes, void** ptr, df_mem_handle* handle) {
  DF_CHECK(cuda_alloc(ctx, bytes, ptr));
  cudaIpcMemHandle_t h;
  CUDA_TRY(cudaIpcGetMemHandle(&h, *ptr));
  memset(handle, 0, sizeof *handle);
  memcpy(handle->bytes, &h, sizeof h);
  return dfcclSuccess;
}

static void cuda_free_shared(df_ctx* ctx, void* ptr, size_t bytes) {
  (void)bytes;
  cuda_free(ctx, ptr);
}

/* Registrations of different groups map peers' memory from several threads at once (register.c), and
 * concurrent cudaIpcOpenMemHandle calls in one process were seen failing with "resource already
 * mapped" on 2x H200 (4 processes on 2 GPUs, 2 threads each).  Opening and closing are local and
 * short, never held across an exchange: one at a time per process. */
static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;

static dfcclResult_t cuda_map_peer(df_ctx* ctx, const df_mem_handle* handle, size_t bytes, void** ptr) {
  (void)bytes;
  DF_CHECK(use_device(ctx));
  cudaIpcMemHandle_t h;
  memcpy(&h, handle->bytes, sizeof h);
  pthread_mutex_lock(&ipc_lock);
  cudaError_t err = cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
  pthread_mutex_unlock(&ipc_lock);
  if (err != cudaSuccess)
    return df_error(dfcclCudaError, "cudaIpcOpenMemHandle failed: %s (a peer's connectors)", cudaGetErrorString(err));
  return dfcclSuccess;
}

static void cuda_unmap_peer(df_ctx* ctx, void* ptr, size_t bytes) {
  (void)bytes;
  cudaSetDevice(ctx->device);
  pthread_mutex_lock(&ipc_lock);
  cudaIpcCloseMemHandle(ptr);
  pthread_mutex_unlock(&ipc_lock);
}

static void cuda_shared_setup_done(df_ctx* ctx, const df_mem_handle* handle) {
  (void)ctx;
  (void)handle;
}

static dfcclResult_t cuda_launch(df_ctx* ctx, const df_daemon_args* args, int grid) {
  DF_CHECK(use_device(ctx));
  CUDA_TRY(df_cuda_launch_daemon(args, grid, state_of(ctx)->daemon_stream));
  return dfcclSuccess;
}

static dfcclResult_t cuda_daemon_running(df_ctx* ctx, bool* running) {
  DF_CHECK(use_device(ctx));
  cudaError_t err = cudaStreamQuery(state_of(ctx)->daemon_stream);
  if (err == cudaErrorNotReady) {
    *running = true;
    return dfcclSuccess;
  }
  *running = false;
  CUDA_TRY(err); /* a failed daemon kernel surfaces here */
  return dfcclSuccess;
}

static dfcclResult_t cuda_synchronize(df_ctx* ctx) {
  DF_CHECK(use_device(ctx));
  CUDA_TRY(cudaDeviceSynchronize());
  return dfcclSuccess;
}

/* One thread polls a device word: the cost of the daemon's poll of a local connector counter. */
static dfcclResult_t cuda_measure_poll(df_ctx* ctx, double* ns) {
  enum { POLLS = 20000 };
  void* mem;
  DF_CHECK(cuda_alloc(ctx, 4 * sizeof(uint64_t), &mem));
  uint64_t* word = mem;
  uint64_t result[2] = {0, 0};
  cudaStream_t s = state_of(ctx)->control_stream;
  cudaError_t err = df_cuda_measure_poll(word, 1000, word + 2, s); /* warm-up */
  if (err == cudaSuccess) err = df_cuda_measure_poll(word, POLLS, word + 2, s);
  if (err == cudaSuccess) err = cudaMemcpyAsync(result, word + 2, sizeof result, cudaMemcpyDeviceToHost, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  cudaFree(mem);
  if (err != cudaSuccess)
    return df_error(dfcclCudaError, "measuring the poll cost failed: %s", cudaGetErrorString(err));
  *ns = (double)result[0] / POLLS;
  return dfcclSuccess;
}

static dfcclResult_t cuda_check_buffer(df_ctx* ctx, const void* p, size_t bytes, const char* what) {
  if (bytes == 0) return dfcclSuccess;
  if (p == NULL) return df_error(dfcclInvalidArgument, "%s is NULL", what);
  struct cudaPointerAttributes attr;
  cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky-free error of an unknown pointer */
    return df_error(dfcclWrongDevice, "%s (%p) is not CUDA memory: %s", what, p, cudaGetErrorString(err));
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    return df_error(dfcclWrongDevice, "%s (%p) is host memory; the cuda target needs device memory", what, p);
  if (attr.device != ctx->device)
    return df_error(dfcclWrongDevice, "%s (%p) is memory of device %d, the context's device is %d", what, p,
                    attr.device, ctx->device);
  return dfcclSuccess;
}

static dfcclResult_t cuda_wait_caller(df_ctx* ctx) {
  return ctx->cfg.stream_order ? df_gpu_wait_default_streams() : dfcclSuccess;
}

static bool cuda_gate_on_streams(df_ctx* ctx, uint32_t* gate, uint32_t epoch) {
  return df_gpu_gate_after_default_streams(ctx->device, gate, epoch);
}

const df_target_ops df_target_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .alloc_mapped = cuda_alloc_mapped,
    .free_mapped = cuda_free_mapped,
    .copy_in = cuda_copy_in,
    .copy_out = cuda_copy_out,
    .alloc_shared = cuda_alloc_shared,
    .free_shared = cuda_free_shared,
    .map_peer = cuda_map_peer,
    .unmap_peer = cuda_unmap_peer,
    .shared_setup_done = cuda_shared_setup_done,
    .launch = cuda_launch,
    .daemon_running = cuda_daemon_running,
    .synchronize = cuda_synchronize,
    .measure_poll = cuda_measure_poll,
    .check_buffer = cuda_check_buffer,
    .wait_caller = cuda_wait_caller,
    .gate_on_streams = cuda_gate_on_streams,
};
