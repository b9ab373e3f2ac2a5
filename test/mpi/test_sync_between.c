/*
 * The paper's second deadlock program (§6.1): ranks invoke all-reduces in different orders and
 * synchronize the device (cudaDeviceSynchronize on a GPU; its equivalent on the host target)
 * after each invocation.  A synchronization waits for the daemon; the daemon, holding a collective
 * that cannot progress, quits voluntarily so that the synchronization returns, and is relaunched
 * for the next invocation.  Without preemption the first synchronization never returns.
 *
 *   mpirun -np N test_sync_between [-i iterations] [-s seed] [-f]   (-f: cudaFree as the sync)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#ifdef DFCCL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define NCOLLS 4
static const size_t coll_bytes[NCOLLS] = {4 << 10, 32 << 10, 128 << 10, 256 << 10};

static int32_t input_value(int rank, int iteration, int coll, size_t i) {
  return (int32_t)((rank + 1) * (int)((i * 3 + (size_t)iteration + (size_t)coll * 5) % 89 + 1));
}

/* A different order on every rank: rotate a random permutation by the rank. */
static void disordered(int* order, int rank, uint64_t seed) {
  int perm[NCOLLS];
  harness_permutation(perm, NCOLLS, seed);
  for (int i = 0; i < NCOLLS; i++) order[i] = perm[(i + rank) % NCOLLS];
}

/* On the host target every other synchronization is the process-wide one (dfcclHostSynchronize,
 * what the Open MPI component's tests use), which must find this rank's one host context. */
static void device_sync(harness* h, bool use_free, bool process_wide) {
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu && use_free) { /* cudaFree synchronizes the device implicitly */
    void* p = harness_alloc(h, 1 << 20);
    harness_free(h, p);
    return;
  }
#endif
  (void)use_free;
  if (h->gpu || !process_wide) {
    CHECK_DFCCL(dfcclTargetSynchronize(h->ctx));
    return;
  }
  int contexts = 0;
  CHECK_DFCCL(dfcclHostSynchronize(&contexts));
  if (contexts != 1) {
    fprintf(stderr, "rank %d: dfcclHostSynchronize found %d host contexts, expected 1\n", h->rank, contexts);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_sync_between");
  int iterations = 200;
  unsigned long seed = 7;
  bool use_free = false;
  options o = harness_options(&h, "usage: test_sync_between [-i iterations] [-s seed] [-f]", argc, argv, "i:s:f");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 1000000);
    else if (opt == 's') seed = option_unsigned(&o);
    else if (opt == 'f') use_free = true;
  }
  harness_watchdog_start(60, "all-reduces with device synchronizations between them");

  void* buf[NCOLLS];
  int32_t* host = malloc(coll_bytes[NCOLLS - 1]);
  for (int c = 0; c < NCOLLS; c++) {
    CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, coll_bytes[c] / sizeof(int32_t), dfcclInt32, dfcclSum, c, NULL, 0, 0));
    buf[c] = harness_alloc(&h, coll_bytes[c]);
  }
  long wrong = 0;
  harness_counter done = {0};
  int order[NCOLLS];
  for (int it = 0; it < iterations; it++) {
    for (int c = 0; c < NCOLLS; c++) {
      for (size_t i = 0; i < coll_bytes[c] / sizeof(int32_t); i++) host[i] = input_value(h.rank, it, c, i);
      harness_upload(&h, buf[c], host, coll_bytes[c]);
    }
    disordered(order, h.rank, seed * 7777u + (uint64_t)it);
    for (int k = 0; k < NCOLLS; k++) {
      CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf[order[k]], buf[order[k]], order[k], harness_on_complete, &done));
      device_sync(&h, use_free, k % 2 == 1);
      harness_progress();
    }
    harness_wait(&done, (it + 1) * NCOLLS);
    for (int c = 0; c < NCOLLS; c++) {
      harness_download(&h, host, buf[c], coll_bytes[c]);
      wrong += harness_check_sum(&h, input_value, it, c, host, coll_bytes[c] / sizeof(int32_t));
    }
    harness_iteration_done(&h, it, iterations, 10);
  }
  if (atomic_load(&done.errors)) wrong++;
  dfcclStats_t all = harness_report_stats(&h);
  if (h.rank == 0)
    printf("%d iterations x %d all-reduces with %s between: %s; voluntary quits %llu, relaunches %llu (all ranks)\n",
           iterations, NCOLLS, use_free ? "cudaFree" : "device synchronizations",
           wrong ? "WRONG RESULTS" : "all results exact", (unsigned long long)all.voluntaryQuits,
           (unsigned long long)all.relaunches);
  for (int c = 0; c < NCOLLS; c++) harness_free(&h, buf[c]);
  free(host);
  return harness_finish(&h, wrong);
}
