/*
 * All-reduce by gathering (DF_COLL_GATHER_REDUCE): every rank's whole input goes around the ring,
 * one FIFO slot per channel, and each rank reduces the n inputs itself -- n-1 hops in a chain where
 * the ring all-reduce has 2(n-1), for a collective whose time is its hops.  Each channel (block)
 * does this for its share of the elements (df_channel_share), as the ring's channels split theirs.
 * One iteration of n steps on ring position r:
 *   step 0          send the own input;
 *   step s < n-1    the input of position r-s arrives (s-1 slots past the next unconsumed one):
 *                   pass it on, keep it (DF_PEEK);
 *   step n-1        the last input (position r+1) arrives: reduce all n in position order 0, 1, ...,
 *                   n-1 into recvbuff, then free the n-1 slots at once.
 * Every rank reduces in the same order with the same operations, so every rank's result is the
 * same bits, as the ring's is.  The n-1 kept slots fit the FIFO and a channel's share fits a slot:
 * the host sets the flag only then (df_choose_all_reduce, register.c).  Shares of at most
 * DFCCL_LL_BYTES move as low-latency lines (low_latency.h, DF_COLL_LL) on the links that have
 * them, each received input unpacked into the Simple slot of its step, where the reduction reads
 * it.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_ALL_REDUCE_GATHERED_H
#define DFCCL_KERNEL_ALL_REDUCE_GATHERED_H

#include "primitives.h"

DF_FN bool df_all_reduce_gathers(const df_coll_static* st) {
  return st->kind == DF_COLL_ALL_REDUCE && (st->flags & DF_COLL_GATHER_REDUCE);
}

/* All threads: the last step, once its slot is there; true (on every thread) when a low-latency
 * line of it did not come in time (only that slot's Simple slot was written, nothing consumed: the
 * step is done again).  Input of ring position q (!= r) is the kept slot (r - q + n) % n - 1 past
 * the next unconsumed one.  Rank r's own input is read before its recvbuff is written (in place
 * they are one buffer): ranks after position 0 sum positions 0..r-1 into the slot of position 0
 * (theirs to write until they free it), then add their own into recvbuff, then the rest. */
DF_NOINLINE bool df_reduce_gathered(df_run* run, const void* own, void* dst, size_t nelem) {
  const df_coll_static* st = &run->ctx->stat;
  const df_links* l = &st->links;
  const df_block* b = run->blk;
  uint32_t n = st->nranks, r = st->rank;
  dfcclDataType_t dtype = (dfcclDataType_t)st->dtype;
  dfcclRedOp_t op = (dfcclRedOp_t)st->op;
  uint64_t first = l->consumed[df_bid(b)];
  const df_connector* from = &l->from_prev[df_bid(b)];
#define DF_GATHERED(q) df_slot_address(from, first + (r - (q) + n) % n - 1, l->slot_bytes)
  /* The last input (position r + 1) into its Simple slot first, where a low-latency slot brought it
   * (here rather than in a call of its own: each call costs the daemon kernel registers). */
  uint64_t last = first + n - 2;
  if (df_ll_receives(run) && df_ll_unpack_late(run, df_ll_slot(from, last, l->ll_slot_bytes), df_ll_flag(last),
                                               DF_GATHERED((r + 1) % n), nelem * df_dtype_bytes(dtype)))
    return true;
  if (r > 0) {
    char* acc = DF_GATHERED(0); /* the sum of positions 0..r-1 */
    for (uint32_t q = 1; q < r; q++) {
      df_reduce_copy(b, dtype, op, acc, DF_GATHERED(q), acc, NULL, nelem);
      df_block_sync();
    }
    df_reduce_copy(b, dtype, op, acc, own, dst, NULL, nelem);
  } else {
    df_reduce_copy(b, dtype, op, own, DF_GATHERED(1), dst, NULL, nelem);
  }
  for (uint32_t q = r > 0 ? r + 1 : 2; q < n; q++) {
    df_block_sync();
    df_reduce_copy(b, dtype, op, dst, DF_GATHERED(q), dst, NULL, nelem);
  }
#undef DF_GATHERED
  return false;
}

/* Step s on this block's share of the elements: gather_share of them (df_channel_share, computed
 * by the host, so that the daemon divides nothing on the run's path). */
DF_FN df_prim_result df_all_reduce_gathered_step(df_run* run, uint32_t s) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  uint32_t n = st->nranks;
  uint64_t begin = (uint64_t)df_bid(run->blk) * st->gather_share;
  if (begin >= st->count) return DF_PRIM_DONE; /* a channel without a share: both sides compute alike */
  size_t nelem = st->count - begin < st->gather_share ? st->count - begin : st->gather_share;
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  const char* own = (const char*)d->sendbuff + begin * esize;
  if (s == 0) return df_prim(run, DF_SEND | DF_LL, own, NULL, nelem);
  run->ahead = s - 1;
  if (s < n - 1) {
    df_prim_result r = df_prim(run, DF_RECV | DF_SEND | DF_PEEK | DF_LL, NULL, NULL, nelem);
    run->ahead = 0;
    return r;
  }
  df_block_shared* sh = run->sh;
  if (df_is_leader(run->blk)) {
    df_step_waits w;
    sh->go = (uint32_t)df_ready(run, DF_RECV, &w);
  }
  run->ahead = 0;
  df_block_sync();
  if (sh->go != DF_PRIM_DONE) return (df_prim_result)sh->go;
  if (df_reduce_gathered(run, own, (char*)d->recvbuff + begin * esize, nelem)) return DF_PRIM_BLOCKED;
  df_block_sync(); /* every thread is done with the kept slots before they are freed */
  if (df_is_leader(run->blk)) df_consume_last(run, n - 1); /* the run's last step: credited at its completion */
  run->progressed = true;
  return DF_PRIM_DONE;
}

#endif /* DFCCL_KERNEL_ALL_REDUCE_GATHERED_H */
