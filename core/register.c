/*
 * Registration: a collective's static context (its channels, its FIFO slot size, its root's ring
 * position), its connectors set up with the peers, and the daemon told of it (the grid grown to its
 * channels, its table entry written).  Every dfcclRegister* function and every communicator's
 * connector set goes through register_collective.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernel/dtypes.h"
#include "kernel/partition.h"

static uint32_t channels_for(const df_config* cfg, uint64_t bytes) {
  uint64_t n = (bytes + cfg->min_channel_bytes - 1) / cfg->min_channel_bytes;
  if (n < 1) n = 1;
  return n > cfg->max_channels ? cfg->max_channels : (uint32_t)n;
}

/* Bytes a collective moves through each rank's connectors, which decides its channels. */
static uint64_t traffic_bytes(df_coll_kind kind, uint64_t bytes, uint32_t nranks) {
  bool per_rank = kind == DF_COLL_ALL_GATHER || kind == DF_COLL_REDUCE_SCATTER || kind == DF_COLL_ALL_TO_ALL;
  return per_rank ? bytes * nranks : bytes;
}

/* A FIFO slot carries one chunk: no larger than what one step of a channel moves (in 4 KiB
 * steps, at most DFCCL_SLOT_BYTES), so that small collectives take little connector memory.  A
 * step moves a channel's share of the buffer, divided by the ranks for all-reduce. */
static uint32_t slot_for(const df_config* cfg, df_coll_kind kind, uint64_t bytes, uint32_t nchannels, uint32_t nranks) {
  uint64_t per_step = bytes / nchannels + 1;
  if (kind == DF_COLL_ALL_REDUCE) per_step = (per_step + nranks - 1) / nranks;
  uint64_t slot = (per_step + 4095) / 4096 * 4096;
  return slot < cfg->slot_bytes ? (uint32_t)slot : cfg->slot_bytes;
}

/* Blocks [grid_ever, blocks) have never run: they start reading the SQ at its current tail (no
 * earlier entry can be for them), and the running daemon is asked to relaunch with them. */
static dfcclResult_t grow_grid(df_ctx* ctx, uint32_t blocks) {
  if (blocks <= atomic_load(&ctx->grid)) return dfcclSuccess;
  uint64_t first = df_sq_host_set_readers(&ctx->sq, blocks);
  for (uint32_t b = ctx->grid_ever; b < blocks; b++)
    DF_CHECK(ctx->target->copy_in(ctx, &ctx->args.blocks[b].sq_frontier, &first, sizeof first));
  if (blocks > ctx->grid_ever) ctx->grid_ever = blocks;
  atomic_store(&ctx->grid, blocks);
  __atomic_store_n(ctx->quit_request_host, 1, __ATOMIC_RELAXED); /* block 0 polls it meanwhile */
  return dfcclSuccess;
}

uint32_t df_run_channels(const df_config* cfg, uint32_t kind, uint64_t bytes, uint32_t nranks) {
  return channels_for(cfg, traffic_bytes((df_coll_kind)kind, bytes, nranks));
}

/* The elements of the largest channel's share of an all-reduce (df_channel_share, at most the
 * whole): what a gathering run's slot holds, and where each channel's share begins. */
static uint64_t gathered_share(uint64_t count, uint32_t nchannels, uint64_t esize) {
  uint64_t share = df_channel_share(count, nchannels, esize);
  return share < count ? share : count;
}

/* The largest all-reduce that gathers on `nranks` ranks. */
static uint64_t gather_limit(const df_config* cfg, uint32_t nranks) {
  return nranks == 2 ? cfg->gather_bytes_pair : cfg->gather_bytes;
}

void df_choose_all_reduce(const df_config* cfg, df_coll_static* st, uint32_t slot_bytes) {
  st->flags &= ~(DF_COLL_GATHER_REDUCE | DF_COLL_LL); /* a communicator's run starts from its set's last one */
  if (st->kind != DF_COLL_ALL_REDUCE) return;
  uint64_t esize = dfcclTypeSize((dfcclDataType_t)st->dtype);
  uint64_t bytes = st->count * esize;
  uint64_t share = gathered_share(st->count, st->nchannels, esize);
  bool gathers = st->nranks >= 2 && st->nranks - 1 <= DF_FIFO_STEPS && bytes > 0 &&
                 bytes <= gather_limit(cfg, st->nranks) && share * esize <= slot_bytes;
  if (gathers) st->flags |= DF_COLL_GATHER_REDUCE;
  if (gathers && share * esize <= cfg->ll_bytes) st->flags |= DF_COLL_LL;
  st->gather_share = gathers ? (uint32_t)share : 0; /* fits: a share fits a slot, which holds at most 64 MiB */
}

static dfcclResult_t check_registration(size_t count, dfcclDataType_t dtype, dfcclRedOp_t op, int collId) {
  if (collId < 0) return df_error(dfcclInvalidArgument, "collective id %d is negative", collId);
  return df_check_signature(count, dtype, op);
}

dfcclResult_t df_check_signature(size_t count, dfcclDataType_t dtype, dfcclRedOp_t op) {
  if ((unsigned)dtype >= dfcclNumTypes) return df_error(dfcclInvalidArgument, "unknown data type %d", (int)dtype);
  if ((unsigned)op >= dfcclNumOps) return df_error(dfcclInvalidArgument, "unknown reduction op %d", (int)op);
  if (!df_op_defined_for(op, dtype))
    return df_error(dfcclInvalidArgument, "reduction op %s is not defined for data type %s (only for integers)",
                    df_op_name(op), df_dtype_name(dtype));
  size_t esize = dfcclTypeSize(dtype);
  if (count > ((size_t)1 << 56) / esize)
    return df_error(dfcclInvalidArgument, "count %zu of %zu-byte elements overflows", count, esize);
  return dfcclSuccess;
}

static int ring_position(const df_group* g, int rank) {
  for (int i = 0; i < g->nranks; i++)
    if (g->ranks[i] == rank) return i;
  return -1;
}

static df_coll_static static_context(const df_ctx* ctx, const df_group* g, df_coll_kind kind, size_t count,
                                     dfcclDataType_t dtype, dfcclRedOp_t op, int root_position, int priority) {
  df_coll_static st;
  memset(&st, 0, sizeof st);
  st.kind = kind;
  st.dtype = (uint32_t)dtype;
  st.op = (uint32_t)op;
  st.nranks = (uint32_t)g->nranks;
  st.rank = (uint32_t)g->position;
  uint64_t bytes = (uint64_t)count * dfcclTypeSize(dtype);
  st.nchannels = df_run_channels(&ctx->cfg, kind, bytes, st.nranks);
  st.root = root_position;
  st.priority = priority;
  st.count = count;
  return st;
}

/* The daemon learns of a collective: the grid grows to its channels, and its static context goes
 * to its index (read by the daemon only once an SQE names the index). */
static dfcclResult_t install(df_ctx* ctx, int index, const df_coll_static* st) {
  pthread_mutex_lock(&ctx->tables_lock);
  dfcclResult_t r = grow_grid(ctx, st->nchannels);
  if (r == dfcclSuccess) r = ctx->target->copy_in(ctx, &ctx->dev_colls[index], st, sizeof *st);
  pthread_mutex_unlock(&ctx->tables_lock);
  return r;
}

dfcclResult_t df_install_static(df_ctx* ctx, int index, const df_coll_static* st) {
  pthread_mutex_lock(&ctx->tables_lock);
  dfcclResult_t r = ctx->target->copy_in(ctx, &ctx->dev_colls[index], st, sizeof *st);
  pthread_mutex_unlock(&ctx->tables_lock);
  return r;
}

/* A v collective's arguments: elements and displacement of each participant's block, in ring order
 * (displs NULL: packed). */
typedef struct {
  const size_t* counts;
  const size_t* displs;
} df_variable_blocks;

/* The id and an index are reserved under ctx->lock first (so that the same id registered on
 * another thread meanwhile is a dfcclDuplicateId), the exchange with the peers runs with no lock
 * held (so that registrations on other groups, from other threads, run at the same time: holding
 * a lock there deadlocks two ranks that register on two groups in opposite orders), and the lock
 * is taken again to publish the result.  v: the v collectives' blocks, else NULL. */
static dfcclResult_t register_collective(df_ctx* ctx, df_coll_kind kind, size_t count, dfcclDataType_t dtype,
                                         dfcclRedOp_t op, int root, int collId, const int* participants,
                                         int nparticipants, int priority, const df_variable_blocks* v,
                                         const df_shape* shape) {
  DF_CHECK(df_ctx_check(ctx));
  /* Without a valid set of participants there is nobody to tell; otherwise a local failure is
   * still announced to the peers (df_links_create), which are waiting for this registration. */
  df_group* g;
  pthread_mutex_lock(&ctx->lock);
  dfcclResult_t r = df_group_get(ctx, participants, nparticipants, &g);
  pthread_mutex_unlock(&ctx->lock);
  if (r != dfcclSuccess) return r;
  int root_position = 0, index = -1;
  df_blocks blocks = {0};
  dfcclResult_t prior = dfcclSuccess;
  if (v) {
    const char* name = kind == DF_COLL_ALL_GATHER ? "all-gather-v" : "reduce-scatter-v";
    if (!v->counts || (!v->displs && kind == DF_COLL_ALL_GATHER))
      prior = df_error(dfcclInvalidArgument, "%s: NULL %s", name, v->counts ? "displs" : "recvcounts");
    else prior = df_blocks_table(g->nranks, g->position, kind, v->counts, v->displs, dtype, &blocks);
    count = blocks.largest;
  }
  /* A communicator's connector sets have internal ids (< 0); users' ids are >= 0. */
  if (prior == dfcclSuccess)
    prior = shape ? df_check_signature(count, dtype, op) : check_registration(count, dtype, op, collId);
  if (prior == dfcclSuccess && (kind == DF_COLL_BROADCAST || kind == DF_COLL_REDUCE)) {
    root_position = ring_position(g, root);
    if (root_position < 0) prior = df_error(dfcclInvalidArgument, "root %d is not a participant", root);
  }
  if (prior == dfcclSuccess) {
    pthread_mutex_lock(&ctx->lock);
    prior = df_registry_reserve(ctx, collId, g, &index); /* the record takes over g's reference */
    pthread_mutex_unlock(&ctx->lock);
  }
  if (prior != dfcclSuccess) {
    root_position = 0;
    dtype = dfcclInt8; /* keep the card's fields harmless */
    op = dfcclSum;
    count = 0;
  }
  df_coll_static st = static_context(ctx, g, kind, count, dtype, op, root_position, priority);
  st.order = (uint32_t)collId; /* the same on every participant */
  if (shape) st.nchannels = shape->nchannels;
  if (prior == dfcclSuccess && blocks.host) prior = df_blocks_install(ctx, &blocks, st.nranks, &st.blocks);
  uint64_t bytes = (uint64_t)count * dfcclTypeSize(dtype);
  uint32_t slot = shape ? shape->slot_bytes : slot_for(&ctx->cfg, kind, bytes, st.nchannels, st.nranks);
  /* A gathering all-reduce carries a channel's whole share in one slot: its slot is that large. */
  uint64_t share_bytes = gathered_share(count, st.nchannels, dfcclTypeSize(dtype)) * dfcclTypeSize(dtype);
  if (!shape && kind == DF_COLL_ALL_REDUCE && share_bytes > slot && bytes <= gather_limit(&ctx->cfg, st.nranks) &&
      share_bytes <= ctx->cfg.slot_bytes) {
    uint64_t whole = (share_bytes + 4095) / 4096 * 4096;
    slot = whole < ctx->cfg.slot_bytes ? (uint32_t)whole : ctx->cfg.slot_bytes;
  }
  df_choose_all_reduce(&ctx->cfg, &st, slot);
  df_coll_links links;
  r = df_links_create(ctx, g, collId, &st, blocks.hash, slot, prior, &links);
  st.links = links.view;
  if (links.timesliced_peer && ctx->cfg.timeslice_yield) st.flags |= DF_COLL_TIMESLICED_PEER;
  if (r == dfcclSuccess) r = install(ctx, index, &st);
  if (r != dfcclSuccess) {
    df_links_free(ctx, &links);
    if (st.blocks) ctx->target->free(ctx, (void*)st.blocks);
    free(blocks.host);
  }
  pthread_mutex_lock(&ctx->lock);
  if (r == dfcclSuccess) {
    df_registry_publish(ctx, index, &st, &links);
    df_coll* c = &ctx->colls[index];
    c->blocks = blocks.host; /* freed with st.blocks at deregistration */
    c->send_elems = blocks.send_elems;
    c->recv_elems = blocks.recv_elems;
  } else if (index >= 0) {
    df_registry_release(ctx, index); /* drops the group reference too */
  } else {
    df_group_put(ctx, g);
  }
  pthread_mutex_unlock(&ctx->lock);
  if (r != dfcclSuccess) return r;
  df_debug(ctx, "registered collective %d as #%d: %zu elements, %u channels, ring position %u of %u%s%s", collId, index,
           count, st.nchannels, st.rank, st.nranks,
           (st.flags & DF_COLL_GATHER_REDUCE) ? ", all-reduce by gathering" : "",
           links.timesliced_peer ? (ctx->cfg.timeslice_yield ? ", a participant time-slices our GPU: yielding to it"
                                                             : ", a participant time-slices our GPU (not yielding)")
                                 : "");
  return dfcclSuccess;
}

dfcclResult_t dfcclRegisterAllReduce(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op,
                                     int collId, const int* participants, int nparticipants, int priority) {
  return register_collective(ctx, DF_COLL_ALL_REDUCE, count, dtype, op, 0, collId, participants, nparticipants,
                             priority, NULL, NULL);
}

dfcclResult_t dfcclRegisterAllGather(dfcclRankCtx_t ctx, size_t sendcount, dfcclDataType_t dtype, int collId,
                                     const int* participants, int nparticipants, int priority) {
  return register_collective(ctx, DF_COLL_ALL_GATHER, sendcount, dtype, dfcclSum, 0, collId, participants,
                             nparticipants, priority, NULL, NULL);
}

dfcclResult_t dfcclRegisterAllGatherV(dfcclRankCtx_t ctx, const size_t* recvcounts, const size_t* displs,
                                      dfcclDataType_t dtype, int collId, const int* participants, int nparticipants,
                                      int priority) {
  const df_variable_blocks v = {recvcounts, displs}; /* NULL arrays: an error every participant sees */
  return register_collective(ctx, DF_COLL_ALL_GATHER, 0, dtype, dfcclSum, 0, collId, participants, nparticipants,
                             priority, &v, NULL);
}

dfcclResult_t dfcclRegisterReduceScatter(dfcclRankCtx_t ctx, size_t recvcount, dfcclDataType_t dtype, dfcclRedOp_t op,
                                         int collId, const int* participants, int nparticipants, int priority) {
  return register_collective(ctx, DF_COLL_REDUCE_SCATTER, recvcount, dtype, op, 0, collId, participants, nparticipants,
                             priority, NULL, NULL);
}

dfcclResult_t dfcclRegisterReduceScatterV(dfcclRankCtx_t ctx, const size_t* recvcounts, dfcclDataType_t dtype,
                                          dfcclRedOp_t op, int collId, const int* participants, int nparticipants,
                                          int priority) {
  const df_variable_blocks v = {recvcounts, NULL}; /* sendbuff holds the blocks packed, as MPI's */
  return register_collective(ctx, DF_COLL_REDUCE_SCATTER, 0, dtype, op, 0, collId, participants, nparticipants,
                             priority, &v, NULL);
}

dfcclResult_t dfcclRegisterAllToAll(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, int collId,
                                    const int* participants, int nparticipants, int priority) {
  return register_collective(ctx, DF_COLL_ALL_TO_ALL, count, dtype, dfcclSum, 0, collId, participants, nparticipants,
                             priority, NULL, NULL);
}

dfcclResult_t dfcclRegisterBroadcast(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, int root, int collId,
                                     const int* participants, int nparticipants, int priority) {
  return register_collective(ctx, DF_COLL_BROADCAST, count, dtype, dfcclSum, root, collId, participants, nparticipants,
                             priority, NULL, NULL);
}

dfcclResult_t dfcclRegisterReduce(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op, int root,
                                  int collId, const int* participants, int nparticipants, int priority) {
  return register_collective(ctx, DF_COLL_REDUCE, count, dtype, op, root, collId, participants, nparticipants, priority,
                             NULL, NULL);
}

dfcclResult_t df_register_connector_set(df_ctx* ctx, int id, const int* ranks, int nranks, const df_shape* shape) {
  return register_collective(ctx, DF_COLL_ALL_REDUCE, 0, dfcclInt8, dfcclSum, 0, id, ranks, nranks, 0, NULL, shape);
}
