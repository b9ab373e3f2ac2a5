/*
 * Where a thread's exchanges among participants go (connectors.c asks df_exchange_allgather):
 *   - the context's bootstrap allgather (dfcclInit), by default;
 *   - a communicator's own exchange (dfcclExchange_t), for a blocking call on a communicator made
 *     with dfcclCommCreateStart (its destruction): started, then tested until done;
 *   - the caller's thread, for a nonblocking creation: the creation runs the ordinary blocking code
 *     on a thread of its own, and each allgather it makes waits in a mailbox until a test of the
 *     caller's (dfcclCommCreateTest, or dfcclProgress of the context) has started it with the
 *     caller's exchange and seen it done.
 * So the set-up code (registration cards, mapping, closing) is written once, blocking, and a
 * caller that may not wait -- an MPI library inside a nonblocking collective -- still creates
 * communicators without waiting: its exchanges go out when it tests, through its own means.
 *
 * The communicator a nonblocking creation makes exists from its start (CREATING): runs submitted to
 * it are held (comm_held.c), and the test that sees the creation end submits them, or fails them.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The mailbox between a creation's thread (which asks) and the caller's tests (which answer). */
typedef enum {
  EXCHANGE_NONE,     /* nothing asked                                          */
  EXCHANGE_ASKED,    /* the creation waits for an allgather: start it          */
  EXCHANGE_STARTED,  /* started with the caller's exchange: test it            */
  EXCHANGE_ANSWERED, /* done (or failed: rc): the creation goes on             */
  CREATION_ENDED     /* the creation has its result: join its thread           */
} creation_state;

struct df_creation {
  struct dfcclComm* comm; /* made by dfcclCommCreateStart, its sets registered by the creation's thread */
  int* ranks;
  int nranks;
  uint32_t key;
  dfcclExchange_t exchange;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t answered;
  creation_state state;
  /* the allgather asked for (valid from EXCHANGE_ASKED to EXCHANGE_ANSWERED) */
  const void* send;
  void* recv;
  size_t bytes;
  void* request;
  int rc;
  /* the creation's end */
  dfcclResult_t result;
  char message[512];
};

static _Thread_local struct df_creation* creating;   /* set on a creation's own thread */
static _Thread_local const dfcclExchange_t* waiting; /* a blocking call's own exchange */

/* The creation's thread: waits until the caller's tests have done the allgather. */
static int ask_caller(struct df_creation* c, const void* send, void* recv, size_t bytes) {
  pthread_mutex_lock(&c->lock);
  c->send = send;
  c->recv = recv;
  c->bytes = bytes;
  c->state = EXCHANGE_ASKED;
  while (c->state != EXCHANGE_ANSWERED) pthread_cond_wait(&c->answered, &c->lock);
  c->state = EXCHANGE_NONE;
  int rc = c->rc;
  pthread_mutex_unlock(&c->lock);
  return rc;
}

static int start_and_wait(const dfcclExchange_t* x, const void* send, void* recv, size_t bytes) {
  void* request = NULL;
  int rc = x->start(x->arg, send, recv, bytes, &request);
  for (int done = 0; rc == 0 && !done; sched_yield()) rc = x->test(x->arg, request, &done);
  return rc;
}

dfcclResult_t df_exchange_allgather(df_ctx* ctx, const int* ranks, int nranks, const void* send, void* recv,
                                    size_t bytes) {
  int rc = creating != NULL  ? ask_caller(creating, send, recv, bytes)
           : waiting != NULL ? start_and_wait(waiting, send, recv, bytes)
                             : ctx->bootstrap.allgather(ctx->bootstrap.state, ranks, nranks, send, recv, bytes);
  if (rc != 0) return df_error(dfcclBootstrapError, "the exchange among %d ranks returned %d", nranks, rc);
  return dfcclSuccess;
}

void df_exchange_wait_with(const dfcclExchange_t* exchange) { waiting = exchange; }

/* ---- nonblocking creation ----------------------------------------------------------------------- */

static void* creation_main(void* arg) {
  struct df_creation* c = arg;
  creating = c;
  dfcclResult_t r = df_comm_register_sets(c->comm, c->ranks, c->nranks, c->key);
  creating = NULL;
  pthread_mutex_lock(&c->lock);
  c->result = r;
  snprintf(c->message, sizeof c->message, "%s", r == dfcclSuccess ? "" : dfcclGetLastErrorMessage());
  c->state = CREATION_ENDED;
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

static void free_creation(struct df_creation* c) {
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->answered);
  free(c->ranks);
  free(c);
}

/* This rank's index among `ranks`, or -1. */
static int position_of(const df_ctx* ctx, const int* ranks, int nranks) {
  for (int i = 0; i < nranks; i++)
    if (ranks[i] == ctx->rank) return i;
  return -1;
}

dfcclResult_t dfcclCommCreateStart(dfcclRankCtx_t ctx, const int* ranks, int nranks, uint32_t key,
                                   const dfcclExchange_t* exchange, dfcclComm_t* comm) {
  DF_CHECK(df_ctx_check(ctx));
  if (comm == NULL) return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: NULL comm");
  *comm = NULL;
  if (exchange == NULL || exchange->start == NULL || exchange->test == NULL)
    return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: the exchange needs start and test functions");
  if (ranks == NULL || nranks <= 0)
    return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: %d ranks%s", nranks,
                    ranks == NULL ? " (NULL list: name the participants)" : "");
  DF_CHECK(df_comm_check_key(key, "dfcclCommCreateStart"));
  int position = position_of(ctx, ranks, nranks); /* runs held meanwhile are checked against it */
  if (position < 0)
    return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: rank %d is not among the %d ranks", ctx->rank, nranks);
  struct dfcclComm* made = df_comm_new(ctx, nranks, exchange);
  struct df_creation* c = calloc(1, sizeof *c);
  int* copy = malloc(sizeof *copy * (size_t)nranks);
  if (made == NULL || c == NULL || copy == NULL) {
    free(made);
    free(c);
    free(copy);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  made->position = position;
  memcpy(copy, ranks, sizeof *copy * (size_t)nranks); /* the caller's list may go before the creation ends */
  *c = (struct df_creation){.comm = made, .ranks = copy, .nranks = nranks, .key = key, .exchange = *exchange};
  made->creation = c;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->answered, NULL);
  int err = pthread_create(&c->thread, NULL, creation_main, c);
  if (err != 0) {
    free_creation(c);
    free(made);
    return df_error(dfcclSystemError, "dfcclCommCreateStart: no thread for the creation (%s)", strerror(err));
  }
  atomic_fetch_add(&ctx->ncreating, 1);
  df_comm_link(made, DF_COMM_CREATING);
  *comm = made;
  return dfcclSuccess;
}

/* Caller holds c->lock: the exchange is done (or failed); the creation goes on. */
static void answer(struct df_creation* c, int rc) {
  c->rc = rc;
  c->state = EXCHANGE_ANSWERED;
  pthread_cond_signal(&c->answered);
}

/* One step of the caller's side of the mailbox: starts the allgather the creation asks for, tests
 * the one started.  True once the creation has ended. */
static bool step(struct df_creation* c) {
  pthread_mutex_lock(&c->lock);
  if (c->state == EXCHANGE_ASKED) { /* start it, then test it at once: it may be done already */
    pthread_mutex_unlock(&c->lock);
    int rc = c->exchange.start(c->exchange.arg, c->send, c->recv, c->bytes, &c->request);
    pthread_mutex_lock(&c->lock);
    if (rc != 0) answer(c, rc);
    else c->state = EXCHANGE_STARTED;
  }
  if (c->state == EXCHANGE_STARTED) {
    pthread_mutex_unlock(&c->lock);
    int done = 0;
    int rc = c->exchange.test(c->exchange.arg, c->request, &done);
    pthread_mutex_lock(&c->lock);
    if (rc != 0 || done) answer(c, rc);
  }
  bool ended = c->state == CREATION_ENDED;
  pthread_mutex_unlock(&c->lock);
  return ended;
}

/* The tester saw the creation end: the held runs go, submitted or failed. */
static dfcclResult_t end_creation(struct dfcclComm* comm) {
  df_ctx* ctx = comm->ctx;
  struct df_creation* c = comm->creation;
  pthread_join(c->thread, NULL);
  dfcclResult_t r = c->result;
  pthread_mutex_lock(&ctx->lock);
  comm->creation = NULL;
  comm->stage = r == dfcclSuccess ? DF_COMM_PUBLISHING : DF_COMM_FAILED;
  comm->failure = r;
  snprintf(comm->failure_message, sizeof comm->failure_message, "%s", c->message);
  pthread_mutex_unlock(&ctx->lock);
  free_creation(c);
  if (r == dfcclSuccess) df_comm_publish_held(comm);
  else df_comm_fail_held(comm, dfcclCreationFailed);
  atomic_fetch_sub(&ctx->ncreating, 1);
  if (r != dfcclSuccess) df_error(r, "%s", comm->failure_message); /* the creation thread's sentence, here */
  return r;
}

/* The creation's result once it has ended (and its held runs are gone). */
static bool ended(struct dfcclComm* comm, dfcclResult_t* r) {
  pthread_mutex_lock(&comm->ctx->lock);
  df_comm_stage stage = comm->stage;
  *r = comm->failure;
  if (stage == DF_COMM_FAILED) df_error(*r, "%s", comm->failure_message);
  pthread_mutex_unlock(&comm->ctx->lock);
  return stage == DF_COMM_READY || stage == DF_COMM_FAILED;
}

dfcclResult_t df_creation_test(struct dfcclComm* comm) {
  dfcclResult_t r;
  if (ended(comm, &r)) return r;
  bool free_turn = false; /* one thread at a time steps the mailbox */
  if (!atomic_compare_exchange_strong(&comm->testing, &free_turn, true)) return dfcclInProgress;
  if (!ended(comm, &r)) r = step(comm->creation) ? end_creation(comm) : dfcclInProgress;
  atomic_store(&comm->testing, false);
  return r;
}

dfcclResult_t dfcclCommCreateTest(dfcclComm_t comm) {
  DF_CHECK(df_comm_check(comm));
  return df_creation_test(comm);
}

void df_creations_progress(df_ctx* ctx) {
  if (atomic_load_explicit(&ctx->ncreating, memory_order_relaxed) == 0) return; /* the common case */
  /* A communicator's memory stays until dfcclDestroy, and the list only grows at its head. */
  pthread_mutex_lock(&ctx->lock);
  for (struct dfcclComm* c = ctx->comms; c != NULL; c = c->next) {
    if (c->stage != DF_COMM_CREATING) continue;
    pthread_mutex_unlock(&ctx->lock);
    (void)df_creation_test(c); /* its result is for dfcclCommCreateTest */
    pthread_mutex_lock(&ctx->lock);
  }
  pthread_mutex_unlock(&ctx->lock);
}

void df_creations_finish(df_ctx* ctx) {
  while (atomic_load(&ctx->ncreating) > 0) {
    df_creations_progress(ctx);
    sched_yield();
  }
}
