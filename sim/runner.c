/*
 * Runs a configuration's rounds on worker threads that claim chunks of round indices (runner.h),
 * counting deadlocks and the first deadlocked round; progress on stderr for long runs.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include "runner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Small enough to balance threads at the end, large enough that claiming a
 * chunk costs nothing next to simulating it. */
#define CHUNK 16

struct shared_run {
  const struct topology* t;
  const struct sim_params* p;
  uint64_t rounds, seed;
  atomic_uint_fast64_t next_round;
  atomic_uint_fast64_t done_rounds;
  atomic_uint_fast64_t deadlocks;
  atomic_uint_fast64_t first_deadlock;
  atomic_bool failed;
};

struct worker {
  pthread_t thread;
  struct shared_run* run;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void note_first_deadlock(struct shared_run* run, uint64_t round) {
  uint_fast64_t seen = atomic_load(&run->first_deadlock);
  while (round < seen && !atomic_compare_exchange_weak(&run->first_deadlock, &seen, round))
    ;
}

static void* work(void* arg) {
  struct shared_run* run = ((struct worker*)arg)->run;
  struct round_state st;
  if (round_state_init(&st, run->t, run->p)) {
    atomic_store(&run->failed, true);
    return NULL;
  }
  for (;;) {
    uint64_t first = atomic_fetch_add(&run->next_round, CHUNK);
    if (first >= run->rounds) break;
    uint64_t last = first + CHUNK < run->rounds ? first + CHUNK : run->rounds;
    uint64_t deadlocks = 0;
    for (uint64_t r = first; r < last; r++)
      if (round_run(&st, run->seed, r)) {
        deadlocks++;
        note_first_deadlock(run, r);
      }
    atomic_fetch_add(&run->deadlocks, deadlocks);
    atomic_fetch_add(&run->done_rounds, last - first);
  }
  round_state_free(&st);
  return NULL;
}

static void sleep_briefly(void) {
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

int run_rounds(const struct topology* t, const struct sim_params* p, uint64_t rounds, uint64_t seed, unsigned threads,
               bool progress, struct run_result* out) {
  struct shared_run run = {.t = t, .p = p, .rounds = rounds, .seed = seed};
  atomic_init(&run.next_round, 0);
  atomic_init(&run.done_rounds, 0);
  atomic_init(&run.deadlocks, 0);
  atomic_init(&run.first_deadlock, NO_DEADLOCK);
  atomic_init(&run.failed, false);

  if (threads == 0) threads = 1;
  struct worker* workers = calloc(threads, sizeof *workers);
  if (!workers) return -1;
  double start = now_seconds();
  unsigned started = 0;
  for (; started < threads; started++) {
    workers[started].run = &run;
    if (pthread_create(&workers[started].thread, NULL, work, &workers[started])) break;
  }
  if (started == 0) {
    free(workers);
    return -1;
  }

  /* Progress on stderr, only for runs long enough to wonder about. */
  double last_report = start;
  while (progress && atomic_load(&run.done_rounds) < rounds && !atomic_load(&run.failed)) {
    sleep_briefly();
    double now = now_seconds();
    if (now - last_report >= 10.0) {
      uint64_t done = atomic_load(&run.done_rounds);
      fprintf(stderr, "dfccl-sim: %llu/%llu rounds, %llu deadlocks, %.0f s\n", (unsigned long long)done,
              (unsigned long long)rounds, (unsigned long long)atomic_load(&run.deadlocks), now - start);
      last_report = now;
    }
  }
  for (unsigned i = 0; i < started; i++) pthread_join(workers[i].thread, NULL);
  free(workers);
  if (atomic_load(&run.failed)) return -1;

  out->rounds = rounds;
  out->deadlocks = atomic_load(&run.deadlocks);
  out->first_deadlock = atomic_load(&run.first_deadlock);
  out->seconds = now_seconds() - start;
  return 0;
}
