/*
 * Per-run time stamps, a diagnostic build (./configure --enable-stamps, which defines DF_STAMPS):
 * where the microseconds of a small run go.  Daemon block 0 stamps every run it takes at the
 * points below, the first time the run reaches each; the host stamps the same runs at its own
 * points (core/stamps.c), and the context's destruction prints the median time between them.
 * Without the option every stamp compiles to nothing and df_daemon_args has no table.
 *
 * A run is found by (collective, epoch) in a table of DF_STAMP_RUNS records; a record that another
 * run has taken over is simply not stamped (a diagnostic, not a log).  Block 0 is the one block of
 * every one-channel run -- every small one -- so its stamps cover those runs whole.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_STAMPS_H
#define DFCCL_KERNEL_STAMPS_H

#include "../platform/platform.h"

typedef enum {
  DF_STAMP_SEEN,     /* block 0 read the run's SQE from host memory                 */
  DF_STAMP_TAKEN,    /* the run joined the task queue                               */
  DF_STAMP_CONTEXT,  /* its context was acquired (first time)                       */
  DF_STAMP_GATE,     /* its gate let it through (one-channel runs ordered after the caller's streams) */
  DF_STAMP_SENT,     /* its first slot posted to the successor                      */
  DF_STAMP_RECEIVED, /* its first slot from the predecessor seen                    */
  DF_STAMP_EXECUTED, /* its algorithm done on this block                            */
  DF_STAMP_CQE,      /* its CQE written                                             */
  DF_STAMP_DAEMON_POINTS
} df_stamp_point;

#define DF_STAMP_RUNS 4096

typedef struct {
  uint64_t key; /* df_stamp_key of the run stamped here; 0: none */
  uint64_t t[DF_STAMP_DAEMON_POINTS];
} df_stamp_record;

DF_FN uint32_t df_stamp_slot(uint32_t coll, uint32_t epoch) { return (coll * 7919u + epoch) % DF_STAMP_RUNS; }
DF_FN uint64_t df_stamp_key(uint32_t coll, uint32_t epoch) { return (((uint64_t)coll << 32) | epoch) + 1; }

#ifdef DF_STAMPS
/* Leader of block 0: the run reached `point` (the first time counts; SEEN starts the record). */
DF_FN void df_stamp(df_stamp_record* records, uint32_t coll, uint32_t epoch, unsigned point) {
  if (records == NULL) return; /* unit tests that build their own daemon arguments */
  df_stamp_record* r = &records[df_stamp_slot(coll, epoch)];
  uint64_t key = df_stamp_key(coll, epoch);
  if (point == DF_STAMP_SEEN) {
    r->key = key;
    for (unsigned p = 1; p < DF_STAMP_DAEMON_POINTS; p++) r->t[p] = 0;
  } else if (r->key != key || r->t[point] != 0) {
    return;
  }
  r->t[point] = df_time_ns();
}
#define DF_STAMP(a, blk, coll, epoch, point)                                         \
  do {                                                                               \
    if ((blk)->bid == 0) df_stamp((a)->stamps, (coll), (epoch), (unsigned)(point)); \
  } while (0)
#else
#define DF_STAMP(a, blk, coll, epoch, point) ((void)0)
#endif

#endif /* DFCCL_KERNEL_STAMPS_H */
