/*
 * The daemon's scheduling and context code driven directly, without MPI or a daemon thread, on the
 * host target (the same kernel/scheduler.h and kernel/context.h the GPU runs): one block, tables
 * in host memory as the host runtime lays them out.
 *   task queue   priority order, FIFO among equals; compaction keeps the order
 *   thresholds   the front run waits longest, later ones less, never below the floor
 *   contexts     a resident collective is loaded once; a dirty context is saved when its slot is
 *                taken (lazily: a clean one is not), a new run invalidates a stale copy, a block
 *                that quits saves every dirty context and its task queue, and a relaunch gets them
 *   a whole run  an SQE for a collective of one participant: fetched into the queue, executed (a
 *                local copy), completed with its CQE in the block's ring
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/scheduler.h"

static int failures;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
      failures++;                                          \
    }                                                      \
  } while (0)

/* The daemon's tables for one block, as the host runtime allocates them. */
typedef struct {
  df_daemon_args args;
  df_coll_static* colls;
  df_block_shared shared;
  df_block block;
} daemon_fixture;

static void* zeroed(size_t n, size_t size) {
  void* p = calloc(n, size);
  if (!p) {
    perror("calloc");
    exit(2);
  }
  return p;
}

static void fixture_init(daemon_fixture* f) {
  memset(f, 0, sizeof *f);
  df_daemon_args* a = &f->args;
  f->colls = zeroed(DF_MAX_COLLS, sizeof *f->colls);
  a->colls = f->colls;
  a->dynamic = zeroed(DF_MAX_COLLS, sizeof *a->dynamic);
  a->done_blocks = zeroed(DF_MAX_COLLS, sizeof *a->done_blocks);
  a->coll_counters = zeroed(DF_MAX_COLLS, sizeof *a->coll_counters);
  a->blocks = zeroed(1, sizeof *a->blocks);
  a->saved_tasks = zeroed(DF_MAX_COLLS, sizeof *a->saved_tasks);
  a->spin = (df_spin_policy){
      .front = 1u << 20, .floor = 1000, .decay_shift = 2, .growth = 2, .ceiling = 1u << 24, .preemption = 1};
  f->block = (df_block){.tid = 0, .nthreads = 1, .bid = 0, .nblocks = 1};
  df_context_block_start(a, &f->block, &f->shared);
}

static void fixture_fini(daemon_fixture* f) {
  df_daemon_args* a = &f->args;
  free(f->colls);
  free(a->dynamic);
  free(a->done_blocks);
  free(a->coll_counters);
  free(a->blocks);
  free(a->saved_tasks);
}

static void test_task_queue(void) {
  daemon_fixture f;
  fixture_init(&f);
  const int32_t priority[] = {0, 5, 0, 9, 5, 0};
  for (uint16_t c = 0; c < 6; c++) f.colls[c].priority = priority[c];
  for (uint16_t c = 0; c < 6; c++) df_task_queue_insert(&f.args, &f.shared, c);
  const uint16_t want[] = {3, 1, 4, 0, 2, 5}; /* priority 9, then 5s in arrival order, then 0s */
  CHECK(f.shared.ntasks == 6, "6 tasks queued, got %u", f.shared.ntasks);
  for (int i = 0; i < 6; i++)
    CHECK(f.shared.tasks[i] == want[i], "queue[%d] = %u, want %u", i, f.shared.tasks[i], want[i]);
  f.shared.tasks[1] = 0xFFFFu; /* completed */
  f.shared.tasks[4] = 0xFFFFu;
  df_task_queue_compact(&f.shared);
  const uint16_t kept[] = {3, 4, 0, 5};
  CHECK(f.shared.ntasks == 4, "4 tasks after compaction, got %u", f.shared.ntasks);
  for (int i = 0; i < 4; i++)
    CHECK(f.shared.tasks[i] == kept[i], "compacted[%d] = %u, want %u", i, f.shared.tasks[i], kept[i]);
  fixture_fini(&f);
}

static void test_thresholds(void) {
  df_spin_policy p = {.front = 1u << 20, .floor = 1000, .decay_shift = 2};
  CHECK(df_initial_threshold(&p, 0) == 1u << 20, "the front run gets front");
  CHECK(df_initial_threshold(&p, 1) == 1u << 18, "position 1 gets front >> decay_shift");
  CHECK(df_initial_threshold(&p, 5) == 1024, "position 5 gets front >> 10");
  CHECK(df_initial_threshold(&p, 6) == 1000, "position 6 gets the floor, not front >> 12");
  CHECK(df_initial_threshold(&p, 40) == 1000, "a shift past 64 bits gets the floor");
  for (uint32_t i = 1; i < 12; i++)
    CHECK(df_initial_threshold(&p, i) <= df_initial_threshold(&p, i - 1), "thresholds never grow down the queue");
}

static df_sqe sqe_for(uint32_t coll, uint32_t epoch, const void* send, void* recv) {
  df_sqe e;
  memset(&e, 0, sizeof e);
  e.coll = coll;
  e.epoch = epoch;
  e.sendbuff = send;
  e.recvbuff = recv;
  return e;
}

static void test_contexts(void) {
  daemon_fixture f;
  fixture_init(&f);
  df_daemon_args* a = &f.args;
  df_block_shared* sh = &f.shared;
  const uint32_t c1 = 7, c2 = 7 + DF_CONTEXT_SLOTS; /* the same slot */
  f.colls[c1].count = 111;
  f.colls[c2].count = 222;
  df_sqe e1 = sqe_for(c1, 1, (void*)0x1000, (void*)0x2000), e2 = sqe_for(c2, 1, (void*)0x3000, (void*)0x4000);
  df_context_start_run(a, &f.block, sh, &e1);
  df_context_start_run(a, &f.block, sh, &e2);

  uint32_t s = df_context_acquire(a, &f.block, sh, c1);
  CHECK(sh->slots[s].coll == (int32_t)c1 && sh->slots[s].stat.count == 111, "c1 resident with its static context");
  CHECK(sh->slots[s].dyn.sendbuff == (void*)0x1000 && sh->slots[s].dyn.epoch == 1, "c1's dynamic context loaded");
  CHECK(df_context_acquire(a, &f.block, sh, c1) == s && a->blocks[0].counters.context_loads == 1,
        "a resident collective is not loaded again");
  sh->slots[s].dyn.iteration = 5; /* progress, then preempted: dirty */
  sh->slots[s].dyn.step = 2;
  sh->slots[s].dirty = 1;
  CHECK(df_context_acquire(a, &f.block, sh, c2) == s && sh->slots[s].coll == (int32_t)c2, "c2 takes c1's slot");
  CHECK(a->dynamic[c1].iteration == 5 && a->dynamic[c1].step == 2, "c1's progress was saved when evicted");
  CHECK(a->blocks[0].counters.context_saves == 1 && a->coll_counters[c1].context_saves == 1, "one save counted");
  df_context_acquire(a, &f.block, sh, c1); /* c2 is clean: evicted without a save */
  CHECK(a->blocks[0].counters.context_saves == 1, "a clean context is not saved (lazy saving)");
  CHECK(sh->slots[s].dyn.iteration == 5 && sh->slots[s].dyn.step == 2, "c1 resumes where it stopped");

  /* A new run of a resident collective: the stale copy is dropped and the run starts at 0. */
  df_sqe again = sqe_for(c1, 2, (void*)0x5000, (void*)0x6000);
  df_context_start_run(a, &f.block, sh, &again);
  CHECK(sh->slots[s].coll == -1, "a new run invalidates the resident copy");
  df_context_acquire(a, &f.block, sh, c1);
  CHECK(sh->slots[s].dyn.iteration == 0 && sh->slots[s].dyn.epoch == 2 && sh->slots[s].dyn.sendbuff == (void*)0x5000,
        "the new run starts from the beginning");

  /* Quit and relaunch: dirty contexts and the task queue survive in global memory. */
  sh->slots[s].dyn.iteration = 9;
  sh->slots[s].dirty = 1;
  df_task_queue_insert(a, sh, (uint16_t)c1);
  df_task_queue_insert(a, sh, (uint16_t)c2);
  df_context_block_stop(a, &f.block, sh);
  CHECK(a->dynamic[c1].iteration == 9, "quitting saves the dirty context");
  CHECK(a->blocks[0].ntasks == 2, "quitting saves the task queue");
  memset(sh, 0x7f, sizeof *sh); /* a relaunch finds its working memory in any state */
  df_context_block_start(a, &f.block, sh);
  CHECK(sh->ntasks == 2 && sh->tasks[0] == c1 && sh->tasks[1] == c2, "the relaunched block has its queue back");
  for (int i = 0; i < DF_CONTEXT_SLOTS; i++) CHECK(sh->slots[i].coll == -1, "slot %d empty after a relaunch", i);
  s = df_context_acquire(a, &f.block, sh, c1);
  CHECK(sh->slots[s].dyn.iteration == 9, "and its collective resumes where it stopped");
  fixture_fini(&f);
}

/* An SQE through fetch, execution and completion: a 1-participant all-reduce is a local copy. */
static void test_whole_run(void) {
  daemon_fixture f;
  fixture_init(&f);
  df_daemon_args* a = &f.args;
  enum { N = 1000, RING = 8 };
  const uint32_t c = 3;
  f.colls[c] = (df_coll_static){.kind = DF_COLL_ALL_REDUCE,
                                .dtype = dfcclInt32,
                                .op = dfcclSum,
                                .nranks = 1,
                                .rank = 0,
                                .nchannels = 1,
                                .count = N};
  /* The SQ: the host's ring and the daemon's mirror, which block 0 copies the ring into. */
  enum { SQ_ENTRIES = 16 };
  df_sqe* host_ring = zeroed(SQ_ENTRIES, sizeof *host_ring);
  df_sqe* mirror = zeroed(SQ_ENTRIES, sizeof *mirror);
  for (int i = 0; i < SQ_ENTRIES; i++) host_ring[i].seq = mirror[i].seq = DF_SEQ_NONE;
  a->sq_host = (df_sq){.entries = host_ring, .mask = SQ_ENTRIES - 1};
  a->sq = (df_sq){.entries = mirror, .mask = SQ_ENTRIES - 1};
  uint64_t* cq_entries = zeroed(RING, sizeof *cq_entries);
  uint64_t* cq_tails = zeroed(DF_CQ_STRIDE, sizeof *cq_tails);
  uint64_t* cq_heads = zeroed(DF_CQ_STRIDE, sizeof *cq_heads);
  a->cq = (df_cq){.entries = cq_entries, .tails = cq_tails, .heads = cq_heads, .ring = RING};

  int32_t* send = zeroed(N, sizeof *send);
  int32_t* recv = zeroed(N, sizeof *recv);
  for (int i = 0; i < N; i++) send[i] = 3 * i - 7;
  /* What the host's submit writes: the entry, its reader count (one block), then its sequence number. */
  host_ring[0] = sqe_for(c, 1, send, recv);
  host_ring[0].grid = 1;
  host_ring[0].nchannels = 1;
  host_ring[0].seq = 0;
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 1 && f.shared.ntasks == 1, "block 0 fetched the SQE");
  bool completed = false, timesliced = true;
  bool progressed = df_run_task(a, &f.block, &f.shared, 0, &completed, &timesliced);
  CHECK(progressed && completed && !timesliced, "the run completed");
  CHECK(memcmp(send, recv, sizeof(int32_t) * N) == 0, "one participant: recvbuff is a copy of sendbuff");
  CHECK(cq_tails[0] == 1 && cq_entries[0] == df_cqe_pack(c, 1), "its CQE is in the block's ring");
  CHECK(a->done_blocks[c] == 0, "the block count is reset for the next run");
  free(send);
  free(recv);
  free(host_ring);
  free(mirror);
  free(cq_entries);
  free(cq_tails);
  free(cq_heads);
  fixture_fini(&f);
}

int main(void) {
  test_task_queue();
  test_thresholds();
  test_contexts();
  test_whole_run();
  if (failures) {
    printf("test_scheduler: %d failures\n", failures);
    return 1;
  }
  printf("test_scheduler: task queue, thresholds, contexts and a whole run: ok\n");
  return 0;
}
