/*
 * Completion queue, host side: the poller takes each block's new entries and hands its head back.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <string.h>

#include "../internal.h"

/* One mapped region: the blocks' tails, the host's heads, then the rings. */
static size_t counters_bytes(void) { return (size_t)DF_MAX_BLOCKS * DF_CQ_STRIDE * sizeof(uint64_t); }

dfcclResult_t df_cq_host_init(df_ctx* ctx, df_cq_host* cq, uint32_t ring) {
  size_t bytes = 2 * counters_bytes() + (size_t)DF_MAX_BLOCKS * ring * sizeof(uint64_t);
  void *host, *daemon;
  DF_CHECK(ctx->target->alloc_mapped(ctx, bytes, &host, &daemon));
  memset(host, 0, bytes);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  cq->region = host;
  cq->tails = host;
  cq->heads = (uint64_t*)((char*)host + counters_bytes());
  cq->entries = (uint64_t*)((char*)host + 2 * counters_bytes());
  cq->ring = ring;
  memset(cq->taken, 0, sizeof cq->taken);
  cq->daemon.tails = daemon;
  cq->daemon.heads = (const uint64_t*)((char*)daemon + counters_bytes());
  cq->daemon.entries = (uint64_t*)((char*)daemon + 2 * counters_bytes());
  cq->daemon.ring = ring;
  return dfcclSuccess;
}

void df_cq_host_fini(df_ctx* ctx, df_cq_host* cq) {
  if (!cq->region) return;
  ctx->target->free_mapped(ctx, cq->region);
  cq->region = NULL;
}

uint32_t df_cq_host_reap(df_cq_host* cq, uint32_t blocks, void (*fn)(void* arg, uint64_t cqe), void* arg) {
  uint32_t taken = 0;
  if (blocks > DF_MAX_BLOCKS) blocks = DF_MAX_BLOCKS;
  for (uint32_t b = 0; b < blocks; b++) {
    uint64_t tail = __atomic_load_n(&cq->tails[(size_t)b * DF_CQ_STRIDE], __ATOMIC_ACQUIRE);
    uint64_t head = cq->taken[b];
    if (head == tail) continue;
    const uint64_t* ring = &cq->entries[(size_t)b * cq->ring];
    for (; head != tail; head++) {
      fn(arg, __atomic_load_n(&ring[head & (cq->ring - 1)], __ATOMIC_RELAXED));
      taken++;
    }
    cq->taken[b] = head;
    /* The entries were read before the block may write over them. */
    __atomic_store_n(&cq->heads[(size_t)b * DF_CQ_STRIDE], head, __ATOMIC_RELEASE);
  }
  return taken;
}
