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
 * The host's ring holds entries as low-latency lines (df_sqe_lines, below), which block 0 takes in
 * one trip over the bus; the mirror holds df_sqe, each valid when its `seq` equals the sequence
 * number a reader expects (stored last, with release order: seq is both the "valid" flag and the
 * position).  The mirror uses the host ring's sequence numbers, so a block's frontier means the
 * same in both.  A reader of the mirror counts itself in `readers_done` once it has copied an
 * entry; block 0 reuses the slot when readers_done == nreaders, the daemon's grid when the host
 * wrote the entry, which the host passes along in the entry (block 0 counts itself as it writes
 * the copy).  A block that does not take part in the collective ignores its copy.  (A reader that
 * skipped entries not addressed to it could read a slot the writer is reusing.)
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
  uint32_t nreaders;     /* readers of this copy of the entry (the grid when the host wrote it) */
  uint32_t readers_done; /* readers that have copied it                             */
  uint32_t nchannels;    /* blocks that take part in this run: from the entry, not from the static
                          * context, which a communicator's connector set rewrites between runs
                          * (a block that reads the entry late must not take the next run's) */
  uint32_t gated;        /* 1: the run waits for its gate before it reads a buffer (daemon.h) */
  uint64_t pad[2];
} df_sqe; /* 64 bytes: one entry per cache line                      */

typedef struct {
  df_sqe* entries;
  uint32_t mask; /* entries - 1; the number of entries is a power of two */
} df_sq;

/* The fields of an entry that describe its run (not the ring's own: seq, readers). */
DF_FN void df_sqe_copy_run(df_sqe* to, const df_sqe* from) {
  to->coll = from->coll;
  to->epoch = from->epoch;
  to->sendbuff = from->sendbuff;
  to->recvbuff = from->recvbuff;
  to->nchannels = from->nchannels;
  to->gated = from->gated;
}

/* ---- the host's ring ----
 * Its entries are written as low-latency lines (platform.h): each 8-byte word holds 4 bytes of the
 * run's description beside a flag of the entry's sequence number and is stored whole, so block 0
 * loads an entry's four lines at once and takes it when every flag is its seq's -- one trip over
 * the bus.  A seq stored last and read with an acquire before the fields behind it cost two trips.
 * Each line has a 64-byte line of memory to itself: one thread's loads of the same 64 bytes of host
 * memory go over the bus one after another (four 16-byte loads of one line took 3.5 us on an H100,
 * one of them 1.3 us, four of four lines 1.4 us: benchmarks/host_read_cost.cu, docs/performance.md,
 * thirty-fourth session).  The host stores the last line (DF_SQE_LINE_SHAPE) after the others with
 * release order, and block 0 loads it with acquire: what the host wrote before the entry is seen
 * after it (on the host target the caller's buffers).  Slots come back through one count,
 * `acknowledged`, which block 0 stores after a system-scope fence (df_sq_acknowledge): the host
 * rewrites slot seq % entries once seq - acknowledged < entries. */
enum { DF_SQE_LINE_RUN, DF_SQE_LINE_SEND, DF_SQE_LINE_RECV, DF_SQE_LINE_SHAPE, DF_SQE_LINES };
#define DF_SQE_LINE_BYTES 16

typedef struct {
  struct {
    char bytes[DF_SQE_LINE_BYTES];
    char pad[64 - DF_SQE_LINE_BYTES];
  } lines[DF_SQE_LINES];
} df_sqe_lines; /* 256 bytes: each line on a 64-byte line of its own */

typedef struct {
  df_sqe_lines* entries;
  volatile uint64_t* acknowledged; /* entries block 0 has handed back */
  uint32_t mask;                   /* entries - 1: a power of two */
} df_sq_lines;

/* The flag of entry seq's lines: + 1, so that a slot never written (zeros) never passes for seq 0. */
DF_HOST_DEVICE_FN uint32_t df_sqe_flag(uint64_t seq) { return (uint32_t)seq + 1u; }

/* The data of each line of an entry for run `e` (its grid: e->nreaders). */
DF_HOST_DEVICE_FN void df_sqe_to_lines(const df_sqe* e, uint64_t data[DF_SQE_LINES]) {
  data[DF_SQE_LINE_RUN] = (uint64_t)e->epoch << 32 | e->coll;
  data[DF_SQE_LINE_SEND] = (uint64_t)(uintptr_t)e->sendbuff;
  data[DF_SQE_LINE_RECV] = (uint64_t)(uintptr_t)e->recvbuff;
  data[DF_SQE_LINE_SHAPE] = (uint64_t)e->nreaders << 32 | e->gated << 31 | e->nchannels;
}

DF_HOST_DEVICE_FN void df_sqe_from_lines(const uint64_t data[DF_SQE_LINES], df_sqe* e) {
  e->coll = (uint32_t)data[DF_SQE_LINE_RUN];
  e->epoch = (uint32_t)(data[DF_SQE_LINE_RUN] >> 32);
  e->sendbuff = (const void*)(uintptr_t)data[DF_SQE_LINE_SEND];
  e->recvbuff = (void*)(uintptr_t)data[DF_SQE_LINE_RECV];
  e->nchannels = (uint32_t)data[DF_SQE_LINE_SHAPE] & 0x7fffffffu;
  e->gated = (uint32_t)data[DF_SQE_LINE_SHAPE] >> 31;
  e->nreaders = (uint32_t)(data[DF_SQE_LINE_SHAPE] >> 32);
}

/* Host code (the submitter, and the tests and benchmarks that stand in for it): run `e` (its grid:
 * e->nreaders) into `slot` as entry `seq`, every line's words stored whole, the last line after
 * the others with release order. */
static inline void df_sqe_write_lines(df_sqe_lines* slot, uint64_t seq, const df_sqe* e) {
  uint64_t data[DF_SQE_LINES];
  df_sqe_to_lines(e, data);
  uint32_t flag = df_sqe_flag(seq);
  for (int l = 0; l < DF_SQE_LINES; l++) {
    int order = l == DF_SQE_LINE_SHAPE ? __ATOMIC_RELEASE : __ATOMIC_RELAXED;
    uint64_t* word = (uint64_t*)(void*)slot->lines[l].bytes;
    __atomic_store_n(&word[0], df_ll_word(data[l], flag, 0), order);
    __atomic_store_n(&word[1], df_ll_word(data[l], flag, 1), order);
  }
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

/* Whether mirror entry `seq` is written: a hint for a block in a wait, which takes entries between
 * its runs (df_fetch_sqes) and, where they join its task queue at the end, in the wait
 * (df_take_in_wait). */
DF_FN bool df_sq_written(df_sq sq, uint64_t seq) { return df_load_acquire_u64(&sq.entries[seq & sq.mask].seq) == seq; }

/* Mirror entry `seq`'s collective and the blocks of its run, when it is written, without taking it: a
 * block in a wait takes an entry only if it joins the task queue at its end (df_take_in_wait). */
DF_FN bool df_sq_peek(df_sq sq, uint64_t seq, uint32_t* coll, uint32_t* nchannels) {
  const df_sqe* e = &sq.entries[seq & sq.mask];
  if (df_load_acquire_u64(&e->seq) != seq) return false;
  *coll = e->coll;
  *nchannels = e->nchannels;
  return true;
}

/* Block 0: the host's entry `seq` into `out` (nreaders: the grid when the host wrote it), its four
 * lines loaded together, the acquire last; false when a line is not seq's yet (unwritten, or being
 * written).  *next_written (when not NULL): whether the next entry's last line was written when
 * this one was read -- a relaxed load that goes out beside them, so that a caller that stops on
 * "no" makes one trip, not two.  A "yes" is only a hint: that entry's own read decides.  A call,
 * not inlined: inlined into every wait's look (df_take_in_wait), its sixteen words made the daemon
 * kernel spill 2,258 bytes of registers where it spilled 252 (ptxas, sm_90); a call costs little
 * beside the trip. */
DF_NOINLINE bool df_sq_lines_read(df_sq_lines q, uint64_t seq, df_sqe* out, bool* next_written) {
  const df_sqe_lines* e = &q.entries[seq & q.mask];
  const uint64_t* next_shape =
      (const uint64_t*)(const void*)q.entries[(seq + 1) & q.mask].lines[DF_SQE_LINE_SHAPE].bytes;
  uint64_t next_word = next_written ? df_load_relaxed_u64(next_shape) : 0;
  uint32_t words[DF_SQE_LINES][4];
  for (int l = 0; l < DF_SQE_LINES; l++) df_ll_load_words(e->lines[l].bytes, l == DF_SQE_LINE_SHAPE, words[l]);
  /* Every flag is compared with the last line's, and that one with seq's: no check can run before
   * the last load is sent.  Compared with seq's flag each, lines 0-2's checks needed nothing of the
   * last line, and ptxas placed them before its acquire load in the daemon kernel: the warp waited
   * for line 0's trip before it sent the last line's load and the next entry's, and a look cost two
   * trips (stamps on an H100: 3.4 us from a look's start to the entry seen; a lone test kernel was
   * scheduled well, the daemon's copy was not -- its SASS, thirty-ninth session). */
  uint32_t flag = words[DF_SQE_LINE_SHAPE][1];
  uint64_t data[DF_SQE_LINES];
  bool whole = flag == df_sqe_flag(seq);
  for (int l = 0; l < DF_SQE_LINES; l++) whole &= df_ll_line_data(words[l], flag, &data[l]);
  if (!whole) return false;
  df_sqe_from_lines(data, out);
  if (next_written) *next_written = (uint32_t)(next_word >> 32) == flag + 1u; /* df_sqe_flag(seq + 1) */
  return true;
}

/* Block 0: whether the host's entry `seq` is written (its last line's first word), a hint for a
 * block in a wait (df_entries_waiting). */
DF_FN bool df_sq_lines_written(df_sq_lines q, uint64_t seq) {
  const uint64_t* shape = (const uint64_t*)(const void*)q.entries[seq & q.mask].lines[DF_SQE_LINE_SHAPE].bytes;
  return (uint32_t)(df_load_relaxed_u64(shape) >> 32) == df_sqe_flag(seq);
}

/* Block 0: publishes `e`, the host's entry *forwarded as read (df_sq_lines_read), in the mirror for
 * the other blocks (block 0 counts as its first reader: it takes its own part from `e`, not from
 * the mirror), and advances *forwarded.  False when that mirror slot is still being read: the
 * entry is read again later.  The host learns that it may rewrite its slot from
 * df_sq_acknowledge. */
DF_FN bool df_sq_forward(df_sq mirror, uint64_t* forwarded, const df_sqe* e) {
  df_sqe* to = &mirror.entries[*forwarded & mirror.mask];
  if (e->nreaders > 1) { /* other blocks read the mirror; a grid of one does not need it */
    if (df_load_acquire_u32(&to->readers_done) != to->nreaders) return false; /* a block still has to read it */
    df_sqe_copy_run(to, e);
    to->nreaders = e->nreaders;
    to->readers_done = 1;                           /* block 0 */
    df_store_release_gpu_u64(&to->seq, *forwarded); /* only this GPU's blocks read the mirror */
  }
  (*forwarded)++;
  return true;
}

/* Block 0: tells the host that the entries before `forwarded` may be rewritten; *acknowledged: the
 * first entry not told yet.  A system-scope fence orders every load of those entries before the
 * count's store (block 0, the entries' one reader, is its one writer).  Called when the runs taken
 * are under way -- the fence costs most of a microsecond -- and before the block quits. */
DF_FN void df_sq_acknowledge(df_sq_lines host, uint64_t* acknowledged, uint64_t forwarded) {
  if (*acknowledged == forwarded) return;
  df_fence_system();
  df_store_relaxed_u64(host.acknowledged, forwarded);
  *acknowledged = forwarded;
}

#endif /* DFCCL_QUEUE_SQ_H */
