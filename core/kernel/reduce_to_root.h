/*
 * Ring reduce to the root: the chunks flow along the ring ending at the root.  The rank after the
 * root sends its data, the ranks in between receive, add their own and pass on, the root
 * receives, adds its own and stores the result.  One primitive per chunk.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_REDUCE_TO_ROOT_H
#define DFCCL_KERNEL_REDUCE_TO_ROOT_H

#include "partition.h"
#include "primitives.h"

DF_FN df_prim_result df_reduce_to_root_step(df_run* run, const df_span* sp, uint64_t iteration) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks;
  uint32_t hop = (st->rank + 2 * n - 1 - (uint32_t)st->root) % n; /* the root is hop n-1 */
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  const char* src = (const char*)d->sendbuff + offset * esize;
  if (hop == 0) return df_send(run, src, nelem);
  if (hop < n - 1) return df_recv_reduce_send(run, src, nelem);
  return df_recv_reduce_copy(run, src, (char*)d->recvbuff + offset * esize, nelem);
}

#endif /* DFCCL_KERNEL_REDUCE_TO_ROOT_H */
