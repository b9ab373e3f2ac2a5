/*
 * Runs a collective's share on this block as a resumable loop of (iteration, step): the dynamic
 * context holds where the last run stopped, so a preempted collective continues at the primitive
 * that could not start.  The algorithms only say what step s of an iteration is.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_COLLECTIVES_H
#define DFCCL_KERNEL_COLLECTIVES_H

#include "all_gather.h"
#include "all_reduce.h"
#include "all_reduce_gathered.h"
#include "all_to_all.h"
#include "broadcast.h"
#include "reduce_scatter.h"
#include "reduce_to_root.h"

/* How this block's share of a collective is cut up. */
typedef struct {
  df_chunking ring; /* all-reduce */
  df_span span;     /* the others */
  uint64_t iterations;
  uint32_t steps;    /* primitives per iteration */
  uint32_t gathered; /* all-reduce by gathering (all_reduce_gathered.h) */
} df_plan;

DF_FN void df_plan_init(df_plan* p, const df_coll_static* st, uint32_t channel) {
  memset(p, 0, sizeof *p);
  uint32_t slot = st->links.slot_bytes;
  uint64_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  uint32_t n = st->nranks;
  if (df_all_reduce_gathers(st)) {
    p->gathered = 1;
    p->iterations = 1;
    p->steps = n;
    return;
  }
  if (st->kind == DF_COLL_ALL_REDUCE) {
    df_chunking_init(&p->ring, st, channel, slot);
    p->iterations = p->ring.iterations;
    p->steps = 2 * n - 1;
    return;
  }
  df_span_init(&p->span, st->count, st->nchannels, channel, esize, slot);
  p->iterations = p->span.iterations;
  if (st->kind == DF_COLL_ALL_TO_ALL) p->steps = df_all_to_all_steps(n);
  else p->steps = (st->kind == DF_COLL_ALL_GATHER || st->kind == DF_COLL_REDUCE_SCATTER) ? n : 1;
}

DF_FN df_prim_result df_step(df_run* run, const df_plan* p, uint64_t iteration, uint32_t s) {
  switch (run->ctx->stat.kind) {
    case DF_COLL_ALL_REDUCE:
      if (p->gathered) return df_all_reduce_gathered_step(run, s);
      return df_all_reduce_step(run, s, &p->ring, iteration);
    case DF_COLL_ALL_GATHER: return df_all_gather_step(run, s, &p->span, iteration);
    case DF_COLL_REDUCE_SCATTER: return df_reduce_scatter_step(run, s, &p->span, iteration);
    case DF_COLL_ALL_TO_ALL: return df_all_to_all_step(run, s, &p->span, iteration);
    case DF_COLL_BROADCAST: return df_broadcast_step(run, &p->span, iteration);
    default: return df_reduce_to_root_step(run, &p->span, iteration);
  }
}

/* One participant: every collective is a copy of `count` elements from input to output (to the
 * block's displacement for all-gather-v; all-to-all's one block is `count` elements too). */
DF_FN void df_local_copy(df_run* run) {
  const df_coll_static* st = &run->ctx->stat;
  const df_coll_dynamic* d = &run->ctx->dyn;
  size_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  char* recv = (char*)d->recvbuff + (st->blocks != NULL ? DF_BLOCK_DISPL(st->blocks, 0) * esize : 0);
  if (d->sendbuff == recv) return;
  df_span sp;
  df_span_init(&sp, st->count, st->nchannels, (uint32_t)df_bid(run->blk), esize, 16);
  if (sp.end > sp.begin)
    df_reduce_copy(run->blk, (dfcclDataType_t)st->dtype, (dfcclRedOp_t)st->op,
                   (const char*)d->sendbuff + sp.begin * esize, NULL, recv + sp.begin * esize, NULL, sp.end - sp.begin);
}

DF_FN df_prim_result df_execute(df_run* run) {
  const df_coll_static* st = &run->ctx->stat;
  df_coll_dynamic* d = &run->ctx->dyn;
  if (st->nranks == 1) {
    df_local_copy(run);
    return DF_PRIM_DONE;
  }
  df_plan p;
  df_plan_init(&p, st, (uint32_t)df_bid(run->blk));
  /* Loop counters are per thread (every thread runs the same sequence); the leader records where
   * the run stopped. */
  uint64_t it = d->iteration;
  uint32_t s = d->step;
  df_prim_result result = DF_PRIM_DONE;
  for (; it < p.iterations; it++, s = 0) {
    for (; s < p.steps; s++) {
      result = df_step(run, &p, it, s);
      if (result != DF_PRIM_DONE) goto stopped;
    }
  }
stopped:
  if (df_is_leader(run->blk)) {
    d->iteration = it;
    d->step = s;
  }
  return result;
}

#endif /* DFCCL_KERNEL_COLLECTIVES_H */
