/*
 * Completion queue: one ring per daemon block in pinned host memory, each written by its block's
 * leader alone and read by the poller alone.  A block stores the completion in its ring, then its
 * ring's tail (a release store); the poller reads the tail (acquire), takes the entries up to it,
 * then stores its head, which the block reads only when its ring looks full.
 *
 * No word is read-modify-written across the bus.  The paper's CQ (an array of slots, each taken by
 * a compare-and-swap of the GPU and freed by a plain store of the host) relies on the GPU's atomics
 * on mapped host memory, which CUDA does not make atomic with respect to the host: on an H100 that
 * time-sliced four processes, a slot the host had freed came back with the completion it had
 * already taken, and the run it named completed twice (docs/design.md).  Here the GPU only stores,
 * and each word has one writer.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_QUEUE_CQ_H
#define DFCCL_QUEUE_CQ_H

#include "../platform/platform.h"

/* Tails and heads are 64 bytes apart: a block's tail, the host's head and the next block's tail
 * never share a line. */
#define DF_CQ_STRIDE 8

typedef struct {
  volatile uint64_t* entries;     /* [block][ring]                                        */
  volatile uint64_t* tails;       /* [block * DF_CQ_STRIDE]: completions the block stored */
  const volatile uint64_t* heads; /* [block * DF_CQ_STRIDE]: completions the host took    */
  uint32_t ring;                  /* entries per block: a power of two                    */
} df_cq;

/* A completion: the run's epoch, why it failed (df_run_error; 0: it completed) and its collective
 * index (below 2^24). */
DF_FN uint64_t df_cqe_pack(uint32_t coll, uint32_t epoch, uint32_t error) {
  return ((uint64_t)epoch << 32) | ((uint64_t)(error & 0xffu) << 24) | (coll & 0xffffffu);
}
DF_FN uint32_t df_cqe_coll(uint64_t cqe) { return (uint32_t)cqe & 0xffffffu; }
DF_FN uint32_t df_cqe_error(uint64_t cqe) { return (uint32_t)(cqe >> 24) & 0xffu; }
DF_FN uint32_t df_cqe_epoch(uint64_t cqe) { return (uint32_t)(cqe >> 32); }

/* Block `block`'s leader: publishes a completion.  *tail (the block's count of stored entries) and
 * *head_seen (the host's head as last read) live in the block's state across launches.  False when
 * the ring is full: the host has not taken its entries yet. */
DF_FN bool df_cq_try_write(df_cq cq, uint32_t block, uint64_t* tail, uint64_t* head_seen, uint64_t cqe) {
  if (*tail - *head_seen >= cq.ring) {
    *head_seen = df_load_acquire_u64(&cq.heads[(size_t)block * DF_CQ_STRIDE]);
    if (*tail - *head_seen >= cq.ring) return false;
  }
  cq.entries[(size_t)block * cq.ring + (*tail & (cq.ring - 1))] = cqe;
  (*tail)++;
  df_store_release_u64(&cq.tails[(size_t)block * DF_CQ_STRIDE], *tail); /* publishes the entry */
  return true;
}

#endif /* DFCCL_QUEUE_CQ_H */
