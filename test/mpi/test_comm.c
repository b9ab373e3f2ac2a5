/*
 * Communicators and descriptors (dfcclCommCreate, dfcclSubmit): no registration per collective.
 * One communicator per group of ranks -- all ranks (at most 8), and overlapping triples and pairs,
 * as test_random_mix has them -- and every iteration each communicator runs RUNS collectives of the
 * six kinds that have descriptors, their counts, types and in-place use changing from iteration to
 * iteration (a new signature costs nothing now).  Each rank interleaves its communicators in its own
 * random order (each communicator's runs in the same order everywhere, as MPI requires), so the
 * groups' waits chain into each other; RUNS is more than the communicator's connector sets, so runs
 * also wait for their set inside DFCCL.  A burst of BURST runs of one signature on all ranks'
 * communicator follows each iteration.  Every result is checked exactly.
 *
 * Then the v kinds as descriptors, on the communicator of all ranks, in the same order everywhere:
 * bad blocks refused locally; all-gather-v packed and with gaps that must stay untouched, and
 * reduce-scatter-v with unequal and empty blocks, outstanding together and alternating between two
 * blocks tables, so that runs wait behind a set busy with the other table; more layouts than the
 * communicator keeps (tables evicted); and its tables all held by runs that wait for the other
 * ranks, so that a new layout is refused and a known one is not.
 *
 *   mpirun -np N test_comm [-i iterations] [-s seed] [-y percent]      (N >= 3)
 *
 * -y: after each submission, with this probability, synchronize the device.  With
 * DFCCL_PREEMPTION=0 the disorder across communicators hangs (comm_twin.sh).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "dtypes.h"

#define MAX_GROUPS 8
#define RUNS 6    /* per communicator and iteration: more than DFCCL_COMM_SETS' default of 4 */
#define BURST 24  /* runs of one signature in a row */
#define TABLES 64 /* blocks tables a communicator keeps (dfccl.h) */

static const kind kinds[RUNS] = {ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, ALL_TO_ALL};

typedef struct {
  int ranks[8];
  int nranks;
  int position; /* -1: not a member */
  dfcclComm_t comm;
  test_case runs[RUNS];
} group_t;

/* The groups (cases.h's overlapping ones), and this rank's place in each. */
static int make_groups(const harness* h, group_t* g) {
  int members[MAX_GROUPS][8], sizes[MAX_GROUPS];
  int n = overlapping_groups(h->nranks, members, sizes, MAX_GROUPS);
  for (int k = 0; k < n; k++) {
    memcpy(g[k].ranks, members[k], sizeof members[k]);
    g[k].nranks = sizes[k];
    g[k].position = -1;
    for (int i = 0; i < g[k].nranks; i++)
      if (g[k].ranks[i] == h->rank) g[k].position = i;
  }
  return n;
}

/* Run j of group k in iteration it: a new shape every iteration. */
static void shape_run(test_case* c, const group_t* g, int k, int j, int it) {
  static const dfcclDataType_t types[] = {dfcclFloat32, dfcclInt32, dfcclBfloat16,
                                          dfcclInt64,   dfcclUint8, dfcclFloat64};
  static const dfcclRedOp_t ops[] = {dfcclSum, dfcclMax, dfcclMin, dfcclProd};
  memset(c, 0, sizeof *c);
  c->id = (k * RUNS + j) * 1000 + it % 1000;
  c->kind = kinds[j];
  c->dtype = types[(k + j + it) % 6];
  c->op = reduces(c->kind) ? ops[(k + it) % 4] : dfcclSum;
  c->count = (size_t)(1 + (k * 7 + j * 3 + it) % 5) * 1001 + (size_t)(it % 3);
  c->in_place = runs_in_place(c->kind) && (k + j + it) % 2;
  c->ranks = g->ranks;
  c->nranks = g->nranks;
  c->position = g->position;
  c->root = g->ranks[(j + it) % g->nranks];
  c->seed = (unsigned)it;
}

/* A run on group g; the v kinds' blocks follow count (cases.h), in one of two all-gather-v layouts. */
static void shape_v(test_case* c, const group_t* g, kind k, size_t count, bool packed, bool in_place, int id) {
  static const dfcclDataType_t types[] = {dfcclFloat32, dfcclInt32, dfcclBfloat16, dfcclUint8, dfcclFloat64};
  memset(c, 0, sizeof *c);
  c->id = id;
  c->kind = k;
  c->dtype = types[id % 5];
  c->op = id % 2 ? dfcclMax : dfcclSum;
  c->count = count;
  c->packed = packed;
  c->in_place = in_place;
  c->ranks = g->ranks;
  c->nranks = g->nranks;
  c->position = g->position;
  c->root = g->ranks[0];
  c->seed = (unsigned)id;
}

/* Waits for n submitted cases and checks them; returns the wrong elements. */
static long finish_batch(harness* h, test_case* cases, int n, harness_counter* done) {
  harness_wait(done, n);
  long wrong = atomic_load(&done->errors);
  for (int i = 0; i < n; i++) wrong += verify(h, &cases[i]);
  harness_progress();
  return wrong;
}

static long run_batch(harness* h, dfcclComm_t comm, test_case* cases, int n) {
  harness_counter done = {0};
  for (int i = 0; i < n; i++) prepare(h, &cases[i]);
  for (int i = 0; i < n; i++) submit_case(h, comm, &cases[i], &done);
  return finish_batch(h, cases, n, &done);
}

/* The descriptor is refused at once (no run number taken) with an error that names `word`. */
static long expect_refused(const harness* h, dfcclComm_t comm, const dfcclCollDesc_t* d, void* buf, dfcclResult_t want,
                           const char* word, const char* what) {
  dfcclResult_t r = dfcclSubmit(comm, d, buf, buf, NULL, NULL);
  const char* message = dfcclGetLastErrorMessage();
  if (r == want && strstr(message, word) != NULL) return 0;
  fprintf(stderr, "rank %d: %s: got %s (\"%s\"), expected %s naming \"%s\"\n", h->rank, what, dfcclGetErrorString(r),
          message, dfcclGetErrorString(want), word);
  return 1;
}

static long v_bad_input(harness* h, const group_t* g) {
  size_t counts[8], displs[8], zeros[8] = {0};
  for (int p = 0; p < g->nranks; p++) {
    counts[p] = 10;
    displs[p] = 10 * (size_t)p;
  }
  displs[1] = 5; /* inside block 0 */
  void* buf = harness_alloc(h, 1024 * sizeof(int32_t));
  dfcclCollDesc_t agv = {.kind = dfcclAllGatherV, .dtype = dfcclInt32, .counts = NULL, .displs = displs};
  dfcclCollDesc_t rsv = {.kind = dfcclReduceScatterV, .dtype = dfcclInt32, .op = dfcclSum, .counts = NULL};
  long bad = 0;
  bad += expect_refused(h, g->comm, &agv, buf, dfcclInvalidArgument, "counts", "all-gather-v, NULL counts");
  bad += expect_refused(h, g->comm, &rsv, buf, dfcclInvalidArgument, "counts", "reduce-scatter-v, NULL counts");
  agv.counts = counts;
  bad += expect_refused(h, g->comm, &agv, buf, dfcclInvalidArgument, "overlap", "all-gather-v, overlapping displs");
  rsv.counts = zeros;
  bad += expect_refused(h, g->comm, &rsv, buf, dfcclInvalidArgument, "all 0", "reduce-scatter-v, every block empty");
  counts[g->nranks - 1] = SIZE_MAX / 2;
  rsv.counts = counts;
  bad += expect_refused(h, g->comm, &rsv, buf, dfcclInvalidArgument, "overflows", "reduce-scatter-v, huge block");
  harness_free(h, buf);
  return bad;
}

/* The v kinds on the communicator of all ranks (see the top). */
static long v_descriptors(harness* h, const group_t* g) {
  enum { ALTERNATING = 12, BATCH = 8, EVICTING = 2 * TABLES + 10 };
  test_case cases[TABLES + 1];
  long wrong = v_bad_input(h, g);

  /* Two tables, A (all-gather-v with gaps) and B (reduce-scatter-v, and an all-gather-v packed
   * alike), and runs with none between them. */
  static const kind five[5] = {ALL_GATHER_V, REDUCE_SCATTER_V, ALL_GATHER, ALL_GATHER_V, REDUCE_SCATTER};
  for (int i = 0; i < ALTERNATING; i++)
    shape_v(&cases[i], g, five[i % 5], i % 5 == 0 ? 1000 : 700, i % 5 != 0, i % 4 == 3, i);
  wrong += run_batch(h, g->comm, cases, ALTERNATING);

  /* More layouts than the communicator keeps, a batch at a time (more runs than sets). */
  for (int i = 0; i < EVICTING; i += BATCH) {
    int n = EVICTING - i < BATCH ? EVICTING - i : BATCH;
    for (int j = 0; j < n; j++)
      shape_v(&cases[j], g, (i + j) % 2 ? REDUCE_SCATTER_V : ALL_GATHER_V, 1 + 7 * (size_t)(i + j), (i + j) % 4 == 2,
              false, 100 + i + j);
    wrong += run_batch(h, g->comm, cases, n);
  }

  /* Rank 0 goes first: its TABLES new layouts wait for the others, so every table is held. */
  harness_counter done = {0};
  for (int i = 0; i <= TABLES; i++) {
    shape_v(&cases[i], g, ALL_GATHER_V, 5000 + (size_t)(i % TABLES), true, false, 1000 + i);
    cases[i].dtype = dfcclUint8;
    prepare(h, &cases[i]);
  }
  if (h->rank != 0) MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < TABLES; i++) submit_case(h, g->comm, &cases[i], &done);
  if (h->rank == 0) {
    dfcclCollDesc_t fresh = {
        .kind = dfcclAllGatherV, .dtype = dfcclUint8, .counts = (size_t[8]){1, 2, 3, 4, 5, 6, 7, 8}};
    void* buf = harness_alloc(h, 64);
    wrong += expect_refused(h, g->comm, &fresh, buf, dfcclOutOfResources, "held by runs", "a new layout, all held");
    harness_free(h, buf);
  }
  submit_case(h, g->comm, &cases[TABLES], &done); /* case 0's layout: no new table */
  if (h->rank == 0) MPI_Barrier(MPI_COMM_WORLD);
  wrong += finish_batch(h, cases, TABLES + 1, &done);
  return wrong;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_comm");
  int iterations = 100;
  unsigned long seed = 7;
  int sync_percent = 0;
  options o = harness_options(&h, "usage: test_comm [-i iterations] [-s seed] [-y percent]", argc, argv, "i:s:y:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 1000000);
    else if (opt == 's') seed = option_unsigned(&o);
    else if (opt == 'y') sync_percent = option_int(&o, 0, 100);
  }
  if (h.nranks < 3) {
    if (h.rank == 0) fprintf(stderr, "test_comm needs at least 3 ranks\n");
    return harness_finish(&h, 1);
  }
  harness_watchdog_start(60, "communicators in random orders");

  group_t groups[MAX_GROUPS];
  int ngroups = make_groups(&h, groups);
  for (int k = 0; k < ngroups; k++) /* in the same order everywhere: creation is collective */
    if (groups[k].position >= 0)
      CHECK_DFCCL(dfcclCommCreate(h.ctx, groups[k].ranks, groups[k].nranks, &groups[k].comm));
  int nburst = groups[0].position >= 0 ? BURST : 0; /* ranks past the eighth are not in it */

  long wrong = 0, syncs = 0;
  harness_counter done = {0};
  int submitted = 0;
  uint64_t sync_state = seed * 31u + (uint64_t)h.rank;
  test_case burst[BURST];
  for (int it = 0; it < iterations; it++) {
    int order[MAX_GROUPS * RUNS], next[MAX_GROUPS] = {0}, n = 0;
    for (int k = 0; k < ngroups; k++)
      if (groups[k].position >= 0)
        for (int j = 0; j < RUNS; j++) {
          shape_run(&groups[k].runs[j], &groups[k], k, j, it);
          prepare(&h, &groups[k].runs[j]);
          order[n++] = k;
        }
    /* This rank's interleaving of its communicators; each one's runs in their order. */
    int perm[MAX_GROUPS * RUNS];
    harness_permutation(perm, n, seed * 1000003u + (uint64_t)it * 7919u + (uint64_t)h.rank);
    for (int s = 0; s < n; s++) {
      int k = order[perm[s]];
      submit_case(&h, groups[k].comm, &groups[k].runs[next[k]++], &done);
      submitted++;
      if (sync_percent > 0 && (int)(harness_random(&sync_state) % 100) < sync_percent) {
        CHECK_DFCCL(dfcclTargetSynchronize(h.ctx));
        syncs++;
        harness_progress();
      }
    }
    /* A burst on the communicator of all ranks: runs of one signature wait for their sets. */
    for (int b = 0; b < nburst; b++) {
      shape_run(&burst[b], &groups[0], 0, 0, it);
      burst[b].id = 900000 + b;
      prepare(&h, &burst[b]);
    }
    for (int b = 0; b < nburst; b++, submitted++) submit_case(&h, groups[0].comm, &burst[b], &done);
    harness_wait(&done, submitted);
    harness_progress();
    for (int k = 0; k < ngroups; k++)
      if (groups[k].position >= 0)
        for (int j = 0; j < RUNS; j++) wrong += verify(&h, &groups[k].runs[j]);
    for (int b = 0; b < nburst; b++) wrong += verify(&h, &burst[b]);
    harness_iteration_done(&h, it, iterations, 20);
  }
  if (atomic_load(&done.errors)) wrong++;
  long v_wrong = groups[0].position >= 0 ? v_descriptors(&h, &groups[0]) : 0;
  if (groups[0].position < 0) MPI_Barrier(MPI_COMM_WORLD); /* the one v_descriptors has */
  wrong += v_wrong;
  for (int k = 0; k < ngroups; k++)
    if (groups[k].position >= 0) CHECK_DFCCL(dfcclCommDestroy(groups[k].comm));
  dfcclStats_t all = harness_report_stats(&h);
  long all_syncs = 0;
  MPI_Reduce(&syncs, &all_syncs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (h.rank == 0)
    printf("%d iterations of %d communicators x %d runs in random interleavings and a burst of %d, %ld device "
           "synchronizations: %s; preemptions %llu (all ranks)\n",
           iterations, ngroups, RUNS, BURST, all_syncs, wrong ? "WRONG RESULTS" : "all results exact",
           (unsigned long long)all.preemptions);
  if (h.rank == 0)
    printf("v kinds as descriptors: bad blocks refused, two tables alternating, %d layouts through %d tables, "
           "all tables held: %s (rank 0)\n",
           2 * TABLES + 10, TABLES, v_wrong ? "FAILED" : "as expected");
  return harness_finish(&h, wrong);
}
