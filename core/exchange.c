/*
 * Where a thread's exchanges among participants go (connectors.c asks df_exchange_allgather):
 *   - the context's bootstrap allgather (dfcclInit), by default;
 *   - a communicator's own exchange (dfcclExchange_t), for a blocking call on a communicator made
 *     with dfcclCommCreateStart (its destruction): started, then tested until done;
 *   - the caller's thread, for a nonblocking creation: the creation runs the ordinary blocking code
 *     on a thread of its own, and each allgather it makes waits in a mailbox until the caller's
 *     dfcclCommCreateTest has started it with the caller's exchange and seen it done.
 * So the set-up code (registration cards, mapping, closing) is written once, blocking, and a
 * caller that may not wait -- an MPI library inside a nonblocking collective -- still creates
 * communicators without waiting: its exchanges go out when it tests, through its own means.
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

struct dfcclCommCreation {
  df_ctx* ctx;
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
  dfcclComm_t comm;
};

static _Thread_local struct dfcclCommCreation* creating; /* set on a creation's own thread */
static _Thread_local const dfcclExchange_t* waiting;     /* a blocking call's own exchange */

/* The creation's thread: waits until the caller's tests have done the allgather. */
static int ask_caller(struct dfcclCommCreation* c, const void* send, void* recv, size_t bytes) {
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
  struct dfcclCommCreation* c = arg;
  creating = c;
  dfcclComm_t comm = NULL;
  dfcclResult_t r = df_comm_create(c->ctx, c->ranks, c->nranks, c->key, &c->exchange, &comm);
  creating = NULL;
  pthread_mutex_lock(&c->lock);
  c->result = r;
  c->comm = comm;
  snprintf(c->message, sizeof c->message, "%s", r == dfcclSuccess ? "" : dfcclGetLastErrorMessage());
  c->state = CREATION_ENDED;
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

static void free_creation(struct dfcclCommCreation* c) {
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->answered);
  free(c->ranks);
  free(c);
}

dfcclResult_t dfcclCommCreateStart(dfcclRankCtx_t ctx, const int* ranks, int nranks, uint32_t key,
                                   const dfcclExchange_t* exchange, dfcclCommCreation_t* creation) {
  DF_CHECK(df_ctx_check(ctx));
  if (creation == NULL) return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: NULL creation");
  *creation = NULL;
  if (exchange == NULL || exchange->start == NULL || exchange->test == NULL)
    return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: the exchange needs start and test functions");
  if (ranks == NULL || nranks <= 0)
    return df_error(dfcclInvalidArgument, "dfcclCommCreateStart: %d ranks%s", nranks,
                    ranks == NULL ? " (NULL list: name the participants)" : "");
  DF_CHECK(df_comm_check_key(key, "dfcclCommCreateStart"));
  struct dfcclCommCreation* c = calloc(1, sizeof *c);
  int* copy = malloc(sizeof *copy * (size_t)nranks);
  if (c == NULL || copy == NULL) {
    free(c);
    free(copy);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  memcpy(copy, ranks, sizeof *copy * (size_t)nranks); /* the caller's list may go before the creation ends */
  *c = (struct dfcclCommCreation){
      .ctx = ctx, .ranks = copy, .nranks = nranks, .key = key, .exchange = *exchange, .state = EXCHANGE_NONE};
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->answered, NULL);
  int err = pthread_create(&c->thread, NULL, creation_main, c);
  if (err != 0) {
    free_creation(c);
    return df_error(dfcclSystemError, "dfcclCommCreateStart: no thread for the creation (%s)", strerror(err));
  }
  *creation = c;
  return dfcclSuccess;
}

/* Caller holds c->lock: the exchange is done (or failed); the creation goes on. */
static void answer(struct dfcclCommCreation* c, int rc) {
  c->rc = rc;
  c->state = EXCHANGE_ANSWERED;
  pthread_cond_signal(&c->answered);
}

dfcclResult_t dfcclCommCreateTest(dfcclCommCreation_t c, dfcclComm_t* comm) {
  if (c == NULL || comm == NULL) return df_error(dfcclInvalidArgument, "dfcclCommCreateTest: NULL argument");
  *comm = NULL;
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
  if (!ended) return dfcclInProgress;
  pthread_join(c->thread, NULL);
  dfcclResult_t r = c->result;
  *comm = c->comm;
  if (r != dfcclSuccess) df_error(r, "%s", c->message); /* the creation thread's sentence, on this thread */
  free_creation(c);
  return r;
}
