/*
 * Submission queue: a ring in memory both the host and the daemon reach (pinned host memory for a
 * GPU), written by one host thread at a time and read by every daemon block.
 *
 * An entry is valid when its `seq` equals the sequence number a reader expects; the writer stores
 * `seq` last, with release order, so seq is both the "valid" flag and the position.  Every block
 * of the daemon reads every entry (as in the paper) and adds one to `readers_done` once it has
 * copied it; the writer may reuse the slot when readers_done == nreaders, the daemon's grid when
 * the entry was written.  A block that does not take part in the collective ignores its copy.  (A
 * reader that skipped entries not addressed to it could read a slot the writer is reusing.)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_QUEUE_SQ_H
#define DFCCL_QUEUE_SQ_H

#include "../kernel/platform.h"

#define DF_SQE_EXIT 0xFFFFFFFFu /* coll value of the final-exit entry */
#define DF_SEQ_NONE UINT64_MAX  /* seq of a slot never written        */

typedef struct {
  volatile uint64_t seq;   /* sequence number; published last             */
  uint32_t coll;           /* collective index, or DF_SQE_EXIT            */
  uint32_t epoch;          /* which run of the collective this is         */
  const void* sendbuff;
  void* recvbuff;
  uint32_t nreaders;       /* blocks that will read it: the daemon's grid */
  uint32_t readers_done;   /* blocks that have copied the entry           */
  uint64_t pad[3];
} df_sqe;                  /* 64 bytes: one entry per cache line          */

typedef struct {
  df_sqe* entries;
  uint32_t mask; /* entries - 1; the number of entries is a power of two */
} df_sq;

/* ---- reader side (a daemon block's leader thread) ---- */

/* Takes the entry *frontier into `out` and advances *frontier; false if it is not written yet. */
DF_FN bool df_sq_read(df_sq sq, uint64_t* frontier, df_sqe* out) {
  df_sqe* e = &sq.entries[*frontier & sq.mask];
  if (df_load_acquire_u64(&e->seq) != *frontier) return false;
  out->coll = e->coll;
  out->epoch = e->epoch;
  out->sendbuff = e->sendbuff;
  out->recvbuff = e->recvbuff;
  out->nreaders = e->nreaders;
  /* The writer reuses the slot after the last reader's increment; our copy is complete first. */
  df_atomic_add_u32(&e->readers_done, 1);
  (*frontier)++;
  return true;
}

#endif /* DFCCL_QUEUE_SQ_H */
