/*
 * Submission queue: a ring in pinned host memory written by one host thread at a time, and its
 * mirror in the daemon's own memory.
 *
 * Only block 0 of the daemon reads the host's ring: it copies each entry into the mirror, and
 * every block (block 0 too) reads the mirror.  Every block polling host memory over PCIe slowed
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
 * daemon's grid when the host wrote the entry, which the host passes along in `grid`.  A block
 * that does not take part in the collective ignores its copy.  (A reader that skipped entries not addressed to it
 * could read a slot the writer is reusing.)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_QUEUE_SQ_H
#define DFCCL_QUEUE_SQ_H

#include "../platform/platform.h"

#define DF_SQE_EXIT 0xFFFFFFFFu /* coll value of the final-exit entry */
#define DF_SEQ_NONE UINT64_MAX  /* seq of a slot never written        */

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
  uint64_t pad[2];
} df_sqe; /* 64 bytes: one entry per cache line                      */

typedef struct {
  df_sqe* entries;
  uint32_t mask; /* entries - 1; the number of entries is a power of two */
} df_sq;

/* ---- reader side (a daemon block's leader thread) ---- */

/* Takes the mirror's entry *frontier into `out` and advances *frontier; false if it is not
 * written yet. */
DF_FN bool df_sq_read(df_sq sq, uint64_t* frontier, df_sqe* out) {
  df_sqe* e = &sq.entries[*frontier & sq.mask];
  if (df_load_acquire_u64(&e->seq) != *frontier) return false;
  out->coll = e->coll;
  out->epoch = e->epoch;
  out->sendbuff = e->sendbuff;
  out->recvbuff = e->recvbuff;
  out->nreaders = e->nreaders;
  out->nchannels = e->nchannels;
  /* Block 0 reuses the slot after the last reader's increment: our copy is complete first. */
  df_fence_device();
  df_atomic_add_u32(&e->readers_done, 1);
  (*frontier)++;
  return true;
}

/* Block 0: copies the host's new entries into the mirror while it has free slots.  *forwarded
 * is the next host entry to copy.  Returns how many it copied.  Every load of host memory is a trip
 * over the bus (about a microsecond), so the next entry's sequence number is loaded together with
 * this entry's fields -- one trip for both -- rather than after this one's copy is published; it is
 * an acquire load, so the next entry's fields are read after it, in the next round. */
DF_FN uint32_t df_sq_forward(df_sq host, df_sq mirror, uint64_t* forwarded) {
  uint32_t n = 0;
  uint64_t seq = df_load_acquire_u64(&host.entries[*forwarded & host.mask].seq);
  while (seq == *forwarded) {
    df_sqe* from = &host.entries[*forwarded & host.mask];
    df_sqe* to = &mirror.entries[*forwarded & mirror.mask];
    if (df_load_acquire_u32(&to->readers_done) != to->nreaders) break; /* a block still has to read it */
    uint32_t coll = from->coll, epoch = from->epoch, grid = from->grid, nchannels = from->nchannels;
    const void* sendbuff = from->sendbuff;
    void* recvbuff = from->recvbuff;
    uint64_t next = df_load_acquire_u64(&host.entries[(*forwarded + 1) & host.mask].seq);
    to->coll = coll;
    to->epoch = epoch;
    to->sendbuff = sendbuff;
    to->recvbuff = recvbuff;
    to->nreaders = grid;
    to->nchannels = nchannels;
    to->readers_done = 0;
    df_store_release_u64(&to->seq, *forwarded);
    /* The host may rewrite its slot after this: the release orders every load from it before (a
     * system-scope release: no fence of its own needed).  Block 0 is the host entry's one reader: it
     * stores the count, a read-modify-write of host memory would not be atomic with respect to the
     * host. */
    df_store_release_u32(&from->readers_done, 1);
    (*forwarded)++;
    n++;
    seq = next;
  }
  return n;
}

#endif /* DFCCL_QUEUE_SQ_H */
