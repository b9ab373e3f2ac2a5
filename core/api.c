/*
 * The public API: checks its arguments, then hands work to the registry, the groups, the SQ and
 * the poller.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "internal.h"
#include "kernel/dtypes.h"

/* Destroyed contexts stay allocated as tombstones, so that a late call on one is answered with
 * dfcclDestroyed instead of touching freed memory. */
static pthread_mutex_t tombstones_lock = PTHREAD_MUTEX_INITIALIZER;
static df_ctx* tombstones;

dfcclResult_t df_ctx_check(const df_ctx* ctx) {
  if (!ctx) return df_error(dfcclInvalidArgument, "the context is NULL");
  if (ctx->magic == DF_CTX_DEAD) return df_error(dfcclDestroyed, "the context was destroyed");
  if (ctx->magic != DF_CTX_MAGIC) return df_error(dfcclInvalidArgument, "not a DFCCL context");
  if (atomic_load(&ctx->destroying)) return df_error(dfcclDestroyed, "the context is being destroyed");
  return dfcclSuccess;
}

static void sleep_us(long us) {
  nanosleep(&(struct timespec){.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000}, NULL);
}

/* ---- init ---- */

static dfcclResult_t select_target(df_ctx* ctx) {
  if (ctx->cfg.target == dfcclTargetHost) {
    ctx->target = &df_target_host;
    return dfcclSuccess;
  }
#ifdef DFCCL_HAVE_CUDA
  ctx->target = &df_target_cuda;
  return dfcclSuccess;
#else
  return df_error(dfcclUnsupported, "this DFCCL was built without CUDA; the host target must be asked for explicitly "
                                    "(dfcclTargetHost or DFCCL_TARGET=host)");
#endif
}

/* The daemon's copy of the SQ (see queue/sq.h): every slot free and never written. */
static dfcclResult_t alloc_sq_mirror(df_ctx* ctx, uint32_t entries, df_sqe** mirror) {
  void* p;
  DF_CHECK(ctx->target->alloc(ctx, (size_t)entries * sizeof(df_sqe), &p));
  *mirror = p;
  df_sqe* init = calloc(entries, sizeof *init);
  if (!init) return df_error(dfcclSystemError, "out of host memory for the SQ mirror");
  for (uint32_t i = 0; i < entries; i++) init[i].seq = DF_SEQ_NONE;
  dfcclResult_t r = ctx->target->copy_in(ctx, p, init, (size_t)entries * sizeof *init);
  free(init);
  return r;
}

static dfcclResult_t alloc_tables(df_ctx* ctx) {
  const df_target_ops* t = ctx->target;
  df_daemon_args* a = &ctx->args;
  void* p;
  DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(df_coll_static), &p));
  ctx->dev_colls = p;
  a->colls = p;
  DF_CHECK(t->alloc(ctx, (size_t)DF_MAX_BLOCKS * DF_MAX_COLLS * sizeof(df_coll_dynamic), &p));
  a->dynamic = p;
  DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(uint32_t), &p));
  a->done_blocks = p;
  DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(df_coll_counters), &p));
  a->coll_counters = p;
  DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(uint32_t), &p));
  a->run_errors = p;
  DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(uint32_t), &p));
  a->timed_out = p;
  DF_CHECK(t->alloc(ctx, DF_MAX_BLOCKS * sizeof(df_block_state), &p));
  a->blocks = p;
  DF_CHECK(t->alloc(ctx, (size_t)DF_MAX_BLOCKS * DF_MAX_COLLS * sizeof(uint16_t), &p));
  a->saved_tasks = p;
  /* One mapped line: the host's quit request (word 0) and the daemon's launch report (words 1-3). */
  _Static_assert(sizeof(uint64_t) + sizeof(df_launch_report) <= 64, "the launch report fits the line");
  void *host, *daemon;
  DF_CHECK(t->alloc_mapped(ctx, 64, &host, &daemon));
  ctx->quit_request_host = host;
  ctx->launch_report_host = (volatile df_launch_report*)((uint64_t*)host + 1);
  a->quit_request = daemon;
  a->launch_report = (df_launch_report*)((uint64_t*)daemon + 1);
  DF_CHECK(t->alloc_mapped(ctx, DF_MAX_COLLS * sizeof(uint64_t), &host, &daemon));
  ctx->progress_host = host;
  /* Without a timeout nobody reads the stamps: the daemon skips them (a store to host memory that
   * the next system-scope fence would wait for, on the small collectives' critical path). */
  a->progress_ns = ctx->cfg.timeout_s > 0 ? daemon : NULL;
  DF_CHECK(t->alloc(ctx, 3 * sizeof(uint64_t), &p)); /* zeroed: the first launch's vote */
  a->quit_votes = p;
  DF_CHECK(df_sq_host_init(ctx, &ctx->sq, ctx->cfg.sq_entries));
  DF_CHECK(df_cq_host_init(ctx, &ctx->cq, ctx->cfg.cq_slots));
  a->sq_host.entries = ctx->sq.daemon;
  a->sq_host.mask = ctx->cfg.sq_entries - 1;
  DF_CHECK(alloc_sq_mirror(ctx, ctx->cfg.sq_entries, &a->sq.entries));
  a->sq.mask = ctx->cfg.sq_entries - 1;
  a->cq = ctx->cq.daemon;
  a->spin = ctx->cfg.spin;
  DF_CHECK(t->alloc(ctx, sizeof *a, &p));
  ctx->dev_args = p;
  return t->copy_in(ctx, ctx->dev_args, a, sizeof *a);
}

static void free_tables(df_ctx* ctx) {
  const df_target_ops* t = ctx->target;
  df_daemon_args* a = &ctx->args;
  if (ctx->dev_args) t->free(ctx, ctx->dev_args);
  df_cq_host_fini(ctx, &ctx->cq);
  df_sq_host_fini(ctx, &ctx->sq);
  if (ctx->quit_request_host) t->free_mapped(ctx, (void*)ctx->quit_request_host);
  if (ctx->progress_host) t->free_mapped(ctx, (void*)ctx->progress_host);
  void* tables[] = {(void*)a->colls,     a->dynamic, a->done_blocks, a->coll_counters, a->run_errors,
                    (void*)a->timed_out, a->blocks,  a->saved_tasks, a->quit_votes,    a->sq.entries};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if (tables[i]) t->free(ctx, tables[i]);
}

static void free_blocks(df_ctx* ctx, df_coll* c);

static void release(df_ctx* ctx) {
  if (ctx->target && ctx->target_state) {
    for (int i = 0; i < ctx->ncolls; i++) {
      df_links_free(ctx, &ctx->colls[i].links);
      free_blocks(ctx, &ctx->colls[i]);
    }
    df_group_free_all(ctx);
    free_tables(ctx);
  }
  df_net_close(ctx); /* after the links: their proxy is gone with it */
  free(ctx->announced);
  if (ctx->target) ctx->target->close(ctx);
  df_registry_fini(ctx);
  pthread_mutex_destroy(&ctx->lock);
  pthread_mutex_destroy(&ctx->tables_lock);
  pthread_mutex_destroy(&ctx->wake_lock);
  pthread_cond_destroy(&ctx->wake);
}

/* The automatic profiling step: spin thresholds from what a poll costs here.  A failure only costs
 * the calibration (the defaults stay), not the context. */
static void calibrate(df_ctx* ctx) {
  double ns = 0;
  if (!ctx->target->measure_poll) return;
  if (ctx->target->measure_poll(ctx, &ns) != dfcclSuccess) {
    fprintf(stderr, "dfccl: rank %d: %s; keeping the default spin thresholds\n", ctx->rank, dfcclGetLastErrorMessage());
    return;
  }
  if (!df_config_calibrate(&ctx->cfg, ns)) {
    fprintf(stderr, "dfccl: rank %d: a poll measured at %g ns cannot be right; keeping the default spin thresholds\n",
            ctx->rank, ns);
    return;
  }
  df_debug(ctx, "a poll costs %.1f ns: spin thresholds front %llu, floor %llu, ceiling %llu polls", ns,
           (unsigned long long)ctx->cfg.spin.front, (unsigned long long)ctx->cfg.spin.floor,
           (unsigned long long)ctx->cfg.spin.ceiling);
}

dfcclResult_t dfcclInit(dfcclRankCtx_t* out, const dfcclInitArgs_t* args) {
  if (!out || !args) return df_error(dfcclInvalidArgument, "dfcclInit: NULL %s", out ? "args" : "ctx");
  *out = NULL;
  const dfcclBootstrap_t* bs = &args->bootstrap;
  if (bs->nranks < 1 || bs->rank < 0 || bs->rank >= bs->nranks)
    return df_error(dfcclInvalidArgument, "dfcclInit: rank %d of %d ranks", bs->rank, bs->nranks);
  if (bs->nranks > 1 && !bs->allgather)
    return df_error(dfcclInvalidArgument, "dfcclInit: %d ranks but no bootstrap allgather", bs->nranks);
  df_ctx* ctx = calloc(1, sizeof *ctx);
  if (!ctx) return df_error(dfcclOutOfResources, "out of memory");
  ctx->rank = bs->rank;
  ctx->nranks = bs->nranks;
  ctx->bootstrap = *bs;
  ctx->device = args->device;
  ctx->host_id = df_host_identity();
  ctx->announced = calloc((size_t)bs->nranks, 1);
  pthread_mutex_init(&ctx->lock, NULL);
  pthread_mutex_init(&ctx->tables_lock, NULL);
  pthread_mutex_init(&ctx->wake_lock, NULL);
  pthread_cond_init(&ctx->wake, NULL);
  atomic_store(&ctx->grid, 1);
  ctx->grid_ever = 1; /* block 0 starts reading the SQ at its beginning */

  dfcclResult_t r = df_config_load(&ctx->cfg, args->target);
  if (r == dfcclSuccess) r = df_registry_init(ctx);
  if (r == dfcclSuccess) r = select_target(ctx);
  if (r == dfcclSuccess) r = ctx->target->open(ctx, args->device);
  if (r == dfcclSuccess) calibrate(ctx);
  if (r == dfcclSuccess) r = alloc_tables(ctx);
  if (r == dfcclSuccess) r = df_net_open(ctx);
  if (r == dfcclSuccess) df_hang_report_init(ctx);
  if (r == dfcclSuccess) r = df_poller_start(ctx);
  if (r != dfcclSuccess) {
    char message[512];
    snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
    release(ctx);
    free(ctx);
    return df_error(r, "%s", message);
  }
  ctx->magic = DF_CTX_MAGIC;
  df_debug(ctx, "initialised: %s target, %d ranks", ctx->target->name, ctx->nranks);
  *out = ctx;
  return dfcclSuccess;
}

/* ---- registration ---- */

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

/* A registered v collective's table.  A communicator's connector set names its last run's table in
 * stat.blocks too, but the communicator owns that one (comm.c): no host copy here. */
static void free_blocks(df_ctx* ctx, df_coll* c) {
  if (!c->blocks) return;
  ctx->target->free(ctx, (void*)c->stat.blocks);
  free(c->blocks);
  c->stat.blocks = NULL;
  c->blocks = NULL;
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
  if (shape) st.nchannels = shape->nchannels;
  if (prior == dfcclSuccess && blocks.host) prior = df_blocks_install(ctx, &blocks, st.nranks, &st.blocks);
  uint64_t bytes = (uint64_t)count * dfcclTypeSize(dtype);
  uint32_t slot = shape ? shape->slot_bytes : slot_for(&ctx->cfg, kind, bytes, st.nchannels, st.nranks);
  df_coll_links links;
  r = df_links_create(ctx, g, collId, &st, blocks.hash, slot, prior, &links);
  st.links = links.dev;
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
  df_debug(ctx, "registered collective %d as #%d: %zu elements, %u channels, ring position %u of %u%s", collId, index,
           count, st.nchannels, st.rank, st.nranks,
           links.timesliced_peer ? (ctx->cfg.timeslice_yield ? ", a neighbour time-slices our GPU: yielding to it"
                                                             : ", a neighbour time-slices our GPU (not yielding)")
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

/* ---- runs ---- */

void df_run_bytes(const df_coll_static* st, size_t* send_bytes, size_t* recv_bytes) {
  size_t esize = dfcclTypeSize((dfcclDataType_t)st->dtype);
  size_t block = st->count * esize;
  bool root = st->rank == (uint32_t)st->root;
  *send_bytes = *recv_bytes = block;
  switch ((df_coll_kind)st->kind) {
    case DF_COLL_ALL_GATHER: *recv_bytes = block * st->nranks; break;
    case DF_COLL_REDUCE_SCATTER: *send_bytes = block * st->nranks; break;
    case DF_COLL_ALL_TO_ALL: *send_bytes = *recv_bytes = block * st->nranks; break;
    case DF_COLL_BROADCAST:
      if (!root) *send_bytes = 0;
      break;
    case DF_COLL_REDUCE:
      if (!root) *recv_bytes = 0;
      break;
    default: break;
  }
}

/* The bytes a run of c reads from sendbuff and writes to recvbuff on this rank (0: not touched). */
static void buffer_bytes(const df_coll* c, size_t* send_bytes, size_t* recv_bytes) {
  if (!c->blocks) {
    df_run_bytes(&c->stat, send_bytes, recv_bytes);
    return;
  }
  size_t esize = dfcclTypeSize((dfcclDataType_t)c->stat.dtype); /* a v collective */
  *send_bytes = c->send_elems * esize;
  *recv_bytes = c->recv_elems * esize;
}

dfcclResult_t df_check_run_buffers(df_ctx* ctx, uint32_t kind, const void* sendbuff, size_t send_bytes,
                                   const void* recvbuff, size_t recv_bytes, int id) {
  DF_CHECK(ctx->target->check_buffer(ctx, sendbuff, send_bytes, "sendbuff"));
  DF_CHECK(ctx->target->check_buffer(ctx, recvbuff, recv_bytes, "recvbuff"));
  /* All-to-all writes a block of recvbuff before it has read every block of sendbuff. */
  if (kind == DF_COLL_ALL_TO_ALL && send_bytes > 0 && (const char*)sendbuff < (const char*)recvbuff + recv_bytes &&
      (const char*)recvbuff < (const char*)sendbuff + send_bytes)
    return df_error(dfcclInvalidArgument, "all-to-all %d: sendbuff and recvbuff overlap (it does not run in place)",
                    id);
  /* The daemon may read sendbuff as soon as the SQE exists: the caller's work on it comes first. */
  if (ctx->target->wait_caller) DF_CHECK(ctx->target->wait_caller(ctx));
  return dfcclSuccess;
}

uint32_t df_record_start(df_coll* c, dfcclCallback_t callback, void* callback_arg, int callback_id) {
  c->in_flight = true;
  c->callback = callback; /* recorded before the SQE exists: the completion may come at once */
  c->callback_arg = callback_arg;
  c->callback_id = callback_id;
  c->submitted_us = df_now_us();
  return ++c->epoch;
}

void df_record_cancel(df_coll* c) {
  c->in_flight = false;
  c->epoch--;
}

dfcclResult_t df_publish_runs(df_ctx* ctx, const df_sq_run* runs, int n, int* published) {
  atomic_fetch_add(&ctx->outstanding, n);
  bool taking = ctx->cfg.poller_set_aside && df_taking_completions(ctx);
  dfcclResult_t r = df_sq_host_submit_n(&ctx->sq, runs, n, published, ctx->cfg.submit_timeout_ms,
                                        taking ? df_set_aside_completions : NULL, ctx);
  atomic_fetch_sub(&ctx->outstanding, n - *published);
  if (*published == 0) return r;
  atomic_fetch_add(&ctx->submitted, *published);
  df_poller_notify(ctx);
  df_net_notify(ctx);
  return r;
}

dfcclResult_t df_publish_run(df_ctx* ctx, uint32_t index, uint32_t epoch, uint32_t nchannels, const void* sendbuff,
                             void* recvbuff) {
  df_sq_run run = {index, epoch, nchannels, sendbuff, recvbuff};
  int published;
  return df_publish_runs(ctx, &run, 1, &published);
}

dfcclResult_t df_install_static(df_ctx* ctx, int index, const df_coll_static* st) {
  pthread_mutex_lock(&ctx->tables_lock);
  dfcclResult_t r = ctx->target->copy_in(ctx, &ctx->dev_colls[index], st, sizeof *st);
  pthread_mutex_unlock(&ctx->tables_lock);
  return r;
}

/* Caller holds ctx->lock.  The index of collId if it may run now (and its registration, and the
 * bytes of its buffers a run touches, where asked), else -1 with the error message set. */
static int ready_collective(const df_ctx* ctx, int collId, df_coll_static* stat, size_t* send_bytes,
                            size_t* recv_bytes) {
  int index = df_registry_lookup(ctx, collId);
  df_coll_state state = index >= 0 ? ctx->colls[index].state : DF_COLL_FREE;
  if (state == DF_COLL_READY) {
    *stat = ctx->colls[index].stat;
    if (send_bytes) buffer_bytes(&ctx->colls[index], send_bytes, recv_bytes);
    return index;
  }
  if (state == DF_COLL_LEAVING) df_error(dfcclUnregisteredId, "collective id %d is being deregistered", collId);
  else if (state == DF_COLL_JOINING)
    df_error(dfcclUnregisteredId, "collective id %d is still being registered", collId);
  else df_error(dfcclUnregisteredId, "collective id %d is not registered", collId);
  return -1;
}

static dfcclResult_t submit(df_ctx* ctx, df_coll_kind kind, const void* sendbuff, void* recvbuff, int collId,
                            dfcclCallback_t callback, void* callbackArg) {
  DF_CHECK(df_ctx_check(ctx));
  dfcclResult_t fatal = (dfcclResult_t)atomic_load(&ctx->fatal);
  if (fatal != dfcclSuccess) return df_error(fatal, "the daemon failed earlier; the context is unusable");

  /* The buffers are checked (a driver call on a GPU) outside the lock that the poller takes for
   * every completion, against a copy of the registration. */
  pthread_mutex_lock(&ctx->lock);
  df_coll_static stat;
  size_t send_bytes, recv_bytes;
  int index = ready_collective(ctx, collId, &stat, &send_bytes, &recv_bytes);
  pthread_mutex_unlock(&ctx->lock);
  if (index < 0) return dfcclUnregisteredId;
  if (stat.kind != (uint32_t)kind)
    return df_error(dfcclInvalidArgument, "collective id %d was registered as another kind of collective", collId);
  DF_CHECK(df_check_run_buffers(ctx, kind, sendbuff, send_bytes, recvbuff, recv_bytes, collId));

  pthread_mutex_lock(&ctx->lock);
  df_coll* c = &ctx->colls[index];
  df_coll_static now;
  /* Deregistered meanwhile (by another thread), maybe with the index reused: the buffers were
   * checked against the registration they were checked for, or the run is refused. */
  if (ready_collective(ctx, collId, &now, NULL, NULL) != index || memcmp(&now, &stat, sizeof stat) != 0) {
    pthread_mutex_unlock(&ctx->lock);
    return df_error(dfcclUnregisteredId, "collective id %d was deregistered while its run was submitted", collId);
  }
  if (c->in_flight) {
    uint32_t running = c->epoch;
    pthread_mutex_unlock(&ctx->lock);
    return df_error(dfcclInFlight, "collective id %d is still in flight (run %u); wait for its callback", collId,
                    running);
  }
  dfcclResult_t failed = df_check_not_failed(ctx, index, "collective id");
  if (failed != dfcclSuccess) {
    pthread_mutex_unlock(&ctx->lock);
    return failed;
  }
  uint32_t epoch = df_record_start(c, callback, callbackArg, collId);
  pthread_mutex_unlock(&ctx->lock);

  dfcclResult_t r = df_publish_run(ctx, (uint32_t)index, epoch, stat.nchannels, sendbuff, recvbuff);
  if (r != dfcclSuccess) {
    pthread_mutex_lock(&ctx->lock);
    df_record_cancel(c);
    pthread_mutex_unlock(&ctx->lock);
  }
  return r;
}

dfcclResult_t dfcclRunAllReduce(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_ALL_REDUCE, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunAllGather(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_ALL_GATHER, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunAllGatherV(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                 dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_ALL_GATHER, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunReduceScatter(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                    dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_REDUCE_SCATTER, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunReduceScatterV(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                     dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_REDUCE_SCATTER, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunAllToAll(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                               dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_ALL_TO_ALL, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunBroadcast(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_BROADCAST, sendbuff, recvbuff, collId, callback, callbackArg);
}

dfcclResult_t dfcclRunReduce(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                             dfcclCallback_t callback, void* callbackArg) {
  return submit(ctx, DF_COLL_REDUCE, sendbuff, recvbuff, collId, callback, callbackArg);
}

/* ---- deregistration ---- */

/* Caller holds ctx->lock.  Why this rank cannot release collId now (dfcclSuccess if it can); sets
 * *index when collId is registered. */
static dfcclResult_t check_leaving(const df_ctx* ctx, const int* ids, int i, int* index) {
  int id = ids[i];
  *index = -1;
  for (int j = 0; j < i; j++)
    if (ids[j] == id) return df_error(dfcclInvalidArgument, "collective id %d is listed twice", id);
  *index = df_registry_find(ctx, id);
  if (*index < 0) return df_error(dfcclUnregisteredId, "collective id %d is not registered", id);
  const df_coll* c = &ctx->colls[*index];
  if (c->state == DF_COLL_LEAVING)
    return df_error(dfcclInFlight, "collective id %d is being deregistered by another thread", id);
  if (c->in_flight || c->queued) /* queued: a communicator's run waits for this connector set */
    return df_error(dfcclInFlight, "collective id %d has a run in flight (run %u); wait for its callback first", id,
                    c->epoch);
  return dfcclSuccess;
}

/* Caller holds ctx->lock.  Finds the collectives and their common group (with a reference for the
 * caller).  Returns an error for what cannot be told to the peers: collectives of different groups,
 * or no registered collective at all (nobody to tell).  *prior is why this rank cannot release
 * them, told to the peers; when there is none, they are marked LEAVING, so that no run starts
 * during the exchange. */
static dfcclResult_t begin_leaving(df_ctx* ctx, const int* ids, int n, int* indices, df_group** group,
                                   dfcclResult_t* prior) {
  df_group* g = NULL;
  int g_id = -1;
  char message[512] = "";
  *prior = dfcclSuccess;
  for (int i = 0; i < n; i++) {
    dfcclResult_t r = check_leaving(ctx, ids, i, &indices[i]);
    if (r != dfcclSuccess && *prior == dfcclSuccess) {
      *prior = r;
      snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
    }
    if (indices[i] < 0) continue;
    df_group* mine = ctx->colls[indices[i]].group;
    if (g && mine != g)
      return df_error(dfcclInvalidArgument,
                      "collectives %d and %d have different participants: deregister them in separate calls", g_id,
                      ids[i]);
    g = mine;
    g_id = ids[i];
  }
  if (!g) return df_error(*prior, "%s (nobody to tell: no collective of the list is registered here)", message);
  g->users++; /* the group outlives the exchange even if another thread releases its collectives */
  *group = g;
  if (*prior != dfcclSuccess) {
    df_error(*prior, "%s", message);
    return dfcclSuccess;
  }
  for (int i = 0; i < n; i++) ctx->colls[indices[i]].state = DF_COLL_LEAVING;
  return dfcclSuccess;
}

/* A released index must look unused to its next collective.  The daemon does not touch it (no run
 * is in flight), so the host resets its per-index state: every block's dynamic context (blocks
 * that never ran have none), the blocks-done count, the timed-out epoch (the next collective's
 * runs count from 1 again) and the counters of dfcclGetCollStats. */
static dfcclResult_t reset_daemon_entry(df_ctx* ctx, int index) {
  const df_target_ops* t = ctx->target;
  df_daemon_args* a = &ctx->args;
  df_coll_dynamic idle;
  df_coll_counters none;
  uint32_t no_blocks = 0;
  memset(&idle, 0, sizeof idle);
  memset(&none, 0, sizeof none);
  pthread_mutex_lock(&ctx->tables_lock);
  dfcclResult_t r = dfcclSuccess;
  for (uint32_t b = 0; r == dfcclSuccess && b < ctx->grid_ever; b++)
    r = t->copy_in(ctx, &a->dynamic[(size_t)b * DF_MAX_COLLS + (size_t)index], &idle, sizeof idle);
  if (r == dfcclSuccess) r = t->copy_in(ctx, &a->done_blocks[index], &no_blocks, sizeof no_blocks);
  if (r == dfcclSuccess) r = t->copy_in(ctx, (void*)&a->timed_out[index], &no_blocks, sizeof no_blocks);
  if (r == dfcclSuccess) r = t->copy_in(ctx, &a->coll_counters[index], &none, sizeof none);
  pthread_mutex_unlock(&ctx->tables_lock);
  return r;
}

/* Collective over the group of `ids`: the closing exchange, then the collectives' connectors are
 * freed and their ids and indices released.  Like registration, the exchange runs with no lock
 * held.  `destroying`: the daemon has exited for good, so the indices need no reset, and the
 * collectives leave even if the exchange failed (the context goes away; the ids come from the
 * registry, so they are registered, of one group and not in flight). */
static dfcclResult_t deregister(df_ctx* ctx, const int* ids, int n, bool destroying) {
  int* indices = malloc(sizeof(int) * (size_t)n);
  if (!indices) return df_error(dfcclOutOfResources, "out of memory");
  df_group* g = NULL;
  dfcclResult_t prior;
  pthread_mutex_lock(&ctx->lock);
  dfcclResult_t r = begin_leaving(ctx, ids, n, indices, &g, &prior);
  pthread_mutex_unlock(&ctx->lock);
  if (r != dfcclSuccess) {
    free(indices);
    return r;
  }
  r = df_links_close(ctx, g, ids, n, prior);
  bool leave = r == dfcclSuccess || destroying;
  /* Every participant closes its mappings of the others' connectors before anyone frees its own:
   * a peer that freed a region and allocated the next collective's at the same address would
   * otherwise hand out an IPC handle that a slower rank still has open ("already mapped", seen
   * with two threads registering and deregistering at once on 2x H200). */
  for (int i = 0; leave && i < n; i++)
    if (indices[i] >= 0) df_links_unmap_peers(ctx, &ctx->colls[indices[i]].links);
  if (r == dfcclSuccess) r = df_links_barrier(ctx, g);
  char message[512];
  snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
  dfcclResult_t reset = dfcclSuccess;
  for (int i = 0; leave && i < n; i++) {
    if (indices[i] < 0) continue;
    df_links_free(ctx, &ctx->colls[indices[i]].links); /* LEAVING: nobody else touches them */
    free_blocks(ctx, &ctx->colls[indices[i]]);
    if (!destroying && reset == dfcclSuccess) reset = reset_daemon_entry(ctx, indices[i]);
  }
  int nranks = g->nranks;
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < n; i++) {
    if (indices[i] < 0) continue;
    if (leave) df_registry_release(ctx, indices[i]);
    else if (prior == dfcclSuccess) ctx->colls[indices[i]].state = DF_COLL_READY; /* a peer could not */
  }
  df_group_put(ctx, g);
  pthread_mutex_unlock(&ctx->lock);
  free(indices);
  if (r == dfcclSuccess) df_debug(ctx, "deregistered %d collectives of a group of %d ranks", n, nranks);
  if (r != dfcclSuccess) return df_error(r, "%s", message);
  return reset;
}

dfcclResult_t dfcclDeregister(dfcclRankCtx_t ctx, const int* collIds, int n) {
  DF_CHECK(df_ctx_check(ctx));
  if (n < 0) return df_error(dfcclInvalidArgument, "dfcclDeregister: n is %d", n);
  if (n == 0) return dfcclSuccess;
  if (!collIds) return df_error(dfcclInvalidArgument, "dfcclDeregister: collIds is NULL but n is %d", n);
  return deregister(ctx, collIds, n, false);
}

static int compare_ids(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

/* Caller holds ctx->lock.  The first group, in the order of df_group_compare, that registered
 * collectives still use, and their ids, ascending (NULL when none is left). */
static df_group* next_group_to_close(const df_ctx* ctx, int* ids, int* n) {
  const df_group* first = NULL;
  for (int i = 0; i < ctx->ncolls; i++) {
    const df_coll* c = &ctx->colls[i];
    if (c->state == DF_COLL_READY && (!first || df_group_compare(c->group, first) < 0)) first = c->group;
  }
  *n = 0;
  for (int i = 0; first && i < ctx->ncolls; i++)
    if (ctx->colls[i].state == DF_COLL_READY && ctx->colls[i].group == first) ids[(*n)++] = ctx->colls[i].id;
  qsort(ids, (size_t)*n, sizeof(int), compare_ids);
  return (df_group*)first;
}

/* Every collective still registered leaves, a group at a time, each group with one closing
 * exchange over its participants.  Groups go in the order of their rank lists, the same on every
 * rank whatever order (or threads) they were registered in, so these exchanges cannot wait for
 * each other in a cycle: the least group that any rank waits in has every member there. */
static dfcclResult_t deregister_all(df_ctx* ctx) {
  int* ids = malloc(sizeof(int) * DF_MAX_COLLS);
  if (!ids) return df_error(dfcclOutOfResources, "out of memory");
  dfcclResult_t result = dfcclSuccess;
  for (;;) {
    int n;
    pthread_mutex_lock(&ctx->lock);
    df_group* g = next_group_to_close(ctx, ids, &n);
    pthread_mutex_unlock(&ctx->lock);
    if (!g) break;
    dfcclResult_t r = deregister(ctx, ids, n, true);
    if (r != dfcclSuccess && result == dfcclSuccess) {
      result = r;
      fprintf(stderr, "dfccl: rank %d: dfcclDestroy: %s\n", ctx->rank, dfcclGetLastErrorMessage());
    }
  }
  free(ids);
  return result;
}

/* ---- destroy ---- */

static bool wait_outstanding(df_ctx* ctx) {
  uint64_t start = df_now_ms();
  while (atomic_load(&ctx->outstanding) > 0) {
    if (df_now_ms() - start > ctx->cfg.destroy_timeout_ms) return false;
    sleep_us(200);
  }
  return true;
}

/* The final-exit SQE: every block of the (re)launched daemon reads it and exits for good. */
static dfcclResult_t final_exit(df_ctx* ctx) {
  if (atomic_load(&ctx->launches) == 0) return dfcclSuccess; /* never started */
  DF_CHECK(df_sq_host_submit(&ctx->sq, DF_SQE_EXIT, 0, 0, NULL, NULL, 1000, NULL, NULL));
  atomic_fetch_add(&ctx->submitted, 1);
  uint64_t start = df_now_ms();
  for (;;) {
    bool running = false;
    DF_CHECK(ctx->target->daemon_running(ctx, &running));
    if (!running) {
      if (ctx->submitted_at_launch == atomic_load(&ctx->submitted)) return dfcclSuccess;
      DF_CHECK(df_daemon_launch(ctx));
    }
    if (df_now_ms() - start > 10000) return df_error(dfcclTimeout, "the daemon did not exit within 10 s");
    sleep_us(100);
  }
}

dfcclResult_t dfcclDestroy(dfcclRankCtx_t ctx) {
  DF_CHECK(df_ctx_check(ctx));
  atomic_store(&ctx->destroying, true);
  dfcclResult_t r = dfcclSuccess;
  if (!wait_outstanding(ctx)) {
    r = df_error(dfcclTimeout, "dfcclDestroy: %llu runs still outstanding after %llu ms; abandoned",
                 (unsigned long long)atomic_load(&ctx->outstanding), (unsigned long long)ctx->cfg.destroy_timeout_ms);
    fprintf(stderr, "dfccl: rank %d: %s\n", ctx->rank, dfcclGetLastErrorMessage());
    df_poller_fail_outstanding(ctx, dfcclDestroyed);
    __atomic_store_n(ctx->quit_request_host, 1, __ATOMIC_RELAXED);
  }
  df_poller_stop(ctx);
  dfcclResult_t exit_result = final_exit(ctx);
  if (r == dfcclSuccess) r = exit_result;
  char message[512];
  snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
  /* Peers may still touch our connectors until they too are done: each group of collectives still
   * registered meets its participants first.  Ranks that shared nothing never meet. */
  dfcclResult_t closing = deregister_all(ctx);
  if (r != dfcclSuccess) df_error(r, "%s", message); /* the first error is the one to tell */
  else r = closing;
  df_comm_free_all(ctx, dfcclDestroyed);
  release(ctx);
  ctx->magic = DF_CTX_DEAD;
  pthread_mutex_lock(&tombstones_lock);
  ctx->next_tombstone = tombstones;
  tombstones = ctx;
  pthread_mutex_unlock(&tombstones_lock);
  return r;
}

/* ---- synchronization and statistics ---- */

dfcclResult_t dfcclTargetSynchronize(dfcclRankCtx_t ctx) {
  DF_CHECK(df_ctx_check(ctx));
  return ctx->target->synchronize(ctx);
}

dfcclResult_t dfcclContextDevice(dfcclRankCtx_t ctx, int* device) {
  DF_CHECK(df_ctx_check(ctx));
  if (device == NULL) return df_error(dfcclInvalidArgument, "dfcclContextDevice: NULL device");
  *device = ctx->cfg.target == dfcclTargetCuda ? ctx->device : -1;
  return dfcclSuccess;
}

dfcclResult_t dfcclHostSynchronize(int* contexts) {
  int n = df_host_synchronize_all();
  if (contexts != NULL) *contexts = n;
  return dfcclSuccess;
}

dfcclResult_t dfcclGetStats(dfcclRankCtx_t ctx, dfcclStats_t* stats) {
  DF_CHECK(df_ctx_check(ctx));
  if (!stats) return df_error(dfcclInvalidArgument, "stats is NULL");
  memset(stats, 0, sizeof *stats);
  pthread_mutex_lock(&ctx->tables_lock);
  uint32_t n = ctx->grid_ever; /* a registration on another thread may grow it */
  pthread_mutex_unlock(&ctx->tables_lock);
  for (uint32_t b = 0; b < n; b++) {
    /* The counters only: the rest of a block's state is the running daemon's own. */
    df_block_counters counters;
    DF_CHECK(ctx->target->copy_out(ctx, &counters, &ctx->args.blocks[b].counters, sizeof counters));
    const df_block_counters* c = &counters;
    stats->sqesRead += c->sqes_read;
    stats->preemptions += c->preemptions;
    stats->contextLoads += c->context_loads;
    stats->contextSaves += c->context_saves;
    stats->voluntaryQuits += c->voluntary_quits;
    if (c->max_queue_length > stats->maxTaskQueueLength) stats->maxTaskQueueLength = c->max_queue_length;
    stats->cqFullWaits += c->cq_full_waits;
  }
  stats->launches = atomic_load(&ctx->launches);
  stats->relaunches = stats->launches ? stats->launches - 1 : 0;
  stats->completions = atomic_load(&ctx->completions);
  pthread_mutex_lock(&ctx->sq.lock);
  stats->sqFullWaits = ctx->sq.full_waits;
  pthread_mutex_unlock(&ctx->sq.lock);
  return dfcclSuccess;
}

dfcclResult_t dfcclGetCollStats(dfcclRankCtx_t ctx, int collId, dfcclCollStats_t* stats) {
  DF_CHECK(df_ctx_check(ctx));
  if (!stats) return df_error(dfcclInvalidArgument, "stats is NULL");
  pthread_mutex_lock(&ctx->lock);
  int index = df_registry_find(ctx, collId);
  uint64_t runs = index >= 0 ? ctx->colls[index].runs : 0;
  pthread_mutex_unlock(&ctx->lock);
  if (index < 0) return df_error(dfcclUnregisteredId, "collective id %d is not registered", collId);
  df_coll_counters c;
  DF_CHECK(ctx->target->copy_out(ctx, &c, &ctx->args.coll_counters[index], sizeof c));
  memset(stats, 0, sizeof *stats);
  stats->runs = runs;
  stats->preemptions = c.preemptions;
  stats->contextLoads = c.context_loads;
  stats->contextSaves = c.context_saves;
  stats->lastTaskQueueLength = c.last_queue_length;
  stats->maxTaskQueueLength = c.max_queue_length;
  return dfcclSuccess;
}
