/*
 * Low-latency slots (NCCL's LL protocol, for the all-reduce that gathers small shares).
 *
 * A Simple slot is published by a system-scope release of the tail: the sender waits for its data
 * to reach the receiver (about 2 us on an H100, docs/performance.md) before the receiver can see
 * any of it, and at 2 ranks every rank sends and then waits, so that fence is on every small
 * all-reduce's path.  A low-latency slot needs none: each 8-byte word carries 4 bytes of data
 * beside a flag and is stored whole (df_ll_store_line), so a receiver that sees the flag sees the
 * data with it.  The price is half the bytes of every line, which is why only small shares use it
 * (DFCCL_LL_BYTES).
 *
 * A slot: a header line -- the slot's tag word (df_slot_tag: this run, this step) -- then one line
 * per 8 bytes of data.  Every line's flag is df_ll_flag(step), so a line from an earlier lap never
 * passes for this one's, and the slots live in a region of their own (connectors.c), which the
 * Simple slots' bytes never overwrite.  The receiver's leader waits for the header (df_look) and
 * checks its tag word, exactly as a Simple slot's: a slot of another run fails the run at once.
 * The other lines were stored before the header but are not ordered with it: each thread waits
 * for its own lines, then writes their data into the Simple slot of the same step -- unused on a
 * low-latency link -- where the algorithm reads them as from any slot (all_reduce_gathered.h).
 *
 * The tail still advances, with a relaxed store: waits of other runs read it as a hint that a slot
 * is there (df_queued_run_has_slot).  Credits (heads) go back as for Simple slots.  A network link
 * has no low-latency slots (its proxy copies bytes, not whole words); a run's steps use them on the
 * links that have them and Simple slots on the others.
 *
 * Preemption: a send waits only for a free slot, before it writes anything, and a receive writes
 * only the Simple slot of its own step before the step is posted: a step given up at any point is
 * done again from the start, with the same result.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_LOW_LATENCY_H
#define DFCCL_KERNEL_LOW_LATENCY_H

#include "block.h"
#include "reduce.h"

/* How long a thread waits for one of its lines once the header is there (the line is in flight):
 * a sender that died between the two would otherwise hold the daemon forever.  Then the step is
 * given up (DF_PRIM_BLOCKED), unless preemption is off (the twins), where every wait is endless. */
#define DF_LL_LINE_POLLS 4096u

/* The flag of the lines sent at `step`: the step itself, so that a line of an earlier lap never
 * passes for this one's; + 1, so that memory never written (zeros) never passes for step 0's. */
DF_FN uint32_t df_ll_flag(uint64_t step) { return (uint32_t)step + 1u; }

/* Whether this run's block receives, or sends, through low-latency slots: its collective chose them
 * (DF_COLL_LL) and its link has them (not a network link) -- as both ends of the link see alike. */
DF_FN bool df_ll_receives(const df_run* run) {
  return (run->ctx->stat.flags & DF_COLL_LL) && run->ctx->stat.links.from_prev[df_bid(run->blk)].ll != NULL;
}
DF_FN bool df_ll_sends(const df_run* run) {
  return (run->ctx->stat.flags & DF_COLL_LL) && run->ctx->stat.links.to_next[df_bid(run->blk)].ll != NULL;
}

DF_FN char* df_ll_slot(const df_connector* c, uint64_t step, uint32_t ll_slot_bytes) {
  return c->ll + (size_t)(step % DF_FIFO_STEPS) * ll_slot_bytes;
}

/* Line i's 8 bytes of `src` (bytes [8i, 8i + 8) of the `bytes`, zeros past the end). */
DF_FN uint64_t df_ll_data_of(const char* src, size_t i, size_t bytes) {
  const char* p = src + i * DF_LL_LINE_DATA;
  size_t left = bytes - i * DF_LL_LINE_DATA;
  if (left >= DF_LL_LINE_DATA && ((uintptr_t)p & (DF_LL_LINE_DATA - 1)) == 0) return df_load_element(8, p);
  uint64_t v = 0;
  for (size_t k = 0; k < DF_LL_LINE_DATA && k < left; k++) v |= df_load_element(1, p + k) << (8 * k);
  return v;
}

/* All threads: `bytes` of src as the data lines of `slot`.  The loops over lines are functions of
 * their own, like the reduction's routines, so that the daemon kernel does not hold their
 * registers on every other path. */
DF_NOINLINE void df_ll_write_lines(const df_block* b, const char* src, size_t bytes, char* slot, uint32_t flag) {
  size_t lines = (bytes + DF_LL_LINE_DATA - 1) / DF_LL_LINE_DATA;
  for (size_t i = (size_t)df_tid(b); i < lines; i += (size_t)df_nthreads(b))
    df_ll_store_line(slot + (1 + i) * DF_LL_LINE_BYTES, df_ll_data_of(src, i, bytes), flag);
}

/* All threads, once the leader found the slot's header: its data lines into `dst` (8-byte aligned,
 * room for whole lines).  True on every thread when a line did not come in time (`endless`: no
 * preemption, it waits; `unchecked`: DFCCL_LL_CHECK=0's twin takes the lines as they are). */
DF_NOINLINE bool df_ll_read_lines(const df_block* b, const char* slot, uint32_t flag, char* dst, size_t bytes,
                                  bool unchecked, bool endless) {
  size_t lines = (bytes + DF_LL_LINE_DATA - 1) / DF_LL_LINE_DATA;
  bool late = false;
  for (size_t i = (size_t)df_tid(b); i < lines && !late; i += (size_t)df_nthreads(b)) {
    uint64_t data;
    for (uint64_t polls = 0; !df_ll_load_line(slot + (1 + i) * DF_LL_LINE_BYTES, flag, &data) && !unchecked; polls++) {
      late = polls >= DF_LL_LINE_POLLS && !endless;
      if (late) break;
      df_spin_pause(polls);
    }
    if (!late) df_store_element(8, dst + i * DF_LL_LINE_DATA, data);
  }
  return df_block_sync_or(late);
}

#endif /* DFCCL_KERNEL_LOW_LATENCY_H */
