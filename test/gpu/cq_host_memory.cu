/*
 * The completion queue between a GPU and the host, under load: 32 blocks publish completions as
 * fast as they can while a host thread takes them.  Every completion must arrive exactly once.
 *
 *   ring  DFCCL's CQ (core/queue/cq.h): each block writes its own ring, one store per entry, the
 *         entry its own "valid" flag with its lap's parity; the host takes the entries of its
 *         head's lap, never writes one, and stores its head.  Nothing is read-modify-written across
 *         the bus.
 *   cas   the twin, the CQ DFCCL had before: one array of slots, a block takes a free slot with a
 *         compare-and-swap of the GPU, the host frees it with a plain store.  CUDA does not make a
 *         GPU's atomics on mapped host memory atomic with respect to the host; a run that completed
 *         twice under four processes time-slicing one H100 was traced to this queue.  This mode
 *         reports what it sees (duplicates, losses, writers that do not end); it is never judged.
 *
 * Usage: cq_host_memory [ring|cas|both] [completions per block] (default: both, 20000)
 * Exit status 0 when the ring mode saw every completion exactly once, in each block's order.  The
 * host side here follows df_cq_host_reap (core/queue/cq_host.c, which the host-target unit test
 * test_queues exercises with writer threads): the point is the GPU writer against a host reader.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "queue/cq.h"

#define CHECK_CUDA(call)                                                                              \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "%s failed: %s at %s:%d\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      exit(2);                                                                                        \
    }                                                                                                 \
  } while (0)

static const uint32_t kBlocks = 32;
static const uint32_t kCasSlots = 256; /* the old default DFCCL_CQ_SLOTS */
static const uint32_t kRing = 8;       /* small: blocks often find their ring full */
static const uint64_t kFree = UINT64_MAX;

/* ---- the twin: slots taken by compare-and-swap, as DFCCL's CQ was ---- */
__global__ void cas_writer(uint64_t* slots, uint32_t per_block) {
  if (threadIdx.x != 0) return;
  uint32_t hint = blockIdx.x;
  for (uint32_t i = 0; i < per_block; i++) {
    uint64_t cqe = ((uint64_t)i << 32) | blockIdx.x;
    for (bool done = false; !done;) {
      for (uint32_t k = 0; k < kCasSlots && !done; k++) {
        uint32_t s = (hint + k) % kCasSlots;
        if (atomicCAS((unsigned long long*)&slots[s], (unsigned long long)kFree, (unsigned long long)cqe) == kFree) {
          hint = s + 1;
          done = true;
        }
      }
    }
  }
}

/* ---- DFCCL's CQ ---- */
__global__ void ring_writer(df_cq cq, uint32_t per_block) {
  if (threadIdx.x != 0) return;
  uint64_t tail = 0, head_seen = 0;
  for (uint32_t i = 0; i < per_block; i++) {
    uint64_t cqe = df_cqe_pack(blockIdx.x, i, 0);
    while (!df_cq_try_write(cq, blockIdx.x, &tail, &head_seen, cqe)) {
    }
  }
}

struct Tally {
  std::vector<uint32_t> seen;
  uint64_t total = 0, duplicates = 0, garbage = 0, out_of_order = 0;
  std::vector<uint32_t> next;
  explicit Tally(uint32_t per_block) : seen((size_t)kBlocks * per_block), next(kBlocks) {}
  void take(uint64_t cqe, uint32_t per_block, bool ordered) {
    uint32_t b = (uint32_t)cqe & 0xffffffu,
             i = (uint32_t)(cqe >> 32); /* df_cqe_coll, df_cqe_epoch (device functions) */
    if (b >= kBlocks || i >= per_block) {
      garbage++;
      return;
    }
    if (seen[(size_t)b * per_block + i]++) duplicates++;
    if (ordered && i != next[b]) out_of_order++;
    next[b] = i + 1;
    total++;
  }
};

static bool report(const char* mode, const Tally& t, uint32_t per_block, double seconds, bool ended) {
  uint64_t want = (uint64_t)kBlocks * per_block, lost = 0;
  for (uint32_t v : t.seen) lost += v == 0;
  printf("%s: %llu completions from %u blocks in %.2f s: %llu duplicated, %llu lost, %llu garbage, %llu out of "
         "order%s\n",
         mode, (unsigned long long)want, kBlocks, seconds, (unsigned long long)t.duplicates, (unsigned long long)lost,
         (unsigned long long)t.garbage, (unsigned long long)t.out_of_order,
         ended ? "" : " (the writers did not finish)");
  return ended && t.duplicates == 0 && lost == 0 && t.garbage == 0 && t.out_of_order == 0;
}

static bool run_cas(uint32_t per_block) {
  uint64_t* host;
  CHECK_CUDA(cudaHostAlloc((void**)&host, kCasSlots * sizeof(uint64_t), cudaHostAllocMapped));
  for (uint32_t s = 0; s < kCasSlots; s++) host[s] = kFree;
  uint64_t* dev;
  CHECK_CUDA(cudaHostGetDevicePointer((void**)&dev, host, 0));
  Tally t(per_block);
  auto start = std::chrono::steady_clock::now();
  cas_writer<<<kBlocks, 32>>>(dev, per_block);
  CHECK_CUDA(cudaGetLastError());
  bool ended = false;
  for (;;) {
    for (uint32_t s = 0; s < kCasSlots; s++) {
      uint64_t v = __atomic_load_n(&host[s], __ATOMIC_ACQUIRE);
      if (v == kFree) continue;
      __atomic_store_n(&host[s], kFree, __ATOMIC_RELEASE);
      t.take(v, per_block, false);
    }
    if (ended) break; /* the sweep after the writers ended */
    if (cudaStreamQuery(0) == cudaSuccess) ended = true;
    else if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 30) break;
  }
  bool ok = report("cas ", t, per_block,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), ended);
  if (!ended) printf("cas : the writers did not end within 30 s; leaving the process to end them\n");
  else CHECK_CUDA(cudaFreeHost(host));
  return ok;
}

static bool run_ring(uint32_t per_block) {
  size_t counters = (size_t)kBlocks * DF_CQ_STRIDE, bytes = (counters + (size_t)kBlocks * kRing) * sizeof(uint64_t);
  uint64_t *host, *dev;
  CHECK_CUDA(cudaHostAlloc((void**)&host, bytes, cudaHostAllocMapped));
  memset(host, 0, bytes);
  CHECK_CUDA(cudaHostGetDevicePointer((void**)&dev, host, 0));
  uint64_t *heads = host, *entries = host + counters;
  df_cq cq;
  cq.heads = dev;
  cq.entries = dev + counters;
  cq.ring = kRing;
  Tally t(per_block);
  std::vector<uint64_t> taken(kBlocks, 0);
  auto start = std::chrono::steady_clock::now();
  ring_writer<<<kBlocks, 32>>>(cq, per_block);
  CHECK_CUDA(cudaGetLastError());
  bool ended = false;
  for (;;) {
    for (uint32_t b = 0; b < kBlocks; b++) { /* as df_cq_host_reap */
      for (uint64_t cqe; (cqe = df_cq_take(&entries[(size_t)b * kRing], kRing, &taken[b])) != 0;)
        t.take(cqe, per_block, true);
      __atomic_store_n(&heads[(size_t)b * DF_CQ_STRIDE], taken[b], __ATOMIC_RELEASE);
    }
    if (ended) break; /* the sweep after the writers ended */
    if (cudaStreamQuery(0) == cudaSuccess) ended = true;
    else if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 30) break;
  }
  bool ok = report("ring", t, per_block,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), ended);
  if (ended) CHECK_CUDA(cudaFreeHost(host));
  return ok;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "both";
  char* end = nullptr;
  long per_block = argc > 2 ? strtol(argv[2], &end, 10) : 20000;
  bool both = strcmp(mode, "both") == 0;
  if ((!both && strcmp(mode, "ring") != 0 && strcmp(mode, "cas") != 0) || per_block < 1 || per_block > 1000000 ||
      (end && *end)) {
    fprintf(stderr, "usage: cq_host_memory [ring|cas|both] [completions per block, 1..1000000]\n");
    return 2;
  }
  CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceMapHost));
  int native = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0));
  printf("host-native atomics from the GPU: %s\n", native ? "yes" : "no");
  bool ok = true;
  if (both || strcmp(mode, "ring") == 0) ok = run_ring((uint32_t)per_block) && ok;
  if (both || strcmp(mode, "cas") == 0) (void)run_cas((uint32_t)per_block); /* the twin: reported, not judged */
  printf("%s\n", ok ? "PASS: every completion of DFCCL's CQ arrived once, in its block's order" : "FAIL");
  return ok ? 0 : 1;
}
