/*
 * Completion queue: one ring per daemon block in pinned host memory, each written by its block's
 * leader alone and read by the poller alone.  An entry is its own "valid" flag: the block stores it
 * with one store, after the system-scope fence that already publishes the run's results, and the
 * entry carries the parity of the ring's lap it was written in (DF_CQE_LAP).  The poller takes the
 * entry at its head when that parity is the head's lap's, and then stores its head, which the block
 * reads only when its ring looks full.  (A tail published after the entry needed a second
 * system-scope release on every run: about a microsecond of each small collective.)
 *
 * The poller never writes an entry: it used to empty each one it took, and the block's next entry
 * -- most often on the same 64-byte line -- then landed on a line the host's cache held modified,
 * which the host must give up before the GPU's write can be merged and seen.  With the lap's parity
 * an entry left from the last lap reads as not yet written.
 *
 * No word is read-modify-written across the bus.  The paper's CQ (an array of slots, each taken by
 * a compare-and-swap of the GPU and freed by a plain store of the host) relies on the GPU's atomics
 * on mapped host memory, which CUDA does not make atomic with respect to the host: on an H100 that
 * time-sliced four processes, a slot the host had freed came back with the completion it had
 * already taken, and the run it named completed twice (docs/design.md).  Here each word is written
 * by one agent at a time, handed over by the head: the GPU writes an entry only after the host's
 * head says it was emptied.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_QUEUE_CQ_H
#define DFCCL_QUEUE_CQ_H

#include "../platform/platform.h"

/* Heads are 64 bytes apart: the host's heads of neighbouring blocks never share a line. */
#define DF_CQ_STRIDE 8

typedef struct {
  volatile uint64_t* entries;     /* [block][ring]: 0 until first written (df_cq_take)      */
  const volatile uint64_t* heads; /* [block * DF_CQ_STRIDE]: completions the host took    */
  uint32_t ring;                  /* entries per block: a power of two                    */
} df_cq;

/* A completion: the run's epoch, DF_CQE_VALID, why it failed (df_run_error, below 128; 0: it
 * completed), the parity of the ring's lap (DF_CQE_LAP, set by df_cq_try_write) and its collective
 * index (below 2^23; DF_MAX_COLLS is far below). */
#define DF_CQE_VALID (1u << 31)
#define DF_CQE_LAP (1u << 23)
DF_FN uint64_t df_cqe_pack(uint32_t coll, uint32_t epoch, uint32_t error) {
  return ((uint64_t)epoch << 32) | DF_CQE_VALID | ((uint64_t)(error & 0x7fu) << 24) | (coll & 0x7fffffu);
}
DF_FN uint32_t df_cqe_coll(uint64_t cqe) { return (uint32_t)cqe & 0x7fffffu; }
/* The lap bit an entry written at ring position `count` (a tail or a head) carries: odd laps set it. */
DF_HOST_DEVICE_FN uint64_t df_cqe_lap(uint64_t count, uint32_t ring) { return (count / ring) & 1u ? DF_CQE_LAP : 0; }
DF_FN uint32_t df_cqe_error(uint64_t cqe) { return (uint32_t)(cqe >> 24) & 0x7fu; }
DF_FN uint32_t df_cqe_epoch(uint64_t cqe) { return (uint32_t)(cqe >> 32); }

/* ---- writer side (a daemon block's leader thread) ---- */

/* Publishes a completion; the caller's df_fence_system before it is its release.  *tail (the
 * block's count of stored entries) and *head_seen (the host's head as last read) live in the
 * block's state across launches.  False when the ring is full: the host has not taken its entries
 * yet. */
DF_FN bool df_cq_try_write(df_cq cq, uint32_t block, uint64_t* tail, uint64_t* head_seen, uint64_t cqe) {
  if (*tail - *head_seen >= cq.ring) {
    *head_seen = df_load_acquire_u64(&cq.heads[(size_t)block * DF_CQ_STRIDE]);
    if (*tail - *head_seen >= cq.ring) return false;
  }
  df_store_relaxed_u64(&cq.entries[(size_t)block * cq.ring + (*tail & (cq.ring - 1))],
                       cqe | df_cqe_lap(*tail, cq.ring));
  (*tail)++;
  return true;
}

/* ---- reader side (host code: the poller, and tests) ---- */

/* Takes the next completion of one block's ring (`entries`, `ring` of them), 0 when there is none
 * -- the entry at *head is empty (never written) or of the last lap; *head counts the completions
 * taken.  It returns the entry without its lap bit.  The caller's release store of the head, which
 * lets the block write the entry again, comes after its reads of the entries. */
static inline uint64_t df_cq_take(const volatile uint64_t* entries, uint32_t ring, uint64_t* head) {
  uint64_t cqe = __atomic_load_n(&entries[*head & (ring - 1)], __ATOMIC_ACQUIRE);
  if (!(cqe & DF_CQE_VALID) || (cqe & DF_CQE_LAP) != df_cqe_lap(*head, ring)) return 0;
  (*head)++;
  return cqe & ~(uint64_t)DF_CQE_LAP;
}

#endif /* DFCCL_QUEUE_CQ_H */
