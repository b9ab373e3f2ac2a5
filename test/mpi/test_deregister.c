/*
 * Deregistration: collectives on two disjoint pairs ({0,1}, {2,3}) and on all ranks run and are
 * checked; one pair deregisters its collectives and registers other ones under the same ids
 * (other kinds and counts, in the freed daemon indices, with fresh statistics); 150
 * register/run/deregister cycles go through more collectives than a context holds at once; every
 * misuse fails alike on every participant and changes nothing.  At the end only the pairs'
 * collectives are left, so dfcclDestroy meets each pair alone.  Inputs are small integers,
 * results are compared exactly.  Run on 4 ranks.
 *
 *   mpirun -np 4 test_deregister [-c cycles]     (default 150: 2,115 registrations)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

static long failures;

static void expect(const harness* h, dfcclResult_t got, dfcclResult_t want, const char* what) {
  harness_progress();
  if (got == want) {
    if (h->rank == 0)
      printf("ok   %-62s -> %s%s%s\n", what, dfcclGetErrorString(got), got ? ": " : "",
             got ? dfcclGetLastErrorMessage() : "");
    return;
  }
  failures++;
  fprintf(stderr, "FAIL rank %d: %s: got %s (%s), expected %s\n", h->rank, what, dfcclGetErrorString(got),
          dfcclGetLastErrorMessage(), dfcclGetErrorString(want));
}

static const int low_pair[] = {0, 1}, high_pair[] = {2, 3};

static const int* my_pair(const harness* h) { return h->rank < 2 ? low_pair : high_pair; }

static test_case pair_case(const harness* h, int id, kind k, dfcclDataType_t dtype, dfcclRedOp_t op, size_t count,
                           int root_position) {
  const int* pair = my_pair(h);
  return (test_case){.id = id,
                     .kind = k,
                     .dtype = dtype,
                     .op = op,
                     .count = count,
                     .root = pair[root_position],
                     .ranks = pair,
                     .nranks = 2,
                     .position = h->rank % 2};
}

static test_case all_case(const harness* h, int id, kind k, dfcclDataType_t dtype, dfcclRedOp_t op, size_t count,
                          int root) {
  return (test_case){.id = id,
                     .kind = k,
                     .dtype = dtype,
                     .op = op,
                     .count = count,
                     .root = root,
                     .nranks = h->nranks,
                     .position = h->rank};
}

/* Runs the cases (all in flight together) and checks their results; `seed` varies the inputs. */
static long run_and_check(harness* h, test_case* cases, int n, unsigned seed) {
  harness_counter done = {0};
  for (int i = 0; i < n; i++) {
    cases[i].seed = seed;
    prepare(h, &cases[i]);
  }
  for (int i = 0; i < n; i++) run_case(h, &cases[i], &done);
  harness_wait(&done, n);
  harness_progress();
  long wrong = atomic_load(&done.errors);
  for (int i = 0; i < n; i++) wrong += verify(h, &cases[i]);
  return wrong;
}

static void deregister_cases(harness* h, const test_case* cases, int n) {
  int ids[64];
  for (int i = 0; i < n; i++) ids[i] = cases[i].id;
  CHECK_DFCCL(dfcclDeregister(h->ctx, ids, n));
}

/* A freshly registered collective shows no runs and no daemon counters of the index's last user. */
static long expect_fresh_stats(const harness* h, int id) {
  dfcclCollStats_t s;
  CHECK_DFCCL(dfcclGetCollStats(h->ctx, id, &s));
  if (s.runs == 0 && s.contextLoads == 0 && s.contextSaves == 0 && s.preemptions == 0 && s.maxTaskQueueLength == 0)
    return 0;
  fprintf(stderr,
          "rank %d: re-registered id %d shows old statistics: %llu runs, %llu loads, %llu saves, "
          "%llu preemptions, queue %llu\n",
          h->rank, id, (unsigned long long)s.runs, (unsigned long long)s.contextLoads,
          (unsigned long long)s.contextSaves, (unsigned long long)s.preemptions,
          (unsigned long long)s.maxTaskQueueLength);
  return 1;
}

/* Both pairs and all ranks; then pair {0,1} replaces its collectives with others of the same ids. */
static long reuse_ids(harness* h, test_case* pair, test_case* all) {
  pair[0] = pair_case(h, 10, ALL_REDUCE, dfcclInt32, dfcclSum, 1000, 0);
  pair[1] = pair_case(h, 11, ALL_GATHER, dfcclInt32, dfcclSum, 300, 0);
  all[0] = all_case(h, 20, REDUCE_SCATTER, dfcclInt32, dfcclSum, 500, 0);
  for (int i = 0; i < 2; i++) register_case(h, &pair[i]);
  register_case(h, &all[0]);
  long wrong = run_and_check(h, pair, 2, 1) + run_and_check(h, all, 1, 1);

  if (h->rank < 2) {
    deregister_cases(h, pair, 2);
    pair[0] = pair_case(h, 10, BROADCAST, dfcclInt64, dfcclSum, 777, 1);
    pair[1] = pair_case(h, 11, REDUCE, dfcclInt32, dfcclMax, 5000, 0);
    for (int i = 0; i < 2; i++) register_case(h, &pair[i]);
    for (int i = 0; i < 2; i++) wrong += expect_fresh_stats(h, pair[i].id);
  }
  /* The other pair's collectives and the one on all ranks are untouched. */
  wrong += run_and_check(h, pair, 2, 2) + run_and_check(h, all, 1, 2);
  dfcclCollStats_t s;
  CHECK_DFCCL(dfcclGetCollStats(h->ctx, 10, &s));
  uint64_t want_runs = h->rank < 2 ? 1 : 2;
  if (s.runs != want_runs) {
    fprintf(stderr, "rank %d: id 10 shows %llu runs, expected %llu\n", h->rank, (unsigned long long)s.runs,
            (unsigned long long)want_runs);
    wrong++;
  }
  if (h->rank == 0) printf("ids 10 and 11 of pair {0,1} re-registered as other collectives; all checked\n");
  return wrong;
}

static test_case self_case(const harness* h, int id, kind k, dfcclDataType_t dtype, size_t count) {
  static int self;
  self = h->rank;
  return (test_case){.id = id,
                     .kind = k,
                     .dtype = dtype,
                     .op = dfcclSum,
                     .count = count,
                     .root = h->rank,
                     .ranks = &self,
                     .nranks = 1,
                     .position = 0};
}

/* Register, run, check and deregister `cycles` times: more collectives over the context's life than
 * it holds at once (most of them on this rank alone, which needs no exchange and keeps the test
 * fast; one per cycle on the pair, whose connectors come and go).  Even cycles reuse the same ids,
 * odd ones take new ids (the id map deletes and inserts throughout); every tenth cycle adds one on
 * all ranks.  The long-lived collectives stay registered and are run now and then. */
static long cycle(harness* h, int cycles, test_case* pair, test_case* all) {
  enum { SELF = 13, SHARED = SELF + 1 };
  long wrong = 0, registered = 0;
  for (int c = 0; c < cycles; c++) {
    test_case cases[SHARED + 1];
    int base = c % 2 ? 5000 + c * SHARED : 1000;
    for (int k = 0; k < SELF; k++)
      cases[k] = self_case(h, base + k, (kind)((c + k) % NUM_KINDS), k % 2 ? dfcclInt32 : dfcclInt64,
                           1 + (size_t)((c * 37 + k * 101) % 900));
    kind kd = (kind)(c % NUM_KINDS);
    cases[SELF] = pair_case(h, base + SELF, kd, c % 3 ? dfcclInt32 : dfcclInt64, kd == REDUCE ? dfcclMin : dfcclSum,
                            1 + (size_t)((c * 53) % 3000), c % 2);
    int n = SHARED;
    if (c % 10 == 0)
      cases[n++] = all_case(h, 3000 + c, (kind)(c / 10 % NUM_KINDS), dfcclInt32, dfcclSum, 64 + (size_t)c, c % 4);
    for (int i = 0; i < n; i++) register_case(h, &cases[i]);
    registered += n;
    wrong += run_and_check(h, cases, n, (unsigned)c);
    if (c % 50 == 49) wrong += run_and_check(h, pair, 2, (unsigned)c) + run_and_check(h, all, 1, (unsigned)c);
    /* Collectives of different participants leave in separate calls. */
    deregister_cases(h, cases, SELF);
    for (int i = SELF; i < n; i++) deregister_cases(h, &cases[i], 1);
  }
  if (h->rank == 0)
    printf("%d cycles: %ld collectives registered, run, checked and deregistered\n", cycles, registered);
  return wrong;
}

/* Every misuse fails on every participant and deregisters nothing. */
static long misuse(harness* h, test_case* pair, test_case* all) {
  int unknown[] = {20, 99999};
  expect(h, dfcclDeregister(h->ctx, unknown, 2), dfcclUnregisteredId, "a known and an unknown id (all ranks)");
  expect(h, dfcclDeregister(h->ctx, unknown + 1, 1), dfcclUnregisteredId, "only an unknown id");
  int mixed[] = {10, 20};
  expect(h, dfcclDeregister(h->ctx, mixed, 2), dfcclInvalidArgument, "ids with different participants");
  expect(h, dfcclDeregister(h->ctx, NULL, 1), dfcclInvalidArgument, "NULL ids");
  expect(h, dfcclDeregister(h->ctx, NULL, 0), dfcclSuccess, "no ids");
  int twice[] = {10, 10};
  expect(h, dfcclDeregister(h->ctx, twice, 2), dfcclInvalidArgument, "an id listed twice (pairs)");

  /* Lists that differ between the ranks: in order, and in length. */
  test_case extra[2] = {all_case(h, 21, ALL_REDUCE, dfcclInt32, dfcclSum, 99, 0),
                        all_case(h, 22, BROADCAST, dfcclInt32, dfcclSum, 98, 3)};
  for (int i = 0; i < 2; i++) register_case(h, &extra[i]);
  int order[] = {21, 22}, reversed[] = {22, 21};
  expect(h, dfcclDeregister(h->ctx, h->rank == 0 ? order : reversed, 2), dfcclInvalidArgument,
         "rank 0 lists 21, 22; the others 22, 21");
  expect(h, dfcclDeregister(h->ctx, order, h->rank == 3 ? 1 : 2), dfcclInvalidArgument,
         "rank 3 lists one id, the others two");
  long wrong = run_and_check(h, extra, 2, 7);
  expect(h, dfcclDeregister(h->ctx, order, 2), dfcclSuccess, "the same list on every rank");
  expect(h, dfcclRunAllReduce(h->ctx, NULL, NULL, 21, NULL, NULL), dfcclUnregisteredId, "run a deregistered id");

  /* In flight: the pair's first rank submits, its partner not yet, so the run cannot complete. */
  test_case* inflight = &pair[1];
  harness_counter done = {0};
  inflight->seed = 8;
  prepare(h, inflight);
  if (h->rank % 2 == 0) run_case(h, inflight, &done);
  expect(h, dfcclDeregister(h->ctx, &inflight->id, 1), dfcclInFlight, "a run in flight on one rank of the pair");
  if (h->rank % 2 == 1) run_case(h, inflight, &done);
  harness_wait(&done, 1);
  wrong += verify(h, inflight) + atomic_load(&done.errors);

  /* Nothing above deregistered anything. */
  wrong += run_and_check(h, pair, 2, 9) + run_and_check(h, all, 1, 9);
  return wrong;
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_deregister");
  int cycles = 150;
  options o = harness_options(&h, "usage: test_deregister [-c cycles]   (4 ranks)", argc, argv, "c:");
  for (int opt; (opt = options_next(&o)) != -1;)
    if (opt == 'c') cycles = option_int(&o, 1, 1000000);
  if (h.nranks != 4) {
    if (h.rank == 0) fprintf(stderr, "test_deregister: run on 4 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  harness_watchdog_start(60, "deregistration");
  test_case pair[2], all[1];
  long wrong = reuse_ids(&h, pair, all);
  wrong += cycle(&h, cycles, pair, all);
  wrong += misuse(&h, pair, all);
  /* Only the pairs' collectives are left for dfcclDestroy: the two pairs never meet. */
  deregister_cases(&h, all, 1);
  if (h.rank == 0)
    printf("%s\n", wrong + failures ? "WRONG RESULTS OR ERRORS" : "all results exact, every misuse reported");
  return harness_finish(&h, wrong + failures);
}
