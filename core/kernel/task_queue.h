/*
 * The task queue of a daemon block and what fills it: SQEs taken at the start of a round
 * (df_fetch_sqes) and, in a wait, those that join the queue at its end (df_take_in_wait).
 *
 * The queue (df_block_shared.tasks) holds collective indices in scheduling order: priority, then
 * arrival (or ids, DFCCL_QUEUE_ORDER=id).  A traversal (kernel/scheduler.h) marks the runs it
 * completes DF_NO_TASK and drops them once it is over (df_task_queue_compact).  The leader thread
 * alone reads and writes it.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_TASK_QUEUE_H
#define DFCCL_KERNEL_TASK_QUEUE_H

#include "context.h"

/* Whether queued collective `x` goes before `coll` (of priority `prio`, order `order`). */
DF_FN bool df_goes_before(const df_daemon_args* a, uint16_t x, int32_t prio, uint32_t order) {
  int32_t p = df_static_priority(a, x);
  return p > prio || (p == prio && (!a->spin.queue_by_id || df_static_order(a, x) <= order));
}

/* Inserts a collective behind every queued one that goes first: of higher priority, or of equal
 * priority and arrived before it (the paper's queue) -- or, with DFCCL_QUEUE_ORDER=id, not later
 * in the order all participants agree on (df_coll_static.order: ids); FIFO among equals.  By id,
 * ranks that queued the same runs in different orders (the random-order program) traverse them
 * alike; but a rank ahead of its peers then starts with the lowest id it has, which a late peer
 * that submits in descending ids (a training step's backward pass: the case study) has not
 * queued yet -- by arrival both start with what came first (docs/design.md, measurements). */
DF_FN void df_task_queue_insert(const df_daemon_args* a, df_block_shared* sh, uint16_t coll) {
  int32_t prio = df_static_priority(a, coll);
  uint32_t order = a->spin.queue_by_id ? df_static_order(a, coll) : 0;
  uint32_t i = sh->ntasks;
  while (i > 0 && !df_goes_before(a, sh->tasks[i - 1], prio, order)) {
    sh->tasks[i] = sh->tasks[i - 1];
    i--;
  }
  sh->tasks[i] = coll;
  sh->ntasks++;
}

/* Leader: what an SQE is to this block.  True for a run with a channel here, which starts from the
 * beginning (df_context_start_run) and is for the caller to queue; false for a run of other blocks
 * only, or for the final exit, which the block notes. */
DF_FN bool df_sqe_starts_run(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, const df_sqe* e) {
  if (e->coll == DF_SQE_EXIT) {
    a->blocks[df_bid(blk)].exited = 1;
    return false;
  }
  if ((uint32_t)df_bid(blk) >= e->nchannels) return false; /* no channel here */
  DF_STAMP(a, blk, sh, e->coll, e->epoch, DF_STAMP_SEEN);
  df_context_start_run(a, blk, sh, e);
  return true;
}

/* Leader: counts run `coll` taken into a task queue now `length` runs long.  Counters the host may
 * read meanwhile (dfcclGetStats, hang reports), the collective's shared by its blocks: updates that
 * do not wait for the counters' old values (platform.h). */
DF_FN void df_count_taken(const df_daemon_args* a, const df_block* blk, uint32_t coll, uint32_t length) {
  df_block_state* bs = &a->blocks[df_bid(blk)];
  df_count(&bs->counters.sqes_read);
  df_count_max_u64(&bs->counters.max_queue_length, length);
  if (df_bid(blk) == 0) DF_RELAXED_STORE(a->coll_counters[coll].last_queue_length, length);
  df_count_max_u32(&a->coll_counters[coll].max_queue_length, length);
}

/* Leader, between traversals: a run of an SQE addressed to this block joins its task queue.
 * Returns 1, or 0 when the block has no channel in the run or the entry is the final exit. */
DF_FN uint32_t df_take_sqe(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, const df_sqe* e) {
  if (!df_sqe_starts_run(a, blk, sh, e)) return 0;
  df_task_queue_insert(a, sh, (uint16_t)e->coll);
  df_count_taken(a, blk, e->coll, sh->ntasks);
  DF_STAMP(a, blk, sh, e->coll, e->epoch, DF_STAMP_TAKEN);
  DF_TRACE(a, blk, DF_EVENT_TAKEN, e->coll, e->epoch, sh->ntasks, 0);
  return 1;
}

/* How long an idle block's leader looks at its SQ, back to back, before it goes through a round's
 * bookkeeping (the quit vote, the host's relaunch request, the yield requests).  On the host target
 * the looks pause as every spin does (df_spin_pause): idle rounds used to go round without ever
 * pausing, and two ranks' daemon threads spinning on a 2-core machine made each small all-reduce
 * between calls wait milliseconds for the scheduler (~8 ms, against ~10 us with the looks;
 * docs/performance.md, thirtieth session).  On the GPU one look a round, as before: looks back to
 * back for 10 us made a lone small run no faster (one H100, one rank, two rounds alternated: 8 B
 * 13.8-14.6 us against 13.7), where one look a round measured as the tree before it (13.2-13.7
 * against 13.2-13.5).  What the bookkeeping decides can wait 10 us: the quit period is milliseconds,
 * a relaunch the host asked for is rare.  A block that has seen time-sliced peers looks once a
 * round on either target: it yields the GPU DFCCL_TIMESLICE_IDLE_US after its queue ran dry. */
#if DF_CUDA
#define DF_IDLE_LOOK_NS 0ull
#else
#define DF_IDLE_LOOK_NS 10000ull
#endif

/* Leader of an idle block (no task, and its last round did nothing): looks at the next entry of its
 * SQ -- block 0 at the host's ring, the others at the mirror -- until it is written (true) or
 * DF_IDLE_LOOK_NS has passed (false).  Block 0's look reads the whole entry (df_sq_lines_read):
 * then *read holds it and *next_written the look for the one after. */
DF_FN bool df_idle_look(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, df_sqe* read,
                        bool* next_written) {
  const df_block_state* bs = &a->blocks[df_bid(blk)];
  bool host = df_bid(blk) == 0;
  uint64_t next = host ? bs->sq_forwarded : bs->sq_frontier;             /* read once: a look is one trip */
  uint64_t until = DF_IDLE_LOOK_NS ? df_time_ns() + DF_IDLE_LOOK_NS : 0; /* the GPU reads no timer */
  for (uint64_t i = 0;; i++) {
    DF_STAMP_LOOK(blk, sh);
    if (host ? df_sq_lines_read(a->sq_host, next, read, next_written) : df_sq_written(a->sq, next)) return true;
    if (DF_IDLE_LOOK_NS == 0 || df_time_ns() >= until) return false;
    df_spin_pause(i);
  }
}

/* Leader: takes the SQEs addressed to this block: the others every entry of the mirror, block 0
 * straight from the host's ring as it forwards them.  A lone run reaching an idle block 0 goes to
 * its run at once: no look for the next entry (a bus trip) and no handing back of its slot (a
 * system-scope fence) before it -- that comes at the start of the next round, which a host with
 * hundreds of free entries never waits for.  "Idle": no task, and the last round took nothing and
 * ran nothing -- right after a round that completed a run, entries may have piled up, and they are
 * all taken before any runs, so that the task queue orders them by priority.  When runs are
 * already queued (a burst), or the ring is small, block 0 takes every entry there is and hands the
 * slots back at once: the host may be waiting for them, and the next round may come only after the
 * runs' spins -- unless the ring holds twice the runs that can be in flight (one per collective:
 * DF_MAX_COLLS), as the default one does: block 0 then hands slots back once a quarter of the ring
 * is out (and when it quits), so that fewer than a quarter plus the runs in flight are ever held
 * and the host never waits for a slot.  The hand-back's fence cost a small run 2 us on an H100
 * wherever it came: at once when its SQE came in the round right after a completion (how a
 * program's next call usually comes), at the next round's start before the next SQE was seen.  An
 * idle block first looks until an entry comes or DF_IDLE_LOOK_NS has passed (df_idle_look); each
 * entry block 0 reads tells whether the next one is written (df_sq_lines_read), and it stops at a
 * "no" without a trip to find nothing.  Returns how many it took. */
DF_FN uint32_t df_fetch_sqes(const df_daemon_args* a, const df_block* blk, df_block_shared* sh) {
  df_block_state* bs = &a->blocks[df_bid(blk)];
  uint32_t taken = 0;
  df_sqe e;
  bool idle = sh->ntasks == 0 && sh->idle_round;
  bool read = false, more = true; /* block 0: e holds the next entry (the idle look read it) */
  if (idle && !sh->timesliced_seen) {
    if (!df_idle_look(a, blk, sh, &e, &more)) return 0;
    read = df_bid(blk) == 0;
  }
  if (df_bid(blk) == 0) {
    uint64_t ring = (uint64_t)a->sq_host.mask + 1;
    bool roomy = ring >= 2u * DF_MAX_COLLS;
    bool lone = idle && ring >= DF_SQ_LAZY_HAND_BACK;
    if (!roomy || bs->sq_forwarded - bs->sq_acknowledged >= ring / 4)
      df_sq_acknowledge(a->sq_host, &bs->sq_acknowledged, bs->sq_forwarded);
    for (;; read = false) {
      if (!read) {
        if (!more) break;
        DF_STAMP_LOOK(blk, sh);
        if (!df_sq_lines_read(a->sq_host, bs->sq_forwarded, &e, &more)) break;
      }
      if (!df_sq_forward(a->sq, &bs->sq_forwarded, &e)) break;
      taken += df_take_sqe(a, blk, sh, &e);
      if (lone) break;
    }
    if (!lone && (!roomy || bs->sq_forwarded - bs->sq_acknowledged >= ring / 4))
      df_sq_acknowledge(a->sq_host, &bs->sq_acknowledged, bs->sq_forwarded);
    bs->sq_frontier = bs->sq_forwarded;
  } else {
    while (df_sq_read(a->sq, &bs->sq_frontier, &e)) taken += df_take_sqe(a, blk, sh, &e);
  }
  return taken;
}

/* Leader: drops completed tasks (DF_NO_TASK) keeping the order. */
DF_FN void df_task_queue_compact(df_block_shared* sh) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < sh->ntasks; i++)
    if (sh->tasks[i] != DF_NO_TASK) sh->tasks[kept++] = sh->tasks[i];
  sh->ntasks = kept;
}

/* Leader: the runs in the task queue, passing over those completed in this traversal (DF_NO_TASK). */
DF_FN uint32_t df_task_queue_length(const df_block_shared* sh) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < sh->ntasks; i++) n += sh->tasks[i] != DF_NO_TASK;
  return n;
}

/* Leader, in a wait: whether the entry of collective `coll` for `nchannels` blocks can be taken now
 * without moving a queued run.  The final exit and a run without a channel here join nothing.  A
 * run joins at the queue's end when the last run still queued goes before it (df_goes_before): the
 * queue is in that order, so every queued run does -- df_task_queue_insert would append it too --
 * and when a position is left behind the traversal's completed ones. */
DF_FN bool df_goes_last(const df_daemon_args* a, const df_block* blk, const df_block_shared* sh, uint32_t coll,
                        uint32_t nchannels) {
  if (coll == DF_SQE_EXIT || (uint32_t)df_bid(blk) >= nchannels) return true;
  if (sh->ntasks >= DF_MAX_COLLS) return false;
  uint32_t i = sh->ntasks;
  while (i > 0 && sh->tasks[i - 1] == DF_NO_TASK) i--;
  if (i == 0) return true;
  uint32_t order = a->spin.queue_by_id ? df_static_order(a, coll) : 0;
  return df_goes_before(a, sh->tasks[i - 1], df_static_priority(a, coll), order);
}

/* Leader, at a wait's look at the SQ (df_other_run_ready, with DFCCL_TAKE_IN_WAIT=1 or 2): takes the
 * SQEs this block has not taken into the task queue as df_fetch_sqes would at the next round --
 * block 0 from the host's ring, forwarding each to the mirror, the others from the mirror -- without
 * the run leaving, so that the wait's looks find a taken run whose peer is on it (the random-order
 * program: a burst's first run starts alone on each rank, and the run the peer is on waits in the
 * SQ).  It used to leave to let the next round take them: a preemption a burst, even in a fixed
 * order (docs/design.md).
 *
 * Only at the queue's end (df_goes_last): the traversal running this wait holds positions into the
 * queue -- the running one (sh->position), its next one, a run a wait left for (sh->ready), and
 * its length -- and an insert in the middle would shift the runs under them, running one twice and
 * another not at all, or a completed position's DF_NO_TASK onto a live run.  Appended runs change
 * no position: df_other_run_ready's looks cover them (sh->ntasks), df_next_position jumps to them,
 * and the next traversal runs them in order.  Under the arrival order every run of equal or lower
 * priority than those queued goes last -- a burst of equal priorities always does; under
 * DFCCL_QUEUE_ORDER=id, of no lower id than the last one queued too.  The first entry that would go earlier, or whose
 * mirror slot a block still reads, stops the intake (entries are taken in ring order), and the wait
 * leaves for the next round's fetch to take it, as it did before.  Block 0 hands the slots it
 * forwarded back at once (with a lone run's, if still held: df_fetch_sqes): the host may be waiting
 * for them while this wait lasts; a look that finds nothing costs no fence, and one trip (block 0's
 * read of the entry's lines) or one load of the mirror.  Taken runs count as the round's activity
 * (sh->sqe_fetched: the block does not offer to quit).  Returns whether an entry is left that it
 * could not take.  Inlined: as a call (DF_NOINLINE) it made the daemon kernel spill 276
 * bytes of registers where it spills 188 inlined, as without it (ptxas, sm_90); inlined, the
 * kernel's object file grows 15 % (as a call, 2 %). */
DF_FN bool df_take_in_wait(const df_daemon_args* a, const df_block* blk, df_block_shared* sh) {
  df_block_state* bs = &a->blocks[df_bid(blk)];
  bool from_host = df_bid(blk) == 0; /* block 0 reads the host's ring, the others the mirror */
  uint64_t* seq = from_host ? &bs->sq_forwarded : &bs->sq_frontier;
  uint64_t first = *seq;
  uint32_t length = 0, taken = 0, coll = 0, nchannels = 0;
  bool left = false;
  df_sqe e;
  /* Block 0 reads a host entry whole, in one trip over the bus (three when a peek of its seq came
   * first, four with a forward of its own: 8 us an entry on 2 x H200, the event trace). */
  while (from_host ? df_sq_lines_read(a->sq_host, *seq, &e, NULL) : df_sq_peek(a->sq, *seq, &coll, &nchannels)) {
    if (from_host) {
      coll = e.coll;
      nchannels = e.nchannels;
    }
    if (!df_goes_last(a, blk, sh, coll, nchannels) ||
        !(from_host ? df_sq_forward(a->sq, seq, &e) : df_sq_read(a->sq, seq, &e))) {
      left = true;
      break;
    }
    if (!df_sqe_starts_run(a, blk, sh, &e)) continue;
    if (taken == 0) length = df_task_queue_length(sh);
    sh->tasks[sh->ntasks++] = (uint16_t)e.coll;
    df_count_taken(a, blk, e.coll, ++length);
    DF_STAMP(a, blk, sh, e.coll, e.epoch, DF_STAMP_TAKEN);
    DF_TRACE(a, blk, DF_EVENT_TAKEN, e.coll, e.epoch, length, 1); /* arg2 1: taken in a wait */
    taken++;
  }
  if (from_host && *seq != first) {
    df_sq_acknowledge(a->sq_host, &bs->sq_acknowledged, bs->sq_forwarded);
    bs->sq_frontier = bs->sq_forwarded;
  }
  sh->sqe_fetched += taken;
  return left;
}

#endif /* DFCCL_KERNEL_TASK_QUEUE_H */
