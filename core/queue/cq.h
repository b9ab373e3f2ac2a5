/*
 * Completion queue, the paper's optimized form: not a ring but an array of 64-bit slots.  A daemon
 * block publishes a completion with one compare-and-swap of a free slot (DF_CQE_FREE -> value); the
 * poller scans the slots, takes each value and frees its slot.  A value carries the collective
 * index and the run's epoch, so the poller can tell a completion it did not expect (it reports
 * those; nothing is dropped silently).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_QUEUE_CQ_H
#define DFCCL_QUEUE_CQ_H

#include "../kernel/platform.h"

#define DF_CQE_FREE UINT64_MAX

typedef struct {
  uint64_t* slots;
  uint32_t nslots;
} df_cq;

DF_FN uint64_t df_cqe_pack(uint32_t coll, uint32_t epoch) { return ((uint64_t)epoch << 32) | coll; }
DF_FN uint32_t df_cqe_coll(uint64_t cqe) { return (uint32_t)cqe; }
DF_FN uint32_t df_cqe_epoch(uint64_t cqe) { return (uint32_t)(cqe >> 32); }

/* Tries each slot once, starting at *hint.  Returns true when the completion is published (and
 * moves *hint past the slot used, so that blocks spread over the slots). */
DF_FN bool df_cq_try_write(df_cq cq, uint32_t* hint, uint64_t cqe) {
  for (uint32_t i = 0; i < cq.nslots; i++) {
    uint32_t s = (*hint + i) % cq.nslots;
    if (df_atomic_cas_u64(&cq.slots[s], DF_CQE_FREE, cqe) == DF_CQE_FREE) {
      *hint = s + 1;
      return true;
    }
  }
  return false;
}

#endif /* DFCCL_QUEUE_CQ_H */
