/*
 * The paper's first deadlock program (§6.1): every rank invokes the same eight all-reduces
 * (256 B ... 1 MiB) in its own random order, a new order every iteration.  Without preemption the
 * ranks wait for each other in a cycle; DFCCL completes every iteration with exact results.
 *
 *   mpirun -np N test_random_order [-i iterations] [-s seed] [-c]   (-c: the same order everywhere,
 *                                                                  a control without disorder)
 *
 * With DFCCL_PREEMPTION=0 it is the twin that shows the deadlock (the watchdog fires).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define NCOLLS 8
static const size_t coll_bytes[NCOLLS] = {256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 512 << 10, 1 << 20};

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_random_order");
  int iterations = 200;
  unsigned long seed = 2025;
  bool consistent = false;
  options o = harness_options(&h, "usage: test_random_order [-i iterations] [-s seed] [-c]", argc, argv, "i:s:c");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 1000000);
    else if (opt == 's') seed = option_unsigned(&o);
    else if (opt == 'c') consistent = true;
  }
  harness_watchdog_start(60, "random-order all-reduces");

  void *send[NCOLLS], *recv[NCOLLS];
  int32_t* host = malloc(coll_bytes[NCOLLS - 1]);
  for (int c = 0; c < NCOLLS; c++) {
    size_t count = coll_bytes[c] / sizeof(int32_t);
    CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, count, dfcclInt32, dfcclSum, c, NULL, 0, 0));
    send[c] = harness_alloc(&h, coll_bytes[c]);
    recv[c] = c % 2 ? send[c] : harness_alloc(&h, coll_bytes[c]); /* odd ids run in place */
  }

  long wrong = 0;
  harness_counter done = {0};
  int order[NCOLLS];
  for (int it = 0; it < iterations; it++) {
    for (int c = 0; c < NCOLLS; c++) {
      size_t count = coll_bytes[c] / sizeof(int32_t);
      for (size_t i = 0; i < count; i++) host[i] = harness_order_value(h.rank, it, c, i);
      harness_upload(&h, send[c], host, coll_bytes[c]);
    }
    harness_iteration_order(order, NCOLLS, seed, it, consistent ? 0 : h.rank);
    for (int k = 0; k < NCOLLS; k++)
      CHECK_DFCCL(dfcclRunAllReduce(h.ctx, send[order[k]], recv[order[k]], order[k], harness_on_complete, &done));
    harness_wait(&done, (it + 1) * NCOLLS);
    harness_progress();
    for (int c = 0; c < NCOLLS; c++) {
      harness_download(&h, host, recv[c], coll_bytes[c]);
      wrong += harness_check_sum(&h, harness_order_value, it, c, host, coll_bytes[c] / sizeof(int32_t));
    }
    harness_iteration_done(&h, it, iterations, 20);
  }
  if (atomic_load(&done.errors)) wrong++;

  dfcclStats_t all = harness_report_stats(&h);
  if (h.rank == 0)
    printf("%d iterations x %d all-reduces on %d ranks: %s; preemptions %llu, voluntary quits %llu (all ranks)\n",
           iterations, NCOLLS, h.nranks, wrong ? "WRONG RESULTS" : "all results exact",
           (unsigned long long)all.preemptions, (unsigned long long)all.voluntaryQuits);
  for (int c = 0; c < NCOLLS; c++) {
    harness_free(&h, send[c]);
    if (recv[c] != send[c]) harness_free(&h, recv[c]);
  }
  free(host);
  return harness_finish(&h, wrong);
}
