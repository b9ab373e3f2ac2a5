/*
 * What one thread's loads of mapped host memory cost, by the form of the loads: how daemon block 0
 * can read an SQE (queue/sq.h) in as few trips over the bus as possible.  One block; its leader
 * (or, for the warp's form, lanes 0-3 of warp 0) loads a 64-byte entry from pinned, mapped host
 * memory, REPS times, each timed on %globaltimer; the median and p90 in ns are printed per form.
 *
 * Build:  nvcc -O3 -arch=sm_90 -I test/common -o host_read_cost benchmarks/host_read_cost.cu
 *         (test/gpu/run.sh PART=stamps builds and runs it)
 * Run:    ./host_read_cost [reps]      (default 20000)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "cuda_check.h"

enum Form {
  ACQUIRE_U64,         /* one 8-byte acquire: the seq of the old SQ's look              */
  VOLATILE_U64,        /* one 8-byte volatile load                                      */
  VOLATILE_V4,         /* one 16-byte volatile load                                     */
  FOUR_VOLATILE_V4,    /* the entry's four lines, volatile                              */
  THREE_V4_ACQUIRE_V4, /* three volatile, the last one acquire, in one line (1da3b05)   */
  FOUR_RELAXED_V4,     /* the four lines, ld.relaxed.sys                                */
  FOUR_V4_FOUR_LINES,  /* each of another 64-byte line, the last acquire: queue/sq.h    */
  WARP_V4,             /* lanes 0-3 of warp 0 load a line each: one instruction         */
  FORMS
};
static const char* const form_names[FORMS] = {"1 x 8 B acquire.sys",
                                              "1 x 8 B volatile",
                                              "1 x 16 B volatile",
                                              "4 x 16 B volatile, one line",
                                              "3 x 16 B volatile + 16 B acquire.sys",
                                              "4 x 16 B relaxed.sys, one line",
                                              "4 x 16 B, 4 lines, the last acquire",
                                              "4 lanes x 16 B volatile (one warp load)"};

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* A 16-byte load by the PTX instruction `instr` (its four 32-bit words). */
#define DEFINE_LOAD_V4(name, instr)                                                                                  \
  __device__ __forceinline__ uint4 name(const void* p) {                                                             \
    uint4 v;                                                                                                         \
    asm volatile(instr " {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory"); \
    return v;                                                                                                        \
  }
DEFINE_LOAD_V4(ld_volatile_v4, "ld.volatile.global.v4.u32")
DEFINE_LOAD_V4(ld_relaxed_v4, "ld.relaxed.sys.global.v4.u32")
DEFINE_LOAD_V4(ld_acquire_v4, "ld.acquire.sys.global.v4.u32")

/* Four 16-byte loads `stride` bytes apart, the last by Last, the others by Load: all four issued
 * before any of them is used. */
template <uint4 (*Load)(const void*), uint4 (*Last)(const void*)>
__device__ __forceinline__ uint32_t four_loads(const char* p, int stride) {
  uint4 a = Load(p), b = Load(p + stride), c = Load(p + 2 * stride), d = Last(p + 3 * stride);
  return a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
}

__global__ void read_cost(const char* host, int form, int reps, uint64_t* ns, uint64_t* sink) {
  uint32_t acc = 0;
  int lane = threadIdx.x;
  for (int r = 0; r < reps; r++) {
    const char* line = host + (size_t)(r % 64) * 256; /* a fresh line each rep, spread over 16 KiB */
    uint64_t t0 = now_ns();
    if (form == WARP_V4) {
      uint4 v = make_uint4(0, 0, 0, 0);
      if (lane < 4) v = ld_volatile_v4(line + 16 * lane);
      uint32_t x = v.x ^ v.y ^ v.z ^ v.w;
      for (int o = 2; o >= 1; o /= 2) x ^= __shfl_down_sync(0xffffffffu, x, o);
      acc += x;
    } else if (lane == 0) {
      uint4 a = make_uint4(0, 0, 0, 0);
      switch (form) {
        case ACQUIRE_U64: {
          uint64_t v;
          asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(line) : "memory");
          a.x = (uint32_t)v;
          break;
        }
        case VOLATILE_U64: {
          uint64_t v;
          asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(line) : "memory");
          a.x = (uint32_t)v;
          break;
        }
        case VOLATILE_V4: a = ld_volatile_v4(line); break;
        case FOUR_VOLATILE_V4: a.x = four_loads<ld_volatile_v4, ld_volatile_v4>(line, 16); break;
        case THREE_V4_ACQUIRE_V4: a.x = four_loads<ld_volatile_v4, ld_acquire_v4>(line, 16); break;
        case FOUR_RELAXED_V4: a.x = four_loads<ld_relaxed_v4, ld_relaxed_v4>(line, 16); break;
        case FOUR_V4_FOUR_LINES: a.x = four_loads<ld_volatile_v4, ld_acquire_v4>(line, 64); break;
      }
      acc += a.x ^ a.y ^ a.z ^ a.w;
    }
    __syncwarp();
    uint64_t t1 = now_ns();
    if (lane == 0) ns[r] = t1 - t0;
  }
  if (lane == 0) *sink = acc;
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20000;
  if (reps < 100) {
    fprintf(stderr, "usage: %s [reps >= 100]\n", argv[0]);
    return 2;
  }
  char* host;
  CHECK_CUDA(cudaHostAlloc((void**)&host, 64 * 256, cudaHostAllocMapped));
  for (int i = 0; i < 64 * 256; i++) host[i] = (char)i;
  char* dev_host;
  CHECK_CUDA(cudaHostGetDevicePointer((void**)&dev_host, host, 0));
  uint64_t *ns, *sink;
  CHECK_CUDA(cudaMalloc(&ns, (size_t)reps * sizeof *ns));
  CHECK_CUDA(cudaMalloc(&sink, sizeof *sink));
  std::vector<uint64_t> t(reps);
  printf("# one thread (or 4 lanes) loading 64 B of pinned mapped host memory, %d reps, ns\n", reps);
  printf("# %-44s %8s %8s\n", "form", "median", "p90");
  for (int round = 0; round < 2; round++)
    for (int f = 0; f < FORMS; f++) {
      read_cost<<<1, 32>>>(dev_host, f, reps, ns, sink);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(t.data(), ns, (size_t)reps * sizeof *ns, cudaMemcpyDeviceToHost));
      std::sort(t.begin(), t.end());
      printf("  %-44s %8llu %8llu%s\n", form_names[f], (unsigned long long)t[reps / 2],
             (unsigned long long)t[reps * 9 / 10], round == 0 ? "" : " (round 2)");
    }
  CHECK_CUDA(cudaFree(ns));
  CHECK_CUDA(cudaFree(sink));
  CHECK_CUDA(cudaFreeHost(host));
  return 0;
}
