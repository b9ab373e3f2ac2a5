/*
 * Priority ordering: a high-priority collective overtakes queued ones.
 *
 * Rank 0 submits a gate collective G (highest priority) and, while its daemon waits in G for the
 * late rank 1, four low-priority all-reduces L1..L4 and then a high-priority H.  They queue behind
 * G.  Rank 1 does the same behind a gate of its own, G1, which rank 0 joins only once rank 1 has
 * submitted G, L1..L4 and H: so neither daemon can start an L before it has H (a daemon may take
 * each submission as it comes, and an L whose peer's slot is waiting would complete at once).
 * With priorities, H runs right after G and completes before every L on both ranks; with -f (all
 * priorities equal: FIFO) it does not.
 *
 *   mpirun -np 2 test_priority [-f]
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

enum { GATE = 0, LOW = 1, NLOW = 4, HIGH = LOW + NLOW, GATE1, NCOLLS };

static atomic_int sequence;
static int finished_at[NCOLLS];
static harness_counter done;

static void on_complete(int collId, dfcclResult_t status, void* arg) {
  (void)arg;
  finished_at[collId] = atomic_fetch_add(&sequence, 1);
  harness_on_complete(collId, status, &done);
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_priority");
  bool fifo = false;
  options o = harness_options(&h, "usage: test_priority [-f]", argc, argv, "f");
  for (int opt; (opt = options_next(&o)) != -1;)
    if (opt == 'f') fifo = true;
  if (h.nranks != 2) {
    if (h.rank == 0) fprintf(stderr, "test_priority runs on exactly 2 ranks, not %d\n", h.nranks);
    return harness_finish(&h, 1);
  }
  harness_watchdog_start(60, "priority ordering");
  const size_t count = 4096;
  void* buf[NCOLLS];
  for (int c = 0; c < NCOLLS; c++) {
    int priority = fifo ? 0 : c == GATE || c == GATE1 ? 100 : c == HIGH ? 10 : 0;
    CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, count, dfcclFloat32, dfcclSum, c, NULL, 0, priority));
    buf[c] = harness_alloc(&h, count * sizeof(float));
  }
  /* Each rank in turn: its gate, then (its daemon waiting in the gate) G unless that was the gate,
   * the Ls and H.  The other rank waits at the barriers meanwhile. */
  for (int turn = 0; turn < 2; turn++) {
    if (h.rank == turn) {
      int gate = turn == 0 ? GATE : GATE1;
      CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf[gate], buf[gate], gate, on_complete, NULL));
      nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000}, NULL); /* the daemon is waiting in its gate */
      for (int c = turn == 0 ? LOW : GATE; c <= HIGH; c++)
        CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf[c], buf[c], c, on_complete, NULL));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (h.rank == 0) CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf[GATE1], buf[GATE1], GATE1, on_complete, NULL));
  harness_wait(&done, NCOLLS);

  int overtaken = 0; /* low-priority collectives that completed after H */
  for (int c = LOW; c < HIGH; c++) overtaken += finished_at[c] > finished_at[HIGH];
  printf("rank %d: completion order G %d, L1..L4 %d %d %d %d, H %d: H overtook %d of %d queued collectives\n", h.rank,
         finished_at[GATE], finished_at[1], finished_at[2], finished_at[3], finished_at[4], finished_at[HIGH],
         overtaken, NLOW);
  fflush(stdout);
  bool expected = fifo ? overtaken < NLOW : overtaken == NLOW;
  if (!expected)
    fprintf(stderr, "rank %d: %s ordering expected H to overtake %d, it overtook %d\n", h.rank,
            fifo ? "FIFO" : "priority", fifo ? 0 : NLOW, overtaken);
  for (int c = 0; c < NCOLLS; c++) harness_free(&h, buf[c]);
  return harness_finish(&h, expected ? 0 : 1);
}
