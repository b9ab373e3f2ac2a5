/*
 * SQ and CQ under stress, with host threads standing in for the daemon's blocks: the same reader
 * and writer code the daemon runs (queue/sq.h, queue/cq.h) against the host side (sq_host.c,
 * cq_host.c).
 *   SQ: one submitter, "block 0" taking the host's entries as it copies them into the mirror,
 *       "blocks" 1-3 reading the mirror, the grid growing from 2 to 4 halfway; every block must
 *       take exactly its entries, in order, through small rings on both sides; a full queue must
 *       push back and time out.
 *   CQ: 4 completing "blocks" race for a few slots; the poller must see every completion once.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/unit_check.h"
#include "internal.h"

#define BLOCKS 4
#define SQ_ENTRIES_TOTAL 200000
#define CQ_PER_BLOCK 50000

typedef struct {
  df_sq sq;
  int block;
  uint64_t first; /* where this block starts reading */
  uint64_t taken;
} sq_reader;

/* A block's next entry: false at the exit entry, or at a wrong one. */
static bool take_entry(sq_reader* r, const df_sqe* e) {
  if (e->coll == DF_SQE_EXIT) return false;
  uint64_t expect = r->first + r->taken;
  if (e->epoch != (uint32_t)expect || e->sendbuff != (const void*)(uintptr_t)(expect + 1)) {
    FAIL("block %d took entry %u, expected %llu", r->block, e->epoch, (unsigned long long)expect);
    return false;
  }
  r->taken++;
  return true;
}

/* Blocks 1 and up: the mirror. */
static void* sq_reader_main(void* arg) {
  sq_reader* r = arg;
  uint64_t frontier = r->first;
  for (;;) {
    df_sqe e;
    if (!df_sq_read(r->sq, &frontier, &e)) {
      sched_yield();
      continue;
    }
    if (!take_entry(r, &e)) break;
  }
  return NULL;
}

/* Block 0: takes the host's entries as it copies them into the mirror, in rounds that go on while
 * an entry says the next one is written (its look, df_sq_forward), and hands them back to the host a
 * round later, as df_fetch_sqes does. */
typedef struct {
  df_sq_lines host;
  df_sq mirror;
  sq_reader* reader;
} sq_forwarder;

static void* sq_forwarder_main(void* arg) {
  sq_forwarder* f = arg;
  uint64_t forwarded = 0, acknowledged = 0;
  for (bool more = true; more;) {
    df_sq_acknowledge(f->host, &acknowledged, forwarded);
    df_sqe e;
    uint64_t before = forwarded;
    for (bool next = true; more && next && df_sq_lines_read(f->host, forwarded, &e, &next);) {
      if (!df_sq_forward(f->mirror, &forwarded, &e)) break; /* its mirror slot is still being read */
      more = take_entry(f->reader, &e);
    }
    if (forwarded == before) sched_yield();
  }
  df_sq_acknowledge(f->host, &acknowledged, forwarded);
  return NULL;
}

/* Two blocks read from the start; halfway the grid grows to 4, and the new blocks start at the
 * entry the growth returned.  Every block must take every entry from its start, once, in order,
 * while 16-entry rings push back on the forwarder and on the submitter. */
static void test_sq(df_ctx* ctx) {
  df_sq_host sq;
  if (df_sq_host_init(ctx, &sq, 16) != dfcclSuccess) {
    FAIL("sq init: %s", dfcclGetLastErrorMessage());
    return;
  }
  sq_reader readers[BLOCKS];
  pthread_t threads[BLOCKS];
  df_sqe mirror_entries[16];
  memset(mirror_entries, 0, sizeof mirror_entries);
  for (int i = 0; i < 16; i++) mirror_entries[i].seq = DF_SEQ_NONE;
  sq_forwarder forwarder = {
      .host = sq.daemon, .mirror = {.entries = mirror_entries, .mask = 15}, .reader = &readers[0]};
  df_sq view = forwarder.mirror;
  df_sq_host_set_readers(&sq, 2);
  for (int b = 0; b < BLOCKS; b++) readers[b] = (sq_reader){.sq = view, .block = b};
  pthread_create(&threads[0], NULL, sq_forwarder_main, &forwarder);
  pthread_create(&threads[1], NULL, sq_reader_main, &readers[1]);
  for (uint64_t i = 0; i < SQ_ENTRIES_TOTAL; i++) {
    if (i == SQ_ENTRIES_TOTAL / 2) {
      uint64_t first = df_sq_host_set_readers(&sq, BLOCKS);
      for (int b = 2; b < BLOCKS; b++) {
        readers[b].first = first;
        pthread_create(&threads[b], NULL, sq_reader_main, &readers[b]);
      }
    }
    if (df_sq_host_submit(&sq, 0, (uint32_t)i, 1, (const void*)(uintptr_t)(i + 1), NULL, 10000, NULL, NULL) !=
        dfcclSuccess) {
      FAIL("submit %llu: %s", (unsigned long long)i, dfcclGetLastErrorMessage());
      break;
    }
  }
  if (df_sq_host_submit(&sq, DF_SQE_EXIT, 0, 0, NULL, NULL, 10000, NULL, NULL) != dfcclSuccess)
    FAIL("exit entry not submitted");
  for (int b = 0; b < BLOCKS; b++) {
    pthread_join(threads[b], NULL);
    uint64_t want = SQ_ENTRIES_TOTAL - readers[b].first;
    if (readers[b].taken != want)
      FAIL("block %d took %llu entries, expected %llu", b, (unsigned long long)readers[b].taken,
           (unsigned long long)want);
  }
  df_sq_host_fini(ctx, &sq);

  /* The look that comes with an entry: of two entries written, the first says that the next one is,
   * the second that it is not (its slot holds an entry of the ring's previous lap, or none). */
  df_sq_host_init(ctx, &sq, 2);
  df_sqe one_mirror[2];
  memset(one_mirror, 0, sizeof one_mirror);
  df_sq_lines host_view = sq.daemon;
  df_sq one_view = {.entries = one_mirror, .mask = 1};
  uint64_t forwarded = 0;
  for (uint32_t lap = 0; lap < 3; lap++) {
    if (df_sq_host_submit(&sq, 0, 2 * lap, 1, NULL, NULL, 50, NULL, NULL) != dfcclSuccess ||
        df_sq_host_submit(&sq, 0, 2 * lap + 1, 1, NULL, NULL, 50, NULL, NULL) != dfcclSuccess)
      FAIL("lap %u: two entries not submitted: %s", lap, dfcclGetLastErrorMessage());
    bool next[2] = {false, true};
    df_sqe e;
    for (int i = 0; i < 2; i++)
      if (!df_sq_lines_read(host_view, forwarded, &e, &next[i]) || !df_sq_forward(one_view, &forwarded, &e) ||
          e.epoch != 2 * lap + (uint32_t)i)
        FAIL("lap %u: entry %d not taken", lap, i);
    if (!next[0] || next[1])
      FAIL("lap %u: the look said %d, %d for two entries written (1, 0 expected)", lap, next[0], next[1]);
    uint64_t acknowledged = forwarded - 2;
    df_sq_acknowledge(host_view, &acknowledged, forwarded);
  }
  df_sq_host_fini(ctx, &sq);

  /* An entry is taken only whole: the host's ring as block 0 could find it while the host writes
   * seq 2 over seq 0 -- each line of the new entry put in alone, and every mix of old and new lines
   * but the whole new entry -- is not read; the whole entry is, with every field as submitted. */
  df_sq_host_init(ctx, &sq, 2);
  df_sq_host_set_readers(&sq, 3);
  int payload;
  df_sq_run runs[3] = {{0, 1, 1, NULL, NULL, 0}, {1, 1, 1, NULL, NULL, 0}, {7, 9, 5, &payload, &payload + 1, 1}};
  int written;
  if (df_sq_host_submit_n(&sq, runs, 2, &written, 50, NULL, NULL) != dfcclSuccess) FAIL("torn: lap 0 not submitted");
  df_sqe_lines old_lines = sq.host[0];
  __atomic_store_n(sq.acknowledged, 2, __ATOMIC_RELEASE); /* as block 0 would once it took both */
  if (df_sq_host_submit_n(&sq, &runs[2], 1, &written, 50, NULL, NULL) != dfcclSuccess)
    FAIL("torn: seq 2 not submitted");
  df_sqe_lines new_lines = sq.host[0];
  df_sqe e;
  for (unsigned mix = 0; mix < (1u << DF_SQE_LINES) - 1; mix++) { /* bit l: line l is the new one */
    for (int l = 0; l < DF_SQE_LINES; l++)
      memcpy(sq.host[0].lines[l].bytes, (mix >> l & 1) ? new_lines.lines[l].bytes : old_lines.lines[l].bytes,
             DF_SQE_LINE_BYTES);
    if (df_sq_lines_read(sq.daemon, 2, &e, NULL)) FAIL("torn: lines %#x of 0xf new, and the entry was taken", mix);
  }
  sq.host[0] = new_lines;
  if (!df_sq_lines_read(sq.daemon, 2, &e, NULL) || e.coll != 7 || e.epoch != 9 || e.nchannels != 5 || e.gated != 1 ||
      e.sendbuff != (const void*)&payload || e.recvbuff != (void*)(&payload + 1) || e.nreaders != 3)
    FAIL("torn: the whole entry not read as submitted");
  if (df_sq_lines_read(sq.daemon, 0, &e, NULL)) FAIL("torn: seq 0 read from a slot that holds seq 2");
  df_sq_host_fini(ctx, &sq);

  /* Back-pressure: nobody reads, the ring fills, the next submission times out. */
  df_sq_host_init(ctx, &sq, 2);
  df_sq_host_submit(&sq, 0, 1, 1, NULL, NULL, 50, NULL, NULL);
  df_sq_host_submit(&sq, 0, 2, 1, NULL, NULL, 50, NULL, NULL);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  dfcclResult_t r = df_sq_host_submit(&sq, 0, 3, 1, NULL, NULL, 50, NULL, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  if (r != dfcclTimeout || ms < 45)
    FAIL("full queue: %s after %.1f ms, expected a timeout after 50 ms", dfcclGetErrorString(r), ms);
  df_sq_host_fini(ctx, &sq);
  printf("sq: %d entries, grid grown from 2 to %d readers halfway, each taken once and in order; the look for the next "
         "entry right; a torn entry not taken; a full queue times out\n",
         SQ_ENTRIES_TOTAL, BLOCKS);
}

typedef struct {
  df_cq cq;
  int block;
} cq_writer;

static void* cq_writer_main(void* arg) {
  cq_writer* w = arg;
  uint64_t tail = 0, head_seen = 0; /* a block's state */
  for (uint32_t i = 0; i < CQ_PER_BLOCK; i++)
    while (!df_cq_try_write(w->cq, (uint32_t)w->block, &tail, &head_seen, df_cqe_pack((uint32_t)w->block, i, 0)))
      sched_yield(); /* full: the reaper is behind */
  return NULL;
}

typedef struct {
  unsigned char* seen;   /* [block * CQ_PER_BLOCK + i] */
  uint32_t next[BLOCKS]; /* each block's completions come in its order */
  uint64_t total;
} cq_tally;

static void tally(void* arg, uint64_t cqe) {
  cq_tally* t = arg;
  uint32_t b = df_cqe_coll(cqe), i = df_cqe_epoch(cqe);
  if (b >= BLOCKS || i >= CQ_PER_BLOCK) {
    FAIL("garbage completion %llx", (unsigned long long)cqe);
    return;
  }
  if (t->seen[b * CQ_PER_BLOCK + i]++) FAIL("completion %u of block %u seen twice", i, b);
  if (i != t->next[b]) FAIL("block %u: completion %u came where %u was due", b, i, t->next[b]);
  t->next[b] = i + 1;
  t->total++;
}

static void test_cq(df_ctx* ctx) {
  df_cq_host cq;
  if (df_cq_host_init(ctx, &cq, 4) != dfcclSuccess) { /* small rings: the writers often find theirs full */
    FAIL("cq init: %s", dfcclGetLastErrorMessage());
    return;
  }
  cq_tally t = {.seen = calloc(BLOCKS * CQ_PER_BLOCK, 1)};
  cq_writer writers[BLOCKS];
  pthread_t threads[BLOCKS];
  for (int b = 0; b < BLOCKS; b++) {
    writers[b] = (cq_writer){.cq = cq.daemon, .block = b};
    pthread_create(&threads[b], NULL, cq_writer_main, &writers[b]);
  }
  while (t.total < (uint64_t)BLOCKS * CQ_PER_BLOCK && !failures)
    if (df_cq_host_reap(&cq, BLOCKS, tally, &t) == 0) sched_yield();
  for (int b = 0; b < BLOCKS; b++) pthread_join(threads[b], NULL);
  df_cq_host_reap(&cq, BLOCKS, tally, &t);
  for (size_t i = 0; i < (size_t)BLOCKS * CQ_PER_BLOCK; i++)
    if (t.seen[i] != 1) {
      FAIL("completion %zu seen %d times", i, t.seen[i]);
      break;
    }
  free(t.seen);
  df_cq_host_fini(ctx, &cq);
  printf("cq: %d completions from %d writers through rings of 4 entries, each seen exactly once, in order\n",
         BLOCKS * CQ_PER_BLOCK, BLOCKS);
}

/* The host never empties an entry it took: what tells a new entry from last lap's is the lap's
 * parity.  One writer, one reader, a ring of 4: a lap taken leaves its entries in place, and the
 * look at the next head must find nothing until the writer's next lap writes there -- taking the
 * old entry again is exactly what a reader that ignored the parity would do. */
static void test_cq_laps(df_ctx* ctx) {
  df_cq_host cq;
  if (df_cq_host_init(ctx, &cq, 4) != dfcclSuccess) {
    FAIL("cq laps init: %s", dfcclGetLastErrorMessage());
    return;
  }
  uint64_t tail = 0, head_seen = 0, head = 0;
  volatile uint64_t* ring = cq.entries; /* block 0's */
  for (uint32_t lap = 0; lap < 3; lap++) {
    for (uint32_t i = 0; i < 4; i++)
      if (!df_cq_try_write(cq.daemon, 0, &tail, &head_seen, df_cqe_pack(1, lap * 4 + i + 1, 0)))
        FAIL("cq laps: lap %u entry %u found the ring full", lap, i);
    for (uint32_t i = 0; i < 4; i++) {
      uint64_t cqe = df_cq_take(ring, 4, &head);
      if (df_cqe_epoch(cqe) != lap * 4 + i + 1 || df_cqe_coll(cqe) != 1)
        FAIL("cq laps: lap %u entry %u read as %llx", lap, i, (unsigned long long)cqe);
    }
    if (ring[0] == 0) FAIL("cq laps: the host emptied an entry it took");
    uint64_t again = df_cq_take(ring, 4, &head);
    if (again != 0) FAIL("cq laps: after lap %u, last lap's entry %llx taken again", lap, (unsigned long long)again);
    __atomic_store_n(&cq.heads[0], head, __ATOMIC_RELEASE); /* as df_cq_host_reap */
  }
  df_cq_host_fini(ctx, &cq);
  printf("cq: three laps of a ring of 4, each entry taken once; last lap's entries left in place, never taken again\n");
}

int main(void) {
  df_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.target = &df_target_host;
  if (ctx.target->open(&ctx, -1) != dfcclSuccess) return 1;
  test_sq(&ctx);
  test_cq_laps(&ctx); /* first: without the parity the stress below would wedge its writers */
  test_cq(&ctx);
  ctx.target->close(&ctx);
  printf("%s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
