/*
 * Ring broadcast from the root: the chunks flow along the ring starting at the root, which sends
 * (and copies to its own output), the ranks in between receive, keep and pass on, the last one
 * receives.  One primitive per chunk.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_BROADCAST_H
#define DFCCL_KERNEL_BROADCAST_H

#include "partition.h"
#include "primitives.h"

DF_FN df_prim_result df_broadcast_step(df_run* run, const df_span* sp, uint64_t iteration) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks;
  uint32_t hop = (st->rank + n - (uint32_t)st->root) % n; /* hops from the root */
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  char* dst = (char*)d->recvbuff + offset * esize;
  if (hop == 0) return df_copy_send(run, (const char*)d->sendbuff + offset * esize, dst, nelem);
  if (hop < n - 1) return df_recv_copy_send(run, dst, nelem);
  return df_recv(run, dst, nelem);
}

#endif /* DFCCL_KERNEL_BROADCAST_H */
