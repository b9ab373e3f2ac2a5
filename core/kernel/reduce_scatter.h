/*
 * Ring reduce-scatter.  Every rank ends with the reduction of one block of `count` elements
 * (block r on ring position r); a channel moves its share of the blocks, one chunk per
 * iteration, in nranks steps: send a block, nranks-2 times receive a partial block, add the own
 * contribution and pass it on, then receive the own block's partial and store the result.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_REDUCE_SCATTER_H
#define DFCCL_KERNEL_REDUCE_SCATTER_H

#include "partition.h"
#include "primitives.h"

DF_FN df_prim_result df_reduce_scatter_step(df_run* run, uint32_t s, const df_span* sp, uint64_t iteration) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks, r = st->rank;
  uint32_t block = (r + 2 * n - 1 - s) % n; /* reaches its owner after the last step */
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  const char* src = (const char*)d->sendbuff + (block * st->count + offset) * esize;
  if (s == 0) return df_send(run, src, nelem);
  if (s < n - 1) return df_recv_reduce_send(run, src, nelem);
  return df_recv_reduce_copy(run, src, (char*)d->recvbuff + offset * esize, nelem);
}

#endif /* DFCCL_KERNEL_REDUCE_SCATTER_H */
