/*
 * The task queue of a daemon block and what fills it: the SQEs taken at the start of each round
 * (df_fetch_sqes).
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

/* Leader: a run of an SQE addressed to this block joins its task queue.  Returns 1, or 0 when the
 * block has no channel in the run or the entry is the final exit. */
DF_FN uint32_t df_take_sqe(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, const df_sqe* e) {
  df_block_state* bs = &a->blocks[blk->bid];
  if (e->coll == DF_SQE_EXIT) {
    bs->exited = 1;
    return 0;
  }
  if ((uint32_t)blk->bid >= e->nchannels) return 0; /* no channel here */
  df_context_start_run(a, blk, sh, e);
  df_task_queue_insert(a, sh, (uint16_t)e->coll);
  /* Counters the host may read meanwhile (dfcclGetStats, hang reports), the collective's shared by
   * its blocks: updates that do not wait for the counters' old values (platform.h). */
  df_count(&bs->counters.sqes_read);
  df_count_max_u64(&bs->counters.max_queue_length, sh->ntasks);
  if (blk->bid == 0) DF_RELAXED_STORE(a->coll_counters[e->coll].last_queue_length, sh->ntasks);
  df_count_max_u32(&a->coll_counters[e->coll].max_queue_length, sh->ntasks);
  return 1;
}

/* Leader: takes the SQEs addressed to this block: the others every entry of the mirror, block 0
 * straight from the host's ring as it forwards them.  A lone run reaching an idle block 0 goes to
 * its run at once: no look for the next entry (a bus trip, df_sq_forward) and no handing back of
 * its slot (a system-scope fence) before it -- that comes at the start of the next round, which a
 * host with hundreds of free entries never waits for.  "Idle": no task, and the last round took
 * nothing and ran nothing -- right after a round that completed a run, entries may have piled up,
 * and they are all taken before any runs, so that the task queue orders them by priority.  When
 * runs are already queued (a burst), or the ring is small, block 0 takes every entry there is and
 * hands the slots back at once: the host may be waiting for them, and the next round may come only
 * after the runs' spins.  Returns how many it took. */
DF_FN uint32_t df_fetch_sqes(const df_daemon_args* a, const df_block* blk, df_block_shared* sh) {
  df_block_state* bs = &a->blocks[blk->bid];
  uint32_t taken = 0;
  df_sqe e;
  if (blk->bid == 0) {
    bool lone = sh->ntasks == 0 && sh->idle_round && a->sq_host.mask + 1 >= DF_SQ_LAZY_HAND_BACK;
    df_sq_acknowledge(a->sq_host, &bs->sq_acknowledged, bs->sq_forwarded);
    while (df_sq_forward(a->sq_host, a->sq, &bs->sq_forwarded, &e)) {
      taken += df_take_sqe(a, blk, sh, &e);
      if (lone) break;
    }
    if (!lone) df_sq_acknowledge(a->sq_host, &bs->sq_acknowledged, bs->sq_forwarded);
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

#endif /* DFCCL_KERNEL_TASK_QUEUE_H */
