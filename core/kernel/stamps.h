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
  /* When block 0 began the look at the host's SQ that found the run's entry, and the look before it
   * (which found nothing, or the run before): apart from the points above, since they come before
   * the run is seen.  From them the report bounds when the entry became visible to the GPU. */
  uint64_t looked, looked_before;
} df_stamp_record;

/* Block 0's leader: the run it stamps now -- the one whose SQE it saw last -- and the points it has
 * stamped (the first time a run reaches a point counts).  In the block's shared memory, so that a
 * stamp costs its stores and no load of global memory.  Runs queued behind it go unstamped. */
typedef struct {
  uint32_t coll, epoch;
  uint32_t done;                 /* bit p: point p stamped */
  uint64_t look_ns, look_before; /* block 0's last two looks at the host's SQ (an idle round's, a
                                  * round start's; not a wait's) began then */
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
    r->looked = s->look_ns;
    r->looked_before = s->look_before;
  } else if (s->coll != coll || s->epoch != epoch || (s->done & (1u << point))) {
    return;
  }
  s->done |= 1u << point;
  r->t[point] = df_time_ns();
}
/* Leader of block 0: run (coll, epoch) reached `point`. */
#define DF_STAMP(a, blk, sh, coll, epoch, point)                                                   \
  do {                                                                                             \
    if (df_bid(blk) == 0) df_stamp((a)->stamps, &(sh)->stamp, (coll), (epoch), (unsigned)(point)); \
  } while (0)
/* The same, for a run known by its collective only: the stamped run, if it is that collective's. */
#define DF_STAMP_COLL(a, blk, sh, coll, point) DF_STAMP(a, blk, sh, coll, (sh)->stamp.epoch, point)
/* Leader of block 0: a look at the host's SQ begins (the entry's read, one trip over the bus). */
#define DF_STAMP_LOOK(blk, sh)                       \
  do {                                               \
    if (df_bid(blk) == 0) {                          \
      (sh)->stamp.look_before = (sh)->stamp.look_ns; \
      (sh)->stamp.look_ns = df_time_ns();            \
    }                                                \
  } while (0)
#else
#define DF_STAMP(a, blk, sh, coll, epoch, point) ((void)0)
#define DF_STAMP_COLL(a, blk, sh, coll, point) ((void)0)
#define DF_STAMP_LOOK(blk, sh) ((void)(sh)) /* df_idle_look's sh is there for it alone */
#endif

/* ---- the event trace (the same build; on when DFCCL_TRACE_FILE names where to write it) ----
 * The stamps follow one run at a time; a burst of runs in disorder (the random-order program) needs
 * every run's story: block 0's leader appends an event at each of the points below, for every run,
 * to a ring of DF_TRACE_EVENTS in daemon memory (the oldest overwritten), and the context's
 * destruction writes it to DFCCL_TRACE_FILE.RANK, one line an event (core/stamps.c);
 * benchmarks/trace_report.py reads the ranks' files.  Block 0 is the one block of every
 * one-channel run: the trace covers those whole. */
typedef enum {
  DF_EVENT_ROUND,     /* a traversal of a queue of tasks begins: arg = its tasks, arg2 = SQEs fetched */
  DF_EVENT_TAKEN,     /* the run joined the task queue: arg = the queue's length              */
  DF_EVENT_RUN,       /* the traversal came to the run: arg = its queue position, arg2 = the threshold */
  DF_EVENT_GATE_SHUT, /* its gate did not open within the gate's polls                        */
  DF_EVENT_GATE,      /* its gate let it through                                              */
  DF_EVENT_SENT,      /* a slot posted to the successor: arg = slots sent by the run's links   */
  DF_EVENT_RECEIVED,  /* a slot from the predecessor seen: arg = its step                       */
  DF_EVENT_LEAVE,     /* a wait left for another run: arg = its collective (0xffff: the SQ), arg2 =
                       * polls, bit 63 set when it sent ahead (df_other_run_ready)             */
  DF_EVENT_GIVE_UP,   /* a wait reached its threshold: arg2 = polls                             */
  DF_EVENT_EXECUTED,  /* its algorithm done on this block                                       */
  DF_EVENT_CQE,       /* its CQE written                                                        */
  DF_EVENTS
} df_event;

#define DF_TRACE_EVENTS (1u << 18)
#define DF_TRACE_SQ 0xffffu         /* DF_EVENT_LEAVE's arg: left for entries of the SQ          */
#define DF_TRACE_AHEAD (1ull << 63) /* DF_EVENT_LEAVE's arg2: sent ahead                       */

typedef struct {
  uint64_t t; /* df_time_ns */
  uint32_t event, coll, epoch, arg;
  uint64_t arg2;
} df_trace_event;

#ifdef DF_STAMPS
/* Leader of block 0.  The count is block 0's alone: a plain increment. */
DF_FN void df_trace(df_trace_event* trace, uint64_t* count, uint32_t event, uint32_t coll, uint32_t epoch, uint32_t arg,
                    uint64_t arg2) {
  if (trace == NULL) return; /* DFCCL_TRACE_FILE unset */
  df_trace_event* e = &trace[(*count)++ % DF_TRACE_EVENTS];
  e->t = df_time_ns();
  e->event = event;
  e->coll = coll;
  e->epoch = epoch;
  e->arg = arg;
  e->arg2 = arg2;
}
#define DF_TRACE(a, blk, event, coll, epoch, arg, arg2)                                                     \
  do {                                                                                                      \
    if (df_bid(blk) == 0)                                                                                   \
      df_trace((a)->trace, (a)->trace_count, (event), (uint32_t)(coll), (uint32_t)(epoch), (uint32_t)(arg), \
               (uint64_t)(arg2));                                                                           \
  } while (0)
#else
#define DF_TRACE(a, blk, event, coll, epoch, arg, arg2) ((void)0)
#endif

#endif /* DFCCL_KERNEL_STAMPS_H */
