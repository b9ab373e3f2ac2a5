/*
 * MPI-level deadlock patterns of nonblocking collectives through coll/dfccl (host-target mode).
 *
 *   test_nb_deadlock -m cross [-i iterations] [-w watchdog_s]
 *     Three communicators (two MPI_Comm_dup of MPI_COMM_WORLD, one MPI_Comm_split with the ranks
 *     in reverse order) with six nonblocking collectives each (all-reduce, broadcast, all-gather,
 *     reduce-scatter, all-to-all, all-gather-v with uneven counts).  Every iteration each rank
 *     issues the eighteen calls in its own random
 *     interleaving of the communicators (each communicator's calls in the same order everywhere,
 *     as MPI requires), then one MPI_Waitall.
 *
 *   test_nb_deadlock -m sync [-i iterations] [-w watchdog_s]
 *     The cross pattern with a device synchronization at a random point among the twelve calls,
 *     its own on every rank: dfcclHostSynchronize, the host target's cudaDeviceSynchronize (the
 *     GPU's own is test_device -m sync).  It returns only once this process's daemon has exited,
 *     which the daemon does when its collectives are stuck on ranks that have not issued them yet.
 *     Every synchronization after iteration 0 must have reached the component's host context.
 *
 *   test_nb_deadlock -m queue [-p concurrent_runs] [-i iterations] [-w watchdog_s] [-c]
 *     One communicator.  Every iteration: concurrent_runs + 1 all-reduces of one signature (so the
 *     last waits inside DFCCL behind the first: the communicator has concurrent_runs connector
 *     sets), then even ranks wait for the first before every rank issues an all-reduce of another
 *     signature (which waits behind the second), then one MPI_Waitall.  -p must equal
 *     coll_dfccl_concurrent_runs.  -c (the control): every rank waits.  Until issue 13 the
 *     component queued runs per signature and submitted a queued one when its predecessor
 *     completed, so the ranks' daemons received the two runs in different orders and only
 *     preemption let both complete (the twin hung).  Now every run is submitted in call order and
 *     DFCCL starts a waiting one when its set frees; the pattern checks that runs waiting for
 *     their sets complete exactly, and the disorder of such runs is the core's test_comm's.
 *
 * Every call is routed through DFCCL from iteration 0 on, which is every signature's first use and
 * where each communicator's DFCCL communicator is made -- in a different order on every rank,
 * without any blocking call (checked with the component's MPI_T counters), with exact results.  A watchdog
 * (alarm) that no iteration resets prints "WATCHDOG" and exits with 42: with DFCCL_PREEMPTION=0,
 * the three patterns are caught hanging that way (nb_deadlock_twin.sh), and the queue pattern's
 * control is not.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dfccl.h> /* dfcclHostSynchronize */
#include <unistd.h>

#include "elements.h"
#include "mpi_options.h" /* test/common */

#define NCOMMS 3
#define CALLS_PER_COMM 6
#define MAX_CALLS 32

static int world_rank, world_size, failures;
static unsigned watchdog_s = 30;

/* ---- one call ----------------------------------------------------------------------------------- */

enum { ALLREDUCE, BCAST, ALLGATHER, REDUCE_SCATTER, ALLTOALL, ALLGATHERV };

typedef struct {
  MPI_Comm comm;
  int kind, count, rank, size, salt;
  int *send, *recv;
  int *rcounts, *displs; /* all-gather-v: rank r contributes count + r, packed */
} call_t;

static int input(int rank, int i, int salt) { return (rank + 1) * ((i * 7 + salt * 13) % 101 + 1); }

static void call_init(call_t* c, MPI_Comm comm, int kind, int count) {
  c->comm = comm;
  c->kind = kind;
  c->count = count;
  CHECK_MPI(MPI_Comm_rank(comm, &c->rank));
  CHECK_MPI(MPI_Comm_size(comm, &c->size));
  size_t elems = ((size_t)count + (size_t)c->size) * (size_t)c->size; /* all-gather-v's blocks are larger */
  c->send = malloc(elems * sizeof(int));
  c->recv = malloc(elems * sizeof(int));
  c->rcounts = malloc((size_t)c->size * sizeof(int));
  c->displs = malloc((size_t)c->size * sizeof(int));
  if (!c->send || !c->recv || !c->rcounts || !c->displs) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int r = 0, at = 0; r < c->size; at += c->rcounts[r++]) c->rcounts[r] = count + r, c->displs[r] = at;
}

/* Elements of the receive buffer the call writes. */
static int received(const call_t* c) {
  switch (c->kind) {
    case ALLGATHER:
    case ALLTOALL: return c->count * c->size;
    case ALLGATHERV: return c->displs[c->size - 1] + c->rcounts[c->size - 1];
    default: return c->count;
  }
}

static MPI_Request call_start(call_t* c, int salt) {
  int n = c->count, total = (c->count + c->size) * c->size;
  c->salt = salt;
  for (int i = 0; i < total; i++) c->send[i] = input(c->rank, i, salt), c->recv[i] = -1;
  MPI_Request req = MPI_REQUEST_NULL;
  switch (c->kind) {
    case ALLREDUCE: CHECK_MPI(MPI_Iallreduce(c->send, c->recv, n, MPI_INT, MPI_SUM, c->comm, &req)); break;
    case BCAST:
      if (c->rank == c->size - 1) memcpy(c->recv, c->send, (size_t)n * sizeof(int));
      CHECK_MPI(MPI_Ibcast(c->recv, n, MPI_INT, c->size - 1, c->comm, &req));
      break;
    case ALLGATHER: CHECK_MPI(MPI_Iallgather(c->send, n, MPI_INT, c->recv, n, MPI_INT, c->comm, &req)); break;
    case REDUCE_SCATTER:
      CHECK_MPI(MPI_Ireduce_scatter_block(c->send, c->recv, n, MPI_INT, MPI_SUM, c->comm, &req));
      break;
    case ALLTOALL: CHECK_MPI(MPI_Ialltoall(c->send, n, MPI_INT, c->recv, n, MPI_INT, c->comm, &req)); break;
    case ALLGATHERV:
      CHECK_MPI(MPI_Iallgatherv(c->send, c->rcounts[c->rank], MPI_INT, c->recv, c->rcounts, c->displs, MPI_INT, c->comm,
                                &req));
      break;
  }
  return req;
}

static int sum_over_ranks(int size, int i, int salt) {
  int s = 0;
  for (int r = 0; r < size; r++) s += input(r, i, salt);
  return s;
}

static void call_check(const call_t* c, int iteration) {
  int n = received(c), bad = 0;
  for (int i = 0; i < n; i++) {
    int want = 0;
    switch (c->kind) {
      case ALLREDUCE: want = sum_over_ranks(c->size, i, c->salt); break;
      case BCAST: want = input(c->size - 1, i, c->salt); break;
      case ALLGATHER: want = input(i / c->count, i % c->count, c->salt); break;
      case REDUCE_SCATTER: want = sum_over_ranks(c->size, c->rank * c->count + i, c->salt); break;
      case ALLTOALL: want = input(i / c->count, c->rank * c->count + i % c->count, c->salt); break;
      case ALLGATHERV: {
        int r = c->size - 1;
        while (r > 0 && i < c->displs[r]) r--;
        want = input(r, i - c->displs[r], c->salt);
        break;
      }
    }
    if (c->recv[i] != want && bad++ < 3)
      fprintf(stderr, "rank %d: iteration %d: collective %d count %d: [%d] = %d, expected %d\n", world_rank, iteration,
              c->kind, c->count, i, c->recv[i], want);
  }
  if (bad) failures++;
}

static void call_fini(call_t* c) { free(c->send), free(c->recv), free(c->rcounts), free(c->displs); }

/* ---- MPI_T: calls routed through DFCCL ---------------------------------------------------------- */

static const char* const entry_points[] = {"iallreduce", "ibcast",     "iallgather", "ireduce_scatter_block",
                                           "ialltoall",  "iallgatherv"};
enum { NENTRY_POINTS = sizeof entry_points / sizeof entry_points[0] };
static entry_counters_t routed_counters;

/* ---- the patterns ------------------------------------------------------------------------------- */

static unsigned long long rng_state;
static unsigned next_random(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(rng_state >> 33);
}

/* The sync pattern's device synchronization: the host target's, reaching the component's
 * context once iteration 0 has set it up. */
static int unreached_syncs;
static double longest_sync_s;

static void device_synchronize(int it) {
  double t0 = MPI_Wtime();
  int contexts = 0;
  dfcclResult_t r = dfcclHostSynchronize(&contexts);
  if (r != dfcclSuccess) {
    fprintf(stderr, "rank %d: dfcclHostSynchronize: %s\n", world_rank, dfcclGetLastErrorMessage());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double dt = MPI_Wtime() - t0;
  if (dt > longest_sync_s) longest_sync_s = dt;
  if (it > 0 && contexts < 1) unreached_syncs++;
}

/* One iteration of the cross pattern: this rank's own interleaving of the communicators (and, for
 * the sync pattern, its own point for the device synchronization). */
static void cross_iteration(call_t* calls, int it, bool sync) {
  int order[NCOMMS * CALLS_PER_COMM], next[NCOMMS] = {0};
  for (int k = 0; k < NCOMMS * CALLS_PER_COMM; k++) order[k] = k / CALLS_PER_COMM;
  for (int k = NCOMMS * CALLS_PER_COMM - 1; k > 0; k--) { /* Fisher-Yates */
    int j = (int)(next_random() % (unsigned)(k + 1)), t = order[k];
    order[k] = order[j], order[j] = t;
  }
  int sync_after = sync ? 1 + (int)(next_random() % (NCOMMS * CALLS_PER_COMM)) : -1; /* after this many calls */
  MPI_Request reqs[NCOMMS * CALLS_PER_COMM];
  for (int k = 0; k < NCOMMS * CALLS_PER_COMM; k++) {
    int c = order[k], j = next[c]++; /* communicator c's j-th call: the same order on every rank */
    reqs[k] = call_start(&calls[c * CALLS_PER_COMM + j], it * 31 + c * CALLS_PER_COMM + j);
    if (k + 1 == sync_after) device_synchronize(it);
  }
  CHECK_MPI(MPI_Waitall(NCOMMS * CALLS_PER_COMM, reqs, MPI_STATUSES_IGNORE));
  for (int k = 0; k < NCOMMS * CALLS_PER_COMM; k++) call_check(&calls[k], it);
}

static int cross(int iterations, MPI_Comm* comms, bool sync) {
  call_t calls[NCOMMS * CALLS_PER_COMM];
  static const int counts[NCOMMS] = {1024, 300, 4097};
  for (int c = 0; c < NCOMMS; c++)
    for (int j = 0; j < CALLS_PER_COMM; j++) call_init(&calls[c * CALLS_PER_COMM + j], comms[c], j, counts[c] + j);
  for (int it = 0; it < iterations; it++) {
    cross_iteration(calls, it, sync);
    watchdog_reset();
  }
  for (int k = 0; k < NCOMMS * CALLS_PER_COMM; k++) call_fini(&calls[k]);
  return NCOMMS * CALLS_PER_COMM;
}

/* One iteration of the queue pattern. */
static bool control;

static void queue_iteration(call_t* same, int pool, call_t* other, int it) {
  MPI_Request reqs[MAX_CALLS];
  for (int j = 0; j <= pool; j++) reqs[j] = call_start(&same[j], it * 31 + j);
  if (world_rank % 2 == 0 || control) CHECK_MPI(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE)); /* submits the queued run */
  reqs[pool + 1] = call_start(other, it * 31 + pool + 1);
  CHECK_MPI(MPI_Waitall(pool + 2, reqs, MPI_STATUSES_IGNORE));
  for (int j = 0; j <= pool; j++) call_check(&same[j], it);
  call_check(other, it);
}

static int queue(int iterations, int pool, MPI_Comm* comms) {
  call_t same[MAX_CALLS], other;
  for (int j = 0; j <= pool; j++) call_init(&same[j], comms[0], ALLREDUCE, 1024);
  call_init(&other, comms[0], ALLREDUCE, 2048);
  for (int it = 0; it < iterations; it++) {
    queue_iteration(same, pool, &other, it);
    watchdog_reset();
  }
  for (int j = 0; j <= pool; j++) call_fini(&same[j]);
  call_fini(&other);
  return pool + 2;
}

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  static const char* const modes[] = {"cross", "sync", "queue", NULL};
  const char* mode = modes[0];
  int iterations = 20, pool = 2;
  options o =
      mpi_options("test_nb_deadlock", "usage: test_nb_deadlock -m cross|sync|queue [-i N>=2] [-p 1..30] [-w s] [-c]",
                  argc, argv, "m:i:p:w:c");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'm') mode = modes[option_choice(&o, modes)];
    else if (opt == 'c') control = true;
    else if (opt == 'i') iterations = option_int(&o, 2, 1000000);
    else if (opt == 'p') pool = option_int(&o, 1, MAX_CALLS - 2);
    else if (opt == 'w') watchdog_s = (unsigned)option_int(&o, 1, 86400);
  }
  bool is_sync = strcmp(mode, "sync") == 0, is_cross = is_sync || strcmp(mode, "cross") == 0;
  rng_state = 0x9E3779B97F4A7C15ull * (unsigned long long)(world_rank + 1); /* a different order per rank */
  entry_counters_open(&routed_counters, entry_points, NENTRY_POINTS);
  watchdog_start(watchdog_s);

  /* Created before counting: Open MPI's own nonblocking calls that agree on their ids may be routed. */
  MPI_Comm comms[NCOMMS] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
  if (is_cross) {
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comms[2]));
  }
  unsigned long long before = entry_counters_routed(&routed_counters);
  int per_iteration = is_cross ? cross(iterations, comms, is_sync) : queue(iterations, pool, comms);
  unsigned long long routed = entry_counters_routed(&routed_counters) - before;
  unsigned long long want = (unsigned long long)iterations * per_iteration;
  if (routed != want) { /* every call, the first ones included */
    fprintf(stderr, "rank %d: %llu calls routed through DFCCL, expected %llu\n", world_rank, routed, want);
    failures++;
  }
  if (unreached_syncs > 0) { /* then the pattern would not test the synchronization */
    fprintf(stderr, "rank %d: %d device synchronizations found no host context of DFCCL\n", world_rank,
            unreached_syncs);
    failures++;
  }
  alarm(0);
  for (int c = 0; c < NCOMMS; c++)
    if (comms[c] != MPI_COMM_NULL) CHECK_MPI(MPI_Comm_free(&comms[c]));
  entry_counters_close(&routed_counters);
  int all = 0;
  double longest = 0;
  CHECK_MPI(MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(&longest_sync_s, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  char extra[80] = "";
  if (is_sync) snprintf(extra, sizeof extra, ", longest device synchronization %.1f ms", longest * 1e3);
  if (world_rank == 0)
    printf("%s pattern: %d iterations x %d nonblocking calls on %d ranks, %llu routed through DFCCL%s: %s\n", mode,
           iterations, per_iteration, world_size, routed, extra, all ? "FAIL" : "PASS");
  CHECK_MPI(MPI_Finalize());
  return all ? 1 : 0;
}
