/*
 * What one thread's loads of mapped host memory cost, by the form of the loads: how daemon block 0
 * can read an SQE (queue/sq.h) in as few trips over the bus as possible.  One block; its leader
 * (or, for the warp's form, lanes 0-3 of warp 0) loads a 64-byte entry from pinned, mapped host
 * memory, REPS times, each timed on %globaltimer; the median and p90 in ns are printed per form.
 *
 * The second table: can looks at the same entry be in flight together?  A first load, then, GAP ns
 * later, a second one -- by the same thread, of the same memory line or another one; by another
 * warp of the block; by another block (another SM) -- and how long the second took from its issue
 * to its use.  1.3 us: the two went over the bus together; more: the second waited for the first.
 * Also: after a first load that is an acquire; and how long a fence.acq_rel.sys takes once the
 * first load is used while the second is still in flight (gap ns behind it: the acquire a watch of
 * several looks would need after the look that found its entry).
 *
 * Build:  nvcc -O3 -arch=sm_90 -o host_read_cost benchmarks/host_read_cost.cu
 *         (test/gpu/run.sh PART=stamps builds and runs it)
 * Run:    ./host_read_cost [reps] [gap_ns]      (default 20000, 600)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ns_rows.h"

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

enum Stagger {
  SAME_THREAD_SAME_LINE,  /* one thread, the same 64-byte line twice                      */
  SAME_THREAD_OTHER_LINE, /* one thread, another line                                      */
  OTHER_WARP_SAME_LINE,   /* lane 0 of warp 1, the line warp 0 loads                        */
  OTHER_BLOCK_SAME_LINE,  /* thread 0 of block 1, the line block 0 loads                    */
  AFTER_ACQUIRE,          /* one thread, another line, the first load an acquire            */
  FENCE_AFTER_FIRST,      /* one thread, another line; then, once the first is used, a
                           * fence.acq_rel.sys: how long the fence took (ns[r])             */
  STAGGERS
};
static const char* const stagger_names[STAGGERS] = {
    "same thread, same line",   "same thread, another line",     "another warp, same line",
    "another block, same line", "same thread, after an acquire", "fence.acq_rel.sys, 2nd in flight"};

__device__ __forceinline__ void spin_until(uint64_t t) {
  while (now_ns() < t) {
  }
}
/* Waits for v (the load behind it) and folds it into acc: an asm statement, so that it stays
 * between the timer reads around it. */
__device__ __forceinline__ void use(uint32_t* acc, uint4 v) {
  asm volatile("xor.b32 %0, %0, %1;" : "+r"(*acc) : "r"(v.x ^ v.y ^ v.z ^ v.w));
}

/* Rep r: the first load at t0 (block 0's thread 0), the second at t0 + gap by the thread the form
 * names, which stores how long that second load took until its use in ns[r].  Block 0 hands t0 to
 * block 1 through `start` (device memory: not the bus being measured). */
__global__ void stagger_cost(const char* host, int form, int reps, uint64_t gap, uint64_t* ns, volatile uint64_t* start,
                             uint64_t* sink) {
  uint32_t acc = 0;
  bool first = blockIdx.x == 0 && threadIdx.x == 0;
  bool second = form == OTHER_WARP_SAME_LINE    ? blockIdx.x == 0 && threadIdx.x == 32
                : form == OTHER_BLOCK_SAME_LINE ? blockIdx.x == 1 && threadIdx.x == 0
                                                : first;
  for (int r = 0; r < reps; r++) {
    const char* line = host + (size_t)(r % 64) * 256;
    bool other_line = form == SAME_THREAD_OTHER_LINE || form == AFTER_ACQUIRE || form == FENCE_AFTER_FIRST;
    const char* other = other_line ? line + 64 : line;
    uint64_t t0 = 0;
    if (form == OTHER_BLOCK_SAME_LINE) {
      if (first) {
        t0 = now_ns() + 2000; /* block 1 sees it within 2 us */
        *start = t0;
        spin_until(t0);
      } else if (second) {
        while ((t0 = *start) == 0) {
        }
        *start = 0;
      }
    } else {
      t0 = now_ns();
      if (form == OTHER_WARP_SAME_LINE) {
        if (threadIdx.x == 0) *start = t0;
        __syncthreads();
        t0 = *start;
      }
    }
    uint4 a = make_uint4(0, 0, 0, 0);
    if (first) a = form == AFTER_ACQUIRE ? ld_acquire_v4(line) : ld_volatile_v4(line);
    if (form == FENCE_AFTER_FIRST) {
      if (first) {
        spin_until(t0 + gap);
        uint4 b = ld_volatile_v4(other);
        use(&acc, a);
        uint64_t t1 = now_ns();
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        ns[r] = now_ns() - t1;
        use(&acc, b);
      }
    } else if (second) {
      spin_until(t0 + gap);
      uint64_t t1 = now_ns();
      uint4 b = ld_volatile_v4(other);
      use(&acc, b);
      ns[r] = now_ns() - t1;
    }
    if (first) use(&acc, a);
    __syncthreads();
    if (form == OTHER_BLOCK_SAME_LINE) spin_until(t0 + 6000); /* both blocks done with rep r */
  }
  if (first) *sink = acc;
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
  long gap = argc > 2 ? atol(argv[2]) : 600;
  if (reps < 100 || gap < 0 || gap > 100000) {
    fprintf(stderr, "usage: %s [reps >= 100] [gap_ns 0-100000]\n", argv[0]);
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
  printf("# one thread (or 4 lanes) loading 64 B of pinned mapped host memory, %d reps, ns\n", reps);
  print_ns_header("form");
  for (int round = 0; round < 2; round++)
    for (int f = 0; f < FORMS; f++) {
      read_cost<<<1, 32>>>(dev_host, f, reps, ns, sink);
      print_ns_row(ns, reps, form_names[f], round);
    }
  uint64_t* start;
  CHECK_CUDA(cudaMalloc(&start, sizeof *start));
  CHECK_CUDA(cudaMemset(start, 0, sizeof *start));
  printf("# a second load %ld ns after the first: from its issue to its use, ns\n", gap);
  print_ns_header("second load by");
  for (int round = 0; round < 2; round++)
    for (int f = 0; f < STAGGERS; f++) {
      stagger_cost<<<f == OTHER_BLOCK_SAME_LINE ? 2 : 1, 64>>>(dev_host, f, reps, (uint64_t)gap, ns, start, sink);
      print_ns_row(ns, reps, stagger_names[f], round);
    }
  CHECK_CUDA(cudaFree(start));
  CHECK_CUDA(cudaFree(ns));
  CHECK_CUDA(cudaFree(sink));
  CHECK_CUDA(cudaFreeHost(host));
  return 0;
}
