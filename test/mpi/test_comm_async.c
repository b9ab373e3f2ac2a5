/*
 * Nonblocking communicator creation (dfcclCommCreateStart / dfcclCommCreateTest): each rank starts
 * the creation of NCOMMS communicators in its own order and drives them in another, as an MPI
 * library creates them inside nonblocking collectives; the exchanges are nonblocking allgathers
 * (MPI_Iallgather) on a duplicate of MPI_COMM_WORLD per communicator.  Between two starts every
 * rank also waits in a blocking exchange with one neighbour (MPI_Sendrecv), in its own order of
 * communicators: a creation that waited for the other ranks where it starts would hang there.
 *
 * Runs submitted while a communicator is being made are held by DFCCL and submitted once it exists:
 * right after its start, half of the communicators (all of them on odd iterations) get HELD runs
 * -- an all-reduce, then a broadcast and an all-gather-v as one batch, each of its own count and
 * buffers, the all-gather-v's arrays overwritten right after the call -- before the neighbour
 * exchange, so a submission that waited would hang too.  On even iterations dfcclCommCreateTest
 * drives the creations, and the other communicators get the same runs once made; on odd ones only
 * dfcclProgress does, until every held run has completed, after which dfcclCommCreateTest must say
 * dfcclSuccess at once.  Every run is checked exactly, and its callback's collId must be its place
 * in call order (a held run published out of order would also be a dfcclMismatch on its peers).
 * Every communicator is then destroyed (its destruction's exchange is its own: the same MPI
 * communicator, tested in a loop).
 *
 * A creation that fails (an exchange that cannot start, on every rank) with runs held: each run's
 * callback reports dfcclCreationFailed once, in call order; the test reports the creation's error;
 * a later submission is refused with dfcclCreationFailed; its destruction meets nobody.  Bad
 * arguments are refused by name, also those of a run submitted while the communicator is made.
 *
 *   mpirun -np N test_comm_async [-i iterations] [-b]
 *
 * -b (the twin): each creation is waited for where it starts (tested until it ends), as a blocking
 * creation would be: the ranks wait in different communicators' exchanges, and for the neighbour
 * that waits in another, forever (the watchdog fires).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mpi_options.h"

#define NCOMMS 4
#define COUNT 4096
#define NRUNS 3 /* an all-reduce, then a broadcast and an all-gather-v as one batch */

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

/* An exchange that cannot start: the creation fails, alike on every rank, without a message. */
static int failing_start(void* arg, const void* send, void* recv, size_t bytes, void** request) {
  (void)arg, (void)send, (void)recv, (void)bytes, (void)request;
  return 1;
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

/* One run's end as its callback saw it: which number, with what, and when among the others. */
typedef struct {
  atomic_int* done; /* the communicator's callbacks so far */
  int expected_id;
  atomic_int calls;
  int id, order;
  dfcclResult_t status;
} run_end;

static void on_run_end(int collId, dfcclResult_t status, void* arg) {
  run_end* e = arg;
  e->id = collId;
  e->status = status;
  e->order = atomic_fetch_add(e->done, 1);
  atomic_fetch_add(&e->calls, 1);
}

/* Callbacks that did not say what they should: each once, with `status` and its own number. */
static long check_ends(const harness* h, run_end* ends, int n, dfcclResult_t status, bool in_order, const char* what) {
  long wrong = 0;
  for (int j = 0; j < n; j++) {
    run_end* e = &ends[j];
    bool ok =
        atomic_load(&e->calls) == 1 && e->status == status && e->id == e->expected_id && (!in_order || e->order == j);
    if (!ok) {
      fprintf(stderr, "rank %d: %s run %d: %d callbacks, collId %d (expected %d), %s (expected %s), callback %d\n",
              h->rank, what, j, atomic_load(&e->calls), e->id, e->expected_id, dfcclGetErrorString(e->status),
              dfcclGetErrorString(status), e->order);
      wrong++;
    }
  }
  return wrong;
}

static long bad_arguments(harness* h, exchange_t* x, const int* ranks) {
  dfcclExchange_t ok = {exchange_start, exchange_test, x}, none = {NULL, exchange_test, x};
  dfcclComm_t c;
  int outsider[1] = {(h->rank + 1) % h->nranks};
  long wrong = 0;
  struct {
    dfcclResult_t got;
    const char* what;
  } cases[] = {
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 5, &none, &c), "an exchange without start"},
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 5, NULL, &c), "a NULL exchange"},
      {dfcclCommCreateStart(h->ctx, NULL, h->nranks, 5, &ok, &c), "a NULL rank list"},
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 1u << 26, &ok, &c), "a key beyond the keys"},
      {dfcclCommCreateStart(h->ctx, ranks, h->nranks, 5, &ok, NULL), "a NULL comm"},
      {h->nranks > 1 ? dfcclCommCreateStart(h->ctx, outsider, 1, 5, &ok, &c) : dfcclInvalidArgument,
       "a rank list without this rank"},
      {dfcclCommCreateTest(NULL), "testing a NULL comm"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (cases[i].got != dfcclInvalidArgument) {
      fprintf(stderr, "rank %d: %s was not refused (%s)\n", h->rank, cases[i].what, dfcclGetErrorString(cases[i].got));
      wrong++;
    }
  return wrong;
}

/* 1 unless `got` refused the call with a sentence that names `named`. */
static long refused_by_name(const harness* h, dfcclResult_t got, const char* what, const char* named) {
  if (got == dfcclInvalidArgument && strstr(dfcclGetLastErrorMessage(), named) != NULL) return 0;
  fprintf(stderr, "rank %d: held: %s: %s, '%s' (should be refused, naming '%s')\n", h->rank, what,
          dfcclGetErrorString(got), dfcclGetLastErrorMessage(), named);
  return 1;
}

/* Refused by name on a communicator being made: nothing is held. */
static long bad_held_runs(const harness* h, dfcclComm_t comm, void* buf) {
  dfcclCollDesc_t unknown = {.kind = (dfcclCollKind_t)99, .count = 1, .dtype = dfcclInt32};
  dfcclCollDesc_t root = {.kind = dfcclBroadcast, .count = 1, .dtype = dfcclInt32, .root = h->nranks};
  dfcclCollDesc_t counts = {.kind = dfcclAllGatherV, .dtype = dfcclInt32};
  dfcclCollDesc_t fine = {.kind = dfcclAllReduce, .count = 1, .dtype = dfcclInt32, .op = dfcclSum};
  dfcclSubmission_t batch[2] = {{&fine, buf, buf, NULL, NULL}, {&root, buf, buf, NULL, NULL}};
  long wrong = 0;
  wrong += refused_by_name(h, dfcclSubmit(comm, NULL, buf, buf, NULL, NULL), "a NULL descriptor", "descriptor");
  wrong += refused_by_name(h, dfcclSubmit(comm, &unknown, buf, buf, NULL, NULL), "an unknown kind", "kind");
  wrong += refused_by_name(h, dfcclSubmit(comm, &root, buf, buf, NULL, NULL), "a root beyond the ranks", "root");
  wrong +=
      refused_by_name(h, dfcclSubmit(comm, &counts, buf, buf, NULL, NULL), "all-gather-v without counts", "counts");
  wrong += refused_by_name(h, dfcclSubmit(comm, &fine, NULL, buf, NULL, NULL), "a NULL sendbuff", "sendbuff");
  wrong += refused_by_name(h, dfcclSubmitBatch(comm, batch, 2), "a batch with a bad second run", "run 1 of 2");
  return wrong;
}

/* A creation that fails with runs held: they end through their callbacks, in call order. */
static long failed_creation(harness* h, const int* ranks) {
  dfcclExchange_t failing = {failing_start, exchange_test, NULL};
  dfcclComm_t comm;
  CHECK_DFCCL(dfcclCommCreateStart(h->ctx, ranks, h->nranks, (1u << 26) - 1, &failing, &comm));
  void* buf = harness_alloc(h, COUNT * sizeof(int32_t));
  long wrong = bad_held_runs(h, comm, buf);
  atomic_int done = 0;
  run_end ends[NRUNS];
  for (int j = 0; j < NRUNS; j++) ends[j] = (run_end){.done = &done, .expected_id = j, .id = -1, .order = -1};
  dfcclCollDesc_t sum = {.kind = dfcclAllReduce, .count = COUNT, .dtype = dfcclInt32, .op = dfcclSum};
  dfcclCollDesc_t bcast = {.kind = dfcclBroadcast, .count = COUNT, .dtype = dfcclInt32, .root = 0};
  CHECK_DFCCL(dfcclSubmit(comm, &sum, buf, buf, on_run_end, &ends[0]));
  dfcclSubmission_t two[2] = {{&bcast, buf, buf, on_run_end, &ends[1]}, {&sum, buf, buf, on_run_end, &ends[2]}};
  CHECK_DFCCL(dfcclSubmitBatch(comm, two, 2));
  if (atomic_load(&done) != 0) { /* nothing tested the creation yet: they can only be held */
    fprintf(stderr, "rank %d: %d held runs ended before their creation was tested\n", h->rank, atomic_load(&done));
    wrong++;
  }
  dfcclResult_t r;
  while ((r = dfcclCommCreateTest(comm)) == dfcclInProgress) continue;
  if (r == dfcclSuccess) {
    fprintf(stderr, "rank %d: a creation whose exchange cannot start succeeded\n", h->rank);
    wrong++;
  }
  wrong += check_ends(h, ends, NRUNS, dfcclCreationFailed, true, "failed creation:");
  if (dfcclCommCreateTest(comm) != r || dfcclGetLastErrorMessage()[0] == '\0') {
    fprintf(stderr, "rank %d: testing the failed creation again: not %s with a sentence\n", h->rank,
            dfcclGetErrorString(r));
    wrong++;
  }
  dfcclResult_t later = dfcclSubmit(comm, &sum, buf, buf, on_run_end, &ends[0]);
  if (later != dfcclCreationFailed) {
    fprintf(stderr, "rank %d: a run after the failed creation: %s\n", h->rank, dfcclGetErrorString(later));
    wrong++;
  }
  CHECK_DFCCL(dfcclCommDestroy(comm)); /* meets nobody */
  if (dfcclCommCreateTest(comm) != dfcclInvalidArgument) {
    fprintf(stderr, "rank %d: a destroyed communicator was tested\n", h->rank);
    wrong++;
  }
  harness_free(h, buf);
  return wrong;
}

/* One communicator's runs: run 0 alone, runs 1 and 2 as one batch; each on its own buffers. */
typedef struct {
  int32_t *sum, *bcast, *gather_in, *gather_out;
  size_t counts[64], displs[64];
  size_t gather_total;
  run_end ends[NRUNS];
  atomic_int done;
} comm_runs;

static size_t run_count(int j) { return COUNT - 64 * (size_t)j; } /* each run its own count */

static int32_t sum_input(const harness* h, size_t i, int k, int it) {
  return (int32_t)((h->rank + 1) * (int)(i % 97 + (size_t)k + (size_t)it));
}
static int32_t bcast_input(int rank, size_t i, int k) { return (int32_t)((rank + 1) * 1000 + (int)(i % 89) + k); }
static int32_t gather_input(int rank, size_t i, int it) { return (int32_t)(rank * 100000 + (int)i + it); }

static void prepare_runs(harness* h, comm_runs* c, int k, int it) {
  memset(c, 0, sizeof *c);
  size_t n1 = run_count(0), n2 = run_count(1);
  c->sum = harness_alloc(h, n1 * sizeof(int32_t));
  c->bcast = harness_alloc(h, n2 * sizeof(int32_t));
  int32_t* host = malloc(n1 * sizeof(int32_t));
  for (size_t i = 0; i < n1; i++) host[i] = sum_input(h, i, k, it);
  harness_upload(h, c->sum, host, n1 * sizeof(int32_t));
  for (size_t i = 0; i < n2; i++) host[i] = bcast_input(h->rank, i, k);
  harness_upload(h, c->bcast, host, n2 * sizeof(int32_t));
  /* All-gather-v: rank r's block of 100 + 3r + k elements, a gap of r + 1 before it. */
  size_t at = 0;
  for (int r = 0; r < h->nranks; r++) {
    c->counts[r] = 100 + 3 * (size_t)r + (size_t)k;
    c->displs[r] = at + (size_t)r + 1;
    at = c->displs[r] + c->counts[r];
  }
  c->gather_total = at;
  size_t mine = c->counts[h->rank];
  c->gather_in = harness_alloc(h, mine * sizeof(int32_t));
  c->gather_out = harness_alloc(h, at * sizeof(int32_t));
  for (size_t i = 0; i < mine; i++) host[i] = gather_input(h->rank, i, it);
  harness_upload(h, c->gather_in, host, mine * sizeof(int32_t));
  free(host);
  for (int j = 0; j < NRUNS; j++) c->ends[j] = (run_end){.done = &c->done, .expected_id = j, .id = -1, .order = -1};
}

/* Submits the three runs: while the communicator is made (held) or after.  The batch waits for the
 * caller's work on its buffers once, held or not (dfcclStats_t.callerWaits); 1 when it did not. */
static long submit_runs(harness* h, dfcclComm_t comm, comm_runs* c, int k) {
  dfcclCollDesc_t sum = {.kind = dfcclAllReduce, .count = run_count(0), .dtype = dfcclInt32, .op = dfcclSum};
  dfcclCollDesc_t bcast = {.kind = dfcclBroadcast, .count = run_count(1), .dtype = dfcclInt32, .root = k % h->nranks};
  size_t counts[64], displs[64]; /* overwritten after the call: DFCCL reads them during it only */
  memcpy(counts, c->counts, sizeof counts);
  memcpy(displs, c->displs, sizeof displs);
  dfcclCollDesc_t gather = {.kind = dfcclAllGatherV, .dtype = dfcclInt32, .counts = counts, .displs = displs};
  CHECK_DFCCL(dfcclSubmit(comm, &sum, c->sum, c->sum, on_run_end, &c->ends[0]));
  dfcclSubmission_t two[2] = {{&bcast, c->bcast, c->bcast, on_run_end, &c->ends[1]},
                              {&gather, c->gather_in, c->gather_out, on_run_end, &c->ends[2]}};
  dfcclStats_t before, after;
  CHECK_DFCCL(dfcclGetStats(h->ctx, &before));
  CHECK_DFCCL(dfcclSubmitBatch(comm, two, 2));
  CHECK_DFCCL(dfcclGetStats(h->ctx, &after));
  memset(counts, 0xff, sizeof counts);
  memset(displs, 0xff, sizeof displs);
  uint64_t waits = after.callerWaits - before.callerWaits;
  if (waits == 1) return 0;
  fprintf(stderr, "rank %d: a batch of 2 runs on communicator %d waited for the caller's work %llu times\n", h->rank, k,
          (unsigned long long)waits);
  return 1;
}

static long check_runs(harness* h, comm_runs* c, int k, int it, const char* how) {
  char what[64];
  snprintf(what, sizeof what, "communicator %d (%s)", k, how);
  /* Callbacks of runs on different connector sets may come in any order: the numbers must not. */
  long wrong = check_ends(h, c->ends, NRUNS, dfcclSuccess, false, what);
  size_t n1 = run_count(0), n2 = run_count(1);
  int32_t* host = malloc((c->gather_total > n1 ? c->gather_total : n1) * sizeof(int32_t));
  int ranks_sum = h->nranks * (h->nranks + 1) / 2;
  harness_download(h, host, c->sum, n1 * sizeof(int32_t));
  long bad = 0;
  for (size_t i = 0; i < n1; i++)
    if (host[i] != (int32_t)(ranks_sum * (int)(i % 97 + (size_t)k + (size_t)it)) && bad++ < 3)
      fprintf(stderr, "rank %d: %s all-reduce element %zu: %d\n", h->rank, what, i, host[i]);
  harness_download(h, host, c->bcast, n2 * sizeof(int32_t));
  for (size_t i = 0; i < n2; i++)
    if (host[i] != bcast_input(k % h->nranks, i, k) && bad++ < 6)
      fprintf(stderr, "rank %d: %s broadcast element %zu: %d\n", h->rank, what, i, host[i]);
  harness_download(h, host, c->gather_out, c->gather_total * sizeof(int32_t));
  for (int r = 0; r < h->nranks; r++)
    for (size_t i = 0; i < c->counts[r]; i++)
      if (host[c->displs[r] + i] != gather_input(r, i, it) && bad++ < 9)
        fprintf(stderr, "rank %d: %s all-gather-v block %d element %zu: %d\n", h->rank, what, r, i,
                host[c->displs[r] + i]);
  free(host);
  harness_free(h, c->sum);
  harness_free(h, c->bcast);
  harness_free(h, c->gather_in);
  harness_free(h, c->gather_out);
  return wrong + bad;
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
  if (h.nranks > 64) {
    fprintf(stderr, "test_comm_async: at most 64 ranks\n");
    return harness_finish(&h, 1);
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
  if (!blocking) wrong += failed_creation(&h, ranks);
  int next = (h.rank + 1) % h.nranks, prev = (h.rank + h.nranks - 1) % h.nranks;
  static comm_runs runs[NCOMMS];
  for (int it = 0; it < iterations; it++) {
    int start_order[NCOMMS], test_order[NCOMMS];
    order_of(start_order, h.rank, 1 + it % 3);
    order_of(test_order, h.rank + 1, 2);
    bool by_progress = !blocking && it % 2 == 1; /* only dfcclProgress drives the creations */
    bool held[NCOMMS];
    dfcclComm_t comm[NCOMMS] = {NULL};
    for (int i = 0; i < NCOMMS; i++) {
      int k = start_order[i];
      uint32_t key = (uint32_t)(it * NCOMMS + k);
      dfcclExchange_t exchange = {exchange_start, exchange_test, &x[k]};
      prepare_runs(&h, &runs[k], k, it);
      CHECK_DFCCL(dfcclCommCreateStart(h.ctx, ranks, h.nranks, key, &exchange, &comm[k]));
      held[k] = !blocking && (by_progress || k % 2 == 0);
      if (held[k]) wrong += submit_runs(&h, comm[k], &runs[k], k); /* before it exists: held */
      if (blocking) {                                              /* the twin: wait for it where it starts */
        dfcclResult_t r;
        while ((r = dfcclCommCreateTest(comm[k])) == dfcclInProgress) continue;
        CHECK_DFCCL(r);
      }
      /* A blocking exchange with the neighbours between two starts. */
      int token = h.rank, got = -1;
      MPI_Sendrecv(&token, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      harness_progress();
    }
    if (by_progress) { /* every communicator has held runs: progress makes them and runs them */
      for (int k = 0; k < NCOMMS;) {
        CHECK_DFCCL(dfcclProgress(h.ctx, NULL));
        if (atomic_load(&runs[k].done) == NRUNS) k++, harness_progress();
        else sched_yield();
      }
      for (int k = 0; k < NCOMMS; k++)
        if (dfcclCommCreateTest(comm[k]) != dfcclSuccess) {
          fprintf(stderr, "rank %d: communicator %d ran its held runs, but is not made\n", h.rank, k);
          wrong++;
        }
    }
    for (int left = NCOMMS; left > 0 && !by_progress;) {
      left = 0;
      for (int i = 0; i < NCOMMS; i++) {
        int k = test_order[i];
        dfcclResult_t r = dfcclCommCreateTest(comm[k]);
        if (r == dfcclInProgress) {
          left++;
          continue;
        }
        CHECK_DFCCL(r);
        harness_progress();
      }
    }
    for (int k = 0; k < NCOMMS; k++)
      if (!held[k]) wrong += submit_runs(&h, comm[k], &runs[k], k);
    for (int k = 0; k < NCOMMS; k++) {
      while (atomic_load(&runs[k].done) < NRUNS) sched_yield();
      harness_progress();
      wrong += check_runs(&h, &runs[k], k, it, held[k] ? "held" : "after its creation");
    }
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
