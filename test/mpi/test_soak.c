/*
 * Soak: for a fixed time, a random mix of the five collectives on three communicators, from two
 * threads, with device synchronizations, cudaFrees and deregistrations at random points.
 *
 *   thread "comms":     communicators A (ranks ascending) and B (descending), interleaved
 *   main thread:        communicator C (ascending from rank 1) and a pool of registered
 *                       collectives, deregistered and registered again with new shapes at random
 *
 * Every round each thread submits its runs -- shapes (kind, count, type, op, root, in place) drawn
 * from a seed all ranks share, interleaved in each rank's own random order, a device
 * synchronization (-y) or a cudaFree of a scratch buffer (-f) after a submission now and then --
 * waits for them and checks every result exactly (every buffer is allocated for its run and freed
 * after it).  The rounds go on until -t seconds have passed; rank 0 prints progress every -p
 * seconds.  At the end: 0 wrong, and memory flat -- this process's resident memory and the GPU's
 * used memory grew by at most -r and -g MiB from a quarter of the time to the end.
 *
 *   mpirun -np N test_soak [-t seconds] [-s seed] [-m max elements] [-y %] [-f %] [-d %] [-p seconds]
 *                          [-r MiB] [-g MiB]                                  (N >= 2)
 *
 * With DFCCL_PREEMPTION=0 the disorder hangs (soak_twin.sh).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "dtypes.h"

#define MAX_RANKS 64
#define MAX_RUNS 12 /* per communicator and round */
#define POOL 6      /* registered collectives */

static const kind five[] = {ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE};

typedef struct {
  unsigned long seed;
  size_t max_count;
  int sync_percent, free_percent, dereg_percent;
} soak_options;

typedef struct {
  dfcclComm_t comm; /* NULL: the registered pool */
  int ranks[MAX_RANKS];
  int position;
  test_case runs[MAX_RUNS > POOL ? MAX_RUNS : POOL];
  int nruns;
} stream_t; /* one source of runs: a communicator, or the pool */

typedef struct {
  harness* h;
  const soak_options* o;
  stream_t* streams[2];
  int nstreams;
  int thread; /* 0: the comms thread, 1: the main thread */
  uint64_t random_state;
  long runs, syncs, frees, wrong;
} worker;

/* Shared by the two threads of a rank. */
static pthread_barrier_t round_end;
static atomic_bool stop;

static uint64_t shared_random(const soak_options* o, int round, int what) {
  uint64_t s = o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)round * 1000003u + (uint64_t)what * 7919u;
  return harness_random(&s);
}

/* A random shape, alike on every rank: count log-uniform in [1, max_count]. */
static void random_shape(test_case* c, uint64_t r, const soak_options* o, const stream_t* s, int nranks, int id) {
  static const dfcclDataType_t types[] = {dfcclFloat32, dfcclInt32,   dfcclBfloat16, dfcclInt64,
                                          dfcclUint8,   dfcclFloat64, dfcclFloat16,  dfcclInt8};
  static const dfcclRedOp_t ops[] = {dfcclSum, dfcclMax, dfcclMin, dfcclProd};
  memset(c, 0, sizeof *c);
  c->id = id;
  c->kind = five[r % 5];
  c->dtype = types[(r >> 8) % 8];
  c->op = reduces(c->kind) ? ops[(r >> 16) % 4] : dfcclSum;
  unsigned top = 0; /* 2^top <= max_count */
  while (((size_t)2 << top) <= o->max_count) top++;
  size_t span = (size_t)1 << ((r >> 40) % (top + 1)); /* 1, 2, 4, ..., 2^top: each as likely */
  c->count = span + (size_t)((r >> 24) % span);
  if (c->count > o->max_count) c->count = o->max_count;
  c->in_place = (r >> 48) % 3 == 0;
  c->ranks = s->ranks;
  c->nranks = nranks;
  c->position = s->position;
  c->root = s->ranks[(r >> 52) % (uint64_t)nranks];
  c->seed = (unsigned)(r >> 32);
}

static void maybe_disturb(worker* w) {
  if ((int)(harness_random(&w->random_state) % 100) < w->o->sync_percent) {
    CHECK_DFCCL(dfcclTargetSynchronize(w->h->ctx)); /* the daemon must quit for it to return */
    w->syncs++;
  }
  if ((int)(harness_random(&w->random_state) % 100) < w->o->free_percent) {
    harness_free(w->h, harness_alloc(w->h, 4096)); /* cudaFree synchronizes the device too */
    w->frees++;
  }
  harness_progress();
}

/* One round of this thread's streams: shapes, submissions in this rank's order, waits, checks. */
static void run_round(worker* w, int round) {
  harness* h = w->h;
  int order[2 * MAX_RUNS], n = 0;
  for (int k = 0; k < w->nstreams; k++) {
    stream_t* s = w->streams[k];
    if (s->comm != NULL) {
      s->nruns = 1 + (int)(shared_random(w->o, round, 10 * w->thread + k) % MAX_RUNS);
      for (int j = 0; j < s->nruns; j++)
        random_shape(&s->runs[j], shared_random(w->o, round, 1000 + 100 * (2 * w->thread + k) + j), w->o, s, h->nranks,
                     j);
    }
    for (int j = 0; j < s->nruns; j++) {
      s->runs[j].seed ^= (unsigned)round;
      prepare(h, &s->runs[j]);
      order[n++] = k;
    }
  }
  int perm[2 * MAX_RUNS], next[2] = {0, 0};
  harness_permutation(perm, n, shared_random(w->o, round, 77 + w->thread) + (uint64_t)h->rank);
  harness_counter done = {0};
  for (int i = 0; i < n; i++) {
    stream_t* s = w->streams[order[perm[i]]];
    test_case* c = &s->runs[next[order[perm[i]]]++];
    if (s->comm != NULL) submit_case(h, s->comm, c, &done);
    else run_case(h, c, &done);
    maybe_disturb(w);
  }
  harness_wait(&done, n);
  w->wrong += atomic_load(&done.errors);
  for (int k = 0; k < w->nstreams; k++)
    for (int j = 0; j < w->streams[k]->nruns; j++) w->wrong += verify(h, &w->streams[k]->runs[j]);
  w->runs += n;
}

static void* comms_thread(void* arg) {
  worker* w = arg;
  for (int round = 0;; round++) {
    run_round(w, round);
    pthread_barrier_wait(&round_end); /* the main thread decides whether to stop */
    pthread_barrier_wait(&round_end);
    if (atomic_load(&stop)) return NULL;
  }
}

/* The pool: POOL registered collectives over all ranks, generation g's ids g * POOL + i. */
static void register_pool(harness* h, stream_t* pool, const soak_options* o, int generation) {
  pool->nruns = POOL;
  for (int i = 0; i < POOL; i++) {
    random_shape(&pool->runs[i], shared_random(o, generation, 5000 + i), o, pool, h->nranks, generation * POOL + i);
    pool->runs[i].ranks = NULL; /* all ranks, in their order */
    register_case(h, &pool->runs[i]);
  }
}

static void deregister_pool(harness* h, const stream_t* pool) {
  int ids[POOL];
  for (int i = 0; i < POOL; i++) ids[i] = pool->runs[i].id;
  CHECK_DFCCL(dfcclDeregister(h->ctx, ids, POOL));
}

typedef struct {
  double rss_mib, gpu_used_mib;
} memory_use;

static memory_use memory_now(const harness* h) {
  memory_use m = {0, 0};
  long size = 0, pages = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f != NULL) {
    if (fscanf(f, "%ld %ld", &size, &pages) != 2) pages = 0;
    fclose(f);
  }
  m.rss_mib = (double)pages * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
  m.gpu_used_mib = harness_gpu_used_mib(h);
  return m;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_soak");
  soak_options o = {.seed = 11, .max_count = 1 << 16, .sync_percent = 2, .free_percent = 2, .dereg_percent = 20};
  int seconds = 60, progress_s = 30, rss_limit = 32, gpu_limit = 64;
  options opts = harness_options(
      &h, "usage: test_soak [-t seconds] [-s seed] [-m max elements] [-y %] [-f %] [-d %] [-p s] [-r MiB] [-g MiB]",
      argc, argv, "t:s:m:y:f:d:p:r:g:");
  for (int opt; (opt = options_next(&opts)) != -1;) {
    if (opt == 't') seconds = option_int(&opts, 1, 7 * 86400);
    else if (opt == 's') o.seed = option_unsigned(&opts);
    else if (opt == 'm') o.max_count = (size_t)option_int(&opts, 1, 1 << 28);
    else if (opt == 'y') o.sync_percent = option_int(&opts, 0, 100);
    else if (opt == 'f') o.free_percent = option_int(&opts, 0, 100);
    else if (opt == 'd') o.dereg_percent = option_int(&opts, 0, 100);
    else if (opt == 'p') progress_s = option_int(&opts, 1, 86400);
    else if (opt == 'r') rss_limit = option_int(&opts, 0, 1 << 20);
    else if (opt == 'g') gpu_limit = option_int(&opts, 0, 1 << 20);
  }
  if (h.nranks < 2 || h.nranks > MAX_RANKS) {
    if (h.rank == 0) fprintf(stderr, "test_soak needs 2 to %d ranks\n", MAX_RANKS);
    return harness_finish(&h, 1);
  }
  harness_watchdog_start(60, "soak: five collectives on three communicators from two threads");

  static stream_t a, b, c, pool;
  stream_t* comms[3] = {&a, &b, &c};
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < h.nranks; i++) {
      comms[k]->ranks[i] = k == 0 ? i : k == 1 ? h.nranks - 1 - i : (i + 1) % h.nranks;
      if (comms[k]->ranks[i] == h.rank) comms[k]->position = i;
    }
    CHECK_DFCCL(dfcclCommCreate(h.ctx, comms[k]->ranks, h.nranks, &comms[k]->comm));
  }
  for (int i = 0; i < h.nranks; i++) pool.ranks[i] = i;
  pool.position = h.rank;
  int generation = 0;
  register_pool(&h, &pool, &o, generation);

  worker threads[2] = {
      {.h = &h, .o = &o, .streams = {&a, &b}, .nstreams = 2, .thread = 0},
      {.h = &h, .o = &o, .streams = {&c, &pool}, .nstreams = 2, .thread = 1},
  };
  for (int t = 0; t < 2; t++) threads[t].random_state = o.seed * 31u + (uint64_t)h.rank * 2u + (uint64_t)t;
  test_case warm = {.kind = ALL_REDUCE, .dtype = dfcclInt32, .count = 1, .nranks = h.nranks, .position = h.rank};
  prepare(&h, &warm); /* the harness's copy stream exists before two threads use it */
  harness_free(&h, warm.send_alloc);
  harness_free(&h, warm.recv_alloc);
  pthread_barrier_init(&round_end, NULL, 2);
  pthread_t comms_tid;
  if (pthread_create(&comms_tid, NULL, comms_thread, &threads[0]) != 0) {
    fprintf(stderr, "rank %d: pthread_create failed\n", h.rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  long reregistrations = 0;
  double start = harness_now_s(), next_progress = start + progress_s;
  memory_use baseline = {0, 0};
  bool have_baseline = false;
  int round = 0;
  for (;; round++) {
    run_round(&threads[1], round);
    if ((int)(shared_random(&o, round, 9999) % 100) < o.dereg_percent) { /* alike on every rank */
      deregister_pool(&h, &pool);
      register_pool(&h, &pool, &o, ++generation);
      reregistrations++;
    }
    pthread_barrier_wait(&round_end); /* both threads' runs of this round are checked */
    double elapsed = harness_now_s() - start;
    if (!have_baseline && elapsed >= seconds / 4.0) {
      baseline = memory_now(&h);
      have_baseline = true;
    }
    int over = elapsed >= seconds, any_over = 0;
    MPI_Allreduce(&over, &any_over, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    atomic_store(&stop, any_over != 0);
    pthread_barrier_wait(&round_end);
    if (h.rank == 0 && (harness_now_s() >= next_progress || any_over)) {
      memory_use m = memory_now(&h);
      printf("soak: %.0f/%d s: %d rounds, %ld runs, %ld device synchronizations, %ld frees, %ld re-registrations, "
             "%ld wrong (rank 0); rss %.1f MiB, GPU used %.0f MiB\n",
             elapsed, seconds, round + 1, threads[0].runs + threads[1].runs, threads[0].syncs + threads[1].syncs,
             threads[0].frees + threads[1].frees, reregistrations, threads[0].wrong + threads[1].wrong, m.rss_mib,
             m.gpu_used_mib);
      fflush(stdout);
      next_progress += progress_s;
    }
    if (any_over) break;
  }
  pthread_join(comms_tid, NULL);
  pthread_barrier_destroy(&round_end);
  memory_use end = memory_now(&h);
  if (!have_baseline) baseline = end;

  long mine[5] = {threads[0].runs + threads[1].runs, threads[0].syncs + threads[1].syncs,
                  threads[0].frees + threads[1].frees, threads[0].wrong + threads[1].wrong, 0};
  double rss_growth = end.rss_mib - baseline.rss_mib, gpu_growth = end.gpu_used_mib - baseline.gpu_used_mib;
  if (rss_growth > rss_limit || gpu_growth > gpu_limit) {
    fprintf(stderr, "rank %d: memory grew: rss %.1f -> %.1f MiB (limit +%d), GPU used %.0f -> %.0f MiB (limit +%d)\n",
            h.rank, baseline.rss_mib, end.rss_mib, rss_limit, baseline.gpu_used_mib, end.gpu_used_mib, gpu_limit);
    mine[4] = 1;
  }
  long all[5];
  MPI_Reduce(mine, all, 5, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  double growth[2] = {rss_growth, gpu_growth}, most[2];
  MPI_Reduce(growth, most, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  deregister_pool(&h, &pool);
  for (int k = 0; k < 3; k++) CHECK_DFCCL(dfcclCommDestroy(comms[k]->comm));
  dfcclStats_t stats = harness_report_stats(&h);
  if (h.rank == 0)
    printf("soak: %d s, %d rounds, %ld runs of the five collectives on 3 communicators and %d registered ones "
           "(%ld re-registrations), 2 threads, %ld device synchronizations, %ld frees (all ranks): %s; "
           "memory from a quarter of the time to the end: rss %+.1f MiB, GPU used %+.0f MiB at most (%s); "
           "preemptions %llu\n",
           seconds, round + 1, all[0], POOL, reregistrations, all[1], all[2],
           all[3] ? "WRONG RESULTS" : "0 wrong, 0 hangs", most[0], most[1], all[4] ? "GREW" : "flat",
           (unsigned long long)stats.preemptions);
  return harness_finish(&h, mine[3] + mine[4]);
}
