/*
 * Registrations on different groups from different threads run at the same time.  One context per
 * process (as the Open MPI component keeps one for all communicators); on every rank thread A
 * registers, runs and deregisters collectives on all ranks, thread B on its pair ({0,1} or {2,3}),
 * each thread's bootstrap allgather over an MPI communicator of its own.  Even ranks start with
 * thread A, odd ranks with thread B: the second thread starts only once the first is inside its
 * first exchange.  A context that held a lock across an exchange deadlocks here at once (rank 0's
 * A waits in the all-ranks exchange for rank 1's A, which waits for rank 1's lock, held by its B in
 * the pair exchange, which waits for rank 0's B, which waits for rank 0's lock); the watchdog then
 * fails the test.  The last collectives of both threads stay registered, in opposite orders on even
 * and odd ranks, for dfcclDestroy.  Run on 4 ranks; needs MPI_THREAD_MULTIPLE (else: SKIP).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "mpi_bootstrap.h"

#ifdef DFCCL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define SKIP_EXIT 77
#define ROUNDS 20
#define PER_ROUND 3

enum { THREAD_A, THREAD_B, NTHREADS };

/* The context's allgather: each thread's calls go to its own bootstrap (its own duplicate of
 * MPI_COMM_WORLD), the main thread's to another. */
static dfcclBootstrap_t main_bootstrap, thread_bootstrap[NTHREADS];
static _Thread_local const dfcclBootstrap_t* my_bootstrap;
static atomic_bool entered_exchange[NTHREADS];
static _Thread_local int my_thread = -1;

static int per_thread_allgather(void* state, const int* ranks, int nranks, const void* sendbuf, void* recvbuf,
                                size_t bytes) {
  (void)state;
  if (my_thread >= 0) atomic_store(&entered_exchange[my_thread], true);
  const dfcclBootstrap_t* b = my_bootstrap ? my_bootstrap : &main_bootstrap;
  return b->allgather(b->state, ranks, nranks, sendbuf, recvbuf, bytes);
}

static const int low_pair[] = {0, 1}, high_pair[] = {2, 3};

typedef struct {
  harness* h;
  int thread;
  long wrong;
} worker;

static test_case thread_case(const harness* h, int thread, int round, int k) {
  int id = 100000 * (thread + 1) + round * PER_ROUND + k;
  kind kd = (kind)((round + k + thread) % NUM_KINDS);
  size_t count = 1 + (size_t)((round * 53 + k * 211 + thread * 7) % 3000);
  dfcclDataType_t dtype = k % 2 ? dfcclInt32 : dfcclInt64;
  if (thread == THREAD_A)
    return (test_case){.id = id,
                       .kind = kd,
                       .dtype = dtype,
                       .op = dfcclSum,
                       .count = count,
                       .root = round % h->nranks,
                       .nranks = h->nranks,
                       .position = h->rank,
                       .seed = (unsigned)round};
  const int* pair = h->rank < 2 ? low_pair : high_pair;
  return (test_case){.id = id,
                     .kind = kd,
                     .dtype = dtype,
                     .op = dfcclSum,
                     .count = count,
                     .root = pair[round % 2],
                     .ranks = pair,
                     .nranks = 2,
                     .position = h->rank % 2,
                     .seed = (unsigned)round};
}

static void* worker_main(void* arg) {
  worker* w = arg;
  harness* h = w->h;
  my_thread = w->thread;
  my_bootstrap = &thread_bootstrap[w->thread];
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu && cudaSetDevice(h->init.device) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  for (int round = 0; round < ROUNDS; round++) {
    test_case cases[PER_ROUND];
    int ids[PER_ROUND];
    harness_counter done = {0};
    for (int k = 0; k < PER_ROUND; k++) {
      cases[k] = thread_case(h, w->thread, round, k);
      ids[k] = cases[k].id;
      register_case(h, &cases[k]);
    }
    for (int k = 0; k < PER_ROUND; k++) prepare(h, &cases[k]);
    for (int k = 0; k < PER_ROUND; k++) run_case(h, &cases[k], &done);
    harness_wait(&done, PER_ROUND);
    harness_progress();
    w->wrong += atomic_load(&done.errors);
    for (int k = 0; k < PER_ROUND; k++) w->wrong += verify(h, &cases[k]);
    /* The first round's collectives stay for dfcclDestroy. */
    if (round > 0) CHECK_DFCCL(dfcclDeregister(h->ctx, ids, PER_ROUND));
  }
  return NULL;
}

static void wait_for_exchange(int thread) {
  while (!atomic_load(&entered_exchange[thread])) sched_yield();
}

/* MPI_Init_thread with MPI_THREAD_MULTIPLE, the bootstraps, the context (as harness_init does). */
static void init(harness* h, int* argc, char*** argv) {
  memset(h, 0, sizeof *h);
  h->program = "test_concurrent_register";
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &h->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &h->nranks);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (h->rank == 0) printf("SKIP: this MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    exit(SKIP_EXIT);
  }
  if (h->nranks != 4) {
    if (h->rank == 0) fprintf(stderr, "test_concurrent_register: run on 4 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  h->gpu = harness_environment(h->program);
  if (dfccl_mpi_bootstrap_init(MPI_COMM_WORLD, &main_bootstrap) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int t = 0; t < NTHREADS; t++)
    if (dfccl_mpi_bootstrap_init(MPI_COMM_WORLD, &thread_bootstrap[t]) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  /* Thread B's pair communicator is made now, not concurrently with thread A's exchanges. */
  const int* pair = h->rank < 2 ? low_pair : high_pair;
  int token = h->rank, tokens[2];
  if (thread_bootstrap[THREAD_B].allgather(thread_bootstrap[THREAD_B].state, pair, 2, &token, tokens, sizeof token))
    MPI_Abort(MPI_COMM_WORLD, 1);
  h->init.target = dfcclTargetDefault;
  h->init.device = -1;
  h->init.bootstrap = main_bootstrap;
  h->init.bootstrap.allgather = per_thread_allgather;
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) MPI_Abort(MPI_COMM_WORLD, 1);
    h->init.device = dfccl_mpi_local_rank(MPI_COMM_WORLD) % devices;
    if (cudaSetDevice(h->init.device) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
  CHECK_DFCCL(dfcclInit(&h->ctx, &h->init));
  if (h->rank == 0)
    printf("test_concurrent_register: %d ranks, %s execution target, 2 threads per rank\n", h->nranks,
           h->gpu ? "GPU (cuda)" : "host");
  fflush(stdout);
}

int main(int argc, char** argv) {
  harness h;
  init(&h, &argc, &argv);
  options_none(harness_options(&h, "usage: test_concurrent_register (no options; 4 ranks)", argc, argv, ""));
  harness_watchdog_start(30, "concurrent registration");
  /* Even ranks start with thread A (all ranks), odd ranks with thread B (the pair). */
  int first = h.rank % 2 == 0 ? THREAD_A : THREAD_B, second = 1 - first;
  worker workers[NTHREADS];
  pthread_t threads[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) workers[t] = (worker){.h = &h, .thread = t};
  if (pthread_create(&threads[first], NULL, worker_main, &workers[first]) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  wait_for_exchange(first);
  if (pthread_create(&threads[second], NULL, worker_main, &workers[second]) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  long wrong = 0;
  for (int t = 0; t < NTHREADS; t++) {
    pthread_join(threads[t], NULL);
    wrong += workers[t].wrong;
  }
  if (h.rank == 0) printf("%d rounds of %d collectives on each of two threads checked\n", ROUNDS, PER_ROUND);

  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  /* Both threads' first collectives are left: one closing exchange per group, from this thread. */
  CHECK_DFCCL(dfcclDestroy(h.ctx));
  for (int t = 0; t < NTHREADS; t++) dfccl_mpi_bootstrap_fini(&thread_bootstrap[t]);
  dfccl_mpi_bootstrap_fini(&main_bootstrap);
  if (h.rank == 0) printf("%s\n", total ? "WRONG RESULTS" : "all results exact");
  MPI_Finalize();
  return total ? 1 : 0;
}
