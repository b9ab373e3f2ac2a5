/*
 * Deregistration, index reuse and concurrent registration on a GPU machine that has no MPI: N
 * rank processes forked before any CUDA call, one context each, and a bootstrap allgather through
 * shared memory (any subsets of the ranks, concurrently on different subsets).  The MPI tests
 * test_deregister and test_concurrent_register check the same on the host target in CI; this one
 * exercises the CUDA side: connectors freed (cudaFree, cudaIpcCloseMemHandle) while the daemon may
 * run, static contexts rewritten at reused indices while it runs (read around L1), two threads per
 * process registering on different groups.
 *
 *   test_deregister_fork [-n ranks (2..8, even)] [-c cycles] [-p phases: 1 ids, 2 cycles, 4 threads, 8 control]
 *   (DFCCL_TARGET=cuda|host; ALARM_S: seconds before a rank gives up, 300)
 *
 * Build (from the repository root, after make): gcc -std=c11 -O2 -pthread -D_GNU_SOURCE -Icore -Itest/common
 *   [-DDFCCL_HAVE_CUDA -I/usr/local/cuda/include] test/gpu/test_deregister_fork.c -L.libs -ldfccl
 *   [-L/usr/local/cuda/lib64 -lcudart]
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dfccl.h"
#include "options.h"

#ifdef DFCCL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define MAX_RANKS 8
#define MAX_BYTES 16384
#define MAX_BOXES 32

/* ---- the bootstrap: one mailbox per set of ranks, double-buffered by call parity ---- */

typedef struct {
  _Atomic uint64_t mask;              /* the ranks that use this box (0: free)                    */
  _Atomic uint64_t posted[MAX_RANKS]; /* calls whose data each member has written             */
  _Atomic uint64_t read[MAX_RANKS];   /* calls whose data each member has copied out          */
  char data[2][MAX_RANKS][MAX_BYTES];
} mailbox;

static mailbox* boxes;            /* MAP_SHARED, made before fork */
static uint64_t calls[MAX_BOXES]; /* this process's calls per box (one thread per box at a time) */
static int my_rank, nranks;
static int phases = 7; /* -p: 1 reuse ids, 2 cycles, 4 threads */

static void pause_briefly(unsigned i) {
  if (i < 100) sched_yield();
  else nanosleep(&(struct timespec){.tv_nsec = 20000}, NULL);
}

static int box_of(uint64_t mask) {
  for (int b = 0; b < MAX_BOXES; b++) {
    uint64_t seen = atomic_load(&boxes[b].mask);
    if (seen == mask) return b;
    if (seen == 0) {
      uint64_t free_box = 0;
      if (atomic_compare_exchange_strong(&boxes[b].mask, &free_box, mask) || free_box == mask) return b;
    }
  }
  fprintf(stderr, "out of mailboxes\n");
  exit(3);
}

static int shm_allgather(void* state, const int* ranks, int n, const void* sendbuf, void* recvbuf, size_t bytes) {
  (void)state;
  if (bytes > MAX_BYTES) return 1;
  uint64_t mask = 0;
  int me = -1;
  for (int i = 0; i < n; i++) {
    mask |= 1ull << ranks[i];
    if (ranks[i] == my_rank) me = i;
  }
  int b = box_of(mask);
  mailbox* box = &boxes[b];
  uint64_t k = ++calls[b];
  char(*slot)[MAX_BYTES] = box->data[k % 2];
  for (int i = 0; i < n; i++) /* everyone has read call k-2, which used this half */
    for (unsigned s = 0; atomic_load(&box->read[ranks[i]]) + 2 < k; s++) pause_briefly(s);
  memcpy(slot[me], sendbuf, bytes);
  atomic_store(&box->posted[my_rank], k);
  for (int i = 0; i < n; i++)
    for (unsigned s = 0; atomic_load(&box->posted[ranks[i]]) < k; s++) pause_briefly(s);
  for (int i = 0; i < n; i++) memcpy((char*)recvbuf + (size_t)i * bytes, slot[i], bytes);
  atomic_store(&box->read[my_rank], k);
  return 0;
}

/* ---- buffers and checks ---- */

static bool gpu;
static atomic_long failures;
#ifdef DFCCL_HAVE_CUDA
static int device;
#endif

#define CHECK(call)                                                                                        \
  do {                                                                                                     \
    dfcclResult_t r_ = (call);                                                                             \
    if (r_ != dfcclSuccess) {                                                                              \
      fprintf(stderr, "rank %d line %d: %s: %s (%s)\n", my_rank, __LINE__, #call, dfcclGetErrorString(r_), \
              dfcclGetLastErrorMessage());                                                                 \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

static void* buffer(size_t bytes) {
  void* p = NULL;
#ifdef DFCCL_HAVE_CUDA
  if (gpu) {
    if (cudaMalloc(&p, bytes + 16) != cudaSuccess) exit(4);
    return p;
  }
#endif
  p = malloc(bytes + 16);
  if (!p) exit(4);
  return p;
}

static void release(void* p) {
#ifdef DFCCL_HAVE_CUDA
  if (gpu) {
    cudaFree(p);
    return;
  }
#endif
  free(p);
}

#ifdef DFCCL_HAVE_CUDA
static cudaStream_t copy_stream; /* non-blocking: a copy does not wait for the daemon */
#endif

static void copy(void* dst, const void* src, size_t bytes, bool to_device) {
#ifdef DFCCL_HAVE_CUDA
  if (gpu) {
    if (cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, copy_stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(copy_stream) != cudaSuccess)
      exit(4);
    return;
  }
#endif
  (void)to_device;
  memcpy(dst, src, bytes);
}

typedef enum { ALL_REDUCE_SUM, ALL_REDUCE_MAX, ALL_GATHER, BROADCAST, NKINDS } kind;

typedef struct {
  int id;
  kind kind;
  size_t count;
  int ranks[MAX_RANKS];  /* ascending */
  int n, position, root; /* root: world rank */
  int32_t *send, *recv;
} coll;

static int32_t input(int rank, int id, size_t i, int round) {
  return (int32_t)((rank + 1) * (int)(i % 7 + 1) + id % 5 + round);
}

static coll make(int id, kind k, size_t count, const int* ranks, int n, int root) {
  coll c = {.id = id, .kind = k, .count = count, .n = n, .root = root};
  for (int i = 0; i < n; i++) {
    c.ranks[i] = ranks[i];
    if (ranks[i] == my_rank) c.position = i;
  }
  return c;
}

static void reg(dfcclRankCtx_t ctx, const coll* c) {
  switch (c->kind) {
    case ALL_REDUCE_SUM:
      CHECK(dfcclRegisterAllReduce(ctx, c->count, dfcclInt32, dfcclSum, c->id, c->ranks, c->n, 0));
      break;
    case ALL_REDUCE_MAX:
      CHECK(dfcclRegisterAllReduce(ctx, c->count, dfcclInt32, dfcclMax, c->id, c->ranks, c->n, 0));
      break;
    case ALL_GATHER: CHECK(dfcclRegisterAllGather(ctx, c->count, dfcclInt32, c->id, c->ranks, c->n, 0)); break;
    default: CHECK(dfcclRegisterBroadcast(ctx, c->count, dfcclInt32, c->root, c->id, c->ranks, c->n, 0)); break;
  }
}

static size_t recv_count(const coll* c) { return c->kind == ALL_GATHER ? c->count * (size_t)c->n : c->count; }

static int32_t expected(const coll* c, size_t i, int round) {
  switch (c->kind) {
    case ALL_GATHER: return input(c->ranks[i / c->count], c->id, i % c->count, round);
    case BROADCAST: return input(c->root, c->id, i, round);
    case ALL_REDUCE_MAX: return input(c->ranks[c->n - 1], c->id, i, round);
    default: {
      int32_t s = 0;
      for (int r = 0; r < c->n; r++) s += input(c->ranks[r], c->id, i, round);
      return s;
    }
  }
}

static void on_done(int id, dfcclResult_t status, void* arg) {
  (void)id;
  if (status != dfcclSuccess) atomic_fetch_add(&failures, 1);
  atomic_fetch_add((atomic_int*)arg, 1);
}

static void prepare(coll* c, int round) {
  int32_t* host = malloc(sizeof(int32_t) * (recv_count(c) + 1));
  for (size_t i = 0; i < c->count; i++) host[i] = input(my_rank, c->id, i, round);
  c->send = buffer(sizeof(int32_t) * c->count);
  c->recv = buffer(sizeof(int32_t) * recv_count(c));
  copy(c->send, host, sizeof(int32_t) * c->count, true);
  free(host);
}

static void submit(dfcclRankCtx_t ctx, coll* c, atomic_int* done) {
  switch (c->kind) {
    case ALL_GATHER: CHECK(dfcclRunAllGather(ctx, c->send, c->recv, c->id, on_done, done)); break;
    case BROADCAST: CHECK(dfcclRunBroadcast(ctx, c->send, c->recv, c->id, on_done, done)); break;
    default: CHECK(dfcclRunAllReduce(ctx, c->send, c->recv, c->id, on_done, done)); break;
  }
}

static void wait_for(atomic_int* done, int n) {
  for (unsigned s = 0; atomic_load(done) < n; s++) pause_briefly(s);
}

static void check_and_free(coll* cs, int n, int round);

/* Runs the collectives together and checks every element. */
static void run_and_check(dfcclRankCtx_t ctx, coll* cs, int n, int round) {
  atomic_int done = 0;
  for (int j = 0; j < n; j++) prepare(&cs[j], round);
  for (int j = 0; j < n; j++) submit(ctx, &cs[j], &done);
  wait_for(&done, n);
  check_and_free(cs, n, round);
}

static void check_and_free(coll* cs, int n, int round) {
  for (int j = 0; j < n; j++) {
    coll* c = &cs[j];
    size_t m = recv_count(c);
    int32_t* host = malloc(sizeof(int32_t) * (m + 1));
    copy(host, c->recv, sizeof(int32_t) * m, false);
    for (size_t i = 0; i < m; i++)
      if (host[i] != expected(c, i, round)) {
        fprintf(stderr, "rank %d: collective %d (kind %d, %zu elements, %d ranks) round %d: [%zu] = %d, expected %d\n",
                my_rank, c->id, (int)c->kind, c->count, c->n, round, i, host[i], expected(c, i, round));
        atomic_fetch_add(&failures, 1);
        break;
      }
    free(host);
    release(c->send);
    release(c->recv);
  }
}

static void deregister(dfcclRankCtx_t ctx, const coll* cs, int n) {
  int ids[64];
  for (int j = 0; j < n; j++) ids[j] = cs[j].id;
  CHECK(dfcclDeregister(ctx, ids, n));
}

/* ---- the phases ---- */

static int all_ranks[MAX_RANKS], pair[2], self[1];

static void reuse_ids(dfcclRankCtx_t ctx) {
  coll p[2] = {make(10, ALL_REDUCE_SUM, 1000, pair, 2, 0), make(11, ALL_GATHER, 300, pair, 2, 0)};
  coll a[1] = {make(20, ALL_REDUCE_SUM, 500, all_ranks, nranks, 0)};
  for (int j = 0; j < 2; j++) reg(ctx, &p[j]);
  reg(ctx, &a[0]);
  run_and_check(ctx, p, 2, 1);
  run_and_check(ctx, a, 1, 1);
  if (my_rank < 2) { /* pair {0,1} replaces its collectives; the others keep theirs */
    deregister(ctx, p, 2);
    p[0] = make(10, BROADCAST, 777, pair, 2, pair[1]);
    p[1] = make(11, ALL_REDUCE_MAX, 5000, pair, 2, 0);
    for (int j = 0; j < 2; j++) reg(ctx, &p[j]);
    dfcclCollStats_t s;
    CHECK(dfcclGetCollStats(ctx, 10, &s));
    if (s.runs || s.contextLoads || s.contextSaves) {
      fprintf(stderr, "rank %d: re-registered id 10 shows old statistics\n", my_rank);
      atomic_fetch_add(&failures, 1);
    }
  }
  run_and_check(ctx, p, 2, 2);
  run_and_check(ctx, a, 1, 2);
  deregister(ctx, p, 2);
  deregister(ctx, a, 1);
}

/* A control without deregistration or threads (-p 8): the second collective's buffers are
 * allocated while the daemon that ran the first still runs (with a long DFCCL_QUIT_PERIOD_US). */
static void alloc_while_running(dfcclRankCtx_t ctx) {
  coll cs[2] = {make(30, ALL_REDUCE_SUM, 50, all_ranks, nranks, 0), make(31, ALL_GATHER, 70, all_ranks, nranks, 0)};
  for (int j = 0; j < 2; j++) reg(ctx, &cs[j]);
  atomic_int done = 0;
  prepare(&cs[0], 0);
  submit(ctx, &cs[0], &done);
  wait_for(&done, 1);
  prepare(&cs[1], 0);
  submit(ctx, &cs[1], &done);
  wait_for(&done, 2);
  check_and_free(cs, 2, 0);
  if (my_rank == 0) printf("buffers allocated while the daemon runs: checked\n");
}

static void cycles(dfcclRankCtx_t ctx, int ncycles) {
  enum { SELF = 13 };
  long registered = 0;
  for (int c = 0; c < ncycles; c++) {
    coll cs[SELF + 2];
    int base = c % 2 ? 5000 + c * (SELF + 2) : 1000;
    for (int k = 0; k < SELF; k++)
      cs[k] = make(base + k, (kind)((c + k) % NKINDS), 1 + (size_t)((c * 37 + k * 101) % 900), self, 1, my_rank);
    cs[SELF] = make(base + SELF, (kind)(c % NKINDS), 1 + (size_t)((c * 53) % 3000), pair, 2, pair[c % 2]);
    int n = SELF + 1;
    if (c % 10 == 0) cs[n++] = make(3000 + c, (kind)(c / 10 % NKINDS), 64 + (size_t)c, all_ranks, nranks, c % nranks);
    for (int j = 0; j < n; j++) reg(ctx, &cs[j]);
    registered += n;
    run_and_check(ctx, cs, n, c);
    deregister(ctx, cs, SELF);
    for (int j = SELF; j < n; j++) deregister(ctx, &cs[j], 1);
  }
  if (my_rank == 0) printf("%d cycles: %ld collectives registered, run and deregistered\n", ncycles, registered);
}

typedef struct {
  dfcclRankCtx_t ctx;
  bool all;
  atomic_bool* started;
} worker;

static void* worker_main(void* arg) {
  worker* w = arg;
#ifdef DFCCL_HAVE_CUDA
  if (gpu) cudaSetDevice(device);
#endif
  atomic_store(w->started, true);
  for (int round = 0; round < 10; round++) {
    coll cs[3];
    for (int k = 0; k < 3; k++) {
      int id = (w->all ? 100000 : 200000) + round * 3 + k;
      cs[k] = w->all ? make(id, (kind)((round + k) % NKINDS), 100 + (size_t)k * 333, all_ranks, nranks, round % nranks)
                     : make(id, (kind)((round + k + 1) % NKINDS), 50 + (size_t)k * 777, pair, 2, pair[round % 2]);
      reg(w->ctx, &cs[k]);
    }
    run_and_check(w->ctx, cs, 3, round);
    if (round > 0) deregister(w->ctx, cs, 3); /* round 0's stay for dfcclDestroy */
  }
  return NULL;
}

/* Two threads, on all ranks and on the pair, the first started first on even ranks (with two
 * ranks the pair is all ranks: one group, which two threads may not register on at once). */
static void threads(dfcclRankCtx_t ctx) {
  if (nranks == 2) return;
  atomic_bool started[2] = {false, false};
  worker w[2] = {{ctx, true, &started[0]}, {ctx, false, &started[1]}};
  pthread_t t[2];
  int first = my_rank % 2;
  pthread_create(&t[first], NULL, worker_main, &w[first]);
  while (!atomic_load(&started[first])) sched_yield();
  usleep(20000);
  pthread_create(&t[1 - first], NULL, worker_main, &w[1 - first]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  if (my_rank == 0) printf("two threads per rank: 10 rounds each on all ranks and on the pairs\n");
}

static int rank_main(int ncycles) {
#ifdef DFCCL_HAVE_CUDA
  int devices = 0;
  if (gpu && (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1)) return 5;
  device = gpu ? my_rank % devices : 0; /* several GPUs: pairs span two of them */
  if (gpu && (cudaSetDevice(device) != cudaSuccess ||
              cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking) != cudaSuccess))
    return 5;
#endif
  for (int i = 0; i < nranks; i++) all_ranks[i] = i;
  pair[0] = my_rank & ~1;
  pair[1] = pair[0] + 1;
  self[0] = my_rank;
  dfcclInitArgs_t args = {
      .target = dfcclTargetDefault, .device = -1, .bootstrap = {my_rank, nranks, shm_allgather, NULL}};
  dfcclRankCtx_t ctx;
  CHECK(dfcclInit(&ctx, &args));
  if (phases & 1) reuse_ids(ctx);
  if (my_rank == 0 && (phases & 1)) printf("ids re-registered as other collectives: checked\n");
  if (phases & 2) cycles(ctx, ncycles);
  if (phases & 4) threads(ctx);
  if (phases & 8) alloc_while_running(ctx);
  CHECK(dfcclDestroy(ctx));
  return atomic_load(&failures) ? 1 : 0;
}

/* DFCCL_TARGET as dfcclInit reads it, and ALARM_S: checked before any rank starts. */
static unsigned read_environment(const options* opts) {
  options o = *opts;
  o.usage = NULL; /* not about the options */
  gpu = option_env_target_is_gpu(&o);
  const char* alarm_s = getenv("ALARM_S");
  long seconds = 300;
  if (alarm_s != NULL && !parse_long(alarm_s, 1, 86400, &seconds))
    options_fail(&o, "ALARM_S is '%s': expected an integer number of seconds in [1, 86400]", alarm_s);
  return (unsigned)seconds;
}

int main(int argc, char** argv) {
  int ncycles = 150;
  nranks = 4;
  options o = options_begin("test_deregister_fork",
                            "usage: test_deregister_fork [-n ranks (2..8, even)] [-c cycles] [-p phases (1..15)]", argc,
                            argv, "n:c:p:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'n') nranks = option_int(&o, 2, MAX_RANKS);
    if (opt == 'p') phases = option_int(&o, 1, 15);
    if (opt == 'c') ncycles = option_int(&o, 1, 1000000);
  }
  if (nranks % 2) options_fail(&o, "-n: expected an even number of ranks, got %d", nranks);
  unsigned alarm_s = read_environment(&o);
  setvbuf(stdout, NULL, _IOLBF, 0);
  boxes = mmap(NULL, sizeof(mailbox) * MAX_BOXES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (boxes == MAP_FAILED) return 3;
  pid_t pids[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      my_rank = r;
      alarm(alarm_s); /* a hang ends as a failure */
      _exit(rank_main(ncycles));
    }
  }
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d ended with status %d\n", r, status);
      failed++;
    }
  }
  printf("%s\n", failed ? "FAILED" : "PASS: all results exact");
  return failed ? 1 : 0;
}
