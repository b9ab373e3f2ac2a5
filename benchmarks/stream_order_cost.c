/*
 * What ordering a run after the caller's CUDA default streams costs (dfcclWaitDefaultStreams,
 * which every dfcclRun* does first): per call when the streams are idle -- the common case, two
 * stream queries -- and how long it waits right after a pageable cudaMemcpy, whose DMA may still be
 * in flight when cudaMemcpy returns (what the wait is for).
 *
 *   stream_order_cost [-n calls] [-b bytes]     (defaults 100000, 4 MiB; GPU 0)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
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
    fprintf(stderr, "dfcclWaitDefaultStreams: %s\n", dfcclGetLastErrorMessage());
    exit(1);
  }
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
  cudaFree(dev);
  free(host);
  return 0;
}
