/*
 * Primitives (Simple protocol): one step of an algorithm moves one FIFO slot's worth of data.
 *
 *   wait  -- the leader polls until the receive connector holds the next slot and/or the send
 *            connector has a free slot, at most `threshold` polls; if not, the step is abandoned
 *            before anything moved (so re-running it after preemption is idempotent);
 *   move  -- all threads copy/reduce between user buffers and FIFO slots;
 *   post  -- the leader publishes: tail for the data sent, head for the slot consumed.
 *
 * Step counters live in the connectors' state, advance only in `post`, and so survive preemption
 * exactly.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_PRIMITIVES_H
#define DFCCL_KERNEL_PRIMITIVES_H

#include "block.h"
#include "context.h"
#include "low_latency.h"
#include "reduce.h"
#include "task_queue.h"

enum {
  DF_RECV = 1u << 0,     /* read a slot from the predecessor                      */
  DF_SEND = 1u << 1,     /* write a slot to the successor                         */
  DF_REDUCE = 1u << 2,   /* combine the received slot with the user source        */
  DF_COPY_OUT = 1u << 3, /* also store the result in the user destination         */
  DF_PEEK = 1u << 4,     /* receive the slot run->ahead past the next unconsumed one, and leave it
                          * unconsumed (df_consume_last frees slots later)            */
  DF_LL = 1u << 5        /* through low-latency slots where the step's links have them
                          * (low_latency.h); only copies, and receives with DF_PEEK   */
};

/* BLOCKED: a wait gave up (the run is preempted, and resumes at this step).  FAILED: the run cannot
 * complete -- a participant revoked it, or a slot came from another run (run->error says which). */
typedef enum { DF_PRIM_DONE = 0, DF_PRIM_BLOCKED = 1, DF_PRIM_FAILED = 2 } df_prim_result;

DF_FN df_prim_result df_fail(df_run* run, uint32_t reason) {
  run->error = reason;
  return DF_PRIM_FAILED;
}

/* What the leader of one step waits for, read once before it polls, so that a poll is one load (of
 * the tail, or of the head).  On the GPU every acquire empties the SM's L1: re-walking links ->
 * connector -> counter after each poll cost about five trips to L2 a poll, and as many again once
 * the slot was there (docs/performance.md, seventeenth session). */
typedef struct {
  const volatile uint64_t* tail; /* DF_RECV: the predecessor's tail, else NULL               */
  uint64_t recv_step;            /* the slot to receive: there once the tail passes it      */
  df_connector* prev;            /* the predecessor's connector (the slot, its tag)         */
  const volatile uint32_t* tag;  /* DF_RECV, when the predecessor tags its slots: the slot's
                                  * tag word, loaded beside the tail at every look          */
  uint32_t tag_seen;             /* the tag word as the last look loaded it                 */
  const volatile uint64_t* head; /* DF_SEND: the successor's head, else NULL                */
  uint64_t sent;                 /* slots posted to the successor                           */
  uint64_t credit;               /* the successor's head as last read (df_connector.credit) */
  df_connector* next;            /* the successor's connector                               */
  const char* ll_header;         /* DF_RECV through a low-latency slot: its header line,
                                  * polled instead of the tail (low_latency.h); the tail is
                                  * then NULL with DFCCL_LL_CHECK=0 (a twin: no wait at all) */
} df_step_waits;

DF_FN df_step_waits df_step_waits_of(const df_run* run, unsigned flags) {
  const df_links* l = &run->ctx->stat.links;
  int c = df_bid(run->blk);
  df_step_waits w = {NULL, 0, NULL, NULL, 0, NULL, 0, 0, NULL, NULL};
  if (flags & DF_RECV) {
    w.prev = &l->from_prev[c];
    w.tail = &w.prev->recv_ctrl->tail;
    w.recv_step = l->consumed[c] + run->ahead;
    if (df_ll_receives(run)) {
      w.ll_header = w.prev->ll + (size_t)(w.recv_step % DF_FIFO_STEPS) * l->ll_slot_bytes;
      if (l->ll_unchecked) w.tail = NULL;
    } else if (l->prev_tagged) {
      w.tag = &w.prev->recv_ctrl->tags[w.recv_step % DF_FIFO_STEPS];
    }
  }
  if (flags & DF_SEND) {
    w.next = &l->to_next[c];
    w.head = &w.next->send_ctrl->head;
    w.sent = l->sent[c];
    w.credit = w.next->credit;
  }
  return w;
}

/* Leader: one look at the step's waits -- the next slot from the predecessor, a free slot at the
 * successor.  DONE when both are there; a revoked counter fails the run with its reason.  Heads
 * only grow, so a credit once read stays good: the head is read only when the slots known to be
 * free run out, as NCCL's senders do.  A head revoked meanwhile (the successor's run failed) is
 * seen then, or through the run's error words once a wait gives up -- and the host refuses further
 * runs of a failed collective, so a stale credit never outlives the run that read it. */
DF_FN df_prim_result df_look(df_run* run, df_step_waits* w) {
  if (w->tail && w->ll_header) {
    /* The header's flag says that its tag word is this step's (one 8-byte word); the tail, no
     * longer ordered after the data, is read only for a revocation. */
    uint64_t header;
    if (!df_ll_load_line(w->ll_header, df_ll_flag(w->recv_step), &header)) {
      uint64_t tail = df_load_relaxed_u64(w->tail);
      return tail & DF_REVOKED_BIT ? df_fail(run, DF_REVOKED_REASON(tail)) : DF_PRIM_BLOCKED;
    }
    w->tag_seen = (uint32_t)header;
  } else if (w->tail) {
    /* Before the tail's acquire, so that both loads travel together (df_check_tag). */
    if (w->tag) w->tag_seen = DF_RELAXED_LOAD(*w->tag);
    uint64_t tail = df_load_acquire_u64(w->tail);
    if (tail & DF_REVOKED_BIT) return df_fail(run, DF_REVOKED_REASON(tail));
    if (tail <= w->recv_step) return DF_PRIM_BLOCKED;
  }
  if (w->head && w->credit + DF_FIFO_STEPS <= w->sent) {
    uint64_t head = df_load_acquire_u64(w->head);
    if (head & DF_REVOKED_BIT) return df_fail(run, DF_REVOKED_REASON(head));
    if (head > w->credit) w->next->credit = w->credit = head;
    if (head + DF_FIFO_STEPS <= w->sent) return DF_PRIM_BLOCKED;
  }
  return DF_PRIM_DONE;
}

/* How often a block's waits that reach their threshold also look whether the run failed elsewhere:
 * at every give-up, two loads of global memory would delay the block's return to the peer's data
 * on every small collective, for failures that a timeout of seconds, or a peer's revoked counter,
 * announces anyway.  By time, not by count: a host-target block gives up far less often. */
#define DF_ERROR_LOOK_NS 200000ull

/* Leader: whether queued run `coll` (not this one, on other connectors) has a slot from its
 * predecessor that it has not taken: it can move now.  A hint -- its links are read as the host
 * last wrote them (df_load_l2), and a stale answer costs one preemption or one longer wait. */
DF_FN bool df_queued_run_has_slot(const df_run* run, uint32_t coll) {
  /* The words it needs, not the whole context: df_load_l2 copies whole 16-byte lines. */
  const df_links* l = &run->args->colls[coll].links;
  uint32_t nchannels = df_load_l2_u32(&l->nchannels); /* 0: one participant */
  const df_connector* from_prev = (const df_connector*)(uintptr_t)df_load_l2_u64((const uint64_t*)&l->from_prev);
  const uint64_t* consumed = (const uint64_t*)(uintptr_t)df_load_l2_u64((const uint64_t*)&l->consumed);
  uint32_t c = (uint32_t)df_bid(run->blk);
  if (c >= nchannels || from_prev == run->ctx->stat.links.from_prev) return false;
  uint64_t taken = consumed[c]; /* this block's own count: loaded beside the connector, not after the acquire */
  uint64_t tail = df_load_acquire_u64(&from_prev[c].recv_ctrl->tail);
  return !(tail & DF_REVOKED_BIT) && tail > taken;
}

/* How often the first ring position's wait looks at the other queued runs, once it has lasted long
 * enough (df_look_around_from); a follower looks at every poll, one queued run each, so that it
 * finds the predecessor's run among many within as many polls. */
#define DF_LOOK_AROUND_EVERY 16

/* From which poll on a wait looks at the other queued runs.  The run's first ring position waits
 * threshold / spin.leave_share polls (at least the floor): a peer on the same run answers within a
 * hop, so a short wait is not worth a look, and a run that grew (its peers are on it) looks later,
 * in proportion.  Every other position follows its predecessor from the floor on (spin.follow):
 * a queued run with the predecessor's slot waiting is the run the predecessor is on.  Were every
 * position to leave early, two ranks each in the other's run would swap runs and each find itself
 * alone again (the random-order program: a swap a step); with the first position staying, the
 * others gather on its run within a hop each. */
DF_FN bool df_follows(const df_run* run) { return run->args->spin.follow && run->ctx->stat.rank != 0; }

/* Whether the wait looks from the floor on, at every poll: a follower; and with DFCCL_QUEUE_ORDER=id
 * every position, each for queued runs of higher ids only until its share has passed
 * (df_other_run_ready) -- two ranks each in the other's run then both go to the higher one, and a
 * rank ahead of a late peer (which starts with other ids than it) goes to the peer's run if that is
 * higher: the case study submits in descending ids. */
DF_FN bool df_looks_early(const df_run* run) { return run->args->spin.queue_by_id || df_follows(run); }

DF_FN uint64_t df_look_around_from(const df_run* run) {
  const df_spin_policy* spin = &run->args->spin;
  uint64_t from = df_looks_early(run) ? 0 : run->threshold / spin->leave_share;
  return from < spin->floor ? spin->floor : from;
}

/* What a wait's looks around (df_other_run_ready) need, worked out once per wait (df_wait_ready):
 * reading the spin policy from the daemon's arguments at every poll -- behind the poll's
 * system-scope acquire -- and dividing the threshold by the share, a 64-bit division, made a poll
 * of a wait cost about 1 us on 2 x H200 (the event trace: 32 polls in 32.5 us) where the
 * calibration's bare loop of acquires costs 154 ns, so every wait lasted 6.5 times the time its
 * polls were calibrated for.  With the plan a poll costs about 0.5 us (48 polls in 23 us; the
 * rest is the look's own loads). */
typedef struct {
  uint64_t from;      /* df_look_around_from                                                  */
  uint64_t shared;    /* polls after which the wait has lasted its share: threshold / leave_share */
  uint64_t pass_ends; /* a pass over the queue after an intake: every poll before this one looks */
  bool on;            /* spin.leave_share != 0: waits look around at all                      */
  bool early;         /* df_looks_early                                                       */
} df_look_plan;

DF_FN df_look_plan df_look_plan_of(const df_run* run) {
  df_look_plan p = {0, 0, 0, false, false};
  uint32_t share = run->args->spin.leave_share;
  if (share == 0) return p;
  p.on = true;
  p.early = df_looks_early(run);
  p.from = df_look_around_from(run);
  p.shared = run->threshold / share;
  return p;
}

/* Leader: whether SQEs wait that this block has not taken yet.  A block takes entries between runs,
 * and an idle block 0 takes a lone entry and runs it at once (df_fetch_sqes): a burst's other runs
 * -- among them, perhaps, the one the peers are on -- wait in the SQ until a wait takes them
 * (df_take_in_wait) or the next round does. */
DF_FN bool df_entries_waiting(const df_run* run) {
  const df_block_state* bs = &run->args->blocks[df_bid(run->blk)];
  return df_bid(run->blk) == 0 ? df_sq_lines_written(run->args->sq_host, bs->sq_forwarded)
                               : df_sq_written(run->args->sq, bs->sq_frontier);
}

/* Leader: whether queued run `coll` has not run on this block since it was taken (its bit in
 * sh->unbegun), begins by sending -- an all-reduce (either algorithm), all-gather or
 * reduce-scatter -- and runs on one channel: its own data can go to the successor now, whatever run
 * the successor is on (sh->disorder).  A run that was scheduled once and stopped at its gate is not
 * sent ahead again.  Runs of several channels are not: every block sending ahead made the random
 * order of 4 MiB all-reduces (32 channels) 4-11 % slower, where one channel's 64 KiB gained 14-25 %
 * (2 x H200, docs/performance.md; why was not measured: perhaps a block other than 0 that jumps to a run
 * waits at its gate until block 0 has passed it).  A bit of shared memory rather than the run's
 * dynamic context: reading that in every wait's look made the daemon kernel spill 362 bytes of
 * registers where it spills 250 (ptxas, sm_90). */
DF_FN bool df_queued_run_unbegun(const df_run* run, uint32_t coll) {
  if (!(run->sh->unbegun[coll / 32] & (1u << (coll % 32)))) return false;
  const df_coll_static* st = &run->args->colls[coll];
  uint32_t kind = df_load_l2_u32(&st->kind);
  bool sends_first = kind == DF_COLL_ALL_REDUCE || kind == DF_COLL_ALL_GATHER || kind == DF_COLL_REDUCE_SCATTER;
  return sends_first && df_load_l2_u32(&st->nchannels) == 1;
}

/* Leader, in a wait longer than its share of the threshold: does one more queued run (round robin,
 * *cursor) have a slot to take?  If so its position goes to sh->ready, for the scheduler to run it
 * next.  Waiting on here would only delay it: with every rank in its own order (the random-order
 * program), each rank sat out a whole threshold -- milliseconds -- in a run its peer was not in,
 * while the run the peer was in had its slot waiting (docs/performance.md, eighteenth session).
 * One look of the round robin goes to the SQ: once the wait has lasted its share (with
 * DFCCL_TAKE_IN_WAIT=2 from the first look), entries this block has not taken are taken into the
 * task queue here, at its end, and the looks go on over them (df_take_in_wait); an entry that
 * cannot be taken so -- or any, with DFCCL_TAKE_IN_WAIT=0 -- is a reason to leave once the wait
 * has lasted its share, for the next round to take it.  Leaving
 * is a preemption like a timed-out wait, so nothing else changes; priorities hold.
 * Sending ahead: once a run of the block's queue was preempted (sh->disorder, spin.send_ahead), the
 * first pass of every wait over the queue, from its first poll and on every ring position, leaves
 * instead for a queued run that has not begun and begins by sending (df_queued_run_unbegun).  With
 * each rank in its own order, every rank's first data of every queued run then goes out before
 * anyone waits for it, and the runs' waits find the peers' data: at 2 ranks an all-reduce that
 * gathers is one send and one receive.  Only after a preemption: in one order on every rank the
 * peer answers within a hop, and leaving at every wait's first poll made that order 35 % slower
 * (2 x H200, docs/performance.md). */
DF_FN bool df_other_run_ready(const df_run* run, df_look_plan* plan, uint64_t polls, uint32_t* cursor) {
  df_block_shared* sh = run->sh;
  if (!plan->on) return false;
  bool intake_pass = polls < plan->pass_ends;
  bool ahead = sh->disorder && (polls <= sh->ntasks || intake_pass); /* the first pass sends ahead */
  if (!ahead && !intake_pass && polls < plan->from) return false;
  if (!ahead && !intake_pass && polls % DF_LOOK_AROUND_EVERY && !plan->early) return false;
  uint32_t position = (*cursor)++ % (sh->ntasks + 1);
  if (position == sh->ntasks) {
    /* Not before the share either, unless DFCCL_TAKE_IN_WAIT=2: a look at the SQ is a load from host
     * memory, and a follower looks from its first poll; taking from the first look measured no
     * better on 2 H100s (docs/performance.md, twenty-first session). */
    bool shared = ahead || polls >= plan->shared; /* sending ahead: take the burst's runs */
    if (!run->args->spin.take_in_wait) return shared && df_entries_waiting(run);
    if (!shared && run->args->spin.take_in_wait < 2) return false;
    uint32_t queued = sh->ntasks;
    bool left = df_take_in_wait(run->args, run->blk, sh);
    /* Runs taken: one pass over the queue, from the runs taken, a look at every poll, for the run
     * the peers are on -- at one look every DF_LOOK_AROUND_EVERY polls, a queue of nine took 144
     * polls to go round, tens of microseconds after the intake (2 x H200, the event trace). */
    if (sh->ntasks > queued) {
      *cursor = queued;
      plan->pass_ends = polls + 1 + sh->ntasks + 1;
    }
    return left && shared;
  }
  uint32_t coll = sh->tasks[position];
  if (coll == DF_NO_TASK || (int32_t)coll == run->ctx->coll) return false;
  /* Never for a run of lower priority: that one waits for this one (the task queue's order). */
  if (df_static_priority(run->args, coll) < (int32_t)run->ctx->stat.priority) return false;
  if (ahead ? !df_queued_run_unbegun(run, coll) : !df_queued_run_has_slot(run, coll)) return false;
  if (run->args->spin.queue_by_id && polls < plan->shared && df_static_order(run->args, coll) <= run->ctx->stat.order)
    return false; /* early, by id: only for a higher one (df_looks_early) */
  sh->ready = position;
  return true;
}

/* Leader: spin until every wait of the step is satisfied, or give up after the threshold, or
 * sooner for another queued run that can move (df_other_run_ready).  A block that gives up also
 * looks, at most every DF_ERROR_LOOK_NS, whether another block of this rank failed the run or the
 * host timed it out (without preemption, the test twins' mode, it looks every 64 Ki polls and goes
 * on waiting). */
DF_FN df_prim_result df_wait_ready(df_run* run, df_step_waits* w) {
  df_prim_result r = df_look(run, w);
  if (r != DF_PRIM_BLOCKED) return r;
  /* The plan after the first look, not before: a small run's peer has often sent already, and
   * working the plan out first made every small all-reduce 0.4 us slower (2 x H200). */
  bool unlimited = !run->args->spin.preemption;
  const uint64_t threshold = run->threshold; /* a register, not a load at every poll (df_look_plan) */
  df_look_plan plan = df_look_plan_of(run);
  uint32_t cursor = 0;
  for (uint64_t polls = 0;;) {
    if (!unlimited && df_other_run_ready(run, &plan, polls, &cursor)) {
      DF_TRACE(
          run->args, run->blk, DF_EVENT_LEAVE, run->ctx->coll, run->ctx->dyn.epoch,
          run->sh->ready == DF_NO_TASK ? DF_TRACE_SQ : run->sh->tasks[run->sh->ready],
          polls | (run->sh->disorder && (polls <= run->sh->ntasks || polls < plan.pass_ends) ? DF_TRACE_AHEAD : 0));
      return DF_PRIM_BLOCKED;
    }
    if (polls >= threshold && !unlimited) {
      DF_TRACE(run->args, run->blk, DF_EVENT_GIVE_UP, run->ctx->coll, run->ctx->dyn.epoch, 0, polls);
      uint64_t now = df_time_ns();
      if (now - run->sh->error_look_ns < DF_ERROR_LOOK_NS) return DF_PRIM_BLOCKED;
      run->sh->error_look_ns = now;
    }
    if (polls >= threshold && (!unlimited || (polls & 0xffff) == 0)) {
      uint32_t error = df_load_acquire_u32(&run->args->run_errors[run->ctx->coll]);
      if (error == DF_RUN_OK && df_load_acquire_u32(&run->args->timed_out[run->ctx->coll]) == run->ctx->dyn.epoch)
        error = DF_RUN_TIMED_OUT;
      if (error != DF_RUN_OK) return df_fail(run, error);
      if (!unlimited) return DF_PRIM_BLOCKED;
    }
    df_spin_pause(polls);
    r = df_look(run, w);
    if (r != DF_PRIM_BLOCKED) return r;
    polls++;
  }
}

/* The tag word of the slot sent at `step` by a run tagged `run_tag`: the step is in it, so that the
 * word a slot held a lap before -- perhaps of this very run -- never passes for the word of this
 * step (df_check_tag relies on it).  An odd multiplier: distinct steps, distinct words. */
DF_FN uint32_t df_slot_tag(uint32_t run_tag, uint64_t step) {
  return run_tag ^ (uint32_t)(step * 0x9e3779b97f4a7c15ull >> 32);
}

/* Leader, once the next slot is there: it must come from this very run.  The word was loaded
 * beside the tail (df_look), before the tail's acquire, and may be older than the tail seen -- but
 * every word is stored whole (by the predecessor's daemon, or by the proxy that received it, never
 * by UCX's byte-wise copy), and a word naming this step and this run was written for this slot by
 * this run: no trip of its own (0.3 us a hop on 2 x H200, docs/performance.md, twenty-fourth
 * session).  Any other word is read now, ordered after the acquire, and decides. */
DF_FN df_prim_result df_check_tag(df_run* run, const df_step_waits* w) {
  uint32_t want = df_slot_tag(run->ctx->tag, w->recv_step);
  if (w->ll_header) /* the header's word, loaded whole with its flag, decides alone (no tail: the twin) */
    return !w->tail || w->tag_seen == want ? DF_PRIM_DONE : df_fail(run, DF_RUN_MISMATCH);
  if (!w->tag) return DF_PRIM_DONE;
  if (w->tag_seen == want || DF_RELAXED_LOAD(*w->tag) == want) return DF_PRIM_DONE;
  return df_fail(run, DF_RUN_MISMATCH);
}

DF_FN char* df_slot_address(const df_connector* c, uint64_t step, uint32_t slot_bytes) {
  return c->fifo + (size_t)(step % DF_FIFO_STEPS) * slot_bytes;
}

/* Leader, after the data moved: advance the step counters and tell the peers (`bytes`: what the
 * sent slot holds). */
DF_FN void df_post(const df_run* run, unsigned flags, size_t bytes) {
  const df_links* l = &run->ctx->stat.links;
  int c = df_bid(run->blk);
  bool send = flags & DF_SEND, consume = (flags & DF_RECV) && !(flags & DF_PEEK);
  if (send) {
    df_recv_ctrl* next = l->to_next[c].recv_ctrl;
    if (l->slot_sizes) next->bytes[l->sent[c] % DF_FIFO_STEPS] = (uint32_t)bytes;
    /* Relaxed: a receiver loads it while it may change (df_look), ordered by the tail below. */
    DF_RELAXED_STORE(next->tags[l->sent[c] % DF_FIFO_STEPS], df_slot_tag(run->ctx->tag, l->sent[c]));
    DF_RELAXED_STORE(l->sent[c], l->sent[c] + 1); /* a hang report reads the counters meanwhile */
  }
  if (consume) DF_RELAXED_STORE(l->consumed[c], l->consumed[c] + 1);
  /* One system-scope release after the block barrier covers every thread's data stores (the
   * barrier orders them before it, and release is cumulative) and the tags: a step that receives
   * and sends releases both counters behind one fence, not a release store each. */
  if (send && consume) {
    df_fence_release_system();
    df_store_relaxed_u64(&l->to_next[c].recv_ctrl->tail, l->sent[c]);
    df_store_relaxed_u64(&l->from_prev[c].send_ctrl->head, l->consumed[c]);
  } else if (send) {
    df_store_release_u64(&l->to_next[c].recv_ctrl->tail, l->sent[c]);
  } else if (consume) {
    df_store_release_u64(&l->from_prev[c].send_ctrl->head, l->consumed[c]);
  }
  if (send) DF_STAMP(run->args, run->blk, run->sh, run->ctx->coll, run->ctx->dyn.epoch, DF_STAMP_SENT);
  if (send) DF_TRACE(run->args, run->blk, DF_EVENT_SENT, run->ctx->coll, run->ctx->dyn.epoch, l->sent[c], 0);
}

/* Leader, after the data lines of the low-latency slot sh->out_slot: the header, then the step
 * counted, and the tail stored as a hint (low_latency.h).  No fence. */
DF_FN void df_ll_post(const df_run* run) {
  const df_links* l = &run->ctx->stat.links;
  int c = df_bid(run->blk);
  df_ll_store_line(run->sh->out_slot, df_slot_tag(run->ctx->tag, l->sent[c]), run->sh->ll_out_flag);
  DF_RELAXED_STORE(l->sent[c], l->sent[c] + 1);
  df_store_relaxed_u64(&l->to_next[c].recv_ctrl->tail, l->sent[c]);
  DF_STAMP(run->args, run->blk, run->sh, run->ctx->coll, run->ctx->dyn.epoch, DF_STAMP_SENT);
  DF_TRACE(run->args, run->blk, DF_EVENT_SENT, run->ctx->coll, run->ctx->dyn.epoch, l->sent[c], 0);
}

/* Leader, once df_ready found the step's waits done: the slots the step reads and writes.  A slot
 * received through a low-latency slot (sh->ll_in) is unpacked into the Simple slot of its step
 * (sh->in_slot), where the algorithm reads it; a slot sent goes to the successor's low-latency
 * slot where the link has them (sh->ll_out, and DF_LL), else to its Simple slot. */
DF_FN void df_note_slots(df_run* run, unsigned flags, const df_step_waits* w) {
  df_block_shared* sh = run->sh;
  const df_links* l = &run->ctx->stat.links;
  if (flags & DF_RECV) {
    sh->in_slot = df_slot_address(w->prev, w->recv_step, l->slot_bytes);
    sh->ll_in = w->ll_header;
    sh->ll_in_flag = df_ll_flag(w->recv_step);
  }
  if (flags & DF_SEND) {
    sh->ll_out = (flags & DF_LL) && df_ll_sends(run);
    sh->out_slot =
        sh->ll_out ? df_ll_slot(w->next, w->sent, l->ll_slot_bytes) : df_slot_address(w->next, w->sent, l->slot_bytes);
    sh->ll_out_flag = df_ll_flag(w->sent);
  }
}

/* All threads, once the leader found the slot's header: the data lines of low-latency slot `slot`
 * into the Simple slot `dst`, where the algorithm reads them.  True (on every thread) when a line
 * did not come in time: nothing was consumed, and the step is done again. */
DF_FN bool df_ll_unpack_late(const df_run* run, const char* slot, uint32_t flag, char* dst, size_t bytes) {
  return df_ll_read_lines(run->blk, slot, flag, dst, bytes, run->ctx->stat.links.ll_unchecked,
                          !run->args->spin.preemption);
}

/* Leader: consumes the run's last k received slots (after DF_PEEK receives of them) and leaves
 * the credit to the run's completion (df_complete_run): the release store of a head is a
 * system-scope fence (about 2 us on an H100, docs/performance.md), and the completion's own fence,
 * which comes anyway, orders the reads of those slots before a relaxed store of the head.  The
 * predecessor needs the credit only once its FIFO is full -- DF_FIFO_STEPS slots later. */
DF_FN void df_consume_last(df_run* run, uint32_t k) {
  uint64_t* consumed = &run->ctx->stat.links.consumed[df_bid(run->blk)];
  DF_RELAXED_STORE(*consumed, *consumed + k);
  run->head_pending = true;
}

/* The credit for channel c's consumed slots: the predecessor's head and its new value.  Read before
 * the system-scope fence the credit goes behind (df_credit_send): after it -- which invalidates L1 --
 * the reads of the connector and the count were two trips to L2 in a row on the way to a small
 * run's CQE. */
typedef struct {
  volatile uint64_t* head;
  uint64_t consumed;
} df_credit;

DF_FN df_credit df_credit_of(const df_links* l, int c) {
  df_credit k = {&l->from_prev[c].send_ctrl->head, l->consumed[c]};
  return k;
}

/* Leader, behind a system-scope fence after the reads of the consumed slots. */
DF_FN void df_credit_send(df_credit k) { df_store_relaxed_u64(k.head, k.consumed); }

/* Leader: the step's waits (*w, read once), then the received slot's tag. */
DF_FN df_prim_result df_ready(df_run* run, unsigned flags, df_step_waits* w) {
  *w = df_step_waits_of(run, flags);
  df_prim_result ready = df_wait_ready(run, w);
  if (ready == DF_PRIM_DONE && (flags & DF_RECV)) {
    DF_STAMP(run->args, run->blk, run->sh, run->ctx->coll, run->ctx->dyn.epoch, DF_STAMP_RECEIVED);
    DF_TRACE(run->args, run->blk, DF_EVENT_RECEIVED, run->ctx->coll, run->ctx->dyn.epoch, w->recv_step, 0);
    ready = df_check_tag(run, w);
  }
  return ready;
}

/* Leader, after a step that received a slot.  A received slot shows that the predecessor is
 * running this collective now, and the k-th slot of a run has come through the k ranks before us
 * (each step of a ring forwards what the previous one received): once n-1 have come, every rank is
 * on it -- stay with it longer (paper §4.3).  Not before: on more than two ranks the first slots
 * come from neighbours that can send before a late rank joins, and a run that grew on them would
 * spin out the ceiling on the late rank while the block's other runs wait (the case study on 4
 * GPUs: 1.6 s per step with growth on every receive, 26 ms without growth).  A send proves
 * nothing -- it only needed a free slot. */
DF_FN void df_note_received(df_run* run) {
  df_coll_dynamic* d = &run->ctx->dyn;
  if (d->received < UINT32_MAX) d->received++;
  if (!run->timesliced && d->received + 1 >= run->ctx->stat.nranks) {
    uint64_t grown = run->threshold * run->args->spin.growth;
    run->threshold = grown > run->args->spin.ceiling ? run->args->spin.ceiling : grown;
  }
}

/* One step on `nelem` elements.  user_src is read (sent, or reduced with what was received),
 * user_dst is written (with DF_COPY_OUT or when nothing is sent).  Called by all threads. */
DF_FN df_prim_result df_prim(df_run* run, unsigned flags, const void* user_src, void* user_dst, size_t nelem) {
  df_block_shared* sh = run->sh;
  const df_coll_static* st = &run->ctx->stat;
  size_t bytes = nelem * df_dtype_bytes((dfcclDataType_t)st->dtype);
  if (df_is_leader(run->blk)) {
    df_step_waits w;
    df_prim_result ready = df_ready(run, flags, &w);
    if (ready == DF_PRIM_DONE) df_note_slots(run, flags, &w);
    sh->go = (uint32_t)ready;
  }
  df_block_sync();
  if (sh->go != DF_PRIM_DONE) return (df_prim_result)sh->go;
  if ((flags & DF_LL) && (flags & DF_RECV) && sh->ll_in &&
      df_ll_unpack_late(run, sh->ll_in, sh->ll_in_flag, sh->in_slot, bytes))
    return DF_PRIM_BLOCKED;

  const void* src0 = (flags & DF_RECV) ? (const void*)sh->in_slot : user_src;
  const void* src1 = (flags & DF_REDUCE) ? user_src : NULL;
  void* dst0 = (flags & DF_SEND) ? (void*)sh->out_slot : user_dst;
  void* dst1 = ((flags & DF_SEND) && (flags & DF_COPY_OUT)) ? user_dst : NULL;
  const bool ll_out = (flags & DF_LL) && (flags & DF_SEND) && sh->ll_out;
  if (ll_out) df_ll_write_lines(run->blk, (const char*)src0, bytes, sh->out_slot, sh->ll_out_flag);
  else df_reduce_copy(run->blk, (dfcclDataType_t)st->dtype, (dfcclRedOp_t)st->op, src0, src1, dst0, dst1, nelem);
  df_block_sync();

  if (df_is_leader(run->blk)) {
    if (ll_out) df_ll_post(run);
    else df_post(run, flags, bytes);
    if (flags & DF_RECV) df_note_received(run);
  }
  run->progressed = true;
  return DF_PRIM_DONE;
}

/* Convenience names, as the algorithms speak of them. */
DF_FN df_prim_result df_send(df_run* r, const void* src, size_t n) { return df_prim(r, DF_SEND, src, NULL, n); }
DF_FN df_prim_result df_recv_reduce_send(df_run* r, const void* src, size_t n) {
  return df_prim(r, DF_RECV | DF_REDUCE | DF_SEND, src, NULL, n);
}
DF_FN df_prim_result df_recv_reduce_copy_send(df_run* r, const void* src, void* dst, size_t n) {
  return df_prim(r, DF_RECV | DF_REDUCE | DF_SEND | DF_COPY_OUT, src, dst, n);
}
DF_FN df_prim_result df_recv_copy_send(df_run* r, void* dst, size_t n) {
  return df_prim(r, DF_RECV | DF_SEND | DF_COPY_OUT, NULL, dst, n);
}
DF_FN df_prim_result df_recv_send(df_run* r, size_t n) { /* forward: slot to slot */
  return df_prim(r, DF_RECV | DF_SEND, NULL, NULL, n);
}
DF_FN df_prim_result df_recv(df_run* r, void* dst, size_t n) { return df_prim(r, DF_RECV, NULL, dst, n); }
DF_FN df_prim_result df_copy_send(df_run* r, const void* src, void* dst, size_t n) {
  return df_prim(r, DF_SEND | DF_COPY_OUT, src, dst, n);
}
DF_FN df_prim_result df_recv_reduce_copy(df_run* r, const void* src, void* dst, size_t n) {
  return df_prim(r, DF_RECV | DF_REDUCE, src, dst, n);
}

#endif /* DFCCL_KERNEL_PRIMITIVES_H */
