/*
 * Ring reduce-scatter.  Every rank ends with the reduction of one block of `count` elements
 * (block r on ring position r); a channel moves its share of the blocks, one chunk per
 * iteration, in nranks steps: send a block, nranks-2 times receive a partial block, add the own
 * contribution and pass it on, then receive the own block's partial and store the result.
 *
 * Reduce-scatter-v is the same ring with blocks of their own sizes (the static context's blocks
 * table, the displacements packed: block i after blocks 0..i-1 in sendbuff): each block is cut by
 * its own count, and a chunk past a block's end is skipped by its sender and its receiver alike.
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
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  uint64_t displ = (uint64_t)block * st->count;
  df_span own;
  if (st->blocks != NULL) { /* reduce-scatter-v: this block's own cut */
    if (!df_variable_block(st, (uint32_t)df_bid(run->blk), block, iteration, &own, &displ)) return DF_PRIM_DONE;
    sp = &own;
  }
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  const char* src = (const char*)d->sendbuff + (displ + offset) * esize;
  if (s == 0) return df_send(run, src, nelem);
  if (s < n - 1) return df_recv_reduce_send(run, src, nelem);
  return df_recv_reduce_copy(run, src, (char*)d->recvbuff + offset * esize, nelem);
}

#endif /* DFCCL_KERNEL_REDUCE_SCATTER_H */
