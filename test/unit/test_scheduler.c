/*
 * The daemon's scheduling and context code driven directly, without MPI or a daemon thread, on the
 * host target (the same kernel/scheduler.h and kernel/context.h the GPU runs): one block, tables
 * in host memory as the host runtime lays them out.
 *   task queue   priority order, FIFO among equals; compaction keeps the order
 *   thresholds   the front run waits longest, later ones less, never below the floor
 *   contexts     a resident collective is loaded once; a dirty context is saved when its slot is
 *                taken (lazily: a clean one is not), a new run invalidates a stale copy, a block
 *                that quits saves every dirty context and its task queue, and a relaunch gets them
 *   growth       a received slot grows the run's threshold once n-1 have come (every rank is on it)
 *   leaving      a long wait ends early for another queued run with a slot to take, and only then
 *   intake       a wait takes SQEs that join the task queue at its end and goes on waiting, looking
 *                at them too; one that would go earlier makes it leave, and so does any with
 *                DFCCL_TAKE_IN_WAIT=0 (the twin)
 *   a whole run  an SQE for a collective of one participant: fetched into the queue, executed (a
 *                local copy), completed with its CQE in the block's ring
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
  a->run_errors = zeroed(DF_MAX_COLLS, sizeof *a->run_errors);
  a->timed_out = zeroed(DF_MAX_COLLS, sizeof *a->timed_out);
  a->progress_ns = zeroed(DF_MAX_COLLS, sizeof *a->progress_ns);
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
  free(a->run_errors);
  free((void*)a->timed_out);
  free((void*)a->progress_ns);
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
  f.shared.tasks[1] = DF_NO_TASK; /* completed */
  f.shared.tasks[4] = DF_NO_TASK;
  df_task_queue_compact(&f.shared);
  const uint16_t kept[] = {3, 4, 0, 5};
  CHECK(f.shared.ntasks == 4, "4 tasks after compaction, got %u", f.shared.ntasks);
  for (int i = 0; i < 4; i++)
    CHECK(f.shared.tasks[i] == kept[i], "compacted[%d] = %u, want %u", i, f.shared.tasks[i], kept[i]);
  /* With DFCCL_QUEUE_ORDER=id, among equal priorities the agreed order (ids) comes before arrival:
   * two ranks that queue the same runs in different orders traverse them alike.  By default the
   * ids are not looked at. */
  const uint32_t order[] = {7, 2, 7, 1, 0, 3};
  for (uint16_t c = 0; c < 6; c++) f.colls[c].order = order[c];
  f.shared.ntasks = 0;
  for (uint16_t c = 0; c < 6; c++) df_task_queue_insert(&f.args, &f.shared, c);
  for (int i = 0; i < 6; i++)
    CHECK(f.shared.tasks[i] == want[i], "by default, ids aside: queue[%d] = %u, want %u", i, f.shared.tasks[i],
          want[i]);
  f.args.spin.queue_by_id = 1;
  const uint16_t arrivals[2][6] = {{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}};
  /* priority 9; 5s by order (4: 0, 1: 2); 0s by order (5: 3, then 0 and 2, both 7, as they came) */
  const uint16_t by_order[2][6] = {{3, 4, 1, 5, 0, 2}, {3, 4, 1, 5, 2, 0}};
  for (int k = 0; k < 2; k++) {
    f.shared.ntasks = 0;
    for (int c = 0; c < 6; c++) df_task_queue_insert(&f.args, &f.shared, arrivals[k][c]);
    for (int i = 0; i < 6; i++)
      CHECK(f.shared.tasks[i] == by_order[k][i], "arrival order %d: queue[%d] = %u, want %u", k, i, f.shared.tasks[i],
            by_order[k][i]);
  }
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

/* The daemon `a` gets the host's SQ ring `ring` of `entries` slots (zeroed: none written), whose
 * acknowledged count follows the slots and starts where block 0's stands. */
static void give_sq_ring(df_daemon_args* a, df_sqe_lines* ring, uint32_t entries) {
  a->sq_host = (df_sq_lines){.entries = ring, .acknowledged = (uint64_t*)(void*)(ring + entries), .mask = entries - 1};
  *a->sq_host.acknowledged = a->blocks[0].sq_acknowledged;
}

/* Gives the daemon `a` an SQ of `entries`: the host's ring and its mirror, which block 0 copies the
 * ring into, no entry written. */
static void give_sq(df_daemon_args* a, uint32_t entries, df_sqe_lines** ring, df_sqe** mirror) {
  *ring = zeroed(entries + 1, sizeof **ring);
  *mirror = zeroed(entries, sizeof **mirror);
  for (uint32_t i = 0; i < entries; i++) (*mirror)[i].seq = DF_SEQ_NONE;
  give_sq_ring(a, *ring, entries);
  a->sq = (df_sq){.entries = *mirror, .mask = entries - 1};
}

/* What the host's submit writes into the daemon's SQ ring: entry e as sequence number `seq`, for
 * `nchannels` blocks and a grid of one block, in the lines of queue/sq.h. */
static void publish_sqe(const df_daemon_args* a, uint64_t seq, df_sqe e, uint32_t nchannels) {
  e.nreaders = 1;
  e.nchannels = nchannels;
  df_sqe_write_lines(&a->sq_host.entries[seq & a->sq_host.mask], seq, &e);
}

/* Entries block 0 has handed back to the host (df_sq_acknowledge). */
static uint64_t handed_back(const df_daemon_args* a) {
  return __atomic_load_n(a->sq_host.acknowledged, __ATOMIC_ACQUIRE);
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
  /* The SQ: large enough for a lone run's slot to come back a round late. */
  df_sqe_lines* host_ring;
  df_sqe* mirror;
  give_sq(a, DF_SQ_LAZY_HAND_BACK, &host_ring, &mirror);
  uint64_t* cq_entries = zeroed(RING, sizeof *cq_entries);
  uint64_t* cq_heads = zeroed(DF_CQ_STRIDE, sizeof *cq_heads);
  a->cq = (df_cq){.entries = cq_entries, .heads = cq_heads, .ring = RING};

  int32_t* send = zeroed(N, sizeof *send);
  int32_t* recv = zeroed(N, sizeof *recv);
  for (int i = 0; i < N; i++) send[i] = 3 * i - 7;
  publish_sqe(a, 0, sqe_for(c, 1, send, recv), 1);
  f.shared.idle_round = 1; /* an idle block 0: a new entry goes to its run at once */
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 1 && f.shared.ntasks == 1, "block 0 fetched the SQE");
  bool completed = false, timesliced = true;
  bool progressed = df_run_task(a, &f.block, &f.shared, 0, &completed, &timesliced);
  CHECK(progressed && completed && !timesliced, "the run completed");
  CHECK(memcmp(send, recv, sizeof(int32_t) * N) == 0, "one participant: recvbuff is a copy of sendbuff");
  CHECK(cq_entries[0] == df_cqe_pack(c, 1, 0) && cq_entries[1] == 0, "its CQE is in the block's ring");
  CHECK(handed_back(a) == 0, "the host's entry is handed back later, off the run's path");
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 0 && handed_back(a) == 1, "the next fetch hands the entry back");
  CHECK(a->done_blocks[c] == 0, "the block count is reset for the next run");

  /* A gated run (published before the host waited for the caller's work) reads no buffer before
   * the host opens its gate, and fails when the host fails it. */
  uint64_t* gates = zeroed(DF_MAX_COLLS, sizeof *gates);
  a->gates = gates;
  f.shared.ntasks = 0; /* the daemon's loop drops a completed task */
  for (int i = 0; i < N; i++) send[i] = 5 * i + 1;
  memset(recv, 0, sizeof(int32_t) * N);
  df_sqe gated = sqe_for(c, 2, send, recv);
  gated.gated = 1;
  gates[c] = 1; /* the gate as the host shut it: the run's epoch minus one */
  publish_sqe(a, 1, gated, 1);
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 1 && f.shared.ntasks == 1, "block 0 fetched the gated SQE");
  progressed = df_run_task(a, &f.block, &f.shared, 0, &completed, &timesliced);
  bool untouched = true;
  for (int i = 0; i < N; i++) untouched = untouched && recv[i] == 0;
  CHECK(!completed && !progressed && untouched && cq_entries[1] == 0, "a shut gate: the run waits, recvbuff untouched");
  CHECK(a->blocks[0].counters.preemptions == 0 && a->coll_counters[c].preemptions == 0,
        "a run still at its gate has not started: no preemption counted");
  gates[c] = 2;
  progressed = df_run_task(a, &f.block, &f.shared, 0, &completed, &timesliced);
  CHECK(completed && memcmp(send, recv, sizeof(int32_t) * N) == 0 && cq_entries[1] == df_cqe_pack(c, 2, 0),
        "the gate open: the run completes");
  f.shared.ntasks = 0;
  memset(recv, 0, sizeof(int32_t) * N);
  gated = sqe_for(c, 3, send, recv);
  gated.gated = 1;
  gates[c] = 3 | DF_GATE_FAILED;
  publish_sqe(a, 2, gated, 1);
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 1, "block 0 fetched the third SQE");
  df_run_task(a, &f.block, &f.shared, 0, &completed, &timesliced);
  untouched = true;
  for (int i = 0; i < N; i++) untouched = untouched && recv[i] == 0;
  CHECK(
      completed && untouched && df_cqe_error(cq_entries[2]) == DF_RUN_CALLER_FAILED && df_cqe_epoch(cq_entries[2]) == 3,
      "a failed gate fails the run without reading its buffers");

  /* Entries that piled up while a run completed are all taken before any runs, the task queue
   * ordering them by priority: a low-priority run first in the ring, a high-priority one after it. */
  const uint32_t high = 4;
  f.colls[high] = f.colls[c];
  f.colls[high].priority = 10;
  f.colls[c].priority = 0;
  f.shared.ntasks = 0;
  f.shared.idle_round = 0; /* the round before completed the failed run */
  publish_sqe(a, 3, sqe_for(c, 4, send, recv), 1);
  publish_sqe(a, 4, sqe_for(high, 1, send, recv), 1);
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 2 && f.shared.ntasks == 2 && f.shared.tasks[0] == high &&
            f.shared.tasks[1] == c,
        "after a busy round block 0 takes every entry; the high-priority run goes first");
  CHECK(handed_back(a) == 5, "and hands their slots back at once");

  /* A ring of twice the runs that can be in flight, as the default one: the host never waits for a
   * slot, so slots go back a quarter of the ring at a time, off the runs' path. */
  enum { BIG_RING = 2 * DF_MAX_COLLS };
  df_sqe_lines* big_ring;
  df_sqe* big_mirror;
  give_sq(a, BIG_RING, &big_ring, &big_mirror);
  f.shared.ntasks = 0;
  f.shared.idle_round = 0;
  publish_sqe(a, 5, sqe_for(c, 5, send, recv), 1);
  publish_sqe(a, 6, sqe_for(high, 2, send, recv), 1);
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 2 && f.shared.ntasks == 2 && f.shared.tasks[0] == high,
        "a large ring: block 0 takes the burst, by priority");
  CHECK(handed_back(a) == 5, "and keeps the slots");
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 0 && handed_back(a) == 5, "past the next round");
  /* Entries for other blocks only (no channel on block 0): forwarded, not taken -- one short of a
   * quarter of the ring out, counting the burst's two, then the one that makes the quarter. */
  const uint64_t quarter = 5 + BIG_RING / 4; /* the first entry past a quarter of the ring from entry 5 */
  for (uint64_t k = 7; k < quarter - 1; k++) publish_sqe(a, k, sqe_for(c, 0, send, recv), 0);
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 0 && handed_back(a) == 5, "until a quarter of it is out");
  publish_sqe(a, quarter - 1, sqe_for(c, 0, send, recv), 0);
  CHECK(df_fetch_sqes(a, &f.block, &f.shared) == 0 && handed_back(a) == quarter,
        "then the fetch that takes it there hands them all back");
  free(big_ring);
  free(big_mirror);
  free(gates);
  free(send);
  free(recv);
  free(host_ring);
  free(mirror);
  free(cq_entries);
  free(cq_heads);
  fixture_fini(&f);
}

/* A gated run of two channels (every run is gated by default): block 0 passes the host's gate and
 * hands what it let through on in device memory; block 1 reads only that -- with the host's gate
 * open but block 0 not past it yet, block 1 waits (reading the host's word, it would go on). */
static void test_gate_of_channels(void) {
  daemon_fixture f;
  fixture_init(&f);
  df_daemon_args* a = &f.args;
  uint64_t* gates = zeroed(DF_MAX_COLLS, sizeof *gates);
  uint64_t* passed = zeroed(DF_MAX_COLLS, sizeof *passed);
  a->gates = gates;
  a->gates_passed = passed;
  const uint32_t c = 6;
  df_context_slot slot;
  memset(&slot, 0, sizeof slot);
  slot.coll = (int32_t)c;
  slot.stat.nchannels = 2;
  slot.dyn.epoch = 5;
  df_block b0 = {.tid = 0, .nthreads = 1, .bid = 0, .nblocks = 2}, b1 = b0;
  b1.bid = 1;
  df_run r0 = {.args = a, .blk = &b0, .sh = &f.shared, .ctx = &slot, .threshold = 4}, r1 = r0;
  r1.blk = &b1;
  const df_gate_look none = {false, 0};
  gates[c] = 5; /* the host opened it */
  CHECK(df_pass_gate(&r1, none) == DF_PRIM_BLOCKED,
        "block 1: the host's gate is open, block 0 not past it: block 1 waits");
  CHECK(df_pass_gate(&r0, none) == DF_PRIM_DONE && passed[c] == 5, "block 0 passes the host's gate and hands it on");
  CHECK(df_pass_gate(&r1, none) == DF_PRIM_DONE, "block 1 passes after it");
  slot.dyn.epoch = 6;
  gates[c] = 6 | DF_GATE_FAILED; /* the host could not wait for the caller's work */
  CHECK(df_pass_gate(&r1, none) == DF_PRIM_BLOCKED, "the next run: block 1 waits for block 0 again");
  CHECK(df_pass_gate(&r0, none) == DF_PRIM_FAILED && passed[c] == (6 | DF_GATE_FAILED),
        "a failed gate: block 0 fails the run and hands the failure on");
  CHECK(df_pass_gate(&r1, none) == DF_PRIM_FAILED, "block 1 fails the run too");
  slot.stat.nchannels = 1;
  slot.dyn.epoch = 7;
  gates[c] = 7;
  CHECK(df_pass_gate(&r0, none) == DF_PRIM_DONE && passed[c] == (6 | DF_GATE_FAILED),
        "a one-channel run hands nothing on (no store on a small run's path)");
  /* The look that went out beside the context's loads (df_run_task) stands for the first poll: one
   * that found the gate open passes without another; one that found it shut is looked again. */
  slot.stat.nchannels = 2;
  slot.dyn.epoch = 8;
  df_gate_look open = {true, 8}, shut = {true, 7};
  CHECK(df_gate_device_look(a, &b1, c).taken && df_gate_device_look(a, &b1, c).value == (6 | DF_GATE_FAILED) &&
            !df_gate_device_look(a, &b0, c).taken,
        "block 1 looks at what block 0 let through; block 0 without the streams' word looks at nothing here");
  CHECK(df_pass_gate(&r1, open) == DF_PRIM_DONE, "block 1: a first look that found the gate open passes it");
  CHECK(df_pass_gate(&r1, shut) == DF_PRIM_BLOCKED, "block 1: a first look that found it shut waits on");
  passed[c] = 8;
  CHECK(df_pass_gate(&r1, shut) == DF_PRIM_DONE, "and passes once block 0 has");
  /* With the word the caller's streams open, block 0 looks there first, and at the host's word only
   * while it is shut. */
  uint32_t* stream_gates = zeroed(DF_MAX_COLLS, sizeof *stream_gates);
  a->stream_gates = stream_gates;
  slot.dyn.epoch = 9;
  stream_gates[c] = 9;
  df_gate_look streams = df_gate_device_look(a, &b0, c);
  CHECK(streams.taken && streams.value == 9 && df_pass_gate(&r0, streams) == DF_PRIM_DONE && passed[c] == 9,
        "block 0 passes the gate its streams opened, the host's word still shut, and hands it on");
  slot.dyn.epoch = 10;
  gates[c] = 10;
  CHECK(df_pass_gate(&r0, df_gate_device_look(a, &b0, c)) == DF_PRIM_DONE && passed[c] == 10,
        "the streams' word shut: block 0 passes the gate the host opened");
  a->stream_gates = NULL;
  free(stream_gates);
  free(gates);
  free(passed);
  fixture_fini(&f);
}

/* A broadcast from ring position 1 to this rank (position 0) of two, the test playing the root: a
 * one-channel ring whose peer's memory is ours to write. */
typedef struct {
  daemon_fixture f;
  df_links links;
  df_connector to_next, from_prev;
  df_recv_ctrl my_recv, peer_recv;
  df_send_ctrl my_send, peer_send;
  uint64_t sent, consumed;
  char fifo[DF_FIFO_STEPS * 256];
  char peer_fifo[DF_FIFO_STEPS * 256];
  uint64_t cq_entries[8], cq_heads[DF_CQ_STRIDE];
  uint64_t cq_taken; /* the completions the test took from the ring */
  int32_t recv[64];
} ring_fixture;

enum { RING_COLL = 5, RING_COUNT = 64 };

static void ring_init(ring_fixture* r) {
  memset(r, 0, sizeof *r);
  fixture_init(&r->f);
  df_daemon_args* a = &r->f.args;
  r->to_next = (df_connector){.recv_ctrl = &r->peer_recv, .send_ctrl = &r->my_send, .fifo = r->peer_fifo};
  r->from_prev = (df_connector){.recv_ctrl = &r->my_recv, .send_ctrl = &r->peer_send, .fifo = r->fifo};
  r->links = (df_links){.nchannels = 1,
                        .slot_bytes = 256,
                        .prev_tagged = 1,
                        .to_next = &r->to_next,
                        .from_prev = &r->from_prev,
                        .sent = &r->sent,
                        .consumed = &r->consumed};
  r->f.colls[RING_COLL] = (df_coll_static){.kind = DF_COLL_BROADCAST,
                                           .dtype = dfcclInt32,
                                           .op = dfcclSum,
                                           .nranks = 2,
                                           .rank = 0,
                                           .nchannels = 1,
                                           .root = 1,
                                           .count = RING_COUNT,
                                           .links = r->links};
  a->cq = (df_cq){.entries = r->cq_entries, .heads = r->cq_heads, .ring = 8};
  a->spin.front = a->spin.floor = 1000; /* a wait gives up soon */
}

/* Goes on with the run in the queue until it is over or `tries` preemptions passed; returns the
 * CQE (0: none). */
static uint64_t ring_run_again(ring_fixture* r, int tries) {
  for (int i = 0; i < tries; i++) {
    bool completed = false, timesliced = false;
    df_run_task(&r->f.args, &r->f.block, &r->f.shared, 0, &completed, &timesliced);
    if (completed) break;
  }
  uint64_t cqe = df_cq_take(r->cq_entries, 8, &r->cq_taken);
  r->cq_heads[0] = r->cq_taken;
  return cqe;
}

/* Starts run `epoch` (the only task in the queue), then goes on as ring_run_again. */
static uint64_t ring_run(ring_fixture* r, uint32_t epoch, int tries) {
  df_sqe e = sqe_for(RING_COLL, epoch, NULL, r->recv);
  df_context_start_run(&r->f.args, &r->f.block, &r->f.shared, &e);
  r->f.shared.tasks[0] = RING_COLL;
  r->f.shared.ntasks = 1;
  return ring_run_again(r, tries);
}

/* Starts run 1 and makes it resident, as df_run_task would: the run its primitives are called on
 * directly, waits ending after `threshold` polls. */
static df_run ring_direct_run(ring_fixture* r, uint64_t threshold) {
  df_sqe e = sqe_for(RING_COLL, 1, NULL, r->recv);
  df_context_start_run(&r->f.args, &r->f.block, &r->f.shared, &e);
  r->f.shared.current = df_context_acquire(&r->f.args, &r->f.block, &r->f.shared, RING_COLL);
  return (df_run){.args = &r->f.args,
                  .blk = &r->f.block,
                  .sh = &r->f.shared,
                  .ctx = &r->f.shared.slots[r->f.shared.current],
                  .threshold = threshold};
}

/* The root's slot of run `epoch` at the next step, with tag word `word`. */
static void ring_post_word(ring_fixture* r, uint32_t epoch, uint32_t word) {
  uint64_t step = r->my_recv.tail;
  int32_t* slot = (int32_t*)(r->fifo + (step % DF_FIFO_STEPS) * 256);
  for (int i = 0; i < RING_COUNT; i++) slot[i] = (int32_t)(epoch * 1000 + i);
  r->my_recv.tags[step % DF_FIFO_STEPS] = word;
  r->my_recv.tail = step + 1;
}

/* The root's slot of run `epoch`, tagged as a run of `st` would tag it. */
static void ring_post(ring_fixture* r, const df_coll_static* st, uint32_t epoch) {
  ring_post_word(r, epoch, df_slot_tag(df_run_tag(st, epoch), r->my_recv.tail));
}

/* What a failed run does: its CQE says why, its connectors are revoked toward both neighbours, its
 * data never lands; and each failure is shown to need its cause (the matching case completes). */
static void test_failures(void) {
  ring_fixture* r = zeroed(1, sizeof *r);
  ring_init(r);
  df_coll_static st = r->f.colls[RING_COLL];
  /* Run 1, the root's slot of run 1: completes, exact. */
  ring_post(r, &st, 1);
  uint64_t cqe = ring_run(r, 1, 4);
  CHECK(cqe != 0 && df_cqe_error(cqe) == DF_RUN_OK && df_cqe_epoch(cqe) == 1, "a matching slot: run 1 completes");
  CHECK(r->recv[7] == 1007, "and its data landed");
  CHECK(!(r->peer_send.head & DF_REVOKED_BIT), "a completed run revokes nothing");
  /* Run 2, but the root sends a slot of another count: a mismatch, and nothing lands. */
  df_coll_static other = st;
  other.count = RING_COUNT + 1;
  ring_post(r, &other, 2);
  memset(r->recv, 0, sizeof r->recv);
  cqe = ring_run(r, 2, 4);
  CHECK(cqe != 0 && df_cqe_error(cqe) == DF_RUN_MISMATCH, "a slot of another signature fails the run (mismatch)");
  CHECK(r->recv[7] == 0, "the mismatched slot's data never reached recvbuff");
  CHECK(r->peer_send.head == DF_REVOKED(DF_RUN_MISMATCH), "the predecessor's head is revoked with the reason");
  CHECK(r->peer_recv.tail == DF_REVOKED(DF_RUN_MISMATCH), "the successor's tail is revoked with the reason");
  CHECK(r->f.args.run_errors[RING_COLL] == DF_RUN_OK, "the error word is clear for the next run");
  free(r);

  /* A lap on (a FIFO's worth of slots came before), the slot's tag word names this run but the
   * step a lap before -- the word a look beside the tail may load before the new one lands
   * (df_check_tag): it never passes for this step's; the word of this step does. */
  for (int lap_before = 1; lap_before >= 0; lap_before--) {
    r = zeroed(1, sizeof *r);
    ring_init(r);
    r->consumed = r->my_recv.tail = DF_FIFO_STEPS;
    uint64_t word_step = lap_before ? 0 : DF_FIFO_STEPS;
    ring_post_word(r, 1, df_slot_tag(df_run_tag(&st, 1), word_step));
    cqe = ring_run(r, 1, 4);
    if (lap_before)
      CHECK(cqe != 0 && df_cqe_error(cqe) == DF_RUN_MISMATCH && r->recv[7] == 0,
            "the tag word of this run a lap before fails the run (mismatch), nothing lands");
    else
      CHECK(cqe != 0 && df_cqe_error(cqe) == DF_RUN_OK && r->recv[7] == 1007,
            "the tag word of this run and step: it completes, exact");
    free(r);
  }

  /* A peer revoked its connectors (its run timed out): this run fails with its reason. */
  r = zeroed(1, sizeof *r);
  ring_init(r);
  r->my_recv.tail = DF_REVOKED(DF_RUN_TIMED_OUT);
  cqe = ring_run(r, 1, 4);
  CHECK(cqe != 0 && df_cqe_error(cqe) == DF_RUN_TIMED_OUT, "a revoked tail fails the run with the peer's reason");
  free(r);

  /* The host timed the run out: it fails at a wait that gives up at least DF_ERROR_LOOK_NS after
   * the last look -- and a run that waits without a timeout only waits (the twin). */
  r = zeroed(1, sizeof *r);
  ring_init(r);
  cqe = ring_run(r, 1, 4);
  CHECK(cqe == 0, "without data, a run waits (preempted, no CQE)");
  CHECK(r->f.args.progress_ns[RING_COLL] == 0, "and shows no progress to the host");
  ((uint32_t*)r->f.args.timed_out)[RING_COLL] = 7; /* another run's epoch: stale */
  r->f.shared.error_look_ns = 0;                   /* long ago: the next wait that gives up looks */
  CHECK(ring_run_again(r, 1) == 0, "a timed-out epoch of another run does not fail this one");
  ((uint32_t*)r->f.args.timed_out)[RING_COLL] = 1;
  r->f.shared.error_look_ns = 0;
  cqe = ring_run_again(r, 1);
  CHECK(cqe != 0 && df_cqe_error(cqe) == DF_RUN_TIMED_OUT, "the host's timeout fails the run");
  CHECK(r->peer_send.head == DF_REVOKED(DF_RUN_TIMED_OUT), "and revokes its connectors");
  free(r);
}

/* Stickiness: a received slot grows the run's threshold only once the slots that came prove every
 * rank of the ring is on the run -- the (n-1)-th on n ranks, the first on two.  With the first
 * receive growing it on four ranks (the rule before), this fails. */
static void test_growth(void) {
  for (uint32_t nranks = 2; nranks <= 4; nranks++) {
    ring_fixture* r = zeroed(1, sizeof *r);
    ring_init(r);
    df_daemon_args* a = &r->f.args;
    r->f.colls[RING_COLL].nranks = nranks;
    df_coll_static st = r->f.colls[RING_COLL];
    df_run run = ring_direct_run(r, 100);
    uint64_t expected = 100;
    for (uint32_t k = 1; k <= nranks; k++) {
      ring_post(r, &st, 1);
      CHECK(df_recv(&run, r->recv, RING_COUNT) == DF_PRIM_DONE, "%u ranks: receive %u completes", nranks, k);
      if (k + 1 >= nranks) expected *= a->spin.growth;
      CHECK(run.threshold == expected, "%u ranks: after receive %u the threshold is %llu, not %llu", nranks, k,
            (unsigned long long)expected, (unsigned long long)run.threshold);
    }
    free(r);
  }
}

/* df_other_run_ready as a wait calls it (df_wait_ready), its plan worked out from the run and the
 * spin policy as they are now: the tests change them between looks. */
static bool other_run_ready(const df_run* run, uint64_t polls, uint32_t cursor) {
  df_look_plan plan = df_look_plan_of(run);
  return df_other_run_ready(run, &plan, polls, &cursor);
}

/* A long wait leaves for another queued run that has a slot to take (df_other_run_ready), and only
 * then: not while the wait is short, not for a run with nothing to take, one on the same
 * connectors, a completed one, one of lower priority or a revoked connector, and never with the
 * rule off. */
/* A second collective beside the ring fixture's, at index OTHER_COLL: a copy of its static context
 * on connectors of its own (one channel), whose predecessor has posted nothing yet. */
enum { OTHER_COLL = 9 };
typedef struct {
  df_recv_ctrl recv;
  df_connector from_prev;
  uint64_t consumed;
  df_links links;
} other_fixture;

/* A ring fixture (freed by the caller) with the second collective *o beside its own. */
static ring_fixture* ring_and_other(other_fixture* o) {
  ring_fixture* r = zeroed(1, sizeof *r);
  ring_init(r);
  memset(o, 0, sizeof *o);
  o->from_prev = (df_connector){.recv_ctrl = &o->recv};
  o->links = (df_links){.nchannels = 1, .from_prev = &o->from_prev, .consumed = &o->consumed};
  r->f.colls[OTHER_COLL] = r->f.colls[RING_COLL];
  r->f.colls[OTHER_COLL].links = o->links;
  return r;
}

static void test_leave_for_ready(void) {
  enum { OTHER = OTHER_COLL };
  other_fixture o; /* a collective on connectors of its own, whose predecessor has posted one slot */
  ring_fixture* r = ring_and_other(&o);
  df_daemon_args* a = &r->f.args;
  df_block_shared* sh = &r->f.shared;
  df_recv_ctrl* other_recv = &o.recv;
  uint64_t* other_consumed = &o.consumed;
  other_recv->tail = 1;

  df_run run = ring_direct_run(r, 1u << 12);
  sh->tasks[0] = RING_COLL;
  sh->tasks[1] = OTHER;
  sh->ntasks = 2;
  a->spin.floor = 64;
  a->spin.leave_share = 16;
  uint64_t from = (1u << 12) / 16; /* 256: above the floor */

  /* Looks at one queued run per call, round robin: two calls cover the queue of two. */
#define LOOKS(polls) (other_run_ready(&run, (polls), 0) || other_run_ready(&run, (polls), 1))
  CHECK(LOOKS(from), "a wait of %llu polls leaves for a queued run with a slot", (unsigned long long)from);
  CHECK(!LOOKS(from - DF_LOOK_AROUND_EVERY), "a shorter wait does not look");
  CHECK(!LOOKS(from + 1), "between looks (every %d polls) it does not look", DF_LOOK_AROUND_EVERY);
  run.threshold = 1000; /* 1000 / 16 < the floor: the floor it is */
  CHECK(!LOOKS(48) && LOOKS(64), "a short threshold looks from the floor on");
  run.threshold = 1u << 12;
  *other_consumed = 1;
  CHECK(!LOOKS(from), "a queued run whose slots are all taken is no reason to leave");
  *other_consumed = 0;
  other_recv->tail = DF_REVOKED(DF_RUN_TIMED_OUT);
  CHECK(!LOOKS(from), "a revoked connector is no slot");
  other_recv->tail = 1;
  r->f.colls[OTHER].links = r->links;
  CHECK(!LOOKS(from), "a queued run on the same connectors waits for this one anyway");
  r->f.colls[OTHER].links = o.links;
  sh->tasks[1] = DF_NO_TASK;
  CHECK(!LOOKS(from), "a completed task is no reason to leave");
  sh->tasks[1] = OTHER;
  r->f.colls[RING_COLL].priority = 1;
  run.ctx->stat.priority = 1;
  CHECK(!LOOKS(from), "a wait never leaves for a run of lower priority");
  r->f.colls[OTHER].priority = 2;
  CHECK(LOOKS(from), "but does for one of higher priority");
  r->f.colls[OTHER].priority = r->f.colls[RING_COLL].priority = run.ctx->stat.priority = 0;
  a->spin.leave_share = 0;
  CHECK(!LOOKS(from), "with the rule off a wait never leaves early");
  a->spin.leave_share = 4;
  CHECK(LOOKS(1u << 10) && !LOOKS(from), "with DFCCL_LEAVE_FOR_READY=4 it looks from a quarter of the threshold");
  a->spin.leave_share = 16;
  /* The first ring position waits its share; the others follow their predecessor from the floor. */
  CHECK(run.ctx->stat.rank == 0 && !LOOKS(64), "the first position does not look before its share");
  a->spin.follow = 1;
  run.ctx->stat.rank = 1;
  CHECK(!LOOKS(48) && LOOKS(64) && LOOKS(65),
        "with DFCCL_FOLLOW_READY=1 a later position looks from the floor on, at every poll");
  run.ctx->stat.rank = 0;
  CHECK(!LOOKS(64), "and the first one still waits its share");
  a->spin.follow = 0;
  run.ctx->stat.rank = 1;
  CHECK(!LOOKS(64) && LOOKS(from), "with DFCCL_FOLLOW_READY=0 every position waits its share");
  run.ctx->stat.rank = 0;
  /* DFCCL_QUEUE_ORDER=id: every position looks from the floor, at every poll, but before its share
   * only for a run of a higher id. */
  a->spin.queue_by_id = 1;
  run.ctx->stat.order = 5;
  r->f.colls[OTHER].order = 9;
  CHECK(!LOOKS(48) && LOOKS(64) && LOOKS(65), "by id, the first position looks from the floor for a higher id");
  r->f.colls[OTHER].order = 5;
  CHECK(!LOOKS(64) && LOOKS(from), "but for an equal or lower id only after its share");
  r->f.colls[OTHER].order = 3;
  run.ctx->stat.rank = 1;
  a->spin.follow = 1;
  CHECK(!LOOKS(64) && LOOKS(from), "a follower too: by id, early looks go up only");
  a->spin.follow = 0;
  run.ctx->stat.rank = 0;
  a->spin.queue_by_id = 0;
  run.ctx->stat.order = r->f.colls[OTHER].order = 0;
#undef LOOKS
  sh->ready = DF_NO_TASK;
  CHECK(other_run_ready(&run, from, 1) && sh->ready == 1, "the ready run's position is noted");

  /* Entries in the SQ that the block has not taken (round robin after the queued runs: cursor 2 of
   * a queue of two) are a reason to leave, once the wait has lasted its share; not before, not for
   * a follower either, and not for the entries already taken. */
  df_sqe_lines sq_entries[5];
  memset(sq_entries, 0, sizeof sq_entries);
  give_sq_ring(a, sq_entries, 4);
  a->blocks[0].sq_forwarded = 2;
  publish_sqe(a, 1, sqe_for(OTHER, 1, NULL, NULL), 1);
#define LOOKS_AT_SQ(polls) other_run_ready(&run, (polls), 2)
  CHECK(!LOOKS_AT_SQ(from), "an entry already taken is no reason to leave");
  publish_sqe(a, 2, sqe_for(OTHER, 2, NULL, NULL), 1);
  sh->ready = DF_NO_TASK;
  CHECK(LOOKS_AT_SQ(from) && sh->ready == DF_NO_TASK, "an entry not taken yet is, and no run is noted");
  a->spin.follow = 1;
  run.ctx->stat.rank = 1;
  CHECK(!LOOKS_AT_SQ(64) && LOOKS_AT_SQ(from), "a follower looks at the SQ only after the share too");
  a->spin.follow = 0;
  run.ctx->stat.rank = 0;
#undef LOOKS_AT_SQ
  a->sq_host = (df_sq_lines){0};

  /* The traversal: the noted run first, then the queue's order, passing over what completed. */
  uint32_t next = 0, jumps = 0;
  sh->ntasks = 3;
  sh->tasks[2] = 11;
  sh->ready = 2;
  CHECK(df_next_position(sh, 3, &next, &jumps) == 2 && sh->ready == DF_NO_TASK, "the noted run goes first");
  sh->tasks[2] = DF_NO_TASK; /* it completed */
  CHECK(df_next_position(sh, 3, &next, &jumps) == 0, "then the queue from its front");
  sh->ready = 2;
  CHECK(df_next_position(sh, 3, &next, &jumps) == 1, "a noted run that completed is passed over");
  CHECK(df_next_position(sh, 3, &next, &jumps) == DF_NO_TASK, "and a completed position too: the traversal ends");
  next = 0;
  jumps = 0;
  sh->tasks[2] = 11;
  for (int k = 0; k < 3; k++) {
    sh->ready = 1;
    CHECK(df_next_position(sh, 3, &next, &jumps) == 1, "jump %d of at most 3", k + 1);
  }
  sh->ready = 1;
  CHECK(df_next_position(sh, 3, &next, &jumps) == 0, "no more jumps than tasks in one traversal");
  /* Position 0 ran and left for position 2: 0 comes back before 1, which is queued behind it. */
  next = 1;
  jumps = 0;
  sh->position = 0;
  sh->ready = 2;
  CHECK(df_next_position(sh, 3, &next, &jumps) == 2, "the run left for");
  CHECK(df_next_position(sh, 3, &next, &jumps) == 0, "then the run that left, before the runs behind it");
  CHECK(df_next_position(sh, 3, &next, &jumps) == 1, "then the queue's order");
  free(r);
}

/* Sending ahead (df_other_run_ready, df_queued_run_unbegun): once a run of the queue was preempted,
 * a wait's first pass over the queue leaves for a queued one-channel run that has not begun and
 * begins by sending; in one order (nothing preempted) no wait does, nor with DFCCL_SEND_AHEAD=0,
 * after the first pass, for a run that began, for one that receives first, for one of several
 * channels, or for one of lower priority.  A preemption in df_run_task is what turns it on. */
static void test_send_ahead(void) {
  enum { OTHER = OTHER_COLL };
  other_fixture o; /* a one-channel all-reduce on connectors of its own, nothing received yet */
  ring_fixture* r = ring_and_other(&o);
  r->f.colls[OTHER].kind = DF_COLL_ALL_REDUCE;
  df_daemon_args* a = &r->f.args;
  df_block_shared* sh = &r->f.shared;
  df_run run = ring_direct_run(r, 1u << 12);
  int32_t other_send[RING_COUNT] = {0}, other_recv_buf[RING_COUNT];
  df_sqe e = sqe_for(OTHER, 1, other_send, other_recv_buf);
  df_context_start_run(a, &r->f.block, sh, &e); /* taken: not begun */
  sh->tasks[0] = RING_COLL;
  sh->tasks[1] = OTHER;
  sh->ntasks = 2;
  a->spin.floor = 64;
  a->spin.leave_share = 16;
  a->spin.send_ahead = 1;
  sh->disorder = 0;
  uint64_t from = (1u << 12) / 16;
  /* The first pass looks at position `polls` (the cursor goes with the polls there). */
#define LOOKS(polls) other_run_ready(&run, (polls), (uint32_t)(polls))
  CHECK(!LOOKS(1) && !LOOKS(from - DF_LOOK_AROUND_EVERY + 1), "in one order a wait does not send ahead");
  sh->disorder = 1;
  sh->ready = DF_NO_TASK;
  CHECK(LOOKS(1) && sh->ready == 1, "after a preemption the first pass leaves for the run not begun");
  CHECK(!LOOKS(0), "not for the run that waits");
  CHECK(!LOOKS(3), "nor after the first pass (the run has no slot to take)");
  r->f.colls[OTHER].kind = DF_COLL_BROADCAST;
  CHECK(!LOOKS(1), "nor for a run that may begin by receiving");
  r->f.colls[OTHER].kind = DF_COLL_ALL_GATHER;
  CHECK(LOOKS(1), "an all-gather sends first");
  r->f.colls[OTHER].kind = DF_COLL_REDUCE_SCATTER;
  CHECK(LOOKS(1), "and a reduce-scatter");
  r->f.colls[OTHER].kind = DF_COLL_ALL_REDUCE;
  r->f.colls[OTHER].nchannels = 2;
  CHECK(!LOOKS(1), "a run of several channels is not sent ahead");
  r->f.colls[OTHER].nchannels = 1;
  r->f.colls[RING_COLL].priority = run.ctx->stat.priority = 1;
  CHECK(!LOOKS(1), "nor one of lower priority");
  r->f.colls[RING_COLL].priority = run.ctx->stat.priority = 0;
  a->spin.leave_share = 0;
  CHECK(!LOOKS(1), "with the leaving rule off, no wait leaves");
  a->spin.leave_share = 16;
  /* OTHER runs once (it stops at its gate, say): it has begun. */
  sh->tasks[0] = OTHER;
  sh->ntasks = 1;
  r->f.colls[OTHER].links = (df_links){0}; /* one participant: its run completes at once */
  r->f.colls[OTHER].nranks = 1;
  bool completed = false, timesliced = false;
  df_run_task(a, &r->f.block, sh, 0, &completed, &timesliced);
  CHECK(completed, "the run of one participant completes");
  df_cq_take(r->cq_entries, 8, &r->cq_taken);
  r->cq_heads[0] = r->cq_taken;
  r->f.colls[OTHER].links = o.links;
  r->f.colls[OTHER].nranks = 2;
  sh->tasks[0] = RING_COLL;
  sh->tasks[1] = OTHER;
  sh->ntasks = 2;
  run.ctx = &sh->slots[df_context_acquire(a, &r->f.block, sh, RING_COLL)]; /* the two share a slot */
  CHECK(!LOOKS(1), "a run that has run on this block is not sent ahead again");
  df_context_start_run(a, &r->f.block, sh, &e);
  CHECK(LOOKS(1), "its next run is");
#undef LOOKS
  /* What turns it on: a preemption of the block's run, with DFCCL_SEND_AHEAD=1 only. */
  a->spin.leave_share = 0; /* the wait gives up at its threshold (no SQ here to look at) */
  for (uint32_t on = 0; on < 2; on++) {
    a->spin.send_ahead = on;
    sh->disorder = 0;
    sh->tasks[0] = RING_COLL;
    sh->ntasks = 1;
    df_sqe ring_e = sqe_for(RING_COLL, 2, NULL, r->recv);
    df_context_start_run(a, &r->f.block, sh, &ring_e);
    df_run_task(a, &r->f.block, sh, 0, &completed, &timesliced); /* the root posted nothing: preempted */
    CHECK(!completed && sh->disorder == on, "a preemption with DFCCL_SEND_AHEAD=%u: disorder %u", on, sh->disorder);
  }
  free(r);
}

/* Credits: a send takes a slot only once the successor has freed it, and reads the successor's head
 * only when the slots it knows to be free run out (heads only grow) -- one load a step fewer on
 * the GPU, where each acquire empties the SM's L1.  A head revoked meanwhile is seen at the next
 * read.  With a read of the head on every send (the rule before), the revoked head below fails the
 * send that still had a known free slot, and this test fails. */
static void test_credits(void) {
  ring_fixture* r = zeroed(1, sizeof *r);
  ring_init(r);
  df_run run = ring_direct_run(r, 100);
  int32_t src[RING_COUNT] = {0};
  for (int k = 0; k < DF_FIFO_STEPS; k++)
    CHECK(df_send(&run, src, RING_COUNT) == DF_PRIM_DONE, "send %d of the first %d completes", k + 1, DF_FIFO_STEPS);
  CHECK(df_send(&run, src, RING_COUNT) == DF_PRIM_BLOCKED, "with no slot freed, send %d waits", DF_FIFO_STEPS + 1);
  CHECK(r->sent == DF_FIFO_STEPS, "and takes no slot (%llu sent)", (unsigned long long)r->sent);
  r->my_send.head = 5; /* the successor consumed five */
  CHECK(df_send(&run, src, RING_COUNT) == DF_PRIM_DONE, "a freed slot: the send completes");
  CHECK(r->to_next.credit == 5, "the head read is kept as the credit (%llu)", (unsigned long long)r->to_next.credit);
  r->my_send.head = DF_REVOKED(DF_RUN_TIMED_OUT); /* the successor's run failed */
  for (int k = 0; k < 4; k++)
    CHECK(df_send(&run, src, RING_COUNT) == DF_PRIM_DONE, "slot %d known free: sent without reading the head", k + 1);
  CHECK(r->sent == 5 + DF_FIFO_STEPS, "every slot the successor freed is used (%llu sent)",
        (unsigned long long)r->sent);
  CHECK(df_send(&run, src, RING_COUNT) == DF_PRIM_FAILED && run.error == DF_RUN_TIMED_OUT,
        "once the known slots are used, the head is read: revoked, the run fails with its reason");
  free(r);
}

/* The SQ of the intake tests: the host's ring and its mirror, four entries each, none written. */
typedef struct {
  df_sqe_lines host[5]; /* four slots and the acknowledged count */
  df_sqe mirror[4];
} sq_fixture;

static void sq_init(sq_fixture* q, df_daemon_args* a) {
  memset(q, 0, sizeof *q);
  for (int i = 0; i < 4; i++) q->mirror[i].seq = DF_SEQ_NONE;
  give_sq_ring(a, q->host, 4);
  a->sq = (df_sq){.entries = q->mirror, .mask = 3};
}

/* A wait takes SQEs into the task queue, at its end, without leaving (df_take_in_wait): the queue
 * grows while the run is on, the entry is handed back to the host, the round counts it, and a look
 * then finds the taken run once its slot has come -- a jump to a position behind the traversal's
 * end.  What cannot join at the end (a higher priority, an id lower than the last one queued under
 * DFCCL_QUEUE_ORDER=id) stops the intake and the wait leaves; and with the knob off (the twin),
 * every entry makes it leave, as before. */
static void test_take_in_wait(void) {
  enum { OTHER = OTHER_COLL, HIGH = 10, LATER = 11, LAST = 12 };
  other_fixture o; /* OTHER, and three more on the same connectors */
  ring_fixture* r = ring_and_other(&o);
  df_daemon_args* a = &r->f.args;
  df_block_shared* sh = &r->f.shared;
  df_block_state* bs = &a->blocks[0];
  sq_fixture q;
  sq_init(&q, a);
  df_recv_ctrl* other_recv = &o.recv;
  for (uint32_t c = HIGH; c <= LAST; c++) r->f.colls[c] = r->f.colls[OTHER];
  r->f.colls[HIGH].priority = 1;

  df_run run = ring_direct_run(r, 1u << 12);
  sh->tasks[0] = RING_COLL;
  sh->ntasks = 1;
  sh->position = 0;
  sh->sqe_fetched = 0;
  a->spin.floor = 64;
  a->spin.leave_share = 16;
  uint64_t from = (1u << 12) / 16;
  /* The round robin's look at the SQ: cursor ntasks. */
#define LOOKS_AT_SQ(polls) other_run_ready(&run, (polls), sh->ntasks)

  /* The twin: DFCCL_TAKE_IN_WAIT=0 leaves for the entry and takes nothing. */
  publish_sqe(a, 0, sqe_for(OTHER, 1, NULL, NULL), 1);
  CHECK(LOOKS_AT_SQ(from) && sh->ntasks == 1 && bs->sq_forwarded == 0,
        "with DFCCL_TAKE_IN_WAIT=0 an entry not taken makes the wait leave, and stays in the SQ");

  a->spin.take_in_wait = 1;
  CHECK(!LOOKS_AT_SQ(from), "with DFCCL_TAKE_IN_WAIT=1 the wait takes the entry and goes on");
  CHECK(sh->ntasks == 2 && sh->tasks[0] == RING_COLL && sh->tasks[1] == OTHER,
        "the entry joined the queue at its end (%u tasks)", sh->ntasks);
  CHECK(bs->sq_forwarded == 1 && bs->sq_frontier == 1 && handed_back(a) == 1,
        "block 0 forwarded the entry and handed its slot back at once");
  CHECK(bs->counters.sqes_read == 1 && a->coll_counters[OTHER].last_queue_length == 2 && sh->sqe_fetched == 1,
        "counted as read, in a queue of two, and as the round's activity");
  CHECK(a->dynamic[OTHER].epoch == 1 && a->dynamic[OTHER].step == 0, "the taken run starts from the beginning");
  CHECK(!LOOKS_AT_SQ(from + DF_LOOK_AROUND_EVERY), "with the SQ empty the wait does not leave");
  /* The taken run's predecessor sends: a look finds it behind the traversal's end (ntasks 1). */
  other_recv->tail = 1;
  sh->ready = DF_NO_TASK;
  CHECK(other_run_ready(&run, from, 1) && sh->ready == 1, "a look finds the taken run ready");
  uint32_t next = 1, jumps = 0;
  CHECK(df_next_position(sh, 1, &next, &jumps) == 1, "the traversal of one task jumps to it");
  CHECK(df_next_position(sh, 1, &next, &jumps) == 0, "then comes back to the run that left");
  CHECK(df_next_position(sh, 1, &next, &jumps) == DF_NO_TASK, "and leaves the rest to the next traversal");
  next = 1;
  sh->ready = 1;
  CHECK(df_next_position(sh, 1, &next, &jumps) == 1 && jumps == 2,
        "a taken run counts among the jumps a traversal may make: a second one to it");
  other_recv->tail = 0;

  /* A higher priority would go before the queued runs: not taken, the wait leaves. */
  publish_sqe(a, 1, sqe_for(HIGH, 1, NULL, NULL), 1);
  CHECK(LOOKS_AT_SQ(from) && sh->ntasks == 2 && bs->sq_forwarded == 1,
        "an entry of higher priority is left in the SQ and the wait leaves");
  CHECK(!LOOKS_AT_SQ(from - DF_LOOK_AROUND_EVERY) && sh->ntasks == 2, "but not before its share");
  CHECK(df_fetch_sqes(a, &r->f.block, sh) == 1 && sh->tasks[0] == HIGH && sh->ntasks == 3,
        "the next round's fetch puts it first");
  sh->tasks[0] = RING_COLL; /* back to the queue of the run in its wait, OTHER and a completed one */
  sh->tasks[1] = OTHER;
  sh->tasks[2] = DF_NO_TASK;

  /* Behind a completed position: appended after it, and the queue's length counts runs only. */
  publish_sqe(a, 2, sqe_for(LATER, 1, NULL, NULL), 1);
  CHECK(!LOOKS_AT_SQ(from) && sh->ntasks == 4 && sh->tasks[3] == LATER && sh->tasks[2] == DF_NO_TASK,
        "an entry is taken behind a completed position");
  CHECK(a->coll_counters[LATER].last_queue_length == 3, "a queue of three runs, not four positions (%u)",
        a->coll_counters[LATER].last_queue_length);
  df_task_queue_compact(sh);
  CHECK(sh->ntasks == 3 && sh->tasks[2] == LATER, "compaction keeps it last");

  /* DFCCL_QUEUE_ORDER=id: a lower id than the last one queued would go earlier. */
  a->spin.queue_by_id = 1;
  r->f.colls[RING_COLL].order = 1;
  r->f.colls[OTHER].order = 2;
  r->f.colls[LATER].order = 5;
  r->f.colls[HIGH].priority = 0;
  r->f.colls[HIGH].order = 3;
  sh->tasks[0] = RING_COLL;
  sh->tasks[1] = OTHER;
  sh->tasks[2] = LATER;
  publish_sqe(a, 3, sqe_for(HIGH, 2, NULL, NULL), 1);
  CHECK(LOOKS_AT_SQ(from) && sh->ntasks == 3 && bs->sq_forwarded == 3, "by id, a lower id than the last is left");
  r->f.colls[HIGH].order = 6;
  /* By id a wait looks around from the floor, but at the SQ only from its share (a load from host
   * memory), unless DFCCL_TAKE_IN_WAIT=2. */
  CHECK(!LOOKS_AT_SQ(from - 1) && sh->ntasks == 3 && bs->sq_forwarded == 3,
        "before its share a wait takes nothing (DFCCL_TAKE_IN_WAIT=1)");
  a->spin.take_in_wait = 2;
  CHECK(!LOOKS_AT_SQ(from - 1) && sh->ntasks == 4 && sh->tasks[3] == HIGH,
        "with DFCCL_TAKE_IN_WAIT=2 it takes a higher id from its first look");
  a->spin.take_in_wait = 1;
  a->spin.queue_by_id = 0;

  /* The final exit, taken in a wait: noted, nothing queued. */
  publish_sqe(a, 4, sqe_for(DF_SQE_EXIT, 0, NULL, NULL), 0);
  CHECK(!LOOKS_AT_SQ(from) && sh->ntasks == 4 && bs->exited && bs->sq_forwarded == 5,
        "the final exit is taken and noted, and queues nothing");
  /* A lone run's slot, not handed back yet (df_fetch_sqes): a look that finds nothing leaves it --
   * no fence -- and one that takes an entry hands both back. */
  bs->sq_acknowledged = 4;
  *a->sq_host.acknowledged = 4;
  CHECK(!LOOKS_AT_SQ(from) && handed_back(a) == 4, "an empty look hands nothing back");
  publish_sqe(a, 5, sqe_for(LAST, 1, NULL, NULL), 1);
  CHECK(!LOOKS_AT_SQ(from) && sh->tasks[4] == LAST && handed_back(a) == 6,
        "an entry taken: its slot and the lone run's are handed back");
#undef LOOKS_AT_SQ
  free(r);

  /* Block 1 of two reads the mirror: its entries are taken there, and a run without a channel on
   * it is read (its reader count grows) but not queued. */
  r = zeroed(1, sizeof *r);
  ring_init(r);
  a = &r->f.args;
  sh = &r->f.shared;
  df_block_state two[2];
  memset(two, 0, sizeof two);
  a->blocks = two;
  a->dynamic = zeroed(2 * DF_MAX_COLLS, sizeof *a->dynamic); /* a row per block */
  r->f.block = (df_block){.tid = 0, .nthreads = 1, .bid = 1, .nblocks = 2};
  sq_init(&q, a);
  r->f.colls[OTHER] = r->f.colls[RING_COLL];
  r->f.colls[OTHER].nchannels = 2;
  a->spin.floor = 64;
  a->spin.leave_share = 16;
  a->spin.take_in_wait = 1;
  df_run other = ring_direct_run(r, 1u << 12);
  sh->tasks[0] = RING_COLL;
  sh->ntasks = 1;
  for (uint64_t k = 0; k < 2; k++) {
    q.mirror[k] = sqe_for(k == 0 ? RING_COLL + 1 : OTHER, 1, NULL, NULL);
    q.mirror[k].nchannels = k == 0 ? 1 : 2; /* entry 0: a run of block 0 only */
    q.mirror[k].nreaders = 2;
    q.mirror[k].readers_done = 1;
    q.mirror[k].seq = k;
  }
  CHECK(!other_run_ready(&other, from, 1), "block 1 takes the mirror's entries in a wait");
  CHECK(sh->ntasks == 2 && sh->tasks[1] == OTHER && two[1].sq_frontier == 2 && sh->sqe_fetched == 1,
        "the run with a channel here is queued, the other only read (%u tasks, frontier %llu)", sh->ntasks,
        (unsigned long long)two[1].sq_frontier);
  CHECK(q.mirror[0].readers_done == 2 && q.mirror[1].readers_done == 2, "both mirror slots counted as read");
  free(a->dynamic);
  free(r);
}

/* After a wait took entries (df_take_in_wait), one pass over the queue from the runs taken looks at
 * every poll (df_look_plan.pass_ends): a taken run whose predecessor has sent is found at the next
 * poll, not DF_LOOK_AROUND_EVERY polls later.  The twin: the same wait without an intake does not
 * look between its looks. */
static void test_intake_pass(void) {
  other_fixture o;
  ring_fixture* r = ring_and_other(&o);
  df_daemon_args* a = &r->f.args;
  df_block_shared* sh = &r->f.shared;
  sq_fixture q;
  sq_init(&q, a);
  df_run run = ring_direct_run(r, 1u << 12);
  sh->tasks[0] = RING_COLL;
  sh->ntasks = 1;
  sh->position = 0;
  sh->sqe_fetched = 0;
  sh->ready = DF_NO_TASK;
  a->spin.floor = 64;
  a->spin.leave_share = 16;
  a->spin.take_in_wait = 1;
  uint64_t from = (1u << 12) / 16;
  o.recv.tail = 1; /* OTHER's predecessor has sent */
  publish_sqe(a, 0, sqe_for(OTHER_COLL, 1, NULL, NULL), 1);
  df_look_plan plan = df_look_plan_of(&run);
  uint32_t cursor = 1; /* the SQ's position in a queue of one */
  CHECK(!df_other_run_ready(&run, &plan, from, &cursor) && sh->ntasks == 2 && sh->tasks[1] == OTHER_COLL,
        "the look at the SQ takes OTHER and the wait goes on");
  CHECK(df_other_run_ready(&run, &plan, from + 1, &cursor) && sh->ready == 1,
        "the very next poll looks at the run taken and finds its slot");
  /* The twin: a plan without the intake, the cursor at OTHER's position. */
  plan = df_look_plan_of(&run);
  cursor = 1;
  sh->ready = DF_NO_TASK;
  CHECK(!df_other_run_ready(&run, &plan, from + 1, &cursor) && sh->ready == DF_NO_TASK,
        "without an intake a poll between the looks does not look");
  CHECK(df_other_run_ready(&run, &plan, from + DF_LOOK_AROUND_EVERY, &cursor) && sh->ready == 1,
        "only the next look (%d polls on) finds it", DF_LOOK_AROUND_EVERY);
  free(r);
}

/* The helper of test_wait_not_left: once the daemon has taken the SQE (its slot handed back), the
 * root sends the run's slot. */
typedef struct {
  ring_fixture* r;
  int done; /* the run is over: stop waiting */
} late_root;

static void* late_root_main(void* arg) {
  late_root* l = arg;
  while (handed_back(&l->r->f.args) == 0) {
    if (__atomic_load_n(&l->done, __ATOMIC_ACQUIRE)) return NULL;
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  ring_fixture* r = l->r;
  df_coll_static st = r->f.colls[RING_COLL];
  int32_t* slot = (int32_t*)r->fifo;
  for (int i = 0; i < RING_COUNT; i++) slot[i] = 1000 + i;
  /* Whole, as a peer's daemon stores it: the wait loads it meanwhile (df_look). */
  __atomic_store_n(&r->my_recv.tags[0], df_slot_tag(df_run_tag(&st, 1), 0), __ATOMIC_RELAXED);
  __atomic_store_n(&r->my_recv.tail, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* A whole run through df_run_task, the SQE there from its start and the root sending only once the
 * daemon has taken it: with DFCCL_TAKE_IN_WAIT=1 the wait takes it and the run completes without a
 * preemption; with 0 (the twin) the wait leaves for it before its threshold -- a preemption, and
 * the root never sends. */
static void test_wait_not_left(void) {
  enum { OTHER = 9 };
  for (int take = 0; take <= 1; take++) {
    ring_fixture* r = zeroed(1, sizeof *r);
    ring_init(r);
    df_daemon_args* a = &r->f.args;
    df_block_shared* sh = &r->f.shared;
    sq_fixture q;
    sq_init(&q, a);
    r->f.colls[OTHER] = r->f.colls[RING_COLL];
    a->spin.front = a->spin.ceiling = 1u << 16; /* seconds on the host: the helper comes long before */
    a->spin.floor = 64;
    a->spin.leave_share = 16;
    a->spin.take_in_wait = (uint32_t)take;
    df_sqe e = sqe_for(RING_COLL, 1, NULL, r->recv);
    df_context_start_run(a, &r->f.block, sh, &e);
    sh->tasks[0] = RING_COLL;
    sh->ntasks = 1;
    publish_sqe(a, 0, sqe_for(OTHER, 1, NULL, NULL), 1);
    late_root l = {.r = r};
    pthread_t helper;
    if (pthread_create(&helper, NULL, late_root_main, &l) != 0) {
      perror("pthread_create");
      exit(2);
    }
    bool completed = false, timesliced = false;
    df_run_task(a, &r->f.block, sh, 0, &completed, &timesliced);
    __atomic_store_n(&l.done, 1, __ATOMIC_RELEASE);
    pthread_join(helper, NULL);
    uint64_t preemptions = a->blocks[0].counters.preemptions;
    if (take) {
      CHECK(completed && preemptions == 0, "DFCCL_TAKE_IN_WAIT=1: the run completed in its wait (%llu preemptions)",
            (unsigned long long)preemptions);
      CHECK(sh->ntasks == 2 && sh->tasks[1] == OTHER, "and the entry was taken meanwhile");
      CHECK(r->recv[7] == 1007, "the root's data landed");
    } else {
      /* A wait that reaches its threshold notes when it looked at the error words: this one left. */
      CHECK(!completed && preemptions == 1 && sh->error_look_ns == 0,
            "DFCCL_TAKE_IN_WAIT=0: the wait left for the entry before its threshold (%llu preemptions)",
            (unsigned long long)preemptions);
      CHECK(sh->ntasks == 1 && a->blocks[0].sq_forwarded == 0, "and the entry is still in the SQ");
      CHECK(df_fetch_sqes(a, &r->f.block, sh) == 1 && sh->ntasks == 2, "for the next round to take");
    }
    free(r);
  }
}

int main(void) {
  test_task_queue();
  test_thresholds();
  test_contexts();
  test_whole_run();
  test_gate_of_channels();
  test_failures();
  test_growth();
  test_leave_for_ready();
  test_send_ahead();
  test_credits();
  test_take_in_wait();
  test_intake_pass();
  test_wait_not_left();
  if (failures) {
    printf("test_scheduler: %d failures\n", failures);
    return 1;
  }
  printf(
      "test_scheduler: task queue, thresholds, contexts, a whole run, the gate of several channels, failed runs, "
      "growth, credits, leaving for a ready run, sending ahead, taking SQEs in a wait, the pass after an intake: ok\n");
  return 0;
}
