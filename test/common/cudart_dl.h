/*
 * The CUDA runtime loaded at run time (dlopen of libcudart), for the MPI programs that pass device
 * buffers to MPI (the component's tests, mpi_allreduce_bench): they build without CUDA headers,
 * like the component itself, and on a machine without CUDA or a GPU they say so and skip.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_CUDART_DL_H
#define DFCCL_TEST_CUDART_DL_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef int cuda_status_t; /* cudaError_t: 0 is cudaSuccess */
/* cudaMemcpyKind */
enum { CUDA_MEMCPY_HOST_TO_DEVICE = 1, CUDA_MEMCPY_DEVICE_TO_HOST = 2, CUDA_MEMCPY_DEFAULT = 4 };

/* The runtime's functions that these programs call (static: each program loads its own). */
static struct {
  cuda_status_t (*get_device_count)(int*);
  cuda_status_t (*set_device)(int);
  cuda_status_t (*dev_malloc)(void**, size_t);
  cuda_status_t (*dev_free)(void*);
  cuda_status_t (*memcpy)(void*, const void*, size_t, int);
  cuda_status_t (*memset)(void*, int, size_t);
  cuda_status_t (*device_synchronize)(void);
  cuda_status_t (*stream_synchronize)(void*);
  cuda_status_t (*runtime_get_version)(int*);
  cuda_status_t (*driver_get_version)(int*);
  cuda_status_t (*device_get_pci_bus_id)(char*, int, int);
  const char* (*get_error_string)(cuda_status_t);
  const char* soname; /* the libcudart that was loaded */
} cuda;

/* True when the CUDA runtime is here and sees at least one GPU (*devices of them); otherwise
 * why[0..len) says what is missing. */
static inline bool cuda_load(int* devices, char* why, size_t len) {
  static const char* const sonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  void* lib = NULL;
  for (size_t i = 0; lib == NULL && i < sizeof sonames / sizeof sonames[0]; i++)
    if ((lib = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL)) != NULL) cuda.soname = sonames[i];
  if (lib == NULL) {
    snprintf(why, len, "no CUDA runtime (libcudart) on the loader path");
    return false;
  }
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
      {(void**)&cuda.runtime_get_version, "cudaRuntimeGetVersion"},
      {(void**)&cuda.driver_get_version, "cudaDriverGetVersion"},
      {(void**)&cuda.device_get_pci_bus_id, "cudaDeviceGetPCIBusId"},
      {(void**)&cuda.get_error_string, "cudaGetErrorString"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if ((*syms[i].fn = dlsym(lib, syms[i].name)) == NULL) {
      snprintf(why, len, "%s not in %s", syms[i].name, cuda.soname);
      return false;
    }
  *devices = 0;
  cuda_status_t e = cuda.get_device_count(devices); /* no driver or no device: an error here */
  if (e != 0 || *devices < 1) {
    snprintf(why, len, "cudaGetDeviceCount: %s", e != 0 ? cuda.get_error_string(e) : "no device");
    return false;
  }
  return true;
}

#endif /* DFCCL_TEST_CUDART_DL_H */
