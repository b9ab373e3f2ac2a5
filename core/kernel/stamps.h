/*
 * Per-run time stamps, a diagnostic build (./configure --enable-stamps, which defines DF_STAMPS):
 * where the microseconds of a small run go.  Daemon block 0 stamps every run it takes at the
 * points below, the first time the run reaches each; the host stamps the same runs at its own
 * points (core/stamps.c), and the context's destruction prints the median time between them.
 * Without the option every stamp compiles to nothing and df_daemon_args has no table.
 *
 * A run's record is found by (collective, epoch) in a table of DF_STAMP_RUNS records.  Block 0 is
 * the one block of every one-channel run -- every small one -- so its stamps cover those runs
 * whole; it stamps one run at a time (df_stamp_state): a diagnostic for runs one after the other,
 * as the latency benchmarks submit them, not a log of bursts.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_STAMPS_H
#define DFCCL_KERNEL_STAMPS_H

#include "../platform/platform.h"

typedef enum {
  DF_STAMP_SEEN,     /* block 0 read the run's SQE from host memory                               */
  DF_STAMP_TAKEN,    /* the run joined the task queue                                             */
  DF_STAMP_FETCHED,  /* the fetch of SQEs that took it returned                                   */
  DF_STAMP_ROUND,    /* the round's traversal of the task queue began (the fetch done)             */
  DF_STAMP_RUN,      /* the traversal came to the run (df_run_task)                                */
  DF_STAMP_CONTEXT,  /* its context acquired                                                       */
  DF_STAMP_GATE,     /* its gate let it through (gated runs: ordered after the caller's streams) */
  DF_STAMP_SENT,     /* its first slot posted to the successor                                    */
  DF_STAMP_RECEIVED, /* its first slot from the predecessor seen                                  */
  DF_STAMP_EXECUTED, /* its algorithm done on this block                                          */
  DF_STAMP_COMPLETE, /* its completion's fences done, the CQE next                                 */
  DF_STAMP_CQE,      /* its CQE written                                                            */
  DF_STAMP_DAEMON_POINTS
} df_stamp_point;

#define DF_STAMP_RUNS 4096

typedef struct {
  uint64_t key; /* df_stamp_key of the run stamped here; 0: none */
  uint64_t t[DF_STAMP_DAEMON_POINTS];
} df_stamp_record;

/* Block 0's leader: the run it stamps now -- the one whose SQE it saw last -- and the points it has
 * stamped (the first time a run reaches a point counts).  In the block's shared memory, so that a
 * stamp costs its stores and no load of global memory.  Runs queued behind it go unstamped. */
typedef struct {
  uint32_t coll, epoch;
  uint32_t done; /* bit p: point p stamped */
} df_stamp_state;

DF_FN uint32_t df_stamp_slot(uint32_t coll, uint32_t epoch) { return (coll * 7919u + epoch) % DF_STAMP_RUNS; }
DF_FN uint64_t df_stamp_key(uint32_t coll, uint32_t epoch) { return (((uint64_t)coll << 32) | epoch) + 1; }

#ifdef DF_STAMPS
DF_FN void df_stamp(df_stamp_record* records, df_stamp_state* s, uint32_t coll, uint32_t epoch, unsigned point) {
  if (records == NULL) return; /* unit tests that build their own daemon arguments */
  df_stamp_record* r = &records[df_stamp_slot(coll, epoch)];
  if (point == DF_STAMP_SEEN) {
    s->coll = coll;
    s->epoch = epoch;
    s->done = 0;
    r->key = df_stamp_key(coll, epoch);
    for (unsigned p = 1; p < DF_STAMP_DAEMON_POINTS; p++) r->t[p] = 0;
  } else if (s->coll != coll || s->epoch != epoch || (s->done & (1u << point))) {
    return;
  }
  s->done |= 1u << point;
  r->t[point] = df_time_ns();
}
/* Leader of block 0: run (coll, epoch) reached `point`. */
#define DF_STAMP(a, blk, sh, coll, epoch, point)                                                  \
  do {                                                                                            \
    if ((blk)->bid == 0) df_stamp((a)->stamps, &(sh)->stamp, (coll), (epoch), (unsigned)(point)); \
  } while (0)
/* The same, for a run known by its collective only: the stamped run, if it is that collective's. */
#define DF_STAMP_COLL(a, blk, sh, coll, point) DF_STAMP(a, blk, sh, coll, (sh)->stamp.epoch, point)
#else
#define DF_STAMP(a, blk, sh, coll, epoch, point) ((void)0)
#define DF_STAMP_COLL(a, blk, sh, coll, point) ((void)0)
#endif

#endif /* DFCCL_KERNEL_STAMPS_H */
