/*
 * Communicators and descriptors: the one collective exchange is dfcclCommCreate; every run after it
 * is a descriptor submitted with no exchange at all.
 *
 * A communicator owns a pool of connector sets, each registered like a collective under an internal
 * id (< 0), with its channels and FIFO slots fixed at creation.  Run i submitted to the
 * communicator runs on set i mod nsets: every participant submits the same runs in the same order
 * (MPI's rule for one communicator; disorder across communicators is what preemption resolves), so
 * every participant binds run i to the same set.  A set carries one run at a time; a run that finds
 * its set busy waits in the set's queue and starts, from the poller, when the run before it
 * completes -- on every participant in the same order, so the connectors' step counters stay in
 * step.  Each run installs its own static context (kind, count, type, op, root, channels) in the
 * daemon's table before its SQE exists, when it differs from what the set ran last.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DF_COMM_MAGIC 0x64666363636f6d6dull
#define DF_COMM_MAX_SETS 16

_Static_assert((int)dfcclAllReduce == DF_COLL_ALL_REDUCE && (int)dfcclAllGather == DF_COLL_ALL_GATHER &&
                   (int)dfcclReduceScatter == DF_COLL_REDUCE_SCATTER && (int)dfcclBroadcast == DF_COLL_BROADCAST &&
                   (int)dfcclReduce == DF_COLL_REDUCE && (int)dfcclAllToAll == DF_COLL_ALL_TO_ALL,
               "dfcclCollKind_t names the daemon's kinds");

struct dfcclComm {
  uint64_t magic;
  df_ctx* ctx;
  struct dfcclComm* next; /* ctx->comms                                                    */
  int nranks;
  int position; /* this rank's index in the communicator                        */
  df_shape shape;
  int nsets;
  int set_ids[DF_COMM_MAX_SETS];
  int set_index[DF_COMM_MAX_SETS];
  uint64_t runs; /* submitted: the next run's number                             */
};

static dfcclResult_t comm_check(const struct dfcclComm* comm) {
  if (comm == NULL || __atomic_load_n(&comm->magic, __ATOMIC_ACQUIRE) != DF_COMM_MAGIC)
    return df_error(dfcclInvalidArgument, "not a communicator (NULL, destroyed, or not from dfcclCommCreate)");
  return df_ctx_check(comm->ctx);
}

/* The serial the participants agree on for a new communicator: above every one any of them used,
 * so that its sets' internal ids are new on every participant. */
static dfcclResult_t agree_serial(df_ctx* ctx, const int* ranks, int nranks, uint32_t* serial) {
  df_group* g;
  pthread_mutex_lock(&ctx->lock);
  dfcclResult_t r = df_group_get(ctx, ranks, nranks, &g);
  uint32_t mine = ctx->next_comm_serial;
  pthread_mutex_unlock(&ctx->lock);
  if (r != dfcclSuccess) return r;
  uint32_t* all = calloc((size_t)g->nranks, sizeof *all);
  if (all == NULL) r = df_error(dfcclOutOfResources, "out of memory");
  else r = df_links_allgather(ctx, g, &mine, all, sizeof mine);
  *serial = 0;
  for (int i = 0; r == dfcclSuccess && i < g->nranks; i++)
    if (all[i] > *serial) *serial = all[i];
  free(all);
  pthread_mutex_lock(&ctx->lock);
  if (r == dfcclSuccess && *serial >= ctx->next_comm_serial) ctx->next_comm_serial = *serial + 1;
  df_group_put(ctx, g);
  pthread_mutex_unlock(&ctx->lock);
  return r;
}

static int set_id(uint32_t serial, int set) {
  return -1 - (int)(serial % (INT_MAX / DF_COMM_MAX_SETS)) * DF_COMM_MAX_SETS - set;
}

dfcclResult_t dfcclCommCreate(dfcclRankCtx_t ctx, const int* ranks, int nranks, dfcclComm_t* comm) {
  DF_CHECK(df_ctx_check(ctx));
  if (comm == NULL) return df_error(dfcclInvalidArgument, "dfcclCommCreate: NULL comm");
  *comm = NULL;
  const df_config* cfg = &ctx->cfg;
  uint32_t serial;
  DF_CHECK(agree_serial(ctx, ranks, nranks, &serial));
  struct dfcclComm* c = calloc(1, sizeof *c);
  if (c == NULL) return df_error(dfcclOutOfResources, "out of memory");
  c->ctx = ctx;
  c->nsets = (int)cfg->comm_sets;
  c->shape = (df_shape){cfg->max_channels, cfg->comm_slot_bytes};
  dfcclResult_t r = dfcclSuccess;
  int made = 0;
  for (; made < c->nsets; made++) { /* a failure is told to every participant, at the same set */
    c->set_ids[made] = set_id(serial, made);
    r = df_register_connector_set(ctx, c->set_ids[made], ranks, nranks, &c->shape);
    if (r != dfcclSuccess) break;
  }
  if (r != dfcclSuccess) {
    if (made > 0) dfcclDeregister(ctx, c->set_ids, made);
    free(c);
    return r;
  }
  pthread_mutex_lock(&ctx->lock);
  for (int k = 0; k < c->nsets; k++) c->set_index[k] = df_registry_find(ctx, c->set_ids[k]);
  const df_coll_static* st = &ctx->colls[c->set_index[0]].stat;
  c->nranks = (int)st->nranks;
  c->position = (int)st->rank;
  c->magic = DF_COMM_MAGIC;
  c->next = ctx->comms;
  ctx->comms = c;
  pthread_mutex_unlock(&ctx->lock);
  df_debug(ctx, "communicator of %d ranks (position %d): %d connector sets of %u channels, %u-byte slots", c->nranks,
           c->position, c->nsets, c->shape.nchannels, c->shape.slot_bytes);
  *comm = c;
  return dfcclSuccess;
}

/* The run's static context: the set's (participants, connectors, flags) with the descriptor's
 * collective in it. */
static dfcclResult_t run_context(const struct dfcclComm* c, const df_coll_static* set, const dfcclCollDesc_t* d,
                                 df_coll_static* st) {
  if (d == NULL) return df_error(dfcclInvalidArgument, "dfcclSubmit: NULL descriptor");
  if ((unsigned)d->kind >= dfcclNumCollKinds)
    return df_error(dfcclInvalidArgument, "dfcclSubmit: unknown collective kind %d", (int)d->kind);
  bool reduces = d->kind == dfcclAllReduce || d->kind == dfcclReduceScatter || d->kind == dfcclReduce;
  bool rooted = d->kind == dfcclBroadcast || d->kind == dfcclReduce;
  dfcclRedOp_t op = reduces ? d->op : dfcclSum;
  DF_CHECK(df_check_signature(d->count, d->dtype, op));
  if (rooted && (d->root < 0 || d->root >= c->nranks))
    return df_error(dfcclInvalidArgument, "dfcclSubmit: root %d is not a rank of the communicator of %d", d->root,
                    c->nranks);
  *st = *set;
  st->kind = (uint32_t)d->kind;
  st->dtype = (uint32_t)d->dtype;
  st->op = (uint32_t)op;
  st->count = d->count;
  st->root = rooted ? d->root : 0;
  st->priority = 0;
  uint32_t channels = df_run_channels(&c->ctx->cfg, st->kind, (uint64_t)d->count * dfcclTypeSize(d->dtype), st->nranks);
  st->nchannels = channels < c->shape.nchannels ? channels : c->shape.nchannels;
  return dfcclSuccess;
}

/* Starts a run whose record the caller has just put in flight (epoch): its static context goes in
 * first when the set ran another collective last (install). */
static dfcclResult_t start(df_ctx* ctx, int index, const df_coll_static* st, bool install, uint32_t epoch,
                           const void* sendbuff, void* recvbuff) {
  if (install) DF_CHECK(df_install_static(ctx, index, st));
  return df_publish_run(ctx, (uint32_t)index, epoch, st->nchannels, sendbuff, recvbuff);
}

/* Caller holds ctx->lock: the set is idle; it is now in flight with this run. */
static uint32_t take_set(df_coll* set, const df_coll_static* st, dfcclCallback_t callback, void* arg, int id,
                         bool* install) {
  *install = memcmp(&set->stat, st, sizeof *st) != 0;
  set->stat = *st;
  return df_record_start(set, callback, arg, id);
}

/* Caller holds ctx->lock: the run that took the set was never published. */
static void give_back_set(df_coll* set) {
  df_record_cancel(set);
  set->stat.kind = DF_COLL_NUM_KINDS; /* installed or not: the next run installs its own */
}

dfcclResult_t dfcclSubmit(dfcclComm_t comm, const dfcclCollDesc_t* desc, const void* sendbuff, void* recvbuff,
                          dfcclCallback_t callback, void* callbackArg) {
  DF_CHECK(comm_check(comm));
  df_ctx* ctx = comm->ctx;
  dfcclResult_t fatal = (dfcclResult_t)atomic_load(&ctx->fatal);
  if (fatal != dfcclSuccess) return df_error(fatal, "the daemon failed earlier; the context is unusable");

  /* Everything that can refuse the run comes before it takes its number. */
  pthread_mutex_lock(&ctx->lock);
  uint64_t number = comm->runs;
  int index = comm->set_index[number % (uint64_t)comm->nsets];
  df_coll_static set_stat = ctx->colls[index].stat;
  pthread_mutex_unlock(&ctx->lock);
  df_coll_static st;
  DF_CHECK(run_context(comm, &set_stat, desc, &st));
  size_t send_bytes, recv_bytes;
  df_run_bytes(&st, &send_bytes, &recv_bytes);
  int id = (int)(number & INT_MAX);
  DF_CHECK(df_check_run_buffers(ctx, st.kind, sendbuff, send_bytes, recvbuff, recv_bytes, id));

  pthread_mutex_lock(&ctx->lock);
  df_coll* set = &ctx->colls[index];
  if (comm->runs != number || set->state != DF_COLL_READY) {
    pthread_mutex_unlock(&ctx->lock);
    return df_error(dfcclInvalidArgument, "dfcclSubmit: the communicator %s while run %llu was submitted",
                    set->state != DF_COLL_READY ? "was destroyed"
                                                : "took another run (submit from one thread "
                                                  "at a time, in the same order on every rank)",
                    (unsigned long long)number);
  }
  if (set->in_flight || set->queued) { /* its set is busy: the run waits in line */
    df_comm_run* q = malloc(sizeof *q);
    if (q == NULL) {
      pthread_mutex_unlock(&ctx->lock);
      return df_error(dfcclOutOfResources, "out of memory");
    }
    *q = (df_comm_run){NULL, st, sendbuff, recvbuff, callback, callbackArg, id};
    if (set->queued_last) set->queued_last->next = q;
    else set->queued = q;
    set->queued_last = q;
    comm->runs++;
    pthread_mutex_unlock(&ctx->lock);
    return dfcclSuccess;
  }
  bool install;
  uint32_t epoch = take_set(set, &st, callback, callbackArg, id, &install);
  comm->runs++;
  pthread_mutex_unlock(&ctx->lock);
  dfcclResult_t r = start(ctx, index, &st, install, epoch, sendbuff, recvbuff);
  if (r != dfcclSuccess) { /* nothing was published: the run never happened */
    pthread_mutex_lock(&ctx->lock);
    give_back_set(set);
    comm->runs--;
    pthread_mutex_unlock(&ctx->lock);
  }
  return r;
}

bool df_comm_start_queued(df_ctx* ctx, int index) {
  for (;;) {
    pthread_mutex_lock(&ctx->lock);
    df_coll* set = &ctx->colls[index];
    df_comm_run* q = set->in_flight ? NULL : set->queued;
    if (q == NULL) {
      pthread_mutex_unlock(&ctx->lock);
      return false;
    }
    set->queued = q->next;
    if (set->queued == NULL) set->queued_last = NULL;
    dfcclResult_t r = (dfcclResult_t)atomic_load(&ctx->fatal);
    bool install = false;
    uint32_t epoch =
        r == dfcclSuccess ? take_set(set, &q->stat, q->callback, q->callback_arg, q->callback_id, &install) : 0;
    pthread_mutex_unlock(&ctx->lock);
    if (r == dfcclSuccess) r = start(ctx, index, &q->stat, install, epoch, q->sendbuff, q->recvbuff);
    if (r == dfcclSuccess) {
      free(q);
      return true;
    }
    if (epoch != 0) { /* it could not start: it ends with the error, and the next one is tried */
      pthread_mutex_lock(&ctx->lock);
      give_back_set(set);
      pthread_mutex_unlock(&ctx->lock);
    }
    if (q->callback) q->callback(q->callback_id, r, q->callback_arg);
    free(q);
  }
}

dfcclResult_t dfcclCommDestroy(dfcclComm_t comm) {
  DF_CHECK(comm_check(comm));
  df_ctx* ctx = comm->ctx;
  /* Collective, like a deregistration: a run still in flight (or queued) anywhere fails it
   * everywhere, and the communicator stays usable. */
  DF_CHECK(dfcclDeregister(ctx, comm->set_ids, comm->nsets));
  /* Its memory stays until dfcclDestroy, so that a later use of the handle is told, not undefined. */
  pthread_mutex_lock(&ctx->lock);
  comm->magic = 0;
  pthread_mutex_unlock(&ctx->lock);
  return dfcclSuccess;
}

void df_comm_free_all(df_ctx* ctx, dfcclResult_t error) {
  for (int i = 0; i < ctx->ncolls; i++) {
    df_coll* set = &ctx->colls[i];
    while (set->queued) {
      df_comm_run* q = set->queued;
      set->queued = q->next;
      if (q->callback) q->callback(q->callback_id, error, q->callback_arg);
      free(q);
    }
    set->queued_last = NULL;
  }
  while (ctx->comms) { /* live and destroyed ones */
    struct dfcclComm* c = ctx->comms;
    ctx->comms = c->next;
    c->magic = 0;
    free(c);
  }
}
