/*
 * Submission queue, host side: one writer at a time (a lock for multi-threaded callers),
 * back-pressure with a timeout when the daemon has not taken the oldest entry yet.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <errno.h>
#include <time.h>

#include "../clock.h"
#include "../internal.h"

dfcclResult_t df_sq_host_init(df_ctx* ctx, df_sq_host* sq, uint32_t entries) {
  void *host, *daemon;
  DF_CHECK(ctx->target->alloc_mapped(ctx, (size_t)entries * sizeof(df_sqe), &host, &daemon));
  sq->host = host;
  sq->daemon = daemon;
  sq->entries = entries;
  sq->readers = 1;
  sq->tail = 0;
  sq->full_waits = 0;
  for (uint32_t i = 0; i < entries; i++) {
    sq->host[i].seq = DF_SEQ_NONE;
    sq->host[i].nreaders = 0;
    sq->host[i].readers_done = 0;
  }
  if (pthread_mutex_init(&sq->lock, NULL))
    return df_error(dfcclSystemError, "pthread_mutex_init failed for the submission queue");
  return dfcclSuccess;
}

void df_sq_host_fini(df_ctx* ctx, df_sq_host* sq) {
  if (!sq->host) return;
  ctx->target->free_mapped(ctx, sq->host);
  pthread_mutex_destroy(&sq->lock);
  sq->host = NULL;
}

static bool slot_free(const df_sqe* e) { return __atomic_load_n(&e->readers_done, __ATOMIC_ACQUIRE) == e->nreaders; }

uint64_t df_sq_host_set_readers(df_sq_host* sq, uint32_t readers) {
  pthread_mutex_lock(&sq->lock);
  sq->readers = readers;
  uint64_t tail = sq->tail;
  pthread_mutex_unlock(&sq->lock);
  return tail;
}

/* Caller holds sq->lock: waits until the tail's slot is free, up to timeout_ms. */
static dfcclResult_t wait_for_slot(df_sq_host* sq, const df_sqe* e, uint64_t timeout_ms, void (*while_full)(void* arg),
                                   void* arg) {
  uint64_t start = 0;
  for (unsigned spins = 0; !slot_free(e); spins++) {
    /* Full: the daemon frees slots as its blocks read them; wait, politely, but not forever. */
    if (start == 0) {
      start = df_now_ms();
      sq->full_waits++;
    }
    if (df_now_ms() - start > timeout_ms)
      return df_error(dfcclTimeout, "submission queue full for %llu ms (DFCCL_SUBMIT_TIMEOUT_MS); is the daemon stuck?",
                      (unsigned long long)timeout_ms);
    if (while_full != NULL) while_full(arg);
    if (spins < 64) sched_yield();
    else nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
  }
  return dfcclSuccess;
}

dfcclResult_t df_sq_host_submit_n(df_sq_host* sq, const df_sq_run* runs, int n, int* written, uint64_t timeout_ms,
                                  void (*while_full)(void* arg), void* arg) {
  *written = 0;
  if (while_full == NULL) pthread_mutex_lock(&sq->lock);
  else /* the holder may be a submitter waiting for the ring, which needs while_full to go on */
    for (unsigned spins = 0; pthread_mutex_trylock(&sq->lock) != 0; spins++) {
      while_full(arg);
      if (spins < 64) sched_yield();
      else nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
    }
  dfcclResult_t r = dfcclSuccess;
  for (int i = 0; i < n && r == dfcclSuccess; i++) {
    df_sqe* e = &sq->host[sq->tail & (sq->entries - 1)];
    r = wait_for_slot(sq, e, timeout_ms, while_full, arg);
    if (r != dfcclSuccess) break;
    e->coll = runs[i].coll;
    e->epoch = runs[i].epoch;
    e->sendbuff = runs[i].sendbuff;
    e->recvbuff = runs[i].recvbuff;
    e->nchannels = runs[i].nchannels;
    e->gated = runs[i].gated;
    e->nreaders = 1; /* daemon block 0, which copies it into the daemon's mirror */
    e->grid = sq->readers;
    e->readers_done = 0;
    __atomic_store_n(&e->seq, sq->tail, __ATOMIC_RELEASE); /* publishes the fields above */
    sq->tail++;
    *written = i + 1;
  }
  pthread_mutex_unlock(&sq->lock);
  return r;
}

dfcclResult_t df_sq_host_submit(df_sq_host* sq, uint32_t coll, uint32_t epoch, uint32_t nchannels, const void* sendbuff,
                                void* recvbuff, uint64_t timeout_ms, void (*while_full)(void* arg), void* arg) {
  df_sq_run run = {coll, epoch, nchannels, sendbuff, recvbuff, 0};
  int written;
  return df_sq_host_submit_n(sq, &run, 1, &written, timeout_ms, while_full, arg);
}
