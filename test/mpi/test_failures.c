/*
 * Collectives that cannot complete: a rank that skips one, ranks that disagree on one.  Every rank
 * must get an error instead of a hang, lose nothing else, and never see wrong data.
 *
 *   -m skip      all-reduces on a communicator; the last rank skips the second.  With
 *                DFCCL_TIMEOUT_S=T every other rank's second run fails with dfcclTimedOut within 2 T
 *                (the last rank's next run fails too), later submissions are refused with
 *                dfcclRevoked, and a new communicator works, exact.  Without a timeout it hangs
 *                (the watchdog ends it: the twin).
 *   -m mismatch  one all-reduce where rank 1 passes one element more: every rank's run fails with
 *                dfcclMismatch (no timeout needed), nobody's output changes, a new communicator
 *                works.  With DFCCL_CHECK_RUNS=0 (the twin) the disagreement goes unnoticed.
 *
 *   mpirun -np N test_failures -m skip|mismatch [-t seconds]      (N >= 2)
 *
 * -t: the timeout that the skipped run's failure is due to (default: this rank's DFCCL_TIMEOUT_S),
 * for runs where only some ranks set one: the others must learn of the failure from the revoked
 * connectors, within 2 T too.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define COUNT 4096

typedef struct {
  atomic_int done;
  atomic_int status;
  double seconds; /* from submission to the callback */
  double submitted;
} outcome;

static void on_done(int id, dfcclResult_t status, void* arg) {
  (void)id;
  outcome* o = arg;
  o->seconds = harness_now_s() - o->submitted;
  atomic_store(&o->status, (int)status);
  atomic_store(&o->done, 1);
}

static dfcclResult_t submit(dfcclComm_t comm, size_t count, int32_t* buf, outcome* o) {
  dfcclCollDesc_t d = {.kind = dfcclAllReduce, .count = count, .dtype = dfcclInt32, .op = dfcclSum};
  memset(o, 0, sizeof *o);
  o->submitted = harness_now_s();
  return dfcclSubmit(comm, &d, buf, buf, on_done, o);
}

static void wait_for(outcome* o) {
  while (!atomic_load(&o->done)) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  harness_progress();
}

static void fill(const harness* h, int32_t* buf, int32_t* host) {
  for (int i = 0; i < COUNT + 1; i++) host[i] = (h->rank + 1) * (i % 13 + 1);
  harness_upload(h, buf, host, (COUNT + 1) * sizeof *host);
}

/* An all-reduce on a new communicator over every rank: exact. */
static long fresh_communicator_works(const harness* h, int32_t* buf, int32_t* host) {
  dfcclComm_t comm;
  CHECK_DFCCL(dfcclCommCreate(h->ctx, NULL, 0, &comm));
  fill(h, buf, host);
  outcome o;
  CHECK_DFCCL(submit(comm, COUNT, buf, &o));
  wait_for(&o);
  harness_download(h, host, buf, COUNT * sizeof *host);
  long wrong = atomic_load(&o.status) != dfcclSuccess;
  int sum = h->nranks * (h->nranks + 1) / 2;
  for (int i = 0; i < COUNT; i++) wrong += host[i] != sum * (i % 13 + 1);
  printf("rank %d: a new communicator afterwards: %s\n", h->rank, wrong ? "WRONG" : "exact");
  CHECK_DFCCL(dfcclCommDestroy(comm));
  return wrong;
}

static long skip(const harness* h, dfcclComm_t comm, int32_t* buf, int32_t* host, double timeout_s) {
  long failures = 0;
  bool skipper = h->rank == h->nranks - 1;
  outcome o;
  fill(h, buf, host);
  CHECK_DFCCL(submit(comm, COUNT, buf, &o)); /* run 1: everyone */
  wait_for(&o);
  failures += atomic_load(&o.status) != dfcclSuccess;
  /* Run 2: the last rank skips it.  Its next call is the others' run 2, which they have failed. */
  if (skipper) {
    MPI_Barrier(MPI_COMM_WORLD); /* after the others' run 2 has failed */
    /* Over the network the failure reaches this rank as a message from its predecessor's proxy,
     * unordered with MPI's barrier; a gathered all-reduce whose every slot from the predecessor
     * landed before that message would complete here, exact (seen once in CI over UCX on 2 busy
     * cores).  Give the message time to land: with it lost, the run would complete and this rank
     * would fail the test. */
    struct timespec landing = {0, 300 * 1000 * 1000};
    nanosleep(&landing, NULL);
  }
  dfcclResult_t r = submit(comm, COUNT, buf, &o);
  if (r == dfcclSuccess) wait_for(&o);
  dfcclResult_t status = r == dfcclSuccess ? (dfcclResult_t)atomic_load(&o.status) : r;
  printf("rank %d: %s: %s after %.2f s\n", h->rank, skipper ? "its next run" : "the skipped run",
         dfcclGetErrorString(status), o.seconds);
  if (!skipper) {
    MPI_Barrier(MPI_COMM_WORLD);
    failures += status != dfcclTimedOut;
    failures += o.seconds > 2 * timeout_s;
  } else {
    failures += status == dfcclSuccess; /* timed out, or refused: never a result */
  }
  r = submit(comm, COUNT, buf, &o);
  printf("rank %d: a later submission: %s\n", h->rank, dfcclGetErrorString(r));
  failures += r != dfcclRevoked;
  return failures;
}

static long mismatch(const harness* h, dfcclComm_t comm, int32_t* buf, int32_t* host) {
  fill(h, buf, host);
  outcome o;
  CHECK_DFCCL(submit(comm, h->rank == 1 ? COUNT + 1 : COUNT, buf, &o));
  wait_for(&o);
  dfcclResult_t status = (dfcclResult_t)atomic_load(&o.status);
  int32_t* after = malloc((COUNT + 1) * sizeof *after);
  harness_download(h, after, buf, (COUNT + 1) * sizeof *after);
  /* A failed run's output is undefined, but what this one received never came from its own run:
   * the mismatch is caught before a slot is used. */
  long changed = 0;
  for (int i = 0; i < COUNT + 1; i++) changed += after[i] != host[i];
  free(after);
  printf("rank %d: count %d: %s; %ld elements changed\n", h->rank, h->rank == 1 ? COUNT + 1 : COUNT,
         dfcclGetErrorString(status), changed);
  long failures = status != dfcclMismatch;
  dfcclResult_t r = submit(comm, COUNT, buf, &o);
  printf("rank %d: a later submission: %s\n", h->rank, dfcclGetErrorString(r));
  return failures + (r != dfcclRevoked);
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_failures");
  const char* mode = "skip";
  const char* t = getenv("DFCCL_TIMEOUT_S");
  double timeout_s = t != NULL ? atof(t) : 0;
  options o = harness_options(&h, "usage: test_failures -m skip|mismatch [-t seconds]", argc, argv, "m:t:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 't') {
      timeout_s = option_double(&o, 0);
      continue;
    }
    mode = o.value;
    if (strcmp(mode, "skip") != 0 && strcmp(mode, "mismatch") != 0)
      options_fail(&o, "-m %s: not a mode (skip or mismatch)", mode);
  }
  harness_watchdog_start(timeout_s > 0 ? 4 * timeout_s + 20 : 20, "a collective that cannot complete");
  dfcclComm_t comm;
  CHECK_DFCCL(dfcclCommCreate(h.ctx, NULL, 0, &comm));
  int32_t host[COUNT + 1];
  int32_t* buf = harness_alloc(&h, sizeof host);
  long failures = strcmp(mode, "mismatch") == 0 ? mismatch(&h, comm, buf, host) : skip(&h, comm, buf, host, timeout_s);
  /* The communicator is released on every rank alike; the process goes on. */
  CHECK_DFCCL(dfcclCommDestroy(comm));
  failures += fresh_communicator_works(&h, buf, host);
  harness_free(&h, buf);
  if (h.rank == 0) printf("%s: %s\n", mode, failures ? "FAILED" : "every rank got its error, and went on");
  return harness_finish(&h, failures);
}
