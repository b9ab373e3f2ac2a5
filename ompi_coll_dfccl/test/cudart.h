/*
 * The CUDA runtime for the component's tests, loaded at run time (dlopen of libcudart): the tests
 * build without CUDA headers and run (and skip) on machines without CUDA.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef COLL_DFCCL_TEST_CUDART_H
#define COLL_DFCCL_TEST_CUDART_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef int cuda_status_t; /* cudaError_t: 0 is cudaSuccess */
enum { CUDA_MEMCPY_DEFAULT = 4 };

static struct {
  cuda_status_t (*get_device_count)(int*);
  cuda_status_t (*set_device)(int);
  cuda_status_t (*dev_malloc)(void**, size_t);
  cuda_status_t (*dev_free)(void*);
  cuda_status_t (*memcpy)(void*, const void*, size_t, int);
  cuda_status_t (*memset)(void*, int, size_t);
  cuda_status_t (*device_synchronize)(void);
  cuda_status_t (*stream_synchronize)(void*);
  const char* (*get_error_string)(cuda_status_t);
} cuda;

#define CHECK_CUDA(call)                                                                                \
  do {                                                                                                  \
    cuda_status_t e_ = (call);                                                                          \
    if (e_ != 0) {                                                                                      \
      int rank_ = -1;                                                                                   \
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);                                                            \
      fprintf(stderr, "rank %d: %s failed: %s (%d) at %s:%d\n", rank_, #call, cuda.get_error_string(e_), \
              e_, __FILE__, __LINE__);                                                                  \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                     \
    }                                                                                                   \
  } while (0)

/* True when the CUDA runtime is here and sees at least one GPU (*devices of them). */
static inline bool cuda_load(int* devices) {
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) lib = dlopen("libcudart.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return false;
  struct {
    void** fn;
    const char* name;
  } syms[] = {
      {(void**)&cuda.get_device_count, "cudaGetDeviceCount"},
      {(void**)&cuda.set_device, "cudaSetDevice"},
      {(void**)&cuda.dev_malloc, "cudaMalloc"},
      {(void**)&cuda.dev_free, "cudaFree"},
      {(void**)&cuda.memcpy, "cudaMemcpy"},
      {(void**)&cuda.memset, "cudaMemset"},
      {(void**)&cuda.device_synchronize, "cudaDeviceSynchronize"},
      {(void**)&cuda.stream_synchronize, "cudaStreamSynchronize"},
      {(void**)&cuda.get_error_string, "cudaGetErrorString"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if ((*syms[i].fn = dlsym(lib, syms[i].name)) == NULL) {
      fprintf(stderr, "%s is not in the CUDA runtime\n", syms[i].name);
      return false;
    }
  *devices = 0;
  return cuda.get_device_count(devices) == 0 && *devices > 0; /* no driver, no device: an error here */
}

static inline void* dev_alloc(size_t bytes) {
  void* p = NULL;
  CHECK_CUDA(cuda.dev_malloc(&p, bytes > 0 ? bytes : 1));
  return p;
}

static inline void dev_free(void* p) { CHECK_CUDA(cuda.dev_free(p)); }

static inline void upload(void* dev, const void* host, size_t bytes) {
  CHECK_CUDA(cuda.memcpy(dev, host, bytes, CUDA_MEMCPY_DEFAULT));
}

static inline void download(void* host, const void* dev, size_t bytes) {
  CHECK_CUDA(cuda.memcpy(host, dev, bytes, CUDA_MEMCPY_DEFAULT));
}

/* Uploads from pageable memory may return before the data has landed, and the DFCCL daemon is not
 * ordered after any stream (README): wait for the legacy default stream, which carries them.  Not
 * a device synchronization, which would wait for the daemon to quit. */
static inline void uploads_done(void) { CHECK_CUDA(cuda.stream_synchronize(NULL)); }

static inline void* dev_copy_of(const void* host, size_t bytes) {
  void* d = dev_alloc(bytes);
  upload(d, host, bytes);
  return d;
}

#endif /* COLL_DFCCL_TEST_CUDART_H */
