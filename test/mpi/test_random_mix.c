/*
 * A random-order mix of all eight collectives (cases.h: all-gather-v, reduce-scatter-v and all-to-all too) on
 * overlapping groups of ranks: every iteration,
 * every rank invokes the collectives it takes part in, in its own random order, then checks every
 * result exactly.  Groups overlap, so the waits of one group chain into another's.
 *
 *   mpirun -np N test_random_mix [-i iterations] [-s seed] [-y percent]      (N >= 3)
 *
 * -y: after each invocation, with this probability, synchronize the device (cudaDeviceSynchronize
 * on a GPU): the daemon must quit to let it return, with collectives half done on other ranks.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "dtypes.h"

#define MAX_GROUPS 8
#define MAX_CASES 96

/* The n-th (cyclically) of the ops the type has: every op comes up, on the types that have it. */
static dfcclRedOp_t nth_op_of(dfcclDataType_t dtype, int n) {
  dfcclRedOp_t ops[dfcclNumOps];
  int count = 0;
  for (int o = 0; o < dfcclNumOps; o++)
    if (df_op_defined_for((dfcclRedOp_t)o, dtype)) ops[count++] = (dfcclRedOp_t)o;
  return ops[n % count];
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_random_mix");
  int iterations = 200;
  unsigned long seed = 99;
  int sync_percent = 0;
  options o =
      harness_options(&h, "usage: test_random_mix [-i iterations] [-s seed] [-y percent]", argc, argv, "i:s:y:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 1000000);
    else if (opt == 's') seed = option_unsigned(&o);
    else if (opt == 'y') sync_percent = option_int(&o, 0, 100);
  }
  if (h.nranks < 3) {
    if (h.rank == 0) fprintf(stderr, "test_random_mix needs at least 3 ranks\n");
    return harness_finish(&h, 1);
  }
  harness_watchdog_start(60, "random mix of collectives on overlapping groups");

  /* Groups: everyone; every window of 3 consecutive ranks (mod n); every pair of neighbours. */
  static int members[MAX_GROUPS][8];
  int sizes[MAX_GROUPS], ngroups = overlapping_groups(h.nranks, members, sizes, MAX_GROUPS);

  /* Every group runs each of the eight collectives (a few sizes and types, roots spread out). */
  test_case cases[MAX_CASES];
  int n = 0, mine = 0;
  int mine_index[MAX_CASES];
  static const dfcclDataType_t types[] = {dfcclFloat32, dfcclInt32, dfcclBfloat16, dfcclInt64, dfcclUint8, dfcclUint16};
  const int ntypes = (int)(sizeof types / sizeof types[0]);
  for (int g = 0; g < ngroups; g++)
    for (int k = 0; k < NUM_KINDS && n < MAX_CASES; k++, n++) {
      test_case* c = &cases[n];
      memset(c, 0, sizeof *c);
      c->id = n;
      c->kind = (kind)k;
      c->dtype = types[(g + k) % ntypes];
      c->op = reduces(c->kind) ? nth_op_of(c->dtype, g + k) : dfcclSum;
      c->count = (size_t)(1 + (g * 7 + k * 3) % 5) * 3001;
      c->in_place = runs_in_place(c->kind) && (g + k) % 2;
      c->ranks = members[g];
      c->nranks = sizes[g];
      c->root = members[g][(g + k) % sizes[g]];
      c->position = -1;
      for (int i = 0; i < sizes[g]; i++)
        if (members[g][i] == h.rank) c->position = i;
      if (c->position >= 0) {
        register_case(&h, c);
        mine_index[mine++] = n;
      }
    }

  long wrong = 0, syncs = 0;
  harness_counter done = {0};
  int order[MAX_CASES];
  uint64_t sync_state = seed * 31u + (uint64_t)h.rank;
  for (int it = 0; it < iterations; it++) {
    for (int j = 0; j < mine; j++) {
      cases[mine_index[j]].seed = (unsigned)it;
      prepare(&h, &cases[mine_index[j]]);
    }
    harness_permutation(order, mine, seed * 1000003u + (uint64_t)it * 7919u + (uint64_t)h.rank);
    for (int j = 0; j < mine; j++) {
      run_case(&h, &cases[mine_index[order[j]]], &done);
      if (sync_percent > 0 && (int)(harness_random(&sync_state) % 100) < sync_percent) {
        CHECK_DFCCL(dfcclTargetSynchronize(h.ctx));
        syncs++;
        harness_progress();
      }
    }
    harness_wait(&done, (it + 1) * mine);
    harness_progress();
    for (int j = 0; j < mine; j++) wrong += verify(&h, &cases[mine_index[j]]);
    harness_iteration_done(&h, it, iterations, 20);
  }
  if (atomic_load(&done.errors)) wrong++;
  dfcclStats_t all = harness_report_stats(&h);
  long all_syncs = 0;
  MPI_Reduce(&syncs, &all_syncs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (h.rank == 0)
    printf("%d iterations of %d collectives (all eight kinds) on %d overlapping groups of %d ranks, %ld device "
           "synchronizations: %s; preemptions %llu, voluntary quits %llu (all ranks)\n",
           iterations, n, ngroups, h.nranks, all_syncs, wrong ? "WRONG RESULTS" : "all results exact",
           (unsigned long long)all.preemptions, (unsigned long long)all.voluntaryQuits);
  return harness_finish(&h, wrong);
}
