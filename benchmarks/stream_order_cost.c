/*
 * What ordering a run after the caller's CUDA default streams costs (dfcclWaitDefaultStreams,
 * which every dfcclRun* does first): per call when the streams are idle -- the common case, two
 * stream queries -- and how long it waits right after a pageable cudaMemcpy, whose DMA may still be
 * in flight when cudaMemcpy returns (what the wait is for).  Then the idle wait again beside a
 * resident daemon -- the case of every run but a program's first: a context of one rank, one run
 * to launch its daemon, and the waits timed while the daemon stays for its quit period and the
 * poller thread watches it.
 *
 *   stream_order_cost [-n calls] [-b bytes]     (defaults 100000, 4 MiB; GPU 0)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime_api.h>

#include <dfccl.h>

#include "options.h" /* test/common */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void check(dfcclResult_t r) {
  if (r != dfcclSuccess) {
    fprintf(stderr, "stream_order_cost: %s\n", dfcclGetLastErrorMessage());
    exit(1);
  }
}

static void on_done(int id, dfcclResult_t status, void* arg) {
  (void)id;
  if (status != dfcclSuccess) fprintf(stderr, "stream_order_cost: the run failed: %s\n", dfcclGetErrorString(status));
  atomic_store((atomic_int*)arg, 1);
}

/* Idle waits of one thread beside a resident daemon: ns per call, over as many as fit in its quit
 * period after one run (at most `calls`); *waits says how many. */
static double beside_daemon(void* dev, long calls, long* waits) {
  dfcclRankCtx_t ctx;
  dfcclInitArgs_t args = {.target = dfcclTargetCuda, .device = 0, .bootstrap = {.rank = 0, .nranks = 1}};
  check(dfcclInit(&ctx, &args));
  check(dfcclRegisterAllReduce(ctx, 1, dfcclFloat32, dfcclSum, 0, NULL, 0, 0));
  atomic_int done = 0;
  check(dfcclRunAllReduce(ctx, dev, dev, 0, on_done, &done));
  while (!atomic_load(&done)) continue;
  dfcclStats_t s;
  double spent = 0;
  long n = 0;
  for (; n < calls; n++) { /* while the daemon is resident: a few ms */
    if (n % 64 == 0) {
      check(dfcclGetStats(ctx, &s));
      if (s.daemonBlocks == 0) break;
    }
    double a = now_us();
    check(dfcclWaitDefaultStreams());
    spent += now_us() - a;
  }
  check(dfcclDestroy(ctx));
  *waits = n;
  return n ? spent * 1000.0 / (double)n : 0;
}

int main(int argc, char** argv) {
  long calls = 100000, bytes = 4 << 20;
  options o = options_begin("stream_order_cost", "usage: stream_order_cost [-n calls] [-b bytes]", argc, argv, "n:b:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'n') calls = option_int(&o, 1, 1 << 30);
    else if (opt == 'b') bytes = option_int(&o, 1, 1 << 30);
  }
  if (dfcclDeviceCount() == 0) {
    puts("SKIP: no GPU");
    return 0;
  }
  void* dev = NULL;
  char* host = malloc((size_t)bytes); /* pageable */
  if (!host || cudaSetDevice(0) != cudaSuccess || cudaMalloc(&dev, (size_t)bytes) != cudaSuccess) return 1;
  for (long i = 0; i < bytes; i++) host[i] = (char)i;
  check(dfcclWaitDefaultStreams()); /* first call: the driver entry point, the per-thread stream */

  double t0 = now_us();
  for (long i = 0; i < calls; i++) check(dfcclWaitDefaultStreams());
  double idle_ns = (now_us() - t0) * 1000.0 / (double)calls;

  enum { COPIES = 50 };
  double copy_us = 0, wait_us = 0;
  for (int i = 0; i < COPIES; i++) {
    double a = now_us();
    if (cudaMemcpy(dev, host, (size_t)bytes, cudaMemcpyHostToDevice) != cudaSuccess) return 1;
    double b = now_us();
    check(dfcclWaitDefaultStreams());
    double c = now_us();
    copy_us += b - a;
    wait_us += c - b;
  }
  printf("dfcclWaitDefaultStreams on idle streams: %.0f ns per call (%ld calls)\n", idle_ns, calls);
  printf("after a pageable cudaMemcpy of %ld bytes (%.1f us on average): it waited %.2f us on average\n", bytes,
         copy_us / COPIES, wait_us / COPIES);
  long waits = 0;
  double beside_ns = beside_daemon(dev, calls, &waits);
  printf("dfcclWaitDefaultStreams on idle streams beside a resident daemon: %.0f ns per call (%ld calls)\n", beside_ns,
         waits);
  cudaFree(dev);
  free(host);
  return 0;
}
