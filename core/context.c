/*
 * A rank context's life: dfcclInit (its configuration, its execution target, the daemon's tables,
 * the network, the poller), dfcclDestroy (the daemon's final exit, each group's closing exchange,
 * the release of everything), the check of a handle passed to the API, and the calls that
 * synchronize with the context's execution target.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "internal.h"

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
  DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(uint64_t), &p));
  a->gates_passed = p;
  if (ctx->cfg.stream_gate && ctx->cfg.stream_order && t->gate_on_streams) {
    DF_CHECK(t->alloc(ctx, DF_MAX_COLLS * sizeof(uint32_t), &p)); /* zeroed: a first run is epoch 1 */
    a->stream_gates = p;
  }
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
  DF_CHECK(t->alloc_mapped(ctx, DF_MAX_COLLS * sizeof(uint64_t), &host, &daemon));
  ctx->gates_host = host;
  memset(host, 0, DF_MAX_COLLS * sizeof(uint64_t));
  a->gates = daemon;
  DF_CHECK(t->alloc(ctx, 3 * sizeof(uint64_t), &p)); /* zeroed: the first launch's vote */
  a->quit_votes = p;
  DF_CHECK(df_sq_host_init(ctx, &ctx->sq, ctx->cfg.sq_entries));
  DF_CHECK(df_cq_host_init(ctx, &ctx->cq, ctx->cfg.cq_slots));
  a->sq_host = ctx->sq.daemon;
  DF_CHECK(alloc_sq_mirror(ctx, ctx->cfg.sq_entries, &a->sq.entries));
  a->sq.mask = ctx->cfg.sq_entries - 1;
  a->cq = ctx->cq.daemon;
  a->spin = ctx->cfg.spin;
  return df_stamps_open(ctx);
}

static void free_tables(df_ctx* ctx) {
  const df_target_ops* t = ctx->target;
  df_daemon_args* a = &ctx->args;
  df_stamps_close(ctx);
  df_cq_host_fini(ctx, &ctx->cq);
  df_sq_host_fini(ctx, &ctx->sq);
  if (ctx->quit_request_host) t->free_mapped(ctx, (void*)ctx->quit_request_host);
  if (ctx->progress_host) t->free_mapped(ctx, (void*)ctx->progress_host);
  if (ctx->gates_host) t->free_mapped(ctx, (void*)ctx->gates_host);
  void* tables[] = {(void*)a->colls, a->dynamic,          a->done_blocks,  a->coll_counters,
                    a->run_errors,   (void*)a->timed_out, a->blocks,       a->saved_tasks,
                    a->quit_votes,   a->sq.entries,       a->gates_passed, (void*)a->stream_gates};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if (tables[i]) t->free(ctx, tables[i]);
}

static void release(df_ctx* ctx) {
  if (ctx->target && ctx->target_state) {
    for (int i = 0; i < ctx->ncolls; i++) {
      df_links_free(ctx, &ctx->colls[i].links);
      df_blocks_free(ctx, &ctx->colls[i]);
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

/* ---- destroy ---- */

static void sleep_us(long us) {
  nanosleep(&(struct timespec){.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000}, NULL);
}

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
  df_creations_finish(ctx); /* their held runs are submitted, and waited for below */
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
  dfcclResult_t closing = df_deregister_all(ctx);
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

/* ---- the context's target ---- */

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
