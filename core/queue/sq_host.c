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
  /* The ring, then its acknowledged count on a line of its own; zeroed (alloc_mapped): no line
   * carries a flag yet (df_sqe_flag is never 0 for an entry that may be in a slot), nothing handed
   * back. */
  size_t ring_bytes = (size_t)entries * sizeof(df_sqe_lines);
  DF_CHECK(ctx->target->alloc_mapped(ctx, ring_bytes + sizeof(df_sqe_lines), &host, &daemon));
  sq->host = host;
  sq->acknowledged = (volatile uint64_t*)((char*)host + ring_bytes);
  sq->daemon = (df_sq_lines){
      .entries = daemon, .acknowledged = (volatile uint64_t*)((char*)daemon + ring_bytes), .mask = entries - 1};
  sq->entries = entries;
  sq->readers = 1;
  sq->tail = 0;
  sq->full_waits = 0;
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

/* Whether the tail's slot is free: block 0 has handed back the entry of the ring's previous lap. */
static bool slot_free(const df_sq_host* sq) {
  return sq->tail - __atomic_load_n(sq->acknowledged, __ATOMIC_ACQUIRE) < sq->entries;
}

/* Entry `seq` of run `run` into its slot (queue/sq.h). */
static void write_entry(df_sq_host* sq, uint64_t seq, const df_sq_run* run) {
  df_sqe e = {.coll = run->coll,
              .epoch = run->epoch,
              .sendbuff = run->sendbuff,
              .recvbuff = run->recvbuff,
              .nreaders = sq->readers, /* daemon blocks that read its copy in the mirror */
              .nchannels = run->nchannels,
              .gated = run->gated};
  df_sqe_write_lines(&sq->host[seq & (sq->entries - 1)], seq, &e);
}

uint64_t df_sq_host_set_readers(df_sq_host* sq, uint32_t readers) {
  pthread_mutex_lock(&sq->lock);
  sq->readers = readers;
  uint64_t tail = sq->tail;
  pthread_mutex_unlock(&sq->lock);
  return tail;
}

/* Caller holds sq->lock: waits until the tail's slot is free, up to timeout_ms. */
static dfcclResult_t wait_for_slot(df_sq_host* sq, uint64_t timeout_ms, void (*while_full)(void* arg), void* arg) {
  uint64_t start = 0;
  for (unsigned spins = 0; !slot_free(sq); spins++) {
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
    r = wait_for_slot(sq, timeout_ms, while_full, arg);
    if (r != dfcclSuccess) break;
    write_entry(sq, sq->tail, &runs[i]);
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
