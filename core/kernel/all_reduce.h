/*
 * Ring all-reduce, resumable at any primitive.
 *
 * A block (channel) owns a contiguous range of the buffer.  Each loop iteration handles
 * nranks chunks of one FIFO slot each: nranks-1 steps of reduce-scatter, then nranks-1 steps of
 * all-gather, 2*nranks-1 primitives in all (collectives.h runs the loop and resumes it).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_ALL_REDUCE_H
#define DFCCL_KERNEL_ALL_REDUCE_H

#include "partition.h"
#include "primitives.h"

/* Step s of an iteration on ring position r of n: which chunk, and which primitive. */
DF_FN df_prim_result df_all_reduce_step(df_run* run, uint32_t s, const df_chunking* ch, uint64_t iteration) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks, r = st->rank;
  uint32_t chunk;
  if (s == 0) chunk = (r + n - 1) % n;                     /* send own chunk                  */
  else if (s < n - 1) chunk = (r + n - 1 - s) % n;         /* receive, reduce, pass on        */
  else if (s == n - 1) chunk = r;                          /* fully reduced here              */
  else if (s < 2 * n - 2) chunk = (r + 2 * n - 1 - s) % n; /* pass the results on   */
  else chunk = (r + 1) % n;                                /* last one arrives                */

  uint64_t offset, nelem;
  df_chunk_range(ch, iteration, chunk, &offset, &nelem);
  if (nelem == 0) return DF_PRIM_DONE; /* both sides compute the same sizes: nothing to move */

  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  const char* src = (const char*)d->sendbuff + offset * esize;
  char* dst = (char*)d->recvbuff + offset * esize;
  if (s == 0) return df_send(run, src, nelem);
  if (s < n - 1) return df_recv_reduce_send(run, src, nelem);
  if (s == n - 1) return df_recv_reduce_copy_send(run, src, dst, nelem);
  if (s < 2 * n - 2) return df_recv_copy_send(run, dst, nelem);
  return df_recv(run, dst, nelem);
}

#endif /* DFCCL_KERNEL_ALL_REDUCE_H */
