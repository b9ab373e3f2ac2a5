/*
 * Runs: a registered collective's buffers checked, its record put in flight and its SQE written
 * (dfcclRun*; a communicator's runs are published through the same functions, comm.c).  The
 * poller completes them (poller.c).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "internal.h"

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
                                   const void* recvbuff, size_t recv_bytes, int id, bool order) {
  DF_CHECK(ctx->target->check_buffer(ctx, sendbuff, send_bytes, "sendbuff"));
  DF_CHECK(ctx->target->check_buffer(ctx, recvbuff, recv_bytes, "recvbuff"));
  /* All-to-all writes a block of recvbuff before it has read every block of sendbuff. */
  if (kind == DF_COLL_ALL_TO_ALL && send_bytes > 0 && (const char*)sendbuff < (const char*)recvbuff + recv_bytes &&
      (const char*)recvbuff < (const char*)sendbuff + send_bytes)
    return df_error(dfcclInvalidArgument, "all-to-all %d: sendbuff and recvbuff overlap (it does not run in place)",
                    id);
  /* The daemon may read sendbuff as soon as the SQE exists: the caller's work on it comes first. */
  return order ? df_wait_caller(ctx) : dfcclSuccess;
}

dfcclResult_t df_wait_caller(df_ctx* ctx) {
  if (!ctx->target->wait_caller) return dfcclSuccess;
  atomic_fetch_add_explicit(&ctx->caller_waits, 1, memory_order_relaxed);
  return ctx->target->wait_caller(ctx);
}

/* Waiting for the caller's default streams costs 4 us while the daemon runs (two stream queries,
 * docs/performance.md); a gated run spends them while its SQE makes its way to the daemon, its
 * blocks waiting at the gate (df_pass_gate: block 0 for the host, the others for block 0).  Every
 * run is gated unless DFCCL_GATE_CHANNELS is below its channels; then it waits first. */
bool df_gate_wanted(const df_ctx* ctx, uint32_t nchannels) {
  return nchannels <= ctx->cfg.gate_channels && ctx->target->wait_caller != NULL && ctx->cfg.stream_order;
}

/* Before the run's SQE: its gate shut, whatever the collective's earlier run left there (the SQE's
 * release publishes the store). */
static void gate_close(df_ctx* ctx, const df_sq_run* run) {
  __atomic_store_n(&ctx->gates_host[run->coll], (uint64_t)(run->epoch - 1), __ATOMIC_RELAXED);
}

/* After its SQE: has the caller's streams open the gate on the GPU behind their work, or else waits
 * for that work and lets the run through -- or, when that wait failed, fails the run, whose callback
 * reports dfcclCudaError (the reason is printed here). */
static void gate_open(df_ctx* ctx, const df_sq_run* run) {
  uint32_t* on_gpu = (uint32_t*)ctx->args.stream_gates;
  if (on_gpu && ctx->target->gate_on_streams(ctx, &on_gpu[run->coll], run->epoch)) {
    atomic_fetch_add_explicit(&ctx->stream_gates, 1, memory_order_relaxed);
    return;
  }
  dfcclResult_t r = df_wait_caller(ctx);
  __atomic_store_n(&ctx->gates_host[run->coll], (uint64_t)run->epoch | (r != dfcclSuccess ? DF_GATE_FAILED : 0),
                   __ATOMIC_RELEASE);
  if (r != dfcclSuccess)
    fprintf(stderr, "dfccl: rank %d: run %u of collective %u fails: %s\n", ctx->rank, run->epoch, run->coll,
            dfcclGetLastErrorMessage());
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
  for (int i = 0; i < n; i++) {
    df_host_stamp(ctx, runs[i].coll, runs[i].epoch, DF_HOST_STAMP_PUBLISH);
    if (runs[i].gated) gate_close(ctx, &runs[i]);
  }
  atomic_fetch_add(&ctx->outstanding, n);
  bool taking = ctx->cfg.poller_set_aside && df_taking_completions(ctx);
  dfcclResult_t r = df_sq_host_submit_n(&ctx->sq, runs, n, published, ctx->cfg.submit_timeout_ms,
                                        taking ? df_set_aside_completions : NULL, ctx);
  atomic_fetch_sub(&ctx->outstanding, n - *published);
  if (*published == 0) return r;
  atomic_fetch_add(&ctx->submitted, *published);
  for (int i = 0; i < *published; i++) df_host_stamp(ctx, runs[i].coll, runs[i].epoch, DF_HOST_STAMP_PUBLISHED);
  df_poller_notify(ctx);
  df_net_notify(ctx);
  for (int i = 0; i < *published; i++) /* the caller's work waited for while the entries travel */
    if (runs[i].gated) {
      gate_open(ctx, &runs[i]);
      df_host_stamp(ctx, runs[i].coll, runs[i].epoch, DF_HOST_STAMP_GATE_OPEN);
    }
  return r;
}

dfcclResult_t df_publish_run(df_ctx* ctx, uint32_t index, uint32_t epoch, uint32_t nchannels, const void* sendbuff,
                             void* recvbuff, bool gated) {
  df_sq_run run = {index, epoch, nchannels, sendbuff, recvbuff, gated};
  int published;
  return df_publish_runs(ctx, &run, 1, &published);
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
  df_stamp_call();
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
  bool gated = df_gate_wanted(ctx, stat.nchannels);
  DF_CHECK(df_check_run_buffers(ctx, kind, sendbuff, send_bytes, recvbuff, recv_bytes, collId, !gated));

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

  dfcclResult_t r = df_publish_run(ctx, (uint32_t)index, epoch, stat.nchannels, sendbuff, recvbuff, gated);
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
