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
#define RUNS 6   /* per communicator and iteration: more than DFCCL_COMM_SETS' default of 4 */
#define BURST 24 /* runs of one signature in a row */

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
  return harness_finish(&h, wrong);
}
