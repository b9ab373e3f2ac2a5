/*
 * What a small run's two crossings of the bus cost, without the daemon: a host thread and one GPU
 * thread play ping-pong through pinned, mapped host memory -- the host stores a submission word
 * (the SQE), the GPU thread looks for it, answers with a fence and a store of a completion word (the
 * CQE), the host polls for that, waits HOST_NS (the host's own part between a completion and the
 * next submission: ~1.1 us for a small all-reduce, docs/performance.md) and submits again.  The host
 * times each round trip, submission to completion seen; medians and p90 in ns.
 *
 * The GPU thread's forms: how block 0 comes back to the SQ after a CQE.
 *   looks only                  it looks back to back;
 *   a request read a look       each look is followed by a load of another host word (df_decide's
 *                               read of the host's quit request, every round);
 *   the daemon's way            after the CQE: a request read, one look, a request read, then
 *                               looks each followed by a request read -- a completing round's
 *                               df_decide, the next round's look (not idle: it follows a
 *                               completion), its df_decide, then idle rounds.
 * If the last form costs a trip or two more than the first, those trips -- not how often block 0
 * looks -- are what stands between a CQE and the next SQE.
 *
 * The host's wait for the answer, each form three ways:
 *   spins       it polls the word back to back;
 *   yields      it calls sched_yield() between polls, as DFCCL's waiters did before the thirty-eighth
 *               session (dfcclWaitPause): an answer that lands during a yield waits for it;
 *   clears      it spins, and stores 0 into the completion word once it has read the answer, as
 *               DFCCL's reap empties a CQ slot (queue/cq.h df_cq_take): the GPU's next completion
 *               then lands on a line the host's cache holds modified.
 * The first line gives what one sched_yield() costs on this machine, alone.
 *
 * Build:  nvcc -O3 -arch=sm_90 -o crossing_cost benchmarks/crossing_cost.cu
 *         (test/gpu/run.sh PART=stamps builds and runs it)
 * Run:    ./crossing_cost [reps] [host_ns ...]      (default 20000, then 0 1100 2000)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ns_rows.h"

enum Form { LOOKS_ONLY, REQUEST_EACH_LOOK, DAEMON_WAY, FORMS };
static const char* const form_names[FORMS] = {"looks only", "a request read a look", "the daemon's way"};
enum HostWait { SPINS, YIELDS, CLEARS, HOST_WAITS };
static const char* const host_wait_names[HOST_WAITS] = {"spins", "yields", "clears"};

/* The words, each on a 64-byte line of its own. */
struct Words {
  uint64_t sq[8];
  uint64_t cq[8];
  uint64_t request[8]; /* never set: read for its trip */
};

__device__ __forceinline__ uint64_t load_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* A trip to host memory that the thread waits for (the value decides a branch). */
__device__ __forceinline__ bool requested(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v != 0;
}

__global__ void answer(Words* w, int form, int reps, uint64_t* sink) {
  if (threadIdx.x != 0) return;
  uint64_t quits = 0;
  for (int r = 1; r <= reps; r++) {
    bool seen = false;
    if (form == DAEMON_WAY && r > 1) { /* after the last CQE: the completing round's decision ... */
      quits += requested(w->request);
      seen = load_acquire(w->sq) == (uint64_t)r; /* ... the next round's one look ... */
      if (!seen) quits += requested(w->request); /* ... and its decision */
    }
    while (!seen) {
      seen = load_acquire(w->sq) == (uint64_t)r;
      if (!seen && form != LOOKS_ONLY) quits += requested(w->request);
    }
    asm volatile("fence.sc.sys;" ::: "memory"); /* the run's results before its CQE */
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(w->cq), "l"((uint64_t)r) : "memory");
  }
  *sink = quits;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20000;
  if (reps < 100) {
    fprintf(stderr, "usage: %s [reps >= 100] [host_ns ...]\n", argv[0]);
    return 2;
  }
  std::vector<long> host_ns;
  for (int i = 2; i < argc; i++) host_ns.push_back(atol(argv[i]));
  if (host_ns.empty()) host_ns = {0, 1100, 2000};
  Words *w, *dev_w;
  uint64_t* sink;
  CHECK_CUDA(cudaHostAlloc((void**)&w, sizeof *w, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer((void**)&dev_w, w, 0));
  CHECK_CUDA(cudaMalloc(&sink, sizeof *sink));
  std::vector<uint64_t> t(reps);
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = now_ns();
    sched_yield();
    t[r] = now_ns() - t0;
  }
  ns_stats yield = ns_stats_of(t);
  printf("# sched_yield() alone: median %llu ns, p90 %llu ns\n", yield.median, yield.p90);
  printf("# host -> GPU -> host round trips through pinned host memory, %d reps, ns\n", reps);
  printf("# %-24s %-6s %8s %8s %8s\n", "GPU thread's form", "host", "host_ns", "median", "p90");
  for (long pause : host_ns)
    for (int f = 0; f < FORMS; f++)
      for (int how = 0; how < HOST_WAITS; how++) {
        __atomic_store_n(&w->sq[0], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&w->cq[0], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&w->request[0], 0, __ATOMIC_RELAXED);
        answer<<<1, 32>>>(dev_w, f, reps, sink);
        CHECK_CUDA(cudaGetLastError());
        for (int r = 1; r <= reps; r++) {
          uint64_t t0 = now_ns();
          __atomic_store_n(&w->sq[0], (uint64_t)r, __ATOMIC_RELEASE);
          uint64_t t1;
          while (__atomic_load_n(&w->cq[0], __ATOMIC_ACQUIRE) != (uint64_t)r) {
            if ((t1 = now_ns()) - t0 > 2000000000ull) { /* the kernel never answered: say why */
              fprintf(stderr, "%s: no answer to submission %d from the GPU in 2 s\n", argv[0], r);
              CHECK_CUDA(cudaStreamQuery(0)); /* the kernel's error, if it failed */
              return 2;
            }
            if (how == YIELDS) sched_yield();
          }
          t1 = now_ns();
          t[r - 1] = t1 - t0;
          if (how == CLEARS) __atomic_store_n(&w->cq[0], 0, __ATOMIC_RELAXED);
          while (now_ns() - t1 < (uint64_t)pause) {
          }
        }
        CHECK_CUDA(cudaDeviceSynchronize());
        ns_stats s = ns_stats_of(t);
        printf("  %-24s %-6s %8ld %8llu %8llu\n", form_names[f], host_wait_names[how], pause, s.median, s.p90);
      }
  CHECK_CUDA(cudaFree(sink));
  CHECK_CUDA(cudaFreeHost(w));
  return 0;
}
