/*
 * Submission queue: a ring in pinned host memory written by one host thread at a time, and its
 * mirror in the daemon's own memory.
 *
 * Only block 0 of the daemon reads the host's ring: it takes each entry from there and copies it
 * into the mirror, which the other blocks read.  Every block polling host memory over PCIe slowed
 * each of those reads, the CQE write and the host's own accesses by the number of blocks (a
 * one-block collective took 250 us instead of 27 us once the grid had 24 blocks); a GPU-memory
 * poll costs the link nothing.  Every collective has a channel on block 0, so no block waits for
 * an entry that block 0 would not read soon anyway.
 *
 * An entry is valid when its `seq` equals the sequence number a reader expects; the writer stores
 * `seq` last, with release order, so seq is both the "valid" flag and the position.  The mirror
 * uses the host ring's sequence numbers, so a block's frontier means the same in both.  A reader
 * counts itself in `readers_done` once it has copied an entry; the writer reuses the slot when
 * readers_done == nreaders: 1 (block 0, which stores it) in the host ring; in the mirror, the
 * daemon's grid when the host wrote the entry, which the host passes along in `grid` (block 0
 * counts itself as it writes the copy).  A block that does not take part in the collective ignores
 * its copy.  (A reader that skipped entries not addressed to it could read a slot the writer is
 * reusing.)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_QUEUE_SQ_H
#define DFCCL_QUEUE_SQ_H

#include "../platform/platform.h"

#define DF_SQE_EXIT 0xFFFFFFFFu /* coll value of the final-exit entry */
#define DF_SEQ_NONE UINT64_MAX  /* seq of a slot never written        */
/* Rings of at least this many entries get a lone run's slot back a round late (df_fetch_sqes). */
#define DF_SQ_LAZY_HAND_BACK 64

typedef struct {
  volatile uint64_t seq; /* sequence number; published last                         */
  uint32_t coll;         /* collective index, or DF_SQE_EXIT                        */
  uint32_t epoch;        /* which run of the collective this is                     */
  const void* sendbuff;
  void* recvbuff;
  uint32_t nreaders;     /* readers of this copy of the entry                       */
  uint32_t readers_done; /* readers that have copied it                             */
  uint32_t grid;         /* host ring: the grid when written = readers in the mirror */
  uint32_t nchannels;    /* blocks that take part in this run: from the entry, not from the static
                          * context, which a communicator's connector set rewrites between runs
                          * (a block that reads the entry late must not take the next run's) */
  uint32_t gated;        /* 1: the run waits for its gate before it reads a buffer (daemon.h) */
  uint32_t pad32;
  uint64_t pad;
} df_sqe; /* 64 bytes: one entry per cache line                      */

typedef struct {
  df_sqe* entries;
  uint32_t mask; /* entries - 1; the number of entries is a power of two */
} df_sq;

/* The fields of an entry that describe its run (not the ring's own: seq, readers, grid). */
DF_FN void df_sqe_copy_run(df_sqe* to, const df_sqe* from) {
  to->coll = from->coll;
  to->epoch = from->epoch;
  to->sendbuff = from->sendbuff;
  to->recvbuff = from->recvbuff;
  to->nchannels = from->nchannels;
  to->gated = from->gated;
}

/* ---- reader side (a daemon block's leader thread) ---- */

/* Takes the mirror's entry *frontier into `out` and advances *frontier; false if it is not
 * written yet. */
DF_FN bool df_sq_read(df_sq sq, uint64_t* frontier, df_sqe* out) {
  df_sqe* e = &sq.entries[*frontier & sq.mask];
  if (df_load_acquire_gpu_u64(&e->seq) != *frontier) return false;
  df_sqe_copy_run(out, e);
  out->nreaders = e->nreaders;
  /* Block 0 reuses the slot after the last reader's increment: our copy is complete first. */
  df_fence_device();
  df_atomic_add_u32(&e->readers_done, 1);
  (*frontier)++;
  return true;
}

/* Whether entry `seq` is written: a hint for a block in a wait, which takes entries between its runs
 * (df_fetch_sqes) and, where they join its task queue at the end, in the wait (df_take_in_wait). */
DF_FN bool df_sq_written(df_sq sq, uint64_t seq) { return df_load_acquire_u64(&sq.entries[seq & sq.mask].seq) == seq; }

/* Entry `seq`'s collective and the blocks of its run, when it is written, without taking it: a block
 * in a wait takes an entry only if it joins the task queue at its end (df_take_in_wait). */
DF_FN bool df_sq_peek(df_sq sq, uint64_t seq, uint32_t* coll, uint32_t* nchannels) {
  const df_sqe* e = &sq.entries[seq & sq.mask];
  if (df_load_acquire_u64(&e->seq) != seq) return false;
  *coll = e->coll;
  *nchannels = e->nchannels;
  return true;
}

/* Block 0: takes the host's entry *forwarded into `out` and publishes a copy in the mirror for the
 * other blocks (block 0 counts as its first reader: it takes its own part from `out`, not from the
 * mirror).  False when that entry is not written yet or its mirror slot is still being read.
 *
 * Every load of host memory is a trip over the bus (about a microsecond), and an acquire load holds
 * back every later load of the block's leader until it returns: so one entry per call, and the
 * caller decides whether to look for the next one before running this one (df_fetch_sqes).  The
 * look's answer comes with this entry: *next_written (when not NULL) tells whether the next entry
 * was written when this one's fields were read -- a relaxed load that goes out beside them, so a
 * caller that stops on "no" makes one trip, not two (an acquire look of its own cost a small run
 * 1.9 us on an H100).  A "yes" is only a hint: the next call reads that entry with an acquire.  The
 * host learns that it may rewrite the slot from df_sq_acknowledge.  `seen`: the caller has just
 * read the entry's seq with an acquire (df_sq_peek) -- one trip over the bus fewer. */
DF_FN bool df_sq_forward_entry(df_sq host, df_sq mirror, uint64_t* forwarded, df_sqe* out, bool* next_written,
                               bool seen) {
  const df_sqe* from = &host.entries[*forwarded & host.mask];
  if (!seen && df_load_acquire_u64(&from->seq) != *forwarded) return false;
  df_sqe* to = &mirror.entries[*forwarded & mirror.mask];
  if (df_load_acquire_u32(&to->readers_done) != to->nreaders) return false; /* a block still has to read it */
  uint64_t next_seq = df_load_relaxed_u64(&host.entries[(*forwarded + 1) & host.mask].seq);
  df_sqe_copy_run(out, from);
  if (next_written) *next_written = next_seq == *forwarded + 1;
  out->nreaders = from->grid;
  if (out->nreaders > 1) { /* other blocks read the mirror; a grid of one does not need it */
    df_sqe_copy_run(to, out);
    to->nreaders = out->nreaders;
    to->readers_done = 1;                           /* block 0 */
    df_store_release_gpu_u64(&to->seq, *forwarded); /* only this GPU's blocks read the mirror */
  }
  (*forwarded)++;
  return true;
}

/* Block 0: df_sq_forward_entry of an entry nobody has looked at yet (df_fetch_sqes). */
DF_FN bool df_sq_forward(df_sq host, df_sq mirror, uint64_t* forwarded, df_sqe* out, bool* next_written) {
  return df_sq_forward_entry(host, mirror, forwarded, out, next_written, false);
}

/* Block 0: tells the host that the entries before `forwarded` may be rewritten; *acknowledged: the
 * first entry not told yet.  A system-scope fence orders every load of those entries before (a
 * read-modify-write of host memory would not be atomic with respect to the host: block 0, the
 * entries' one reader, stores the count).  Called when the runs taken are under way -- the fence
 * costs most of a microsecond -- and before the block quits. */
DF_FN void df_sq_acknowledge(df_sq host, uint64_t* acknowledged, uint64_t forwarded) {
  if (*acknowledged == forwarded) return;
  df_fence_system();
  for (; *acknowledged != forwarded; (*acknowledged)++)
    df_store_relaxed_u32(&host.entries[*acknowledged & host.mask].readers_done, 1u);
}

#endif /* DFCCL_QUEUE_SQ_H */
