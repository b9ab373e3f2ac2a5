/*
 * What a read of local memory costs right after an acquire: whether the daemon's values in local
 * memory (df_block's fields before it read the special registers, and its spills) come back from
 * L1 or from L2 once an acquire has invalidated L1 (CCTL.IVALL after every ld.acquire in the SASS).
 *
 * One thread walks a chain of dependent steps; each step loads a word of device memory -- with
 * acquire or relaxed order at GPU scope -- and, by form, reads local memory at an index that
 * depends on it: a line only read (a field stored once), or a line stored before the load (a spill
 * and its reload across the acquire).  A shared-memory read stands beside them as what a read costs
 * that no acquire touches.  Each rep times 16 steps on %globaltimer; the table has medians and p90
 * of a step, in ns.  "acquire, then local" minus "acquire alone" is what a local read after an
 * acquire costs; next to "relaxed, then local" minus "relaxed alone" (an L1 hit) it tells whether
 * the acquire sent it to L2.
 *
 * Build:  nvcc -O3 -arch=sm_90 -o local_after_acquire benchmarks/local_after_acquire.cu
 *         (test/gpu/run.sh PART=stamps builds and runs it)
 * Run:    ./local_after_acquire [reps]      (default 20000)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ns_rows.h"

enum Form { ACQUIRE, ACQUIRE_LOCAL, ACQUIRE_SPILL, ACQUIRE_SHARED, RELAXED, RELAXED_LOCAL, FORMS };
static const char* const form_names[FORMS] = {"acquire alone",
                                              "acquire, then local (read only)",
                                              "acquire, then local (stored before it)",
                                              "acquire, then shared",
                                              "relaxed alone",
                                              "relaxed, then local (read only)"};

#define STEPS 16
#define LOCAL_WORDS 64

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t load(const uint32_t* p, bool acquire) {
  uint32_t v;
  if (acquire) asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  else asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/* `zeros`: device memory holding zeros, so every index below stays 0 -- but the compiler cannot
 * know it, and each step depends on the one before. */
template <int form>
__global__ void local_after_acquire(const uint32_t* zeros, int reps, uint64_t* ns) {
  volatile uint32_t local[LOCAL_WORDS]; /* volatile and indexed at run time: local memory */
  __shared__ volatile uint32_t shared[LOCAL_WORDS];
  for (int i = 0; i < LOCAL_WORDS; i++) {
    local[i] = 0;
    shared[i] = 0;
  }
  const bool acquire = form < RELAXED;
  uint32_t index = 0;
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = now_ns();
    for (int s = 0; s < STEPS; s++) {
      if (form == ACQUIRE_SPILL) local[(index + 1) % LOCAL_WORDS] = index; /* stored before, read after */
      uint32_t v = load(zeros + index, acquire);
      switch (form) {
        case ACQUIRE_LOCAL:
        case RELAXED_LOCAL: index = local[v % LOCAL_WORDS]; break;
        case ACQUIRE_SPILL: index = local[(v + 1) % LOCAL_WORDS] - index; break; /* 0 again */
        case ACQUIRE_SHARED: index = shared[v % LOCAL_WORDS]; break;
        default: index = v; break;
      }
    }
    ns[r] = (now_ns() - t0) / STEPS;
  }
  if (index != 0) ns[0] = ~0ull; /* never: keeps the chain alive */
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20000;
  if (reps < 100) {
    fprintf(stderr, "usage: %s [reps >= 100]\n", argv[0]);
    return 2;
  }
  uint32_t* zeros;
  uint64_t* ns;
  CHECK_CUDA(cudaMalloc(&zeros, 4096));
  CHECK_CUDA(cudaMemset(zeros, 0, 4096));
  CHECK_CUDA(cudaMalloc(&ns, (size_t)reps * sizeof *ns));
  printf("# a step: a load of device memory (GPU scope), then a read that depends on it; %d reps of %d steps, ns "
         "a step\n",
         reps, STEPS);
  print_ns_header("step");
  for (int round = 0; round < 2; round++)
    for (int f = 0; f < FORMS; f++) {
      switch (f) {
        case ACQUIRE: local_after_acquire<ACQUIRE><<<1, 1>>>(zeros, reps, ns); break;
        case ACQUIRE_LOCAL: local_after_acquire<ACQUIRE_LOCAL><<<1, 1>>>(zeros, reps, ns); break;
        case ACQUIRE_SPILL: local_after_acquire<ACQUIRE_SPILL><<<1, 1>>>(zeros, reps, ns); break;
        case ACQUIRE_SHARED: local_after_acquire<ACQUIRE_SHARED><<<1, 1>>>(zeros, reps, ns); break;
        case RELAXED: local_after_acquire<RELAXED><<<1, 1>>>(zeros, reps, ns); break;
        default: local_after_acquire<RELAXED_LOCAL><<<1, 1>>>(zeros, reps, ns); break;
      }
      print_ns_row(ns, reps, form_names[f], round);
    }
  CHECK_CUDA(cudaFree(ns));
  CHECK_CUDA(cudaFree(zeros));
  return 0;
}
