/*
 * coll/dfccl host blocks: the host memory that staging copies device buffers into, kept for the next
 * calls.  A staged call copies its spans to the host and back; from pageable memory a copy goes
 * through the driver's bounce buffer, and a fresh malloc'd block faults in every page on its first
 * copy.  Pinned memory (dfcclHostAlloc) copies at the link's rate, but pinning costs far more than
 * a copy: so the blocks are pinned once and reused.
 *
 * Sizes are rounded up to a power of two (at least DFCCL_HOST_BLOCK_MIN), so that calls of similar
 * sizes share blocks.  At most DFCCL_HOST_BLOCKS_KEPT blocks, DFCCL_HOST_BLOCKS_KEPT_BYTES in all,
 * wait for reuse; a block given back beyond that is freed (the smallest goes first).  Every block is
 * freed when the component closes.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

#define DFCCL_HOST_BLOCK_MIN ((size_t)4096)
#define DFCCL_HOST_BLOCKS_KEPT 8
#define DFCCL_HOST_BLOCKS_KEPT_BYTES ((size_t)512 << 20)

typedef struct {
  void* block;
  size_t capacity;
} kept_block_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kept_block_t kept[DFCCL_HOST_BLOCKS_KEPT];
static int nkept;
static size_t kept_bytes;

static size_t rounded(size_t bytes) {
  size_t capacity = DFCCL_HOST_BLOCK_MIN;
  while (capacity < bytes && capacity <= SIZE_MAX / 2) capacity *= 2;
  return capacity < bytes ? bytes : capacity;
}

static void release(void* block) {
  if (dfcclHostFree(block) != dfcclSuccess)
    opal_output(0, "coll:dfccl: freeing a staging block: %s", dfcclGetLastErrorMessage());
}

/* The kept block that fits `bytes` most closely, taken off the list; -1: none fits. */
static int closest_fit(size_t bytes) {
  int best = -1;
  for (int i = 0; i < nkept; i++)
    if (kept[i].capacity >= bytes && (best < 0 || kept[i].capacity < kept[best].capacity)) best = i;
  return best;
}

static kept_block_t take_at(int i) {
  kept_block_t b = kept[i];
  kept[i] = kept[--nkept];
  kept_bytes -= b.capacity;
  return b;
}

void* mca_coll_dfccl_host_block_take(size_t bytes, size_t* capacity) {
  pthread_mutex_lock(&lock);
  int i = closest_fit(bytes);
  kept_block_t b = i >= 0 ? take_at(i) : (kept_block_t){NULL, 0};
  pthread_mutex_unlock(&lock);
  if (b.block == NULL) {
    b.capacity = rounded(bytes);
    if (dfcclHostAlloc(b.capacity, &b.block) != dfcclSuccess) {
      opal_output(0, "coll:dfccl: staging %zu bytes of device memory: %s", bytes, dfcclGetLastErrorMessage());
      return NULL;
    }
  }
  *capacity = b.capacity;
  return b.block;
}

void mca_coll_dfccl_host_block_give(void* block, size_t capacity) {
  if (block == NULL) return;
  void* unkept = block;
  pthread_mutex_lock(&lock);
  if (capacity <= DFCCL_HOST_BLOCKS_KEPT_BYTES) {
    /* Make room by freeing smaller blocks: the larger one serves their sizes too. */
    while (nkept > 0 && (nkept == DFCCL_HOST_BLOCKS_KEPT || kept_bytes + capacity > DFCCL_HOST_BLOCKS_KEPT_BYTES)) {
      int smallest = 0;
      for (int i = 1; i < nkept; i++)
        if (kept[i].capacity < kept[smallest].capacity) smallest = i;
      if (kept[smallest].capacity > capacity) break; /* keep the larger ones: free the new block */
      kept_block_t b = take_at(smallest);
      pthread_mutex_unlock(&lock);
      release(b.block);
      pthread_mutex_lock(&lock);
    }
    if (nkept < DFCCL_HOST_BLOCKS_KEPT && kept_bytes + capacity <= DFCCL_HOST_BLOCKS_KEPT_BYTES) {
      kept[nkept++] = (kept_block_t){block, capacity};
      kept_bytes += capacity;
      unkept = NULL;
    }
  }
  pthread_mutex_unlock(&lock);
  if (unkept != NULL) release(unkept);
}

void mca_coll_dfccl_host_blocks_free(void) {
  pthread_mutex_lock(&lock);
  while (nkept > 0) {
    kept_block_t b = take_at(nkept - 1);
    release(b.block);
  }
  pthread_mutex_unlock(&lock);
}
