/*
 * A burst: thousands of runs submitted to three communicators before any is waited for, each rank
 * interleaving the communicators in its own random order (each one's runs in the same order
 * everywhere).  With a submission queue of a few entries and completion rings of one slot
 * (burst.sh), submitters and the daemon's blocks wait for each other over and over: the test checks
 * that nothing is lost or doubled -- every run's callback runs exactly once, with its own run number
 * and success, no callback comes after the last -- and that every result is exact.
 *
 *   mpirun -np N test_burst [-n runs per communicator] [-s seed] [-f] [-b K] [-p]   (N >= 2)
 *
 * -f: the queues must have been full (dfcclGetStats: sqFullWaits and cqFullWaits, summed over
 * ranks, both > 0), else the burst did not test back-pressure and the test fails.
 * -b K: each turn of a communicator submits K runs at once with dfcclSubmitBatch (the last turn
 * fewer); first, on every communicator, a batch with a bad descriptor in the middle must be
 * refused whole -- had it submitted anything, the ranks' run numbers would no longer agree.
 * -p: the main thread takes completions too (dfcclProgress after every turn and while it waits),
 * so callbacks -- and the queued runs they start, through the full queues -- run on it as well as
 * on the poller; the test fails unless some did (summed over ranks).  Without -p every callback
 * must come from the poller thread.
 * Every submission call -- one run, or a batch -- orders the caller's work on its buffers once, not
 * once per run: the host waits for it (dfcclStats_t.callerWaits; on a GPU two stream queries), or a
 * lone run's gate is opened by the caller's streams on the GPU (streamGates, DFCCL_STREAM_GATE).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cases.h"

#define NCOMMS 3

static const kind five[] = {ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE};

/* What one communicator's callbacks saw: per run number, how many times it completed. */
typedef struct {
  atomic_int* seen;
  int runs;
  atomic_int failed;       /* callbacks with a status other than dfcclSuccess */
  atomic_int out_of_range; /* callbacks whose run number was never submitted  */
  harness_counter* done;
} tally;

static pthread_t main_thread;
static atomic_int on_main_thread; /* callbacks run by the main thread (in dfcclProgress) */

static void on_complete(int run, dfcclResult_t status, void* arg) {
  tally* t = arg;
  if (pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&on_main_thread, 1);
  if (run < 0 || run >= t->runs) atomic_fetch_add(&t->out_of_range, 1);
  else atomic_fetch_add(&t->seen[run], 1);
  if (status != dfcclSuccess) atomic_fetch_add(&t->failed, 1);
  harness_on_complete(run, status, t->done);
}

/* Communicator k's ring: ascending, descending, ascending from rank 1. */
static void comm_ranks(int k, int nranks, int* ranks) {
  for (int i = 0; i < nranks; i++) ranks[i] = k == 0 ? i : k == 1 ? nranks - 1 - i : (i + 1) % nranks;
}

/* Run j of communicator k: small, so that queues rather than bandwidth limit the burst. */
static void shape(test_case* c, int k, int j, const int* ranks, int nranks, int position) {
  static const dfcclDataType_t types[] = {dfcclInt32, dfcclFloat32, dfcclUint8, dfcclFloat64};
  static const dfcclRedOp_t ops[] = {dfcclSum, dfcclMax, dfcclMin};
  memset(c, 0, sizeof *c);
  c->id = k * 1000000 + j;
  c->kind = five[(j + k) % 5];
  c->dtype = types[(j / 5 + k) % 4];
  c->op = reduces(c->kind) ? ops[j % 3] : dfcclSum;
  c->count = 1 + (size_t)((j * 37 + k * 11) % 257);
  c->in_place = j % 4 == 1;
  c->ranks = ranks;
  c->nranks = nranks;
  c->position = position;
  c->root = ranks[j % nranks];
  c->seed = (unsigned)j;
}

/* On each communicator, a batch of three runs whose middle one has no such kind: refused whole,
 * naming that run, and nothing submitted (the burst after it would mismatch otherwise). */
static long refused_batches(harness* h, dfcclComm_t* comms, test_case* cases, int runs) {
  long bad = 0;
  for (int k = 0; k < NCOMMS; k++) {
    test_case* c = &cases[k * runs];
    dfcclCollDesc_t good = {.kind = dfcclAllReduce, .count = 1, .dtype = dfcclFloat32, .op = dfcclSum};
    dfcclCollDesc_t wrong = {.kind = (dfcclCollKind_t)99, .count = 1, .dtype = dfcclFloat32};
    dfcclSubmission_t three[3] = {{&good, c->send, c->recv, NULL, NULL},
                                  {&wrong, c->send, c->recv, NULL, NULL},
                                  {&good, c->send, c->recv, NULL, NULL}};
    dfcclResult_t r = dfcclSubmitBatch(comms[k], three, 3);
    if (r != dfcclInvalidArgument || strstr(dfcclGetLastErrorMessage(), "run 1 of 3") == NULL) {
      fprintf(stderr, "rank %d: a batch with a bad run: %s (%s), expected it refused naming run 1\n", h->rank,
              dfcclGetErrorString(r), dfcclGetLastErrorMessage());
      bad++;
    }
  }
  return bad;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_burst");
  int runs = 1000;
  unsigned long seed = 5;
  bool must_fill = false, progress = false;
  int batch = 1;
  main_thread = pthread_self();
  options o = harness_options(&h, "usage: test_burst [-n runs] [-s seed] [-f] [-b K] [-p]", argc, argv, "n:s:fb:p");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'n') runs = option_int(&o, 1, 100000);
    else if (opt == 'b') batch = option_int(&o, 1, 1000);
    else if (opt == 's') seed = option_unsigned(&o);
    else if (opt == 'f') must_fill = true;
    else if (opt == 'p') progress = true;
  }
  if (h.nranks < 2) {
    if (h.rank == 0) fprintf(stderr, "test_burst needs at least 2 ranks\n");
    return harness_finish(&h, 1);
  }
  harness_watchdog_start(60, "a burst of runs through full queues");

  static int ranks[NCOMMS][64];
  if (h.nranks > 64) {
    if (h.rank == 0) fprintf(stderr, "test_burst: at most 64 ranks\n");
    return harness_finish(&h, 1);
  }
  dfcclComm_t comms[NCOMMS];
  tally tallies[NCOMMS];
  harness_counter done = {0};
  test_case* cases = calloc((size_t)NCOMMS * runs, sizeof *cases);
  int* order = malloc((size_t)NCOMMS * runs * sizeof *order);
  if (!cases || !order) abort();
  for (int k = 0; k < NCOMMS; k++) {
    comm_ranks(k, h.nranks, ranks[k]);
    CHECK_DFCCL(dfcclCommCreate(h.ctx, ranks[k], h.nranks, &comms[k]));
    tallies[k] = (tally){.seen = calloc((size_t)runs, sizeof(atomic_int)), .runs = runs, .done = &done};
    if (!tallies[k].seen) abort();
    int position = 0;
    for (int i = 0; i < h.nranks; i++)
      if (ranks[k][i] == h.rank) position = i;
    for (int j = 0; j < runs; j++) {
      shape(&cases[k * runs + j], k, j, ranks[k], h.nranks, position);
      prepare(&h, &cases[k * runs + j]);
      order[k * runs + j] = k;
    }
  }
  harness_progress();

  long bad = batch > 1 ? refused_batches(&h, comms, cases, runs) : 0;
  long calls = batch > 1 ? NCOMMS : 0; /* submission calls: each waits for this rank's work once */

  /* This rank's interleaving: a permutation of the communicators' turns, of `batch` runs each. */
  int total = NCOMMS * runs, next[NCOMMS] = {0}, turns = (runs + batch - 1) / batch;
  int* perm = malloc((size_t)NCOMMS * turns * sizeof *perm);
  test_case** group = malloc((size_t)batch * sizeof *group);
  if (!perm || !group) abort();
  harness_permutation(perm, NCOMMS * turns, seed * 1000003u + (uint64_t)h.rank);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int s = 0; s < NCOMMS * turns; s++) {
    int k = perm[s] / turns, n = 0;
    while (n < batch && next[k] < runs) group[n++] = &cases[k * runs + next[k]++];
    if (batch == 1) submit_case_with(&h, comms[k], group[0], on_complete, &tallies[k]);
    else submit_cases_with(&h, comms[k], group, n, on_complete, &tallies[k]);
    calls++;
    if (progress) CHECK_DFCCL(dfcclProgress(h.ctx, NULL));
  }
  free(group);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  while (progress && atomic_load(&done.done) < total) {
    int completed;
    CHECK_DFCCL(dfcclProgress(h.ctx, &completed));
    if (completed == 0) sched_yield();
  }
  harness_wait(&done, total);
  double submit_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  nanosleep(&(struct timespec){.tv_nsec = 200 * 1000000}, NULL); /* a late duplicate would show now */

  if (atomic_load(&done.done) != total) {
    fprintf(stderr, "rank %d: %d callbacks for %d runs\n", h.rank, atomic_load(&done.done), total);
    bad++;
  }
  for (int k = 0; k < NCOMMS; k++) {
    int missing = 0, doubled = 0;
    for (int j = 0; j < runs; j++) {
      int n = atomic_load(&tallies[k].seen[j]);
      missing += n == 0;
      doubled += n > 1;
    }
    int failed = atomic_load(&tallies[k].failed), stray = atomic_load(&tallies[k].out_of_range);
    if (missing || doubled || failed || stray) {
      fprintf(stderr,
              "rank %d, communicator %d: %d runs never completed, %d completed more than once, %d failed, %d "
              "callbacks with a run number never submitted\n",
              h.rank, k, missing, doubled, failed, stray);
      bad++;
    }
  }
  int mine = atomic_load(&on_main_thread), on_main = 0;
  MPI_Allreduce(&mine, &on_main, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (progress ? on_main == 0 : mine != 0) {
    if (h.rank == 0 || !progress)
      fprintf(stderr, "rank %d: %d callbacks ran on the main thread (%d on all ranks)%s\n", h.rank, mine, on_main,
              progress ? ": -p, and dfcclProgress took no completion" : " without -p: not on the poller");
    bad++;
  }
  dfcclStats_t own;
  CHECK_DFCCL(dfcclGetStats(h.ctx, &own));
  if (own.callerWaits + own.streamGates != (uint64_t)calls) {
    fprintf(stderr,
            "rank %d: %llu waits for the caller's work and %llu gates its streams opened in %ld submission "
            "calls (%d runs): expected one of either a call\n",
            h.rank, (unsigned long long)own.callerWaits, (unsigned long long)own.streamGates, calls, total);
    bad++;
  }
  long wrong = 0;
  for (int i = 0; i < total; i++) wrong += verify(&h, &cases[i]);
  for (int k = 0; k < NCOMMS; k++) CHECK_DFCCL(dfcclCommDestroy(comms[k]));

  dfcclStats_t all = harness_report_stats(&h);
  if (h.rank == 0) {
    printf("%d runs on %d communicators submitted%s in %.3f s before any was waited for: %s; %s; the submission "
           "queue was full %llu times, a completion ring %llu times (all ranks); %d callbacks on the main threads\n",
           total, NCOMMS, batch > 1 ? " in batches" : "", submit_s,
           bad ? "LOST OR DOUBLED COMPLETIONS" : "every callback exactly once",
           wrong ? "WRONG RESULTS" : "all results exact", (unsigned long long)all.sqFullWaits,
           (unsigned long long)all.cqFullWaits, on_main);
    if (must_fill && (all.sqFullWaits == 0 || all.cqFullWaits == 0)) {
      printf("FAIL: -f: the queues were never full, so back-pressure was not tested (make them smaller)\n");
      bad++;
    }
  }
  for (int k = 0; k < NCOMMS; k++) free(tallies[k].seen);
  free(perm);
  free(order);
  free(cases);
  return harness_finish(&h, bad + wrong);
}
