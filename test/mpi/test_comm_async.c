/*
 * Nonblocking communicator creation (dfcclCommCreateStart / dfcclCommCreateTest): each rank starts
 * the creation of NCOMMS communicators in its own order and drives them in another, as an MPI
 * library creates them inside nonblocking collectives; the exchanges are nonblocking allgathers
 * (MPI_Iallgather) on a duplicate of MPI_COMM_WORLD per communicator.  Between two starts every
 * rank also waits in a blocking exchange with one neighbour (MPI_Sendrecv), in its own order of
 * communicators: a creation that waited for the other ranks where it starts would hang there.
 * Every communicator then runs all-reduces and a broadcast, checked exactly, and is destroyed (its
 * destruction's exchange is its own: the same MPI communicator, tested in a loop).  Bad arguments
 * are refused by name.
 *
 *   mpirun -np N test_comm_async [-i iterations] [-b]
 *
 * -b (the twin): each creation is waited for where it starts (tested until it ends), as a blocking
 * creation would be: the ranks wait in different communicators' exchanges, and for the neighbour
 * that waits in another, forever (the watchdog fires).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mpi_options.h"

#define NCOMMS 4
#define COUNT 4096

/* One communicator's exchange: nonblocking allgathers on its own MPI communicator. */
typedef struct {
  MPI_Comm mpi;
  MPI_Request request;
  int started, tested;
} exchange_t;

static int exchange_start(void* arg, const void* send, void* recv, size_t bytes, void** request) {
  exchange_t* x = arg;
  x->started++;
  *request = &x->request;
  return MPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, x->mpi, &x->request) != MPI_SUCCESS;
}

static int exchange_test(void* arg, void* request, int* done) {
  exchange_t* x = arg;
  x->tested++;
  return MPI_Test((MPI_Request*)request, done, MPI_STATUS_IGNORE) != MPI_SUCCESS;
}

/* A different order of the communicators on every rank. */
static void order_of(int* order, int rank, int shift) {
  for (int i = 0; i < NCOMMS; i++) order[i] = (i + rank * shift) % NCOMMS;
  if (rank % 2) /* odd ranks: backwards */
    for (int i = 0; i < NCOMMS / 2; i++) {
      int t = order[i];
      order[i] = order[NCOMMS - 1 - i];
      order[NCOMMS - 1 - i] = t;
    }
}

static long bad_arguments(harness* h, exchange_t* x, const int* ranks) {
  dfcclExchange_t ok = {exchange_start, exchange_test, x}, none = {NULL, exchange_test, x};
  dfcclCommCreation_t c;
  long wrong = 0;
  struct {
    dfcclResult_t got;
    const char* what;
  } cases[] = {
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 5, &none, &c), "an exchange without start"},
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 5, NULL, &c), "a NULL exchange"},
      {dfcclCommCreateStart(h->ctx, NULL, h->nranks, 5, &ok, &c), "a NULL rank list"},
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 1u << 26, &ok, &c), "a key beyond the keys"},
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 5, &ok, NULL), "a NULL creation"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (cases[i].got != dfcclInvalidArgument) {
      fprintf(stderr, "rank %d: %s was not refused (%s)\n", h->rank, cases[i].what, dfcclGetErrorString(cases[i].got));
      wrong++;
    }
  return wrong;
}

static long run_and_check(harness* h, dfcclComm_t comm, int k, int it) {
  size_t bytes = COUNT * sizeof(int32_t);
  int32_t* host = malloc(bytes);
  int32_t* dev = harness_alloc(h, bytes);
  for (size_t i = 0; i < COUNT; i++) host[i] = (int32_t)((h->rank + 1) * (int)(i % 97 + (size_t)k + (size_t)it));
  harness_upload(h, dev, host, bytes);
  harness_counter done = {0};
  dfcclCollDesc_t sum = {.kind = dfcclAllReduce, .count = COUNT, .dtype = dfcclInt32, .op = dfcclSum};
  dfcclCollDesc_t bcast = {.kind = dfcclBroadcast, .count = COUNT, .dtype = dfcclInt32, .root = k % h->nranks};
  CHECK_DFCCL(dfcclSubmit(comm, &sum, dev, dev, harness_on_complete, &done));
  harness_wait(&done, 1); /* runs on different connector sets may overlap: one buffer, one at a time */
  CHECK_DFCCL(dfcclSubmit(comm, &bcast, dev, dev, harness_on_complete, &done));
  harness_wait(&done, 2);
  harness_download(h, host, dev, bytes);
  long wrong = atomic_load(&done.errors);
  int ranks_sum = h->nranks * (h->nranks + 1) / 2;
  for (size_t i = 0; i < COUNT; i++)
    if (host[i] != (int32_t)(ranks_sum * (int)(i % 97 + (size_t)k + (size_t)it)) && wrong++ < 3)
      fprintf(stderr, "rank %d: communicator %d element %zu: %d\n", h->rank, k, i, host[i]);
  harness_free(h, dev);
  free(host);
  return wrong;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_comm_async");
  int iterations = 10;
  bool blocking = false;
  options o = harness_options(&h, "usage: test_comm_async [-i iterations] [-b]", argc, argv, "i:b");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 100000);
    else if (opt == 'b') blocking = true;
  }
  harness_watchdog_start(60, blocking ? "blocking creations in different orders" : "nonblocking creations");
  int* ranks = malloc(sizeof(int) * (size_t)h.nranks);
  for (int i = 0; i < h.nranks; i++) ranks[i] = i;
  exchange_t x[NCOMMS];
  for (int k = 0; k < NCOMMS; k++) {
    memset(&x[k], 0, sizeof x[k]);
    MPI_Comm_dup(MPI_COMM_WORLD, &x[k].mpi);
  }
  long wrong = bad_arguments(&h, &x[0], ranks);
  int next = (h.rank + 1) % h.nranks, prev = (h.rank + h.nranks - 1) % h.nranks;
  for (int it = 0; it < iterations; it++) {
    int start_order[NCOMMS], test_order[NCOMMS];
    order_of(start_order, h.rank, 1 + it % 3);
    order_of(test_order, h.rank + 1, 2);
    dfcclComm_t comm[NCOMMS] = {NULL};
    dfcclCommCreation_t creation[NCOMMS] = {NULL};
    for (int i = 0; i < NCOMMS; i++) {
      int k = start_order[i];
      uint32_t key = (uint32_t)(it * NCOMMS + k);
      dfcclExchange_t exchange = {exchange_start, exchange_test, &x[k]};
      CHECK_DFCCL(dfcclCommCreateStart(h.ctx, ranks, h.nranks, key, &exchange, &creation[k]));
      if (blocking) { /* the twin: wait for it where it starts */
        dfcclResult_t r;
        while ((r = dfcclCommCreateTest(creation[k], &comm[k])) == dfcclInProgress) continue;
        CHECK_DFCCL(r);
        creation[k] = NULL;
      }
      /* A blocking exchange with the neighbours between two starts. */
      int token = h.rank, got = -1;
      MPI_Sendrecv(&token, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      harness_progress();
    }
    for (int left = NCOMMS; left > 0;) {
      left = 0;
      for (int i = 0; i < NCOMMS; i++) {
        int k = test_order[i];
        if (creation[k] == NULL) continue;
        dfcclResult_t r = dfcclCommCreateTest(creation[k], &comm[k]);
        if (r == dfcclInProgress) {
          left++;
          continue;
        }
        CHECK_DFCCL(r);
        creation[k] = NULL;
        harness_progress();
      }
    }
    for (int k = 0; k < NCOMMS; k++) wrong += run_and_check(&h, comm[k], k, it);
    for (int k = 0; k < NCOMMS; k++) CHECK_DFCCL(dfcclCommDestroy(comm[k])); /* the same order everywhere */
    harness_iteration_done(&h, it, iterations, 5);
  }
  if (!blocking && x[0].started < 2 * iterations) { /* cards and the mapping check, per creation */
    fprintf(stderr, "rank %d: only %d exchanges started on communicator 0\n", h.rank, x[0].started);
    wrong++;
  }
  for (int k = 0; k < NCOMMS; k++) MPI_Comm_free(&x[k].mpi);
  free(ranks);
  return harness_finish(&h, wrong);
}
