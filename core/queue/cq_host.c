/*
 * Completion queue, host side: the poller scans every slot, takes the value of each published
 * completion and frees the slot.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "../internal.h"

dfcclResult_t df_cq_host_init(df_ctx* ctx, df_cq_host* cq, uint32_t nslots) {
  void *host, *daemon;
  DF_CHECK(ctx->target->alloc_mapped(ctx, (size_t)nslots * sizeof(uint64_t), &host, &daemon));
  cq->host = host;
  cq->daemon = daemon;
  cq->nslots = nslots;
  for (uint32_t i = 0; i < nslots; i++) cq->host[i] = DF_CQE_FREE;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return dfcclSuccess;
}

void df_cq_host_fini(df_ctx* ctx, df_cq_host* cq) {
  if (!cq->host) return;
  ctx->target->free_mapped(ctx, cq->host);
  cq->host = NULL;
}

uint32_t df_cq_host_reap(df_cq_host* cq, void (*fn)(void* arg, uint64_t cqe), void* arg) {
  uint32_t taken = 0;
  for (uint32_t i = 0; i < cq->nslots; i++) {
    uint64_t v = __atomic_load_n(&cq->host[i], __ATOMIC_ACQUIRE);
    if (v == DF_CQE_FREE) continue;
    /* Only the poller frees slots and the daemon only fills free ones, so a plain store is safe. */
    __atomic_store_n(&cq->host[i], DF_CQE_FREE, __ATOMIC_RELEASE);
    fn(arg, v);
    taken++;
  }
  return taken;
}
