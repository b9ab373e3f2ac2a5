/*
 * What opening a run's gate costs, beside a resident kernel of 132 blocks (as a daemon is), and
 * which default stream's work a write on each stream waits for (DFCCL_STREAM_GATE, docs/design.md).
 *
 * Cost: the host opens a gate and a kernel block that polls it echoes the gate's value into mapped
 * host memory; the round trip from the host's first call to the echo, median of -n, ns, in four ways:
 *   host       two cudaStreamQuery calls (legacy, per-thread), then a store into mapped host memory
 *              the kernel polls -- DFCCL_STREAM_GATE=0;
 *   both       cuStreamWriteValue32 on the legacy and on the per-thread stream into device memory;
 *   legacy     one write on the legacy stream;
 *   per-thread one write on the per-thread stream -- DFCCL_STREAM_GATE=1.
 * Order: a 20 ms kernel on the legacy, per-thread, a created blocking or a created non-blocking
 * stream, then one write on the legacy or per-thread stream; "ordered" when the write landed after
 * the kernel.  DFCCL's gate relies on a per-thread write waiting for legacy work.
 *
 *   gate_cost [-n rounds]     (default 20000; GPU 0; needs libcuda: nvcc ... -lcuda)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "cuda_check.h" /* test/common */
#include "options.h"    /* test/common: options_begin, option_int */

static void check_driver(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* why = "unknown";
  cuGetErrorString(r, &why);
  fprintf(stderr, "gate_cost: %s: %s\n", what, why);
  exit(1);
}

static double now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

enum way { HOST, BOTH, LEGACY, PER_THREAD, WAYS };
static const char* const way_names[WAYS] = {
    "host: 2 x cudaStreamQuery, then a store to host memory", "both: cuStreamWriteValue32 on legacy and per-thread",
    "legacy: one write on the legacy stream", "per-thread: one write on the per-thread stream"};

/* Block 0 echoes each gate value k it sees open (the host word, or the device words the current way
 * writes); the other blocks idle like a daemon's, until *stop.  Only block 0 reads host memory (as
 * a daemon's does): 131 blocks polling a host word every microsecond queue block 0's reads behind
 * theirs on the bus (round trips of 0.4-1.3 ms, thirty-third session); they poll the device word
 * block 0 sets when it stops. */
__global__ void resident(volatile unsigned* host_gate, volatile unsigned* dev_gates, volatile unsigned* echo,
                         volatile unsigned* way, volatile unsigned* stop, volatile unsigned* dev_stop) {
  if (blockIdx.x != 0) {
    while (!*dev_stop) __nanosleep(1000);
    return;
  }
  if (threadIdx.x != 0) return;
  /* The way and the stop are looked at every 256 polls, so that a poll of the device words costs no
   * trip over the bus; a new way is seen within 256 polls of the host's switch. */
  unsigned w = HOST;
  for (unsigned k = 1, polls = 0;; polls++) {
    if (polls % 256 == 0) {
      if (*stop) {
        *dev_stop = 1;
        return;
      }
      w = *way;
    }
    bool open = w == HOST ? *host_gate == k : w == BOTH ? dev_gates[0] == k && dev_gates[1] == k : dev_gates[0] == k;
    if (open) {
      __threadfence_system();
      *echo = k++;
    }
  }
}

__global__ void busy(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}

static void write_gate(CUstream s, unsigned* word, unsigned k) {
  check_driver(cuStreamWriteValue32(s, (CUdeviceptr)word, k, CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue32");
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it comes, should a later part hang */
  int n = 20000;
  options o = options_begin("gate_cost", "usage: gate_cost [-n rounds]", argc, argv, "n:");
  for (int opt; (opt = options_next(&o)) != -1;)
    if (opt == 'n') n = option_int(&o, 10, 1 << 24);
  check_driver(cuInit(0), "cuInit");
  CHECK_CUDA(cudaSetDevice(0));
  unsigned *host_gate, *echo, *way, *stop, *dev_gates;
  CHECK_CUDA(cudaHostAlloc(&host_gate, 64, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&echo, 64, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&way, 64, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&stop, 64, cudaHostAllocMapped));
  CHECK_CUDA(cudaMalloc(&dev_gates, 64)); /* [0], [1]: the gates; [8]: the idle blocks' stop */
  CHECK_CUDA(cudaMemset(dev_gates, 0, 64));
  *host_gate = *echo = *way = *stop = 0;
  CHECK_CUDA(cudaDeviceSynchronize());
  /* Loaded before the resident kernel starts: with lazy loading (CUDA's default) a kernel's first
   * launch may wait for the device's work -- here a kernel that ends only when told. */
  busy<<<1, 1>>>(0);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t daemon_stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&daemon_stream, cudaStreamNonBlocking));
  resident<<<132, 32, 0, daemon_stream>>>(host_gate, dev_gates, echo, way, stop, &dev_gates[8]);
  CHECK_CUDA(cudaGetLastError());

  unsigned k = 1;
  for (int round = 1; round <= 2; round++)
    for (int w = 0; w < WAYS; w++) {
      __atomic_store_n(way, (unsigned)w, __ATOMIC_SEQ_CST);
      std::vector<double> trip(n), call(n);
      for (int i = 0; i < n; i++, k++) {
        double t0 = now_ns();
        if (w == HOST) {
          CHECK_CUDA(cudaStreamQuery(cudaStreamLegacy));
          CHECK_CUDA(cudaStreamQuery(cudaStreamPerThread));
          call[i] = now_ns() - t0;
          __atomic_store_n(host_gate, k, __ATOMIC_RELEASE);
        } else {
          write_gate(w == PER_THREAD ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY, &dev_gates[0], k);
          if (w == BOTH) write_gate(CU_STREAM_PER_THREAD, &dev_gates[1], k);
          call[i] = now_ns() - t0;
        }
        while (__atomic_load_n(echo, __ATOMIC_ACQUIRE) != k) continue;
        trip[i] = now_ns() - t0;
      }
      std::sort(trip.begin(), trip.end());
      std::sort(call.begin(), call.end());
      printf("round %d  %-56s  host calls %6.0f ns  round trip median %6.0f  p10 %6.0f  p90 %6.0f\n", round,
             way_names[w], call[n / 2], trip[n / 2], trip[n / 10], trip[n * 9 / 10]);
    }

  cudaStream_t blocking, non_blocking;
  CHECK_CUDA(cudaStreamCreate(&blocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  const struct {
    const char* name;
    cudaStream_t stream;
  } kernels[] = {{"legacy", cudaStreamLegacy},
                 {"per-thread", cudaStreamPerThread},
                 {"created blocking", blocking},
                 {"created non-blocking", non_blocking}};
  const struct {
    const char* name;
    CUstream stream;
    cudaStream_t runtime;
  } writes[] = {{"legacy", CU_STREAM_LEGACY, cudaStreamLegacy},
                {"per-thread", CU_STREAM_PER_THREAD, cudaStreamPerThread}};
  __atomic_store_n(way, (unsigned)LEGACY, __ATOMIC_SEQ_CST); /* the kernel watches dev_gates[0] */
  for (const auto& kernel : kernels)
    for (const auto& write : writes) {
      busy<<<1, 1, 0, kernel.stream>>>(20000000ull);
      CHECK_CUDA(cudaGetLastError());
      double t0 = now_ns();
      write_gate(write.stream, &dev_gates[0], k);
      while (__atomic_load_n(echo, __ATOMIC_ACQUIRE) != k) continue;
      double ms = (now_ns() - t0) / 1e6;
      printf("a 20 ms kernel on the %-20s stream, a write on the %-10s stream: landed after %6.2f ms: %s\n",
             kernel.name, write.name, ms, ms > 15 ? "ordered" : "NOT ordered");
      k++;
      CHECK_CUDA(cudaStreamSynchronize(kernel.stream));
      CHECK_CUDA(cudaStreamSynchronize(write.runtime));
    }
  *stop = 1;
  CHECK_CUDA(cudaStreamSynchronize(daemon_stream));
  return 0;
}
