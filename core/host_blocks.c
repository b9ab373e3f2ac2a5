/*
 * Pinned host blocks kept for reuse: what glue code that stages device buffers through host memory
 * call after call needs (coll/dfccl hands the calls it does not run to a library that is not
 * CUDA-aware, with host copies of their device buffers).  From pageable memory a copy goes through
 * the driver's bounce buffer, and a fresh block faults in every page on its first copy; pinned
 * memory (dfcclHostAlloc) copies at the link's rate, but pinning costs far more than a copy -- so a
 * block is pinned once and taken again by later calls.
 *
 * Sizes are rounded up to a power of two (at least DF_HOST_BLOCK_MIN), so that calls of similar
 * sizes share blocks, and a take gets the kept block that fits most closely.  At most
 * DF_HOST_BLOCKS_KEPT blocks, DF_HOST_BLOCKS_KEPT_BYTES in all, wait for reuse: a block given back
 * beyond that frees smaller kept ones to make room (the larger one serves their sizes too), or else
 * is freed itself.  A block's size is in its dfcclHostAlloc header (memory.c).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdint.h>

#include "internal.h"

#define DF_HOST_BLOCK_MIN ((size_t)4096)
#define DF_HOST_BLOCKS_KEPT 8
#define DF_HOST_BLOCKS_KEPT_BYTES ((size_t)512 << 20)

typedef struct {
  void* block;
  size_t capacity;
} kept_block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kept_block kept[DF_HOST_BLOCKS_KEPT];
static int nkept;
static size_t kept_bytes;

static size_t rounded(size_t bytes) {
  size_t capacity = DF_HOST_BLOCK_MIN;
  while (capacity < bytes && capacity <= SIZE_MAX / 2) capacity *= 2;
  return capacity < bytes ? bytes : capacity;
}

/* Caller holds lock: the kept block that fits `bytes` most closely; -1: none fits. */
static int closest_fit(size_t bytes) {
  int best = -1;
  for (int i = 0; i < nkept; i++)
    if (kept[i].capacity >= bytes && (best < 0 || kept[i].capacity < kept[best].capacity)) best = i;
  return best;
}

/* Caller holds lock: kept block i, off the list. */
static kept_block take_at(int i) {
  kept_block b = kept[i];
  kept[i] = kept[--nkept];
  kept_bytes -= b.capacity;
  return b;
}

/* Frees a block that is not kept; the first failure is the one to tell. */
static void release(void* block, dfcclResult_t* first) {
  dfcclResult_t r = dfcclHostFree(block);
  if (r != dfcclSuccess && *first == dfcclSuccess) *first = r;
}

dfcclResult_t dfcclHostBlockTake(size_t bytes, void** block, size_t* capacity) {
  if (block == NULL) return df_error(dfcclInvalidArgument, "dfcclHostBlockTake: block is NULL");
  *block = NULL;
  if (capacity != NULL) *capacity = 0;
  pthread_mutex_lock(&lock);
  int i = closest_fit(bytes);
  kept_block b = i >= 0 ? take_at(i) : (kept_block){NULL, 0};
  pthread_mutex_unlock(&lock);
  if (b.block == NULL) {
    b.capacity = rounded(bytes);
    DF_CHECK(dfcclHostAlloc(b.capacity, &b.block));
  }
  *block = b.block;
  if (capacity != NULL) *capacity = b.capacity;
  return dfcclSuccess;
}

dfcclResult_t dfcclHostBlockGive(void* block) {
  if (block == NULL) return dfcclSuccess;
  size_t capacity;
  DF_CHECK(df_host_alloc_size(block, &capacity, "dfcclHostBlockGive"));
  dfcclResult_t r = dfcclSuccess;
  void* unkept = block;
  pthread_mutex_lock(&lock);
  if (capacity <= DF_HOST_BLOCKS_KEPT_BYTES) {
    /* Room made by freeing smaller blocks: the larger one serves their sizes too. */
    while (nkept > 0 && (nkept == DF_HOST_BLOCKS_KEPT || kept_bytes + capacity > DF_HOST_BLOCKS_KEPT_BYTES)) {
      int smallest = 0;
      for (int i = 1; i < nkept; i++)
        if (kept[i].capacity < kept[smallest].capacity) smallest = i;
      if (kept[smallest].capacity > capacity) break; /* the larger ones stay: the new block goes */
      kept_block b = take_at(smallest);
      pthread_mutex_unlock(&lock);
      release(b.block, &r);
      pthread_mutex_lock(&lock);
    }
    if (nkept < DF_HOST_BLOCKS_KEPT && kept_bytes + capacity <= DF_HOST_BLOCKS_KEPT_BYTES) {
      kept[nkept++] = (kept_block){block, capacity};
      kept_bytes += capacity;
      unkept = NULL;
    }
  }
  pthread_mutex_unlock(&lock);
  if (unkept != NULL) release(unkept, &r);
  return r;
}

dfcclResult_t dfcclHostBlocksFree(int* freed) {
  dfcclResult_t r = dfcclSuccess;
  int n = 0;
  pthread_mutex_lock(&lock);
  for (; nkept > 0; n++) release(take_at(nkept - 1).block, &r);
  pthread_mutex_unlock(&lock);
  if (freed != NULL) *freed = n;
  return r;
}
