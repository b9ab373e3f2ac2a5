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
 * A communicator made by dfcclCommCreateStart takes runs before its sets exist: dfcclSubmitBatch
 * hands them to comm_held.c, which holds them in call order until the test that sees the creation
 * end submits them through the same path (df_comm_submit) -- or fails them, if it failed.
 *
 * The v kinds' static context also names a blocks table in daemon memory.  The communicator interns
 * the tables by content: a run whose layout it has seen takes a reference to that table, so a loop
 * of one layout copies nothing and its static context stays equal.  A run holds its reference from
 * dfcclSubmit, through its wait in a set's queue, until its record leaves flight (poller) or it is
 * failed; past DF_COMM_MAX_TABLES tables the least recently used one that no run holds is rewritten
 * for the new layout.  Only the content matters to the daemon, so each rank decides that alone.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DF_COMM_MAGIC 0x64666363636f6d6dull
/* Serials below this are the callers' keys (dfcclCommCreateWithKey); agreed ones come after.  Both
 * stay below INT_MAX / DF_COMM_MAX_SETS, so that every set id is distinct. */
#define DF_COMM_KEYS (1u << 26)
#define DF_COMM_MAX_TABLES 64 /* blocks tables a communicator keeps (dfccl.h says so) */

_Static_assert((int)dfcclAllReduce == DF_COLL_ALL_REDUCE && (int)dfcclAllGather == DF_COLL_ALL_GATHER &&
                   (int)dfcclReduceScatter == DF_COLL_REDUCE_SCATTER && (int)dfcclBroadcast == DF_COLL_BROADCAST &&
                   (int)dfcclReduce == DF_COLL_REDUCE && (int)dfcclAllToAll == DF_COLL_ALL_TO_ALL,
               "dfcclCollKind_t names the daemon's kinds");

/* A v run's blocks table, shared by the communicator's runs of one layout. */
struct df_comm_table {
  struct df_comm_table* next; /* the communicator's, most recently used first */
  uint64_t* host;             /* as the daemon's copy: DF_BLOCK_COUNT, DF_BLOCK_DISPL */
  const uint64_t* dev;        /* the daemon's copy: the runs' st.blocks */
  uint64_t hash;
  int users; /* runs that hold it: submitted and not ended (ctx->lock) */
};

dfcclResult_t df_comm_check(const struct dfcclComm* comm) {
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
  uint32_t mine = ctx->next_comm_serial < DF_COMM_KEYS ? DF_COMM_KEYS : ctx->next_comm_serial;
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

dfcclResult_t df_comm_check_key(uint32_t key, const char* caller) {
  if (key >= DF_COMM_KEYS)
    return df_error(dfcclInvalidArgument, "%s: key %u is not below %u", caller, key, DF_COMM_KEYS);
  return dfcclSuccess;
}

struct dfcclComm* df_comm_new(df_ctx* ctx, int nranks, const dfcclExchange_t* exchange) {
  struct dfcclComm* c = calloc(1, sizeof *c);
  if (c == NULL) {
    df_error(dfcclOutOfResources, "out of memory");
    return NULL;
  }
  c->ctx = ctx;
  if (exchange != NULL) {
    c->has_exchange = true;
    c->exchange = *exchange;
  }
  c->nranks = nranks;
  c->nsets = (int)ctx->cfg.comm_sets;
  c->shape = (df_shape){ctx->cfg.max_channels, ctx->cfg.comm_slot_bytes};
  c->stage = DF_COMM_READY;
  atomic_init(&c->testing, false);
  return c;
}

dfcclResult_t df_comm_register_sets(struct dfcclComm* c, const int* ranks, int nranks, uint32_t serial) {
  df_ctx* ctx = c->ctx;
  dfcclResult_t r = dfcclSuccess;
  int made = 0;
  for (; made < c->nsets; made++) { /* a failure is told to every participant, at the same set */
    c->set_ids[made] = set_id(serial, made);
    r = df_register_connector_set(ctx, c->set_ids[made], ranks, nranks, &c->shape);
    if (r != dfcclSuccess) break;
  }
  if (r != dfcclSuccess) {
    if (made > 0) dfcclDeregister(ctx, c->set_ids, made);
    return r;
  }
  pthread_mutex_lock(&ctx->lock);
  for (int k = 0; k < c->nsets; k++) c->set_index[k] = df_registry_find(ctx, c->set_ids[k]);
  pthread_mutex_unlock(&ctx->lock);
  df_debug(ctx, "communicator of %d ranks: %d connector sets of %u channels, %u-byte slots", nranks, c->nsets,
           c->shape.nchannels, c->shape.slot_bytes);
  return dfcclSuccess;
}

void df_comm_link(struct dfcclComm* c, df_comm_stage stage) {
  df_ctx* ctx = c->ctx;
  pthread_mutex_lock(&ctx->lock);
  c->stage = stage;
  c->magic = DF_COMM_MAGIC;
  c->next = ctx->comms;
  ctx->comms = c;
  pthread_mutex_unlock(&ctx->lock);
}

/* A blocking creation: the communicator exists when it returns. */
static dfcclResult_t create(df_ctx* ctx, const int* ranks, int nranks, uint32_t serial, dfcclComm_t* comm) {
  struct dfcclComm* c = df_comm_new(ctx, nranks, NULL);
  if (c == NULL) return dfcclOutOfResources;
  dfcclResult_t r = df_comm_register_sets(c, ranks, nranks, serial);
  if (r != dfcclSuccess) {
    free(c);
    return r;
  }
  pthread_mutex_lock(&ctx->lock); /* NULL ranks: all of them; the registry knows where this rank stands */
  const df_coll_static* st = &ctx->colls[c->set_index[0]].stat;
  c->nranks = (int)st->nranks;
  c->position = (int)st->rank;
  pthread_mutex_unlock(&ctx->lock);
  df_comm_link(c, DF_COMM_READY);
  *comm = c;
  return dfcclSuccess;
}

dfcclResult_t dfcclCommCreate(dfcclRankCtx_t ctx, const int* ranks, int nranks, dfcclComm_t* comm) {
  DF_CHECK(df_ctx_check(ctx));
  if (comm == NULL) return df_error(dfcclInvalidArgument, "dfcclCommCreate: NULL comm");
  *comm = NULL;
  uint32_t serial;
  DF_CHECK(agree_serial(ctx, ranks, nranks, &serial));
  return create(ctx, ranks, nranks, serial, comm);
}

dfcclResult_t dfcclCommCreateWithKey(dfcclRankCtx_t ctx, const int* ranks, int nranks, uint32_t key,
                                     dfcclComm_t* comm) {
  DF_CHECK(df_ctx_check(ctx));
  if (comm == NULL) return df_error(dfcclInvalidArgument, "dfcclCommCreateWithKey: NULL comm");
  *comm = NULL;
  DF_CHECK(df_comm_check_key(key, "dfcclCommCreateWithKey"));
  return create(ctx, ranks, nranks, key, comm);
}

/* The run's static context: the set's (participants, connectors, flags) with the descriptor's
 * collective in it.  A v kind's blocks table comes in *b (st->blocks is set once it is interned). */
static dfcclResult_t run_context(const struct dfcclComm* c, const df_coll_static* set, const dfcclCollDesc_t* d,
                                 df_coll_static* st, df_blocks* b) {
  memset(b, 0, sizeof *b);
  if (d == NULL) return df_error(dfcclInvalidArgument, "dfcclSubmit: NULL descriptor");
  if ((unsigned)d->kind >= dfcclNumCollKinds)
    return df_error(dfcclInvalidArgument, "dfcclSubmit: unknown collective kind %d", (int)d->kind);
  bool variable = d->kind == dfcclAllGatherV || d->kind == dfcclReduceScatterV;
  bool reduces = d->kind == dfcclAllReduce || d->kind == dfcclReduceScatter || d->kind == dfcclReduce ||
                 d->kind == dfcclReduceScatterV;
  bool rooted = d->kind == dfcclBroadcast || d->kind == dfcclReduce;
  uint32_t kind = d->kind == dfcclAllGatherV       ? DF_COLL_ALL_GATHER
                  : d->kind == dfcclReduceScatterV ? DF_COLL_REDUCE_SCATTER
                                                   : (uint32_t)d->kind;
  dfcclRedOp_t op = reduces ? d->op : dfcclSum;
  size_t count = variable ? 0 : d->count;
  DF_CHECK(df_check_signature(count, d->dtype, op));
  if (rooted && (d->root < 0 || d->root >= c->nranks))
    return df_error(dfcclInvalidArgument, "dfcclSubmit: root %d is not a rank of the communicator of %d", d->root,
                    c->nranks);
  if (variable) {
    const char* name = kind == DF_COLL_ALL_GATHER ? "all-gather-v" : "reduce-scatter-v";
    if (d->counts == NULL) return df_error(dfcclInvalidArgument, "dfcclSubmit: %s with NULL desc->counts", name);
    /* Reduce-scatter-v's input is packed: its displs are not asked for. */
    DF_CHECK(df_blocks_table(c->nranks, c->position, kind, d->counts, kind == DF_COLL_ALL_GATHER ? d->displs : NULL,
                             d->dtype, b));
    if (b->largest == 0) { /* the largest block is the run's count: nothing to move, nothing to cut */
      free(b->host);
      b->host = NULL;
      return df_error(dfcclInvalidArgument, "dfcclSubmit: %s with desc->counts all 0 (every block empty)", name);
    }
    count = b->largest;
  }
  *st = *set;
  st->kind = kind;
  st->dtype = (uint32_t)d->dtype;
  st->op = (uint32_t)op;
  st->count = count;
  st->root = rooted ? d->root : 0;
  st->priority = 0;
  st->blocks = NULL; /* the set's last run may have had one */
  uint32_t channels = df_run_channels(&c->ctx->cfg, kind, (uint64_t)count * dfcclTypeSize(d->dtype), st->nranks);
  st->nchannels = channels < c->shape.nchannels ? channels : c->shape.nchannels;
  df_choose_all_reduce(&c->ctx->cfg, st, c->shape.slot_bytes);
  return dfcclSuccess;
}

static void free_table(df_ctx* ctx, struct df_comm_table* t) {
  if (t == NULL) return;
  ctx->target->free(ctx, (void*)t->dev);
  free(t->host);
  free(t);
}

static void free_tables(df_ctx* ctx, struct df_comm_table* list) {
  while (list != NULL) {
    struct df_comm_table* t = list;
    list = t->next;
    free_table(ctx, t);
  }
}

/* Caller holds ctx->lock. */
static void put_table(struct df_comm_table* t) {
  if (t != NULL) t->users--;
}

/* The communicator's table equal to b's, with a reference for the run.  b->host is taken (kept by
 * the table, or freed).  Past the cap, the least recently used table that no run holds is recycled:
 * the daemon reads it no more, and all of a communicator's tables have one size, so its daemon
 * memory is rewritten in place -- no cudaFree on the submit path (it would wait for the daemon). */
static dfcclResult_t intern_table(struct dfcclComm* c, df_blocks* b, struct df_comm_table** out) {
  df_ctx* ctx = c->ctx;
  size_t bytes = 2 * (size_t)c->nranks * sizeof *b->host;
  struct df_comm_table *t, **idle = NULL;
  pthread_mutex_lock(&ctx->lock);
  for (struct df_comm_table** p = &c->tables; (t = *p) != NULL; p = &t->next) {
    if (t->hash == b->hash && memcmp(t->host, b->host, bytes) == 0) {
      *p = t->next; /* to the front */
      t->next = c->tables;
      c->tables = t;
      t->users++;
      pthread_mutex_unlock(&ctx->lock);
      free(b->host);
      b->host = NULL;
      *out = t;
      return dfcclSuccess;
    }
    if (t->users == 0) idle = p; /* the last one seen is the least recently used */
  }
  bool full = c->ntables >= DF_COMM_MAX_TABLES;
  if (full && idle != NULL) {
    t = *idle;
    *idle = t->next;
    c->ntables--;
  }
  pthread_mutex_unlock(&ctx->lock);
  dfcclResult_t r = dfcclSuccess;
  if (full && t == NULL)
    r = df_error(dfcclOutOfResources,
                 "dfcclSubmit: a new blocks layout, but the communicator's %d blocks tables are all held by runs in "
                 "flight or queued; wait for some of them to complete",
                 DF_COMM_MAX_TABLES);
  else if (t == NULL && (t = calloc(1, sizeof *t)) == NULL) r = df_error(dfcclOutOfResources, "out of memory");
  else if (t->dev == NULL) r = df_blocks_install(ctx, b, (uint32_t)c->nranks, &t->dev);
  else r = ctx->target->copy_in(ctx, (void*)t->dev, b->host, bytes);
  if (r != dfcclSuccess) {
    free_table(ctx, t);
    free(b->host);
    b->host = NULL;
    return r;
  }
  free(t->host);
  t->host = b->host;
  b->host = NULL;
  t->hash = b->hash;
  t->users = 1;
  pthread_mutex_lock(&ctx->lock);
  t->next = c->tables;
  c->tables = t;
  c->ntables++;
  pthread_mutex_unlock(&ctx->lock);
  *out = t;
  return dfcclSuccess;
}

/* Starts a run whose record the caller has just put in flight (epoch): its static context goes in
 * first when the set ran another collective last (install). */
static dfcclResult_t start(df_ctx* ctx, int index, const df_coll_static* st, bool install, uint32_t epoch,
                           const void* sendbuff, void* recvbuff) {
  if (install) DF_CHECK(df_install_static(ctx, index, st));
  return df_publish_run(ctx, (uint32_t)index, epoch, st->nchannels, sendbuff, recvbuff, false);
}

/* Caller holds ctx->lock: the set is idle; it is now in flight with this run, which hands its
 * table reference (if any) to the set's record. */
static uint32_t take_set(df_coll* set, const df_coll_static* st, struct df_comm_table* table, dfcclCallback_t callback,
                         void* arg, int id, bool* install) {
  *install = memcmp(&set->stat, st, sizeof *st) != 0;
  set->stat = *st;
  set->table = table;
  return df_record_start(set, callback, arg, id);
}

/* Caller holds ctx->lock: the run that took the set was never published. */
static void give_back_set(df_coll* set) {
  df_record_cancel(set);
  df_comm_run_ended(set);
  set->stat.kind = DF_COLL_NUM_KINDS; /* installed or not: the next run installs its own */
}

void df_comm_run_ended(df_coll* c) {
  put_table(c->table);
  c->table = NULL;
}

/* One run of a batch on its way through dfcclSubmitBatch. */
typedef struct {
  df_coll_static st;
  struct df_comm_table* table; /* a v run's reference, from its check until its record ends */
  df_comm_run* line;           /* its place in its set's queue, made when the set is busy    */
  int index;                   /* its connector set                                        */
  int id;                      /* its number, as its callback's collId                     */
  bool started, install;
  bool gated; /* published before the wait for the caller's work (df_publish_runs): a lone run whose set is
               * free, which this thread publishes itself (up to DFCCL_GATE_CHANNELS channels) */
  uint32_t epoch;
} batch_run;

/* What a run reads and writes on this rank: the descriptor's collective, or a v kind's blocks. */
static void run_buffer_bytes(const df_coll_static* st, const df_blocks* blocks, size_t* send_bytes,
                             size_t* recv_bytes) {
  size_t esize = dfcclTypeSize((dfcclDataType_t)st->dtype);
  df_run_bytes(st, send_bytes, recv_bytes);
  if (blocks->host) {
    *send_bytes = blocks->send_elems * esize;
    *recv_bytes = blocks->recv_elems * esize;
  }
}

/* Everything that can refuse a run, before it takes its number: its static context (b->st holds
 * its set's on the way in), buffers, blocks table.  caller_waited: the caller's work on the buffers
 * was waited for when the run was held. */
static dfcclResult_t check_run(struct dfcclComm* comm, const dfcclSubmission_t* s, batch_run* b, bool caller_waited) {
  df_ctx* ctx = comm->ctx;
  df_blocks blocks;
  const df_coll_static set = b->st;
  DF_CHECK(run_context(comm, &set, s->desc, &b->st, &blocks));
  size_t send_bytes, recv_bytes;
  run_buffer_bytes(&b->st, &blocks, &send_bytes, &recv_bytes);
  b->gated = b->gated && df_gate_wanted(ctx, b->st.nchannels);
  bool wait = !b->gated && !caller_waited;
  dfcclResult_t r =
      df_check_run_buffers(ctx, b->st.kind, s->sendbuff, send_bytes, s->recvbuff, recv_bytes, b->id, wait);
  if (r == dfcclSuccess && blocks.host) r = intern_table(comm, &blocks, &b->table);
  free(blocks.host); /* NULL once interned */
  if (r == dfcclSuccess && b->table) b->st.blocks = b->table->dev;
  return r;
}

/* A batch's working memory: on the stack for a few runs (dfcclSubmit's one: no allocation on the
 * way of a run), else on the heap. */
#define DF_BATCH_ON_STACK 4
typedef struct {
  batch_run* runs;
  df_sq_run* entries;
  batch_run stack_runs[DF_BATCH_ON_STACK];
  df_sq_run stack_entries[DF_BATCH_ON_STACK];
} batch;

static bool batch_init(batch* w, int n) {
  if (n <= DF_BATCH_ON_STACK) {
    memset(w->stack_runs, 0, sizeof w->stack_runs);
    w->runs = w->stack_runs;
    w->entries = w->stack_entries;
    return true;
  }
  w->runs = calloc((size_t)n, sizeof *w->runs);
  w->entries = calloc((size_t)n, sizeof *w->entries);
  return w->runs != NULL && w->entries != NULL;
}

static void batch_fini(batch* w) {
  if (w->runs == w->stack_runs) return;
  free(w->runs);
  free(w->entries);
}

/* A batch refused before any run took its number: what its checked runs hold goes back. */
static dfcclResult_t refuse_batch(df_ctx* ctx, batch* w, int n, dfcclResult_t r) {
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < n; i++) put_table(w->runs[i].table);
  pthread_mutex_unlock(&ctx->lock);
  for (int i = 0; i < n; i++) free(w->runs[i].line);
  batch_fini(w);
  return r;
}

dfcclResult_t df_comm_check_held(struct dfcclComm* c, const dfcclSubmission_t* s, uint64_t number, bool wait) {
  df_coll_static set = {0}, st; /* no set yet: the communicator's ranks are all a check needs */
  set.nranks = (uint32_t)c->nranks;
  set.rank = (uint32_t)c->position;
  df_blocks blocks;
  DF_CHECK(run_context(c, &set, s->desc, &st, &blocks));
  size_t send_bytes, recv_bytes;
  run_buffer_bytes(&st, &blocks, &send_bytes, &recv_bytes);
  free(blocks.host); /* made again when the run is submitted */
  return df_check_run_buffers(c->ctx, st.kind, s->sendbuff, send_bytes, s->recvbuff, recv_bytes,
                              (int)(number & INT_MAX), wait);
}

dfcclResult_t dfcclSubmitBatch(dfcclComm_t comm, const dfcclSubmission_t* runs, int n) {
  df_stamp_call();
  DF_CHECK(df_comm_check(comm));
  if (n < 0 || (n > 0 && runs == NULL))
    return df_error(dfcclInvalidArgument, "dfcclSubmitBatch: %d runs at %p", n, (const void*)runs);
  if (n == 0) return dfcclSuccess;
  df_ctx* ctx = comm->ctx;
  pthread_mutex_lock(&ctx->lock);
  df_comm_stage stage = comm->stage;
  pthread_mutex_unlock(&ctx->lock);
  if (stage == DF_COMM_READY) return df_comm_submit(comm, runs, n, false);
  return df_comm_hold(comm, runs, n); /* being made, or failed: comm_held.c */
}

dfcclResult_t df_comm_submit(struct dfcclComm* comm, const dfcclSubmission_t* runs, int n, bool caller_waited) {
  df_ctx* ctx = comm->ctx;
  dfcclResult_t fatal = (dfcclResult_t)atomic_load(&ctx->fatal);
  if (fatal != dfcclSuccess) return df_error(fatal, "the daemon failed earlier; the context is unusable");
  batch w;
  if (!batch_init(&w, n)) {
    batch_fini(&w);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  batch_run* b = w.runs;

  /* Everything that can refuse a run comes before the runs take their numbers: one refused run
   * refuses the batch. */
  pthread_mutex_lock(&ctx->lock);
  uint64_t first = comm->runs;
  for (int i = 0; i < n; i++) {
    b[i].index = comm->set_index[(first + (uint64_t)i) % (uint64_t)comm->nsets];
    b[i].id = (int)((first + (uint64_t)i) & INT_MAX);
    b[i].st = ctx->colls[b[i].index].stat; /* its set's, until check_run makes it the run's */
    /* A set free now stays free until this thread takes it (one thread submits to a communicator:
     * a run of another thread meanwhile refuses this one below). */
    const df_coll* set = &ctx->colls[b[i].index];
    b[i].gated = n == 1 && !set->in_flight && !set->queued && !caller_waited;
  }
  /* A failed run revoked its set's connectors on every participant; the communicator's later runs
   * (on any set) would run out of step with the peers that saw the failure: none runs. */
  dfcclResult_t r = dfcclSuccess;
  for (int k = 0; k < comm->nsets && r == dfcclSuccess; k++)
    r = df_check_not_failed(ctx, comm->set_index[k], "communicator run");
  pthread_mutex_unlock(&ctx->lock);
  /* The caller's work is waited for once a batch, by the first run's check: every run of the batch
   * was handed over before that wait began, so it orders them all (a wait is two stream queries,
   * 2.7-4 us; MPI_Startall of 8 requests paid eight). */
  bool waited = caller_waited;
  for (int i = 0; i < n && r == dfcclSuccess; i++) {
    r = check_run(comm, &runs[i], &b[i], waited);
    waited = waited || !b[i].gated;
    if (r != dfcclSuccess && n > 1) {
      char why[512];
      snprintf(why, sizeof why, "%s", dfcclGetLastErrorMessage());
      df_error(r, "dfcclSubmitBatch: run %d of %d: %s", i, n, why);
    }
  }
  if (r != dfcclSuccess) return refuse_batch(ctx, &w, n, r);

  /* One hold of the lock numbers them all: each takes its set, or waits in its queue. */
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < n && r == dfcclSuccess; i++)
    if (ctx->colls[b[i].index].state != DF_COLL_READY)
      r = df_error(dfcclInvalidArgument, "dfcclSubmit: the communicator was destroyed while run %llu was submitted",
                   (unsigned long long)(first + (uint64_t)i));
  if (r == dfcclSuccess && comm->runs != first)
    r = df_error(dfcclInvalidArgument,
                 "dfcclSubmit: the communicator took another run while run %llu was submitted (submit from one "
                 "thread at a time, in the same order on every rank)",
                 (unsigned long long)first);
  /* A run waits in line when its set is busy, or taken by a run of the batch before it (run i and
   * run i - nsets share a set): its place is made first, so that running out of memory still
   * refuses the whole batch. */
  for (int i = 0; i < n && r == dfcclSuccess; i++) {
    const df_coll* set = &ctx->colls[b[i].index];
    if ((i >= comm->nsets || set->in_flight || set->queued) && (b[i].line = malloc(sizeof *b[i].line)) == NULL)
      r = df_error(dfcclOutOfResources, "out of memory");
  }
  if (r != dfcclSuccess) {
    pthread_mutex_unlock(&ctx->lock);
    return refuse_batch(ctx, &w, n, r);
  }
  df_sq_run* entries = w.entries;
  int nstarted = 0, nqueued = 0;
  for (int i = 0; i < n; i++) {
    const dfcclSubmission_t* s = &runs[i];
    df_coll* set = &ctx->colls[b[i].index];
    if (set->in_flight || set->queued) { /* its set is busy: the run waits in line */
      *b[i].line =
          (df_comm_run){NULL, b[i].st, s->sendbuff, s->recvbuff, s->callback, s->callbackArg, b[i].id, b[i].table};
      if (set->queued_last) set->queued_last->next = b[i].line;
      else set->queued = b[i].line;
      set->queued_last = b[i].line;
      b[i].line = NULL;
      nqueued++;
      continue;
    }
    b[i].epoch = take_set(set, &b[i].st, b[i].table, s->callback, s->callbackArg, b[i].id, &b[i].install);
    b[i].started = true;
  }
  comm->runs += (uint64_t)n;
  pthread_mutex_unlock(&ctx->lock);

  /* The ones that took their sets go to the daemon: static contexts first, then their entries
   * under one hold of the queue's lock, one notification. */
  for (int i = 0; i < n; i++) {
    if (!b[i].started) continue;
    if (r == dfcclSuccess && b[i].install) r = df_install_static(ctx, b[i].index, &b[i].st);
    if (r != dfcclSuccess) break;
    entries[nstarted++] = (df_sq_run){(uint32_t)b[i].index, b[i].epoch,       b[i].st.nchannels,
                                      runs[i].sendbuff,     runs[i].recvbuff, b[i].gated};
  }
  int published = 0;
  if (r == dfcclSuccess) r = df_publish_runs(ctx, entries, nstarted, &published);
  if (r == dfcclSuccess) {
    batch_fini(&w);
    return dfcclSuccess;
  }
  /* The daemon stopped taking entries (or a context could not be installed).  A batch of which
   * nothing reached the daemon and nothing waits in line never happened (the error is returned);
   * else the batch was accepted: the runs that did not reach the daemon end with the error through
   * their callbacks, and the ones queued behind them start, or end likewise. */
  char why[512];
  snprintf(why, sizeof why, "%s", dfcclGetLastErrorMessage());
  bool nothing = published == 0 && nqueued == 0;
  for (int i = 0, k = 0; i < n; i++) {
    if (!b[i].started) continue;
    if (k++ < published) continue;
    pthread_mutex_lock(&ctx->lock);
    give_back_set(&ctx->colls[b[i].index]);
    pthread_mutex_unlock(&ctx->lock);
    if (!nothing && runs[i].callback) runs[i].callback(b[i].id, r, runs[i].callbackArg);
    if (!nothing) df_comm_start_queued(ctx, b[i].index);
  }
  if (nothing) {
    pthread_mutex_lock(&ctx->lock);
    comm->runs -= (uint64_t)n;
    pthread_mutex_unlock(&ctx->lock);
  }
  batch_fini(&w);
  if (!nothing) return dfcclSuccess; /* accepted: each run has said how it ended, or will */
  return df_error(r, "%s", why);
}

dfcclResult_t dfcclSubmit(dfcclComm_t comm, const dfcclCollDesc_t* desc, const void* sendbuff, void* recvbuff,
                          dfcclCallback_t callback, void* callbackArg) {
  dfcclSubmission_t run = {desc, sendbuff, recvbuff, callback, callbackArg};
  return dfcclSubmitBatch(comm, &run, 1);
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
    if (r == dfcclSuccess) r = df_check_not_failed(ctx, index, "communicator run"); /* the run before failed */
    bool install = false;
    uint32_t epoch = r == dfcclSuccess
                         ? take_set(set, &q->stat, q->table, q->callback, q->callback_arg, q->callback_id, &install)
                         : 0;
    pthread_mutex_unlock(&ctx->lock);
    if (r == dfcclSuccess) r = start(ctx, index, &q->stat, install, epoch, q->sendbuff, q->recvbuff);
    if (r == dfcclSuccess) {
      free(q);
      return true;
    }
    /* It could not start: it ends with the error (its table let go), and the next one is tried. */
    pthread_mutex_lock(&ctx->lock);
    if (epoch != 0) give_back_set(set);
    else put_table(q->table);
    pthread_mutex_unlock(&ctx->lock);
    if (q->callback) q->callback(q->callback_id, r, q->callback_arg);
    free(q);
  }
}

dfcclResult_t dfcclCommDestroy(dfcclComm_t comm) {
  DF_CHECK(df_comm_check(comm));
  df_ctx* ctx = comm->ctx;
  /* A creation still going on ends first: its exchange is tested until done, its held runs are
   * submitted (and fail the deregistration below, as runs in flight do). */
  dfcclResult_t made;
  while ((made = df_creation_test(comm)) == dfcclInProgress) sched_yield();
  if (made != dfcclSuccess) { /* every participant saw it fail: nothing is registered, nobody to meet */
    pthread_mutex_lock(&ctx->lock);
    comm->magic = 0;
    pthread_mutex_unlock(&ctx->lock);
    return dfcclSuccess;
  }
  /* Collective, like a deregistration: a run still in flight (or queued) anywhere fails it
   * everywhere, and the communicator stays usable. */
  if (comm->has_exchange) df_exchange_wait_with(&comm->exchange); /* this thread's exchanges: the caller's */
  dfcclResult_t r = dfcclDeregister(ctx, comm->set_ids, comm->nsets);
  df_exchange_wait_with(NULL);
  DF_CHECK(r);
  /* Its memory stays until dfcclDestroy, so that a later use of the handle is told, not undefined.
   * Its tables go now: no run holds them any more. */
  pthread_mutex_lock(&ctx->lock);
  comm->magic = 0;
  struct df_comm_table* tables = comm->tables;
  comm->tables = NULL;
  comm->ntables = 0;
  pthread_mutex_unlock(&ctx->lock);
  free_tables(ctx, tables);
  return dfcclSuccess;
}

void df_comm_free_all(df_ctx* ctx, dfcclResult_t error) {
  for (int i = 0; i < ctx->ncolls; i++) {
    df_coll* set = &ctx->colls[i];
    while (set->queued) {
      df_comm_run* q = set->queued;
      set->queued = q->next;
      put_table(q->table);
      if (q->callback) q->callback(q->callback_id, error, q->callback_arg);
      free(q);
    }
    set->queued_last = NULL;
  }
  while (ctx->comms) { /* live and destroyed ones */
    struct dfcclComm* c = ctx->comms;
    ctx->comms = c->next;
    df_comm_fail_held(c, error); /* none, unless the daemon failed while they were submitted */
    c->magic = 0;
    free_tables(ctx, c->tables); /* the daemon has exited: held ones too */
    free(c);
  }
}
