/*
 * The CUDA runtime for the component's tests, loaded at run time (test/common/cudart_dl.h): the
 * tests build without CUDA headers and run (and skip) on machines without CUDA.  Here: the checks
 * and buffer helpers they share.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef COLL_DFCCL_TEST_CUDART_H
#define COLL_DFCCL_TEST_CUDART_H

#include <mpi.h>
#include <stdio.h>

#include "cudart_dl.h" /* test/common: the runtime's functions and cuda_load */

#define CHECK_CUDA(call)                                                                                               \
  do {                                                                                                                 \
    cuda_status_t e_ = (call);                                                                                         \
    if (e_ != 0) {                                                                                                     \
      int rank_ = -1;                                                                                                  \
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);                                                                           \
      fprintf(stderr, "rank %d: %s failed: %s (%d) at %s:%d\n", rank_, #call, cuda.get_error_string(e_), e_, __FILE__, \
              __LINE__);                                                                                               \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

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

/* Selects this rank's GPU, its node-local rank modulo the node's `devices` GPUs, before any
 * collective on device buffers; returns how many ranks share this node. */
static inline int select_node_gpu(int devices) {
  MPI_Comm node;
  int world_rank, local_rank, local_size;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node) != MPI_SUCCESS ||
      MPI_Comm_rank(node, &local_rank) != MPI_SUCCESS || MPI_Comm_size(node, &local_size) != MPI_SUCCESS ||
      MPI_Comm_free(&node) != MPI_SUCCESS) {
    fprintf(stderr, "rank %d: cannot split MPI_COMM_WORLD by node\n", world_rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK_CUDA(cuda.set_device(local_rank % devices));
  return local_size;
}

/* Loads the CUDA runtime and selects this rank's GPU (select_node_gpu), or aborts the job saying
 * why: for programs told to use device memory, where a rank without CUDA is an error. */
static inline void use_node_gpu_or_abort(void) {
  int devices = 0, rank = 0;
  char why[128];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!cuda_load(&devices, why, sizeof why)) {
    fprintf(stderr, "rank %d: -d device with DFCCL_TARGET=cuda: %s\n", rank, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  select_node_gpu(devices);
}

/* A program tests GPUs on every rank or on none: true when every rank `have`s CUDA; otherwise the
 * ranks without it say `why`, MPI is finalized, "SKIP: no GPU" printed and false returned. */
static inline bool cuda_on_every_rank(int have, const char* why) {
  int rank, everywhere = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (MPI_Allreduce(&have, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) {
    fprintf(stderr, "rank %d: MPI_Allreduce of who has CUDA failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (everywhere) return true;
  if (!have) printf("rank %d: %s\n", rank, why);
  MPI_Finalize();
  puts("SKIP: no GPU");
  return false;
}

static inline void* dev_copy_of(const void* host, size_t bytes) {
  void* d = dev_alloc(bytes);
  upload(d, host, bytes);
  return d;
}

/* ---- stream-ordered work (test_pageable) --------------------------------------------------------- */

/* cudaStream_t handles: stream 0 is the legacy default stream (these programs call the runtime's
 * plain symbols, not the _ptsz ones of --default-stream per-thread); cudaStreamPerThread is the
 * calling thread's per-thread default stream. */
#define CUDA_STREAM_0 ((void*)0)
#define CUDA_STREAM_PER_THREAD ((void*)0x2)

/* The runtime's stream-ordered copies and sets, looked up in the libcudart that cuda_load() opened. */
static struct {
  cuda_status_t (*memcpy_async)(void*, const void*, size_t, int, void*);
  cuda_status_t (*memset_async)(void*, int, size_t, void*);
} cuda_async __attribute__((unused));

/* After cuda_load() succeeded: true when the functions above are there; otherwise why[0..len) says
 * which is missing. */
static inline bool cuda_async_load(char* why, size_t len) {
  void* lib = cuda.soname != NULL ? dlopen(cuda.soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) : NULL;
  if (lib == NULL) {
    snprintf(why, len, "the CUDA runtime is not loaded");
    return false;
  }
  cuda_async.memcpy_async = (cuda_status_t(*)(void*, const void*, size_t, int, void*))dlsym(lib, "cudaMemcpyAsync");
  cuda_async.memset_async = (cuda_status_t(*)(void*, int, size_t, void*))dlsym(lib, "cudaMemsetAsync");
  dlclose(lib); /* RTLD_NOLOAD took one more reference: cuda_load()'s keeps the library */
  if (cuda_async.memcpy_async == NULL || cuda_async.memset_async == NULL) {
    snprintf(why, len, "%s not in %s", cuda_async.memcpy_async == NULL ? "cudaMemcpyAsync" : "cudaMemsetAsync",
             cuda.soname);
    return false;
  }
  return true;
}

#endif /* COLL_DFCCL_TEST_CUDART_H */
