/*
 * Ring all-gather.  Every rank contributes a block of `count` elements; a channel moves its share
 * of every block, one chunk per iteration, in nranks steps: copy the own block out and send it,
 * then nranks-2 times receive a block, keep it and pass it on, then receive the last one.
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
  uint64_t offset, nelem;
  df_span_chunk(sp, iteration, &offset, &nelem);
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  char* dst = (char*)d->recvbuff + (block * st->count + offset) * esize;
  if (s == 0) return df_copy_send(run, (const char*)d->sendbuff + offset * esize, dst, nelem);
  if (s < n - 1) return df_recv_copy_send(run, dst, nelem);
  return df_recv(run, dst, nelem);
}

#endif /* DFCCL_KERNEL_ALL_GATHER_H */
