/*
 * Issue 15's target "out-of-order costs <= 10 %": the random-order program (test_random_order: K
 * all-reduces per iteration, every rank in its own random order, a new order every iteration)
 * against the same program with one order on every rank (test_random_order -c), at each size of -s
 * per collective.  Fixed and random runs alternate, round after round, in one run, so that drift
 * (clocks, whatever else the machine runs) weighs on both alike; the order within a round alternates
 * too.  A run is -n iterations back to back, as the program runs them: a rank starts its next
 * iteration when its own K callbacks have come, with no barrier between iterations.  Its time per
 * iteration is the slowest rank's.  Every run's results are checked exactly: a wrong element makes
 * the exit status 1.
 *
 *   mpirun -np N out_of_order_bench [-s sizes] [-k colls] [-n iterations] [-w warmup] [-r rounds] [-S seed]
 *
 * Output and options: benchmarks/README.md, or -h.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_SIZES 16
#define MAX_COLLS 64
#define MAX_ROUNDS 99
#define TARGET_RATIO 1.10 /* random / fixed time per iteration */

#define USAGE "usage: out_of_order_bench [-s sizes] [-k colls] [-n iterations] [-w warmup] [-r rounds] [-S seed] [-h]"
#define HELP                                                                                             \
  "  -s SIZES   bytes per all-reduce, comma-separated (K, M, G: powers of 1024)  64K,4M\n"               \
  "  -k K       all-reduces per iteration (float sum, out of place)                8\n"                  \
  "  -n N       timed iterations per run                                           200\n"                \
  "  -w W       warm-up iterations of each order per size                          20\n"                 \
  "  -r R       rounds: a fixed-order run and a random-order run each              3\n"                  \
  "  -S SEED    seed of the orders                                                 2025\n"               \
  "  -h         this help\n"                                                                             \
  "Prints, per size, the median and smallest time per iteration of each order over the rounds, their\n"  \
  "ratio (random/fixed, medians) and a line 'out-of-order SIZE: random/fixed = X.XX (target <= 1.10):\n" \
  "PASS|MISS'.  Exit status 1 when any element was wrong, 2 on a bad option.\n"

typedef enum { FIXED, RANDOM, NUM_ORDERS } order_kind;

typedef struct {
  size_t bytes[MAX_SIZES];
  int nsizes;
  int colls, iterations, warmup, rounds;
  unsigned long seed;
} settings;

/* One size's all-reduces: ids 0 .. colls-1, registered for the size and deregistered after it. */
typedef struct {
  size_t count; /* floats per all-reduce */
  void* send[MAX_COLLS];
  void* recv[MAX_COLLS];
  float* host;
  int next_iteration; /* of the orders: every run draws new ones */
} size_set;

/* One run of -n (or -w) iterations in one order kind, over all ranks. */
typedef struct {
  double us_per_iteration; /* the slowest rank's */
  double preemptions;      /* per iteration, summed over ranks */
  double launches;         /* daemon launches per iteration, summed over ranks: each after a quit */
  long wrong;              /* elements, summed over ranks, with failed runs */
} run_result;

static void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  fprintf(stderr, "out_of_order_bench: %s failed (MPI error %d)\n", what, rc);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- options ---- */

/* "64K,4M": each a whole number of floats. */
static void parse_sizes(const options* o, settings* s) {
  char list[256];
  if (strlen(o->value) >= sizeof list) options_fail(o, "-s: the list is longer than %zu characters", sizeof list - 1);
  strcpy(list, o->value);
  s->nsizes = 0;
  for (char *item = list, *comma; item != NULL; item = comma ? comma + 1 : NULL) {
    comma = strchr(item, ',');
    if (comma) *comma = '\0';
    size_t bytes = 0;
    if (*item == '\0') options_fail(o, "-s: an empty size in '%s'", o->value);
    if (!parse_bytes(item, &bytes) || bytes == 0 || bytes % sizeof(float) != 0 || bytes > ((size_t)1 << 30))
      options_fail(o, "-s: expected sizes in bytes, multiples of 4 up to 1G, separated by commas (64K,4M), got '%s'",
                   item);
    if (s->nsizes == MAX_SIZES) options_fail(o, "-s: at most %d sizes, got '%s'", MAX_SIZES, o->value);
    s->bytes[s->nsizes++] = bytes;
  }
}

/* Returns false for -h (rank 0 has printed the help). */
static bool read_settings(harness* h, int argc, char** argv, settings* s) {
  *s = (settings){.bytes = {64 << 10, 4 << 20},
                  .nsizes = 2,
                  .colls = 8,
                  .iterations = 200,
                  .warmup = 20,
                  .rounds = 3,
                  .seed = 2025};
  options o = harness_options(h, USAGE, argc, argv, "s:k:n:w:r:S:h");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 's') parse_sizes(&o, s);
    else if (opt == 'k') s->colls = option_int(&o, 1, MAX_COLLS);
    else if (opt == 'n') s->iterations = option_int(&o, 1, 1000000);
    else if (opt == 'w') s->warmup = option_int(&o, 0, 1000000);
    else if (opt == 'r') s->rounds = option_int(&o, 1, MAX_ROUNDS);
    else if (opt == 'S') s->seed = option_unsigned(&o);
    else if (opt == 'h') {
      if (h->rank == 0) printf("%s\n%s", USAGE, HELP);
      return false;
    }
  }
  return true;
}

/* ---- one size ---- */

static void open_size(harness* h, size_set* set, size_t bytes, int colls) {
  memset(set, 0, sizeof *set);
  set->count = bytes / sizeof(float);
  set->host = malloc(bytes);
  if (set->host == NULL) {
    fprintf(stderr, "out_of_order_bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int c = 0; c < colls; c++) {
    CHECK_DFCCL(dfcclRegisterAllReduce(h->ctx, set->count, dfcclFloat32, dfcclSum, c, NULL, 0, 0));
    set->send[c] = harness_alloc(h, bytes);
    set->recv[c] = harness_alloc(h, bytes);
  }
}

static void close_size(harness* h, size_set* set, int colls) {
  int ids[MAX_COLLS];
  for (int c = 0; c < colls; c++) ids[c] = c;
  CHECK_DFCCL(dfcclDeregister(h->ctx, ids, colls));
  for (int c = 0; c < colls; c++) {
    harness_free(h, set->send[c]);
    harness_free(h, set->recv[c]);
  }
  free(set->host);
}

/* Inputs that tell this run from the previous one (`tag`), and outputs of all-ones bytes (NaN),
 * so that a run that leaves an output unwritten is seen. */
static void prepare_run(harness* h, size_set* set, int colls, int tag) {
  size_t bytes = set->count * sizeof(float);
  for (int c = 0; c < colls; c++) {
    for (size_t i = 0; i < set->count; i++) set->host[i] = (float)harness_order_value(h->rank, tag, c, i);
    harness_upload(h, set->send[c], set->host, bytes);
    memset(set->host, 0xff, bytes);
    harness_upload(h, set->recv[c], set->host, bytes);
  }
}

static long check_run(harness* h, size_set* set, int colls, int tag) {
  long wrong = 0;
  for (int c = 0; c < colls; c++) {
    harness_download(h, set->host, set->recv[c], set->count * sizeof(float));
    wrong += harness_check_sum_float(h, harness_order_value, tag, c, set->host, set->count);
  }
  return wrong;
}

/* The program's loop: each iteration, the K all-reduces in this iteration's order, then wait for
 * their callbacks.  Returns the runs that failed. */
static int run_iterations(harness* h, size_set* set, const settings* s, order_kind kind, int iterations) {
  harness_counter done = {0};
  int order[MAX_COLLS];
  for (int it = 0; it < iterations; it++) {
    harness_iteration_order(order, s->colls, s->seed, set->next_iteration++, kind == RANDOM ? h->rank : 0);
    for (int k = 0; k < s->colls; k++) {
      int c = order[k];
      CHECK_DFCCL(dfcclRunAllReduce(h->ctx, set->send[c], set->recv[c], c, harness_on_complete, &done));
    }
    harness_wait(&done, (it + 1) * s->colls);
  }
  return atomic_load(&done.errors);
}

static dfcclStats_t daemon_stats(const harness* h) {
  dfcclStats_t stats;
  CHECK_DFCCL(dfcclGetStats(h->ctx, &stats));
  return stats;
}

/* One run, timed from a barrier to this rank's last callback; checked after the clock stops. */
static run_result measure(harness* h, size_set* set, const settings* s, order_kind kind, int iterations, int tag) {
  prepare_run(h, set, s->colls, tag);
  dfcclStats_t before = daemon_stats(h);
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  double start = harness_now_s();
  long failed = run_iterations(h, set, s, kind, iterations);
  double us = (harness_now_s() - start) * 1e6;
  dfcclStats_t after = daemon_stats(h);
  double mine[3] = {us / iterations, (double)(after.preemptions - before.preemptions) / iterations,
                    (double)(after.launches - before.launches) / iterations};
  long wrong = check_run(h, set, s->colls, tag) + failed;

  run_result r;
  double slowest = 0, summed[2] = {0, 0};
  check_mpi(MPI_Allreduce(&mine[0], &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&mine[1], summed, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&wrong, &r.wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  r.us_per_iteration = slowest;
  r.preemptions = summed[0];
  r.launches = summed[1];
  return r;
}

/* ---- output (rank 0) ---- */

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Sorts v. */
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "64 KiB", "4 MiB", "100 B", as benchmarks/targets.py writes sizes. */
static void format_size(size_t bytes, char* out, size_t len) {
  static const char* const units[] = {"GiB", "MiB", "KiB"};
  for (int u = 0; u < 3; u++) {
    size_t unit = (size_t)1 << (10 * (3 - u));
    if (bytes >= unit && bytes % unit == 0) {
      snprintf(out, len, "%zu %s", bytes / unit, units[u]);
      return;
    }
  }
  snprintf(out, len, "%zu B", bytes);
}

static void print_heading(const harness* h, const settings* s) {
  printf("# out_of_order_bench: %d ranks, %s target; %d all-reduces (float sum, out of place) per iteration, "
         "%d iterations per run, %d rounds of a fixed-order and a random-order run, %d warm-up iterations, seed %lu\n",
         h->nranks, h->gpu ? "cuda" : "host", s->colls, s->iterations, s->rounds, s->warmup, s->seed);
  printf("# time per iteration on the slowest rank (us): median and min over rounds; preemptions and daemon "
         "launches (each after the daemon quit) per iteration (all ranks, median)\n");
  printf("#%11s %10s %10s %10s %10s %8s %8s %8s %8s %8s %8s\n", "size (B)", "fixed med", "fixed min", "random med",
         "random min", "ratio", "pre fix", "pre rnd", "lau fix", "lau rnd", "#wrong");
  fflush(stdout);
}

typedef struct {
  size_t bytes;
  double fixed, random; /* medians */
} size_summary;

static size_summary print_row(size_t bytes, run_result runs[NUM_ORDERS][MAX_ROUNDS], int rounds) {
  double times[NUM_ORDERS][MAX_ROUNDS], pre[NUM_ORDERS][MAX_ROUNDS], lau[NUM_ORDERS][MAX_ROUNDS];
  double med[NUM_ORDERS], low[NUM_ORDERS];
  long wrong = 0;
  for (int k = 0; k < NUM_ORDERS; k++) {
    for (int r = 0; r < rounds; r++) {
      times[k][r] = runs[k][r].us_per_iteration;
      pre[k][r] = runs[k][r].preemptions;
      lau[k][r] = runs[k][r].launches;
      wrong += runs[k][r].wrong;
    }
    med[k] = median(times[k], rounds);
    low[k] = times[k][0]; /* sorted */
  }
  printf("%12zu %10.2f %10.2f %10.2f %10.2f %8.3f %8.1f %8.1f %8.2f %8.2f %8ld\n", bytes, med[FIXED], low[FIXED],
         med[RANDOM], low[RANDOM], med[RANDOM] / med[FIXED], median(pre[FIXED], rounds), median(pre[RANDOM], rounds),
         median(lau[FIXED], rounds), median(lau[RANDOM], rounds), wrong);
  fflush(stdout);
  return (size_summary){bytes, med[FIXED], med[RANDOM]};
}

static void print_verdicts(const size_summary* sizes, int n, long wrong) {
  for (int i = 0; i < n; i++) {
    char size[32];
    format_size(sizes[i].bytes, size, sizeof size);
    double ratio = sizes[i].random / sizes[i].fixed;
    printf("out-of-order %s: random/fixed = %.2f (target <= %.2f): %s\n", size, ratio, TARGET_RATIO,
           ratio <= TARGET_RATIO ? "PASS" : "MISS");
  }
  printf("wrong elements: %ld%s\n", wrong, wrong ? " (WRONG RESULTS)" : " (all results exact)");
}

/* ---- main ---- */

/* Warm-up of both orders, then the rounds; returns the wrong elements.  Run tags (the inputs'
 * iteration) differ between runs, so that a run that writes nothing leaves the previous run's
 * sums, which the check refuses. */
static long measure_size(harness* h, const settings* s, size_t bytes, size_summary* summary) {
  static run_result runs[NUM_ORDERS][MAX_ROUNDS];
  size_set set;
  open_size(h, &set, bytes, s->colls);
  long wrong = 0;
  int tag = 0;
  if (s->warmup > 0) {
    for (int k = 0; k < NUM_ORDERS; k++) wrong += measure(h, &set, s, (order_kind)k, s->warmup, tag++).wrong;
  }
  for (int r = 0; r < s->rounds; r++) {
    for (int j = 0; j < NUM_ORDERS; j++) {
      order_kind kind = (order_kind)((r + j) % NUM_ORDERS); /* fixed first in even rounds */
      runs[kind][r] = measure(h, &set, s, kind, s->iterations, tag++);
      wrong += runs[kind][r].wrong;
    }
  }
  close_size(h, &set, s->colls);
  if (h->rank == 0) *summary = print_row(bytes, runs, s->rounds);
  return wrong;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "out_of_order_bench");
  settings s;
  if (!read_settings(&h, argc, argv, &s)) return harness_finish(&h, 0);
  harness_watchdog_start(60, "out-of-order benchmark");
  if (h.rank == 0) print_heading(&h, &s);

  size_summary summaries[MAX_SIZES];
  long wrong = 0; /* summed over ranks, on every rank */
  for (int i = 0; i < s.nsizes; i++) wrong += measure_size(&h, &s, s.bytes[i], &summaries[i]);
  if (h.rank == 0) print_verdicts(summaries, s.nsizes, wrong);
  /* Every rank has the total: count it once. */
  return harness_finish(&h, h.rank == 0 ? wrong : 0);
}
