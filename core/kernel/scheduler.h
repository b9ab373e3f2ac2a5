/*
 * The daemon block's main loop: the paper's Algorithm 1.
 *
 *   while not finally exiting:
 *     fetch SQEs into the task queue (kept in priority order, FIFO among equals)
 *     for each collective in the task queue:
 *       load its context (set its initial spin threshold by its queue position)
 *       execute its primitives; each success raises the threshold, a timed-out wait preempts it
 *         (a wait also takes SQEs that join the task queue at its end: task_queue.h)
 *       completed: write the CQE (the block finishing last does)
 *     nothing progressed for the quit period: save every context and quit voluntarily
 *
 * The leader thread (the only thread on the host target) keeps the queue and the contexts; all
 * threads of the block execute the primitives.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_SCHEDULER_H
#define DFCCL_KERNEL_SCHEDULER_H

#include "collectives.h"
#include "context.h"
#include "task_queue.h"

enum { DF_CONTINUE = 0, DF_VOLUNTARY_QUIT = 1, DF_FINAL_EXIT = 2 };

/* The initial spin threshold of the collective at queue position `position`. */
DF_FN uint64_t df_initial_threshold(const df_spin_policy* p, uint32_t position) {
  uint32_t shift = position * p->decay_shift;
  uint64_t t = shift >= 64 ? 0 : p->front >> shift;
  return t < p->floor ? p->floor : t;
}

/* Leader, for the block that ends a failed run: every channel's connectors revoked (DF_REVOKED_BIT).
 * Each channel's block of this rank is done with the run, so none of them writes these words any
 * more, and nothing runs on them again (the host refuses new runs of a failed collective). */
DF_FN void df_revoke_links(const df_links* l, uint32_t reason) {
  for (uint32_t c = 0; c < l->nchannels; c++) { /* none: one participant */
    df_store_release_u64(&l->to_next[c].recv_ctrl->tail, DF_REVOKED(reason));
    df_store_release_u64(&l->from_prev[c].send_ctrl->head, DF_REVOKED(reason));
  }
}

/* Leader: the block's part of a run is over -- complete, or failed (`error`, df_run_error).  The
 * last block to finish writes the CQE, with the run's error if any block had one.  `credit`: the
 * run's last slots are consumed but not credited yet (df_consume_last) -- the head goes out behind
 * the block's system-scope fence and before the CQE, after which the host may free the links
 * (ThreadSanitizer saw a credit after the CQE race with the links' free). */
DF_FN void df_complete_run(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, df_context_slot* slot,
                           uint32_t error, bool credit) {
  uint32_t coll = (uint32_t)slot->coll;
  uint32_t epoch = slot->dyn.epoch;
  uint32_t nchannels = slot->stat.nchannels;
  const df_links* links = &slot->stat.links;
  (void)sh; /* the stamps' (stamps.h) */
  /* What the stores below need is read before the fences: a load after one (which invalidates L1)
   * would be a trip to L2 between the fence and the CQE. */
  df_credit k = {NULL, 0};
  if (credit) k = df_credit_of(links, df_bid(blk));
  df_block_state* bs = &a->blocks[df_bid(blk)];
  uint64_t cq_tail = bs->cq_tail, cq_head_seen = bs->cq_head_seen;
  df_context_finish_run(a, blk, slot);
  /* A run of one channel -- every small one -- has no other block to count with or to tell of its
   * error: it goes straight to its CQE, whose fence covers its results (two system-scope fences
   * and an atomic fewer on the critical path of every small collective). */
  if (nchannels > 1) {
    /* The other blocks of a failed run stop at their next wait (df_wait_ready reads this). */
    if (error != DF_RUN_OK) df_store_release_u32(&a->run_errors[coll], error);
    /* This block's results (written by all its threads, ordered by the barrier before us) are
     * visible before it counts itself done, so that the CQE covers every block's part. */
    df_fence_system();
    if (credit) df_credit_send(k);
    if (df_atomic_add_u32(&a->done_blocks[coll], 1) + 1 < nchannels) return;
    /* Every block's error word, stored before its count, is seen below: the blocks are all on this
     * device, so a device-scope fence does (a system-scope one waits for this block's stores to
     * peers and host memory to land, on every small collective's critical path). */
    df_fence_device();
    error = df_load_acquire_u32(&a->run_errors[coll]);
    if (error != DF_RUN_OK) a->run_errors[coll] = DF_RUN_OK;
    a->done_blocks[coll] = 0; /* ready for the next run, which the CQE allows the host to submit */
  }
  if (error != DF_RUN_OK) df_revoke_links(links, error);
  /* Every thread's results (the barrier before us) and the links' revocation before the CQE. */
  df_fence_system();
  if (credit && nchannels == 1) df_credit_send(k);
  DF_STAMP(a, blk, sh, coll, epoch, DF_STAMP_COMPLETE);
  uint64_t cqe = df_cqe_pack(coll, epoch, error);
  for (uint64_t i = 0; !df_cq_try_write(a->cq, (uint32_t)df_bid(blk), &cq_tail, &cq_head_seen, cqe); i++) {
    if (i == 0) df_count(&bs->counters.cq_full_waits);
    df_spin_pause(i); /* the host's poller is behind: it takes entries whenever runs are out */
  }
  bs->cq_tail = cq_tail;
  bs->cq_head_seen = cq_head_seen;
  DF_STAMP(a, blk, sh, coll, epoch, DF_STAMP_CQE);
  DF_TRACE(a, blk, DF_EVENT_CQE, coll, epoch, 0, 0);
}

/* One look at a run's gate in device memory. */
typedef struct {
  bool taken;     /* false: there is no such word to look at (below) */
  uint64_t value; /* as loaded                                        */
} df_gate_look;

/* Leader: one look at the run's gate in device memory, an acquire (the buffers are read after it).
 * Block 0 loads the word the caller's streams open (the epoch they let through: they never fail a
 * run); the run's other blocks load what block 0 let through (gates_passed).  Not taken for block 0
 * without DFCCL_STREAM_GATE, which reads the host's word alone. */
DF_FN df_gate_look df_gate_device_look(const df_daemon_args* a, const df_block* blk, uint32_t coll) {
  df_gate_look look = {false, 0};
  if (df_bid(blk) != 0) {
    look.taken = true;
    look.value = df_load_acquire_gpu_u64(&a->gates_passed[coll]);
  } else if (a->stream_gates) {
    look.taken = true;
    look.value = df_load_acquire_u32(&a->stream_gates[coll]);
  }
  return look;
}

/* Leader, for a run the host published before it had waited for the caller's work (daemon.h): waits
 * for the run's gate (`first_look`: the look that went out beside the run's context loads in
 * df_run_task, which stands for the first poll's where taken) and tells whether the run may go on
 * (DF_PRIM_DONE), must wait more (DF_PRIM_BLOCKED: preempted, like any wait) or failed.  The host
 * opens a gate a few microseconds after the run's SQE -- unless a default stream of the caller is
 * busy, and it waits for that -- so a few dozen polls do: a longer wait would keep the block from
 * its other runs.  Block 0 polls
 * the gate in host memory (a bus trip each) and, for a run of several channels, hands what it let
 * through on to the run's other blocks in device memory (a release at GPU scope after its
 * system-scope acquire: what the host saw done before it opened the gate is seen by them too);
 * they poll that.  Every run has a channel on block 0, so they wait for nothing block 0 would not
 * come to. */
#define DF_GATE_POLLS 32
DF_FN df_prim_result df_pass_gate(const df_run* run, df_gate_look first_look) {
  const df_daemon_args* a = run->args;
  uint32_t coll = (uint32_t)run->ctx->coll, epoch = run->ctx->dyn.epoch;
  bool first = df_bid(run->blk) == 0;
  uint64_t polls = run->threshold < DF_GATE_POLLS ? run->threshold : DF_GATE_POLLS;
  if (polls == 0) polls = 1;
  for (uint64_t i = 0; i < polls; i++) {
    df_gate_look look = i == 0 && first_look.taken ? first_look : df_gate_device_look(a, run->blk, coll);
    uint64_t v = look.value;
    /* Block 0 reads the host's word -- a trip over the bus -- only when the streams' is still shut
     * (the host opens its own when it could not queue the streams' write). */
    if (first && (!look.taken || (uint32_t)v != epoch)) v = df_load_acquire_u64(&a->gates[coll]);
    if ((uint32_t)v == epoch) {
      if (first && run->ctx->stat.nchannels > 1) df_store_release_gpu_u64(&a->gates_passed[coll], v);
      return (v & DF_GATE_FAILED) ? DF_PRIM_FAILED : DF_PRIM_DONE;
    }
    df_spin_pause(i);
  }
  return DF_PRIM_BLOCKED;
}

/* Runs the task at queue position i.  Returns true when it progressed; *completed: the run is over
 * on this block (complete or failed); *timesliced tells whether its peers can only run once this
 * daemon leaves the GPU.  All threads. */
DF_FN bool df_run_task(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, uint32_t position,
                       bool* completed, bool* timesliced) {
  df_gate_look gate_look = {false, 0}; /* the leader's */
  if (df_is_leader(blk)) {
    DF_STAMP_COLL(a, blk, sh, sh->tasks[position], DF_STAMP_RUN);
    uint32_t coll = sh->tasks[position];
    bool unbegun = (sh->unbegun[coll / 32] >> (coll % 32)) & 1u;
    sh->unbegun[coll / 32] &= ~(1u << (coll % 32));
    if (df_context_resident(sh, coll)) {
      sh->current = coll % DF_CONTEXT_SLOTS;
    } else {
      df_context_slot loaded = df_context_load(a, blk, coll);
      /* A run's first turn on this block begins at its gate: the gate's first look goes out
       * beside the context's loads, one trip to L2 for both instead of one after the other. */
      if (unbegun) gate_look = df_gate_device_look(a, blk, coll);
      sh->current = df_context_install(a, blk, sh, loaded);
    }
    DF_STAMP(a, blk, sh, sh->slots[sh->current].coll, sh->slots[sh->current].dyn.epoch, DF_STAMP_CONTEXT);
  }
  df_block_sync();
  df_run run;
  run.args = a;
  run.blk = blk;
  run.sh = sh;
  run.ctx = &sh->slots[sh->current];
  run.timesliced = (run.ctx->stat.flags & DF_COLL_TIMESLICED_PEER) != 0;
  /* Waiting for a peer that cannot run meanwhile only delays it: a brief look, then yield. */
  run.threshold = run.timesliced ? DF_TIMESLICED_POLLS : df_initial_threshold(&a->spin, position);
  run.progressed = false;
  run.error = DF_RUN_OK;
  run.ahead = 0;
  run.head_pending = false;
  *timesliced = run.timesliced;
  if (df_is_leader(blk)) DF_TRACE(a, blk, DF_EVENT_RUN, run.ctx->coll, run.ctx->dyn.epoch, position, run.threshold);

  df_prim_result r = DF_PRIM_DONE;
  if (run.ctx->dyn.gated) { /* every thread reads the flag before the barrier, the leader clears it after */
    if (df_is_leader(blk)) sh->gate = df_pass_gate(&run, gate_look);
    df_block_sync();
    r = (df_prim_result)sh->gate;
    if (df_is_leader(blk))
      DF_TRACE(a, blk, r == DF_PRIM_BLOCKED ? DF_EVENT_GATE_SHUT : DF_EVENT_GATE, run.ctx->coll, run.ctx->dyn.epoch, 0,
               0);
    if (df_is_leader(blk) && r != DF_PRIM_BLOCKED) {
      DF_STAMP(a, blk, sh, run.ctx->coll, run.ctx->dyn.epoch, DF_STAMP_GATE);
      run.ctx->dyn.gated = 0;
      run.ctx->dirty = 1;
      if (r == DF_PRIM_FAILED) run.error = DF_RUN_CALLER_FAILED;
    }
  }
  if (r == DF_PRIM_DONE) r = df_execute(&run);
  df_block_sync(); /* every thread is done with the slot before the leader changes it */
  *completed = (r != DF_PRIM_BLOCKED);
  if (df_is_leader(blk)) {
    if (r == DF_PRIM_DONE) DF_STAMP(a, blk, sh, run.ctx->coll, run.ctx->dyn.epoch, DF_STAMP_EXECUTED);
    if (r == DF_PRIM_DONE) DF_TRACE(a, blk, DF_EVENT_EXECUTED, run.ctx->coll, run.ctx->dyn.epoch, 0, 0);
    if (*completed) {
      df_complete_run(a, blk, sh, run.ctx, r == DF_PRIM_FAILED ? run.error : DF_RUN_OK,
                      r == DF_PRIM_DONE && run.head_pending);
    } else if (!run.ctx->dyn.gated) {
      /* Preempted.  A run still at its gate has not started on this block: not counted -- with
       * every run gated, the other blocks of a run of several channels give up at the gate while
       * block 0 waits for the host, and counting those made preemptions 20-50 times what the runs
       * themselves gave up (2 x H200, random order). */
      df_block_state* bs = &a->blocks[df_bid(blk)];
      sh->disorder = a->spin.send_ahead; /* df_other_run_ready */
      df_count(&bs->counters.preemptions);
      df_atomic_add_u32(&a->coll_counters[run.ctx->coll].preemptions, 1);
      if (run.progressed) {
        run.ctx->dirty = 1; /* saved lazily, on eviction */
        if (a->progress_ns) DF_RELAXED_STORE(a->progress_ns[run.ctx->coll], df_time_ns()); /* the timeout starts over */
      }
    }
  }
  return *completed || run.progressed;
}

/* What a traversal of the task queue did. */
typedef struct {
  bool active;   /* a run progressed */
  bool finished; /* a run completed  */
  bool yield;    /* every run waited for peers that cannot run while this daemon holds the GPU */
} df_traversal;

/* Runs the task at queue position i (all threads) and notes what it did. */
DF_FN void df_run_position(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, uint32_t i,
                           df_traversal* t) {
  bool completed = false, timesliced = false;
  if (df_run_task(a, blk, sh, i, &completed, &timesliced)) t->active = true;
  if (completed && df_is_leader(blk)) sh->tasks[i] = DF_NO_TASK;
  t->finished = t->finished || completed;
  t->yield = t->yield && timesliced;
  if (timesliced && df_is_leader(blk)) sh->timesliced_seen = 1;
}

/* Leader: the queue position to run next in this traversal of `ntasks` tasks, DF_NO_TASK at its
 * end.  The queue's order (*next), except that a run a wait left for (sh->ready: it has a slot to
 * take, df_other_run_ready) goes first -- at most as many such jumps per traversal as the queue has
 * positions -- and the run that left (sh->position, the one just run) comes back right after it,
 * before the runs queued behind it: those may be of lower priority, and the left run may be what
 * the peers go on with.  Positions completed meanwhile (after a jump) are passed over.  A wait may
 * have taken runs into the queue behind the traversal's `ntasks` (df_take_in_wait): a jump goes to
 * them as well (they count in sh->ntasks, which bounds the jumps: the traversal ends), and the
 * queue's order leaves them to the next traversal. */
DF_FN uint32_t df_next_position(df_block_shared* sh, uint32_t ntasks, uint32_t* next, uint32_t* jumps) {
  uint32_t ready = sh->ready;
  sh->ready = DF_NO_TASK;
  if (ready != DF_NO_TASK && *jumps < sh->ntasks && sh->tasks[ready] != DF_NO_TASK) {
    (*jumps)++;
    if (sh->position < *next) *next = sh->position;
    return ready;
  }
  while (*next < ntasks && sh->tasks[*next] == DF_NO_TASK) (*next)++;
  return *next < ntasks ? (*next)++ : DF_NO_TASK;
}

/* Leader.  A block that made no progress for the quit period offers to quit, and keeps working
 * while it waits: the daemon quits only when all its blocks offer at once, because a collective
 * spans blocks and a block that left early could not take its part of the next one.  A block that
 * finds work again withdraws its offer, unless the vote has already been decided. */
DF_FN uint64_t df_all_blocks(const df_block* blk) {
  return df_nblocks(blk) >= 64 ? ~0ull : (1ull << df_nblocks(blk)) - 1;
}

DF_FN bool df_quit_vote(const df_daemon_args* a, const df_block* blk, bool offer) {
  uint64_t bit = 1ull << df_bid(blk);
  uint64_t all = df_all_blocks(blk);
  if (offer) return (df_atomic_or_u64(a->quit_votes, bit) | bit) == all;
  for (;;) {
    uint64_t votes = df_load_acquire_u64(a->quit_votes);
    if (votes == all) return true;
    if (!(votes & bit)) return false;
    if (df_atomic_cas_u64(a->quit_votes, votes, votes & ~bit) == votes) return false;
  }
}

/* Leader, once the vote to quit is decided: the last block to leave resets the vote for the next
 * launch (every block has seen the decision by then: it counts itself only after seeing it). */
DF_FN void df_leave_vote(const df_daemon_args* a, const df_block* blk) {
  uint64_t* left = a->quit_votes + 2;
  if (df_atomic_add_u64(left, 1) + 1 < (uint64_t)df_nblocks(blk)) return;
  a->quit_votes[0] = 0;
  a->quit_votes[1] = 0;
  *left = 0;
  df_fence_device();
}

/* Leader: tells the host what this launch did (each bit once per block and launch: the word is
 * host memory). */
DF_FN void df_report(const df_daemon_args* a, df_block_shared* sh, uint32_t bits) {
  if ((sh->reported & bits) == bits) return;
  sh->reported |= bits;
  /* Plain stores of 1: a read-modify-write of host memory is not atomic with respect to the host. */
  volatile df_launch_report* r = a->launch_report;
  if (bits & DF_LAUNCH_PROGRESSED) DF_RELAXED_STORE(r->progressed, 1u); /* every block may store it */
  if (bits & DF_LAUNCH_YIELDED) DF_RELAXED_STORE(r->yielded, 1u);
}

/* Leader: quit or go on after a traversal of the task queue.  `yield`: every task of the queue is
 * blocked on peers that share the GPU without MPS (DF_COLL_TIMESLICED_PEER) -- they run only once
 * this daemon leaves the GPU, so it asks to quit at once rather than after the quit period.  A
 * block whose queue ran dry after such work waits only briefly for the caller's next collective
 * (timeslice_idle_ns: a program's next call often comes within tens of microseconds, and sending
 * its first data before leaving saves the peer a turn) and then asks too: the peers may still have
 * to finish what this block finished.  Blocks with nothing to do join in. */
DF_FN uint32_t df_decide(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, bool active, bool yield) {
  df_block_state* bs = &a->blocks[df_bid(blk)];
  if (bs->exited && sh->ntasks == 0) return DF_FINAL_EXIT;
  /* The host wants a relaunch (e.g. a larger grid): block 0, the one block that reads host memory,
   * casts every vote, and the others see the decision below. */
  if (df_bid(blk) == 0 && DF_RELAXED_LOAD(*a->quit_request)) df_atomic_or_u64(a->quit_votes, df_all_blocks(blk));
  uint64_t now = df_time_ns();
  if (active) {
    sh->last_progress_ns = now;
    df_report(a, sh, DF_LAUNCH_PROGRESSED);
  }
  uint64_t* yield_requested = a->quit_votes + 1;
  bool ran_dry = sh->ntasks == 0 && sh->timesliced_seen && now - sh->last_progress_ns >= a->spin.timeslice_idle_ns;
  if (!active && (yield || ran_dry)) {
    df_atomic_or_u64(yield_requested, 1);
    df_report(a, sh, DF_LAUNCH_YIELDED);
  }
  bool idle = sh->ntasks == 0 && df_load_acquire_u64(yield_requested) != 0;
  bool offer = !active && (yield || idle || now - sh->last_progress_ns >= a->spin.quit_period_ns);
  return df_quit_vote(a, blk, offer) ? DF_VOLUNTARY_QUIT : DF_CONTINUE;
}

DF_FN void df_daemon_block_main(const df_daemon_args* a, const df_block* blk, df_block_shared* sh) {
  if (df_is_leader(blk)) {
    df_context_block_start(a, blk, sh);
    sh->last_progress_ns = df_time_ns();
    if (df_bid(blk) == 0) a->launch_report->start_ns = sh->last_progress_ns;
    sh->quit = DF_CONTINUE;
    sh->reported = 0;
    sh->timesliced_seen = 0;
    sh->error_look_ns = 0;
    sh->idle_round = 0; /* a launch may find entries piled up: it takes them all */
    sh->ready = DF_NO_TASK;
    sh->disorder = 0;
  }
  df_block_sync();
  while (sh->quit == DF_CONTINUE) {
    if (df_is_leader(blk)) {
      sh->sqe_fetched = df_fetch_sqes(a, blk, sh);
      DF_STAMP_COLL(a, blk, sh, sh->stamp.coll, DF_STAMP_FETCHED);
    }
    df_block_sync();
    uint32_t ntasks = sh->ntasks;
    if (df_is_leader(blk)) {
      DF_STAMP_COLL(a, blk, sh, sh->stamp.coll, DF_STAMP_ROUND);
      if (ntasks > 0) DF_TRACE(a, blk, DF_EVENT_ROUND, 0, 0, ntasks, sh->sqe_fetched); /* not the idle ones */
    }
    df_traversal t = {.yield = ntasks > 0}; /* yield: every task waits for peers that cannot run meanwhile */
    uint32_t next = 0, jumps = 0;           /* the leader's */
    for (;;) {
      if (df_is_leader(blk)) sh->position = df_next_position(sh, ntasks, &next, &jumps);
      df_block_sync(); /* every thread runs the position the leader chose */
      uint32_t position = sh->position;
      if (position == DF_NO_TASK) break;
      df_run_position(a, blk, sh, position, &t); /* its barriers keep the leader's next choice after our read */
    }
    bool finished = t.finished, yield = t.yield;
    if (df_is_leader(blk)) {
      /* Entries taken, at the round's start or in its waits (df_take_in_wait), are activity too. */
      bool active = sh->sqe_fetched > 0 || t.active;
      /* Only after a task completed: with an empty queue no barrier separates the block's read of
       * ntasks above from a store to it (compute-sanitizer's racecheck saw that hazard). */
      if (finished) df_task_queue_compact(sh);
      if (sh->ntasks == 0) sh->disorder = 0; /* what the next runs do will tell */
      sh->idle_round = !active;
      sh->quit = df_decide(a, blk, sh, active, yield);
    }
    df_block_sync();
  }
  if (df_is_leader(blk)) {
    if (sh->quit == DF_VOLUNTARY_QUIT) {
      df_count(&a->blocks[df_bid(blk)].counters.voluntary_quits);
      df_leave_vote(a, blk);
    }
    if (df_bid(blk) == 0) df_sq_acknowledge(a->sq_host, &a->blocks[0].sq_acknowledged, a->blocks[0].sq_forwarded);
    df_context_block_stop(a, blk, sh);
    /* Relaxed: the poller reads it while other blocks still run (daemon_running, poller.c). */
    if (df_bid(blk) == 0) DF_RELAXED_STORE(a->launch_report->end_ns, df_time_ns());
  }
}

#endif /* DFCCL_KERNEL_SCHEDULER_H */
