/*
 * What the fence before a run's completion costs, by its form: whether df_fence_system (membar.sys,
 * i.e. fence.sc.sys) could be the release fence fence.acq_rel.sys, which is all a release pattern
 * (the fence, then a strong store: the CQE) needs in the PTX memory model.
 *
 * One block of 256 threads repeats what daemon block 0 does at the end of a small run: every thread
 * stores 16 bytes of results to device memory, a block barrier, then the leader's fence -- timed on
 * %globaltimer -- and its store of a word of pinned, mapped host memory (the CQE).  The last rep's
 * host store comes before this rep's fence, as the last run's CQE does; the second table leaves the
 * host store out, to show what it costs the fence after it.  Medians and p90 in ns.
 *
 * Build:  nvcc -O3 -arch=sm_90 -o fence_cost benchmarks/fence_cost.cu
 *         (test/gpu/run.sh PART=stamps builds and runs it)
 * Run:    ./fence_cost [reps]      (default 20000)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ns_rows.h"

enum Form { NONE, SC_SYS, ACQ_REL_SYS, SC_GPU, ACQ_REL_GPU, FORMS };
static const char* const form_names[FORMS] = {"no fence", "fence.sc.sys (membar.sys)", "fence.acq_rel.sys",
                                              "fence.sc.gpu (membar.gl)", "fence.acq_rel.gpu"};

#define THREADS 256
#define RESULT_BYTES (THREADS * 16)

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void fence(int form) {
  switch (form) {
    case SC_SYS: asm volatile("fence.sc.sys;" ::: "memory"); break;
    case ACQ_REL_SYS: asm volatile("fence.acq_rel.sys;" ::: "memory"); break;
    case SC_GPU: asm volatile("fence.sc.gpu;" ::: "memory"); break;
    case ACQ_REL_GPU: asm volatile("fence.acq_rel.gpu;" ::: "memory"); break;
    default: break;
  }
}

__global__ void fence_cost(uint4* results, uint64_t* host_word, int form, bool host_store, int reps, uint64_t* ns) {
  for (int r = 0; r < reps; r++) {
    /* Fresh lines each rep, over 1 MiB: results a run wrote, not lines already in the L1. */
    uint4* out = results + (size_t)(r % 256) * THREADS;
    out[threadIdx.x] = make_uint4(r, r, r, r);
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t t0 = now_ns();
      fence(form);
      uint64_t t1 = now_ns();
      if (host_store) asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(host_word), "l"((uint64_t)r) : "memory");
      ns[r] = t1 - t0;
    }
    __syncthreads();
  }
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20000;
  if (reps < 100) {
    fprintf(stderr, "usage: %s [reps >= 100]\n", argv[0]);
    return 2;
  }
  uint64_t *host, *dev_host, *ns;
  uint4* results;
  CHECK_CUDA(cudaHostAlloc((void**)&host, 64, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer((void**)&dev_host, host, 0));
  CHECK_CUDA(cudaMalloc(&results, (size_t)256 * RESULT_BYTES));
  CHECK_CUDA(cudaMalloc(&ns, (size_t)reps * sizeof *ns));
  printf("# leader's fence after %d threads' 16-byte result stores and a barrier, %d reps, ns\n", THREADS, reps);
  for (int host_store = 1; host_store >= 0; host_store--) {
    printf("# %s\n", host_store ? "each rep ends with a store to host memory (the CQE)" : "no store to host memory");
    print_ns_header("fence");
    for (int round = 0; round < 2; round++)
      for (int f = 0; f < FORMS; f++) {
        fence_cost<<<1, THREADS>>>(results, dev_host, f, host_store, reps, ns);
        print_ns_row(ns, reps, form_names[f], round);
      }
  }
  CHECK_CUDA(cudaFree(ns));
  CHECK_CUDA(cudaFree(results));
  CHECK_CUDA(cudaFreeHost(host));
  return 0;
}
