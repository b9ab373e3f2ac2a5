/*
 * A rank killed (SIGKILL) in the middle of a collective.  Three processes forked here run DFCCL on
 * the host target with a bootstrap over shared memory that gives up when a peer is gone; after an
 * exact all-reduce, the last one starts a 16 MiB all-reduce and kills itself while it moves.
 *
 *   test_dead_peer       DFCCL_TIMEOUT_S=1: the survivors' run fails with dfcclTimedOut within the
 *                        timeout plus a few seconds, they tear down (dfcclDestroy, whose closing
 *                        exchange with the dead rank fails after a bounded wait) and exit 0; no
 *                        shared-memory segment of any of the three is left in /dev/shm.
 *   test_dead_peer twin  no timeout: the survivors still wait after 5 s (the parent ends them).
 *
 * DFCCL_TARGET=cuda: the same with GPU daemons on device 0 (buffers in device memory), and the
 * parent checks with nvidia-smi that no survivor is left on the GPU.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <dirent.h>
#include <signal.h>
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

#define NPROC 3
#define MAX_CARD (256 << 10)
#define COUNT (4 << 20) /* int32: 16 MiB, the run a rank dies in */
/* The exact all-reduce before it: small, so that under ThreadSanitizer on two cores (three ranks'
 * daemons, pollers and the sanitizer's slowdown) it cannot itself stall past the 1 s timeout, as a
 * 16 MiB one once did in CI (a block of one rank starved for over a second). */
#define FIRST_COUNT (64 << 10)
#define TIMEOUT_S 1
#define BARRIER_S 5 /* the bootstrap's patience with a missing peer */

typedef struct {
  atomic_uint arrived;
  atomic_uint generation;
  char cards[NPROC][MAX_CARD];
} board;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every process arrives, or -1 after BARRIER_S (a peer is gone; the board is useless from then). */
static int barrier(board* b) {
  unsigned generation = atomic_load(&b->generation);
  if (atomic_fetch_add(&b->arrived, 1) + 1 == NPROC) {
    atomic_store(&b->arrived, 0);
    atomic_fetch_add(&b->generation, 1);
    return 0;
  }
  for (double until = now_s() + BARRIER_S; now_s() < until; usleep(100))
    if (atomic_load(&b->generation) != generation) return 0;
  return -1;
}

static int my_rank; /* this process's, set before dfcclInit */
static bool gpu;    /* DFCCL_TARGET=cuda: GPU daemons, device buffers */

static int allgather(void* state, const int* ranks, int nranks, const void* send, void* recv, size_t bytes) {
  board* b = state;
  if (nranks != NPROC || bytes > MAX_CARD) return 1; /* this test's exchanges are over every rank */
  memcpy(b->cards[my_rank], send, bytes);
  if (barrier(b) != 0) return 1;
  for (int i = 0; i < nranks; i++) memcpy((char*)recv + (size_t)i * bytes, b->cards[ranks[i]], bytes);
  return barrier(b) != 0;
}

typedef struct {
  atomic_int done;
  atomic_int status;
} outcome;

static void on_done(int id, dfcclResult_t status, void* arg) {
  (void)id;
  outcome* o = arg;
  atomic_store(&o->status, (int)status);
  atomic_store(&o->done, 1);
}

static dfcclResult_t run(dfcclComm_t comm, int32_t* buf, size_t count, outcome* o) {
  dfcclCollDesc_t d = {.kind = dfcclAllReduce, .count = count, .dtype = dfcclInt32, .op = dfcclSum};
  atomic_store(&o->done, 0);
  return dfcclSubmit(comm, &d, buf, buf, on_done, o);
}

#define MUST(call)                                                                                                 \
  do {                                                                                                             \
    dfcclResult_t r_ = (call);                                                                                     \
    if (r_ != dfcclSuccess) {                                                                                      \
      fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, #call, dfcclGetErrorString(r_), dfcclGetLastErrorMessage()); \
      _exit(1);                                                                                                    \
    }                                                                                                              \
  } while (0)

static int child(int rank, board* b) {
  my_rank = rank;
  dfcclTarget_t target = gpu ? dfcclTargetCuda : dfcclTargetHost;
  dfcclInitArgs_t args = {.target = target, .device = gpu ? 0 : -1, .bootstrap = {rank, NPROC, allgather, b}};
  dfcclRankCtx_t ctx;
  MUST(dfcclInit(&ctx, &args));
  dfcclComm_t comm;
  MUST(dfcclCommCreate(ctx, NULL, 0, &comm));
  int32_t* host = malloc(COUNT * sizeof *host);
  int32_t* buf = NULL;
  MUST(dfcclMemAlloc(target, args.device, COUNT * sizeof *buf, (void**)&buf));
  for (int i = 0; i < COUNT; i++) host[i] = (rank + 1) * (i % 5 + 1);
  MUST(dfcclCopy(buf, host, COUNT * sizeof *buf));
  outcome o;
  MUST(run(comm, buf, FIRST_COUNT, &o));
  while (!atomic_load(&o.done)) usleep(100);
  MUST(dfcclCopy(host, buf, FIRST_COUNT * sizeof *buf));
  long wrong = atomic_load(&o.status) != dfcclSuccess;
  for (int i = 0; i < FIRST_COUNT; i++) wrong += host[i] != 6 * (i % 5 + 1);
  printf("rank %d: first all-reduce %s\n", rank, wrong ? "WRONG" : "exact");
  fflush(stdout);
  MUST(run(comm, buf, COUNT, &o));
  if (rank == NPROC - 1) {
    /* Dies while the run moves: on the host target after some of its slots are out; a GPU daemon
     * finishes 16 MiB within a couple of milliseconds, so there it dies at once. */
    if (!gpu) usleep(2000);
    raise(SIGKILL);
  }
  double start = now_s();
  while (!atomic_load(&o.done)) usleep(1000);
  double waited = now_s() - start;
  dfcclResult_t status = (dfcclResult_t)atomic_load(&o.status);
  printf("rank %d: the run with the dead rank: %s after %.2f s\n", rank, dfcclGetErrorString(status), waited);
  fflush(stdout);
  start = now_s();
  dfcclResult_t closed = dfcclDestroy(ctx); /* the closing exchange cannot reach the dead rank */
  printf("rank %d: dfcclDestroy: %s after %.2f s\n", rank, dfcclGetErrorString(closed), now_s() - start);
  fflush(stdout);
  dfcclMemFree(buf);
  free(host);
  bool ok = !wrong && status == dfcclTimedOut && waited < TIMEOUT_S + 5;
  return ok ? 0 : 1;
}

/* GPU: processes of these that nvidia-smi still lists on a GPU. */
static int left_on_gpu(const pid_t* pids) {
  FILE* f = popen("nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null", "r");
  if (f == NULL) return 0;
  int n = 0;
  for (int pid; fscanf(f, "%d", &pid) == 1;)
    for (int i = 0; i < NPROC; i++)
      if (pid == pids[i]) {
        printf("left on the GPU: process %d (rank %d)\n", pid, i);
        n++;
      }
  pclose(f);
  return n;
}

/* Segments in /dev/shm made by one of these processes. */
static int leftovers(const pid_t* pids) {
  DIR* d = opendir("/dev/shm");
  if (d == NULL) return 0;
  int n = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    int pid = 0;
    if (sscanf(e->d_name, "dfccl-%d-", &pid) != 1) continue;
    for (int i = 0; i < NPROC; i++)
      if (pid == pids[i]) {
        printf("left behind: /dev/shm/%s\n", e->d_name);
        n++;
      }
  }
  closedir(d);
  return n;
}

int main(int argc, char** argv) {
  bool twin = argc > 1 && strcmp(argv[1], "twin") == 0;
  const char* target = getenv("DFCCL_TARGET");
  gpu = target != NULL && strcmp(target, "cuda") == 0; /* before any fork: the children inherit it */
  setenv("DFCCL_TIMEOUT_S", twin ? "0" : "1", 1);
  setenv("DFCCL_TRANSPORT", "p2p", 1);
  board* b = mmap(NULL, sizeof(board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) return perror("mmap"), 2;
  pid_t pids[NPROC];
  for (int rank = 0; rank < NPROC; rank++) {
    pids[rank] = fork();
    if (pids[rank] < 0) return perror("fork"), 2;
    if (pids[rank] == 0) _exit(child(rank, b));
  }
  int failures = 0;
  double deadline = now_s() + (twin ? 5 : 30 + 2 * BARRIER_S);
  for (int rank = 0; rank < NPROC; rank++) {
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pids[rank], &status, WNOHANG)) == 0 && now_s() < deadline) usleep(10000);
    bool killed = done == pids[rank] && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    bool clean = done == pids[rank] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (done == 0) { /* still waiting for its collective */
      kill(pids[rank], SIGKILL);
      waitpid(pids[rank], &status, 0);
    }
    const char* what = rank == NPROC - 1 ? (killed ? "killed itself" : "did not die")
                       : done == 0       ? "still waiting at the deadline"
                       : clean           ? "exited cleanly"
                                         : "failed";
    printf("process of rank %d: %s\n", rank, what);
    if (rank == NPROC - 1) failures += !killed;
    else failures += twin ? done != 0 : !clean;
  }
  if (!twin) failures += leftovers(pids) + (gpu ? left_on_gpu(pids) : 0);
  printf("test_dead_peer%s (%s daemons): %s\n", twin ? " twin" : "", gpu ? "GPU" : "host-target",
         failures ? "FAILED"
         : twin   ? "without a timeout the survivors wait for the dead rank"
         : gpu    ? "the survivors got the error, exited cleanly, left nothing in /dev/shm or on the GPU"
                  : "the survivors got the error, exited cleanly, left nothing in /dev/shm");
  return failures ? 1 : 0;
}
