/*
 * Ring all-gather.  Every rank contributes a block; a channel moves its share of every block, one
 * chunk per iteration, in nranks steps: copy the own block out and send it, then nranks-2 times
 * receive a block, keep it and pass it on, then receive the last one.
 *
 * All-gather-v is the same ring with blocks of their own sizes and places (the static context's
 * blocks table): each block is cut into chunks by its own count, and an iteration past a block's
 * last chunk moves nothing of it.  The rank that sends a chunk and the rank that receives it
 * compute the same cut, so both skip the same chunks and the connectors stay in step.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_ALL_GATHER_H
#define DFCCL_KERNEL_ALL_GATHER_H

#include "partition.h"
#include "primitives.h"

DF_FN df_prim_result df_all_gather_step(df_run* run, uint32_t s, const df_span* sp, uint64_t iteration) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks, r = st->rank;
  uint32_t block = (r + n - s) % n; /* step s handles the block that started s hops back */
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  uint64_t displ = (uint64_t)block * st->count;
  df_span own;
  if (st->blocks != NULL) { /* all-gather-v: this block's own cut */
    if (!df_variable_block(st, (uint32_t)df_bid(run->blk), block, iteration, &own, &displ)) return DF_PRIM_DONE;
    sp = &own;
  }
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  char* dst = (char*)d->recvbuff + (displ + offset) * esize;
  if (s == 0) return df_copy_send(run, (const char*)d->sendbuff + offset * esize, dst, nelem);
  if (s < n - 1) return df_recv_copy_send(run, dst, nelem);
  return df_recv(run, dst, nelem);
}

#endif /* DFCCL_KERNEL_ALL_GATHER_H */
