/*
 * Completion queue, host side: the poller takes each block's new entries and hands its head back.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <string.h>

#include "../internal.h"

/* One mapped region: the host's heads, then the rings. */
static size_t heads_bytes(void) { return (size_t)DF_MAX_BLOCKS * DF_CQ_STRIDE * sizeof(uint64_t); }

dfcclResult_t df_cq_host_init(df_ctx* ctx, df_cq_host* cq, uint32_t ring) {
  size_t bytes = heads_bytes() + (size_t)DF_MAX_BLOCKS * ring * sizeof(uint64_t);
  void *host, *daemon;
  DF_CHECK(ctx->target->alloc_mapped(ctx, bytes, &host, &daemon));
  memset(host, 0, bytes);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  cq->region = host;
  cq->heads = host;
  cq->entries = (uint64_t*)((char*)host + heads_bytes());
  cq->ring = ring;
  memset(cq->taken, 0, sizeof cq->taken);
  cq->daemon.heads = daemon;
  cq->daemon.entries = (uint64_t*)((char*)daemon + heads_bytes());
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
    uint64_t head = cq->taken[b];
    uint64_t* ring = &cq->entries[(size_t)b * cq->ring];
    for (uint64_t cqe; (cqe = df_cq_take(ring, cq->ring, &head)) != 0; taken++) fn(arg, cqe);
    if (head == cq->taken[b]) continue;
    cq->taken[b] = head;
    /* The entries were emptied before the block may write them again. */
    __atomic_store_n(&cq->heads[(size_t)b * DF_CQ_STRIDE], head, __ATOMIC_RELEASE);
  }
  return taken;
}
