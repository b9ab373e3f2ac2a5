/*
 * Ring all-to-all.  Rank r's block d (of `count` elements, at d x count in sendbuff) goes to rank d,
 * which keeps it as block r of recvbuff.  The ring has one connector each way, so a block travels
 * k = (d - r) mod n hops: it is sent, forwarded k-1 times and received.  A channel moves its share
 * of every block, one chunk per iteration, as flows grouped by distance -- all blocks that travel
 * one hop, then all that travel two, ... -- and every rank runs the same steps:
 *
 *   step 0              copy the own block (r -> r) locally;
 *   then for k = 1..n-1, k+1 steps t = 0..k:
 *     t = 0             send the own block for rank r+k;
 *     0 < t < k         receive the block that left rank r-t and pass it on;
 *     t = k             receive the block from rank r-k, keep it.
 *
 * What rank r sends at step t of distance k (the block that left r-t) is what its successor
 * receives at step t+1, so the successor's receives come in the order of the sends.  The ring
 * moves n(n-1)/2 blocks over each link where a direct exchange moves n-1: the price of using the
 * preemptible ring connectors that every collective has (2 ranks pay nothing).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_ALL_TO_ALL_H
#define DFCCL_KERNEL_ALL_TO_ALL_H

#include "partition.h"
#include "primitives.h"

/* Steps of one iteration: the local copy, then k+1 steps per distance k. */
DF_FN uint32_t df_all_to_all_steps(uint32_t n) { return 1 + (n - 1) * (n + 2) / 2; }

DF_FN df_prim_result df_all_to_all_step(df_run* run, uint32_t s, const df_span* sp, uint64_t iteration) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks, r = st->rank;
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  const char* send = (const char*)d->sendbuff + offset * esize;
  char* recv = (char*)d->recvbuff + offset * esize;
  uint64_t block = st->count * esize;
  if (s == 0) { /* not a primitive: nothing to wait for, and harmless to repeat */
    df_reduce_copy(run->blk, (dfcclDataType_t)st->dtype, dfcclSum, send + r * block, NULL, recv + r * block, NULL,
                   nelem);
    return DF_PRIM_DONE;
  }
  uint32_t k = 1, t = s - 1; /* step s is step t of distance k */
  while (t > k) t -= k + 1, k++;
  if (t == 0) return df_send(run, send + (uint64_t)((r + k) % n) * block, nelem);
  if (t < k) return df_recv_send(run, nelem);
  return df_recv(run, recv + (uint64_t)((r + n - k) % n) * block, nelem);
}

#endif /* DFCCL_KERNEL_ALL_TO_ALL_H */
