/*
 * MPI_THREAD_MULTIPLE through coll/dfccl: two threads per rank issue blocking collectives, each on
 * a communicator of its own (duplicates of MPI_COMM_WORLD), in different orders on different
 * ranks: every round, on even ranks thread 0 calls first and thread 1 a moment later, on odd ranks
 * the other way round.  The calls reach the ranks' one DFCCL daemon in different orders, and only
 * preemption lets both complete (with DFCCL_PREEMPTION=0 the watchdog fires: threads_twin in
 * nb_deadlock_twin.sh).  Round 0 is each signature's first use: both threads set up their
 * communicators at the same time (two exchanges in flight in one process).
 *
 *   test_threads [-i rounds] [-d delay_us] [-w watchdog_s] [-g]
 *
 * -g: the buffers are device memory of GPU local_rank % devices (CUDA loaded at run time): the
 * calls go to DFCCL's GPU daemon, no host-target test mode needed; SKIP without a GPU.
 *
 * Each round, each thread: MPI_Allreduce, MPI_Bcast (root = round mod size) and MPI_Allgather on
 * its communicator, results checked exactly; afterwards the component's MPI_T counters must show
 * every call routed.  Needs MPI_THREAD_MULTIPLE (else it prints SKIP and exits 77).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudart.h"
#include "elements.h"
#include "mpi_options.h" /* test/common */

#define SKIP_EXIT 77
#define NTHREADS 2
#define COUNT 1000
#define CALLS_PER_ROUND 3

static int world_rank, world_size, rounds = 50;
static unsigned delay_us = 2000, watchdog_s = 60;
static pthread_barrier_t round_start;
static bool on_gpu;
static int gpu = -1;

/* A thread's buffers: the host arrays the test computes with, and what the calls get (the same
 * arrays, or device copies with -g). */
typedef struct {
  int *send, *recv, *gathered;
  int *send_arg, *recv_arg, *gathered_arg;
} buffers_t;

typedef struct {
  int index;
  MPI_Comm comm;
  int failures;
  buffers_t b;
} thread_t;

static void to_call(int* arg, const int* host, size_t n) {
  if (arg != host) upload(arg, host, n * sizeof *host);
  if (arg != host) uploads_done();
}

static void from_call(int* host, const int* arg, size_t n) {
  if (arg != host) download(host, arg, n * sizeof *host);
}

static int input(int rank, int thread, int round, int i) {
  return (rank + 1) * ((i + 3 * round + 7 * thread) % 89 + 1);
}

static void check_element(thread_t* t, int round, const char* what, int i, int got, int want) {
  if (got == want) return;
  if (t->failures++ < 5)
    fprintf(stderr, "rank %d thread %d round %d: %s[%d] = %d, expected %d\n", world_rank, t->index, round, what, i, got,
            want);
}

/* One round of one thread's calls, checked. */
static void one_round(thread_t* t, int round) {
  buffers_t* b = &t->b;
  int *send = b->send, *recv = b->recv, *gathered = b->gathered;
  for (int i = 0; i < COUNT; i++) send[i] = input(world_rank, t->index, round, i);
  to_call(b->send_arg, send, COUNT);
  CHECK_MPI(MPI_Allreduce(b->send_arg, b->recv_arg, COUNT, MPI_INT, MPI_SUM, t->comm));
  from_call(recv, b->recv_arg, COUNT);
  for (int i = 0; i < COUNT; i++) {
    int want = 0;
    for (int r = 0; r < world_size; r++) want += input(r, t->index, round, i);
    check_element(t, round, "allreduce", i, recv[i], want);
  }
  int root = round % world_size;
  for (int i = 0; i < COUNT; i++) recv[i] = world_rank == root ? input(root, t->index, round, i) : -1;
  to_call(b->recv_arg, recv, COUNT);
  CHECK_MPI(MPI_Bcast(b->recv_arg, COUNT, MPI_INT, root, t->comm));
  from_call(recv, b->recv_arg, COUNT);
  for (int i = 0; i < COUNT; i++) check_element(t, round, "bcast", i, recv[i], input(root, t->index, round, i));
  CHECK_MPI(MPI_Allgather(b->send_arg, COUNT, MPI_INT, b->gathered_arg, COUNT, MPI_INT, t->comm));
  from_call(gathered, b->gathered_arg, (size_t)world_size * COUNT);
  for (int r = 0; r < world_size; r++)
    for (int i = 0; i < COUNT; i++)
      check_element(t, round, "allgather", r * COUNT + i, gathered[r * COUNT + i], input(r, t->index, round, i));
}

static void buffers_init(buffers_t* b) {
  size_t all = (size_t)world_size * COUNT;
  b->send = malloc(COUNT * sizeof(int));
  b->recv = malloc(COUNT * sizeof(int));
  b->gathered = malloc(all * sizeof(int));
  if (!b->send || !b->recv || !b->gathered) MPI_Abort(MPI_COMM_WORLD, 1);
  b->send_arg = on_gpu ? dev_alloc(COUNT * sizeof(int)) : b->send;
  b->recv_arg = on_gpu ? dev_alloc(COUNT * sizeof(int)) : b->recv;
  b->gathered_arg = on_gpu ? dev_alloc(all * sizeof(int)) : b->gathered;
}

static void buffers_fini(buffers_t* b) {
  if (on_gpu) dev_free(b->send_arg), dev_free(b->recv_arg), dev_free(b->gathered_arg);
  free(b->send), free(b->recv), free(b->gathered);
}

static void* thread_main(void* arg) {
  thread_t* t = arg;
  if (on_gpu) CHECK_CUDA(cuda.set_device(gpu)); /* the current device is per thread */
  buffers_init(&t->b);
  /* Even ranks: thread 0 first; odd ranks: thread 1 first. */
  bool second = t->index != world_rank % 2;
  for (int round = 0; round < rounds; round++) {
    pthread_barrier_wait(&round_start);
    if (second) usleep(delay_us);
    one_round(t, round);
    if (t->index == 0) watchdog_reset(); /* a round completed on this rank */
  }
  buffers_fini(&t->b);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = 0;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  if (provided < MPI_THREAD_MULTIPLE) {
    if (world_rank == 0) printf("SKIP: this MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    return SKIP_EXIT;
  }
  options o = mpi_options("test_threads", "usage: test_threads [-i rounds>=2] [-d delay_us] [-w watchdog_s] [-g]", argc,
                          argv, "i:d:w:g");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') rounds = option_int(&o, 2, 1000000);
    else if (opt == 'd') delay_us = (unsigned)option_int(&o, 0, 10000000);
    else if (opt == 'w') watchdog_s = (unsigned)option_int(&o, 1, 86400);
    else if (opt == 'g') on_gpu = true;
  }
  if (on_gpu) {
    int devices = 0, local_rank = 0;
    char why[200];
    if (!cuda_load(&devices, why, sizeof why)) {
      if (world_rank == 0) printf("SKIP: no GPU (%s)\n", why);
      MPI_Finalize();
      return 0;
    }
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK_MPI(MPI_Comm_rank(node, &local_rank));
    CHECK_MPI(MPI_Comm_free(&node));
    gpu = local_rank % devices;
    CHECK_CUDA(cuda.set_device(gpu));
  }
  static const char* const names[] = {"allreduce", "bcast", "allgather"};
  entry_counters_t routed;
  entry_counters_open(&routed, names, 3);
  watchdog_start(watchdog_s);

  thread_t threads[NTHREADS];
  pthread_t ids[NTHREADS];
  for (int k = 0; k < NTHREADS; k++) {
    threads[k] = (thread_t){.index = k};
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &threads[k].comm));
  }
  unsigned long long before = entry_counters_routed(&routed);
  if (pthread_barrier_init(&round_start, NULL, NTHREADS) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int k = 0; k < NTHREADS; k++)
    if (pthread_create(&ids[k], NULL, thread_main, &threads[k]) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  int failures = 0;
  for (int k = 0; k < NTHREADS; k++) {
    pthread_join(ids[k], NULL);
    failures += threads[k].failures;
  }
  alarm(0);
  unsigned long long got = entry_counters_routed(&routed) - before;
  unsigned long long want = (unsigned long long)NTHREADS * rounds * CALLS_PER_ROUND;
  if (got != want) {
    fprintf(stderr, "rank %d: %llu calls routed through DFCCL, expected %llu\n", world_rank, got, want);
    failures++;
  }
  for (int k = 0; k < NTHREADS; k++) CHECK_MPI(MPI_Comm_free(&threads[k].comm));
  pthread_barrier_destroy(&round_start);
  entry_counters_close(&routed);
  int all = 0;
  CHECK_MPI(MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
  if (world_rank == 0)
    printf("threads pattern: %d rounds x %d threads x %d blocking calls on %d ranks (%s buffers), %llu routed through "
           "DFCCL: %s\n",
           rounds, NTHREADS, CALLS_PER_ROUND, world_size, on_gpu ? "device" : "host", got, all ? "FAIL" : "PASS");
  CHECK_MPI(MPI_Finalize());
  return all ? 1 : 0;
}
