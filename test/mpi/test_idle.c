/*
 * Idle costs nothing: once a rank has had nothing to do for the quit period (DFCCL_QUIT_PERIOD_US:
 * 2 ms on a GPU, 50 ms on the host target), its daemon has left the GPU and holds no SM
 * (dfcclStats_t.daemonBlocks, asked of the target: on a GPU whether the daemon kernel still runs).
 *
 * Each round runs one all-reduce large enough to take several channels (exact results), looks at
 * the daemon right after it completes -- it must be seen resident at least once over the rounds,
 * or the check could not see a daemon that stays -- and then polls until the daemon has left: how
 * long that took after the completion, and the blocks it held.  The next round relaunches it.
 * Fails when the daemon still holds blocks -W ms after a completion (the twin, idle_twin.sh, sets a
 * quit period of a minute: the daemon stays, and this program must fail).
 *
 *   mpirun -np N test_idle [-r rounds] [-b bytes] [-W max_wait_ms]
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

static int32_t input_value(int rank, int round, int coll, size_t i) {
  (void)coll;
  return (int32_t)((rank + 1) * (int)((i * 5 + (size_t)round * 3) % 97 + 1));
}

static uint64_t daemon_blocks(const harness* h) {
  dfcclStats_t s;
  CHECK_DFCCL(dfcclGetStats(h->ctx, &s));
  return s.daemonBlocks;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_idle");
  int rounds = 5, max_wait_ms = 5000;
  size_t bytes = 8 << 20;
  options o = harness_options(&h, "usage: test_idle [-r rounds] [-b bytes] [-W max_wait_ms]", argc, argv, "r:b:W:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'r') rounds = option_int(&o, 1, 1000);
    else if (opt == 'b') {
      bytes = option_bytes(&o);
      if (bytes < 4 || bytes > (size_t)1 << 30) options_fail(&o, "-b: expected 4 B to 1 GiB, got '%s'", o.value);
    } else if (opt == 'W') max_wait_ms = option_int(&o, 1, 600000);
  }
  harness_watchdog_start(60 + max_wait_ms / 1000.0, "idle daemon");

  size_t count = bytes / sizeof(int32_t);
  CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, count, dfcclInt32, dfcclSum, 0, NULL, 0, 0));
  void* buf = harness_alloc(&h, count * sizeof(int32_t));
  int32_t* host = malloc(count * sizeof(int32_t));
  double* left_ms = malloc((size_t)rounds * sizeof(double));
  if (!host || !left_ms) {
    fprintf(stderr, "test_idle: out of memory\n");
    return harness_finish(&h, 1);
  }

  long wrong = 0, stayed = 0;
  int seen_resident = 0;
  uint64_t held = 0; /* the most blocks seen resident right after a run */
  harness_counter done = {0};
  for (int r = 0; r < rounds; r++) {
    for (size_t i = 0; i < count; i++) host[i] = input_value(h.rank, r, 0, i);
    harness_upload(&h, buf, host, count * sizeof(int32_t));
    MPI_Barrier(MPI_COMM_WORLD); /* every daemon has left (or stayed) before the round starts */
    CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf, buf, 0, harness_on_complete, &done));
    harness_wait(&done, r + 1);
    double completed = harness_now_s();
    uint64_t blocks = daemon_blocks(&h);
    if (blocks > 0) seen_resident++;
    if (blocks > held) held = blocks;
    harness_progress();
    while (blocks > 0 && (harness_now_s() - completed) * 1e3 < max_wait_ms) {
      nanosleep(&(struct timespec){.tv_nsec = 200 * 1000}, NULL);
      blocks = daemon_blocks(&h);
    }
    left_ms[r] = (harness_now_s() - completed) * 1e3;
    if (blocks > 0) {
      fprintf(stderr, "rank %d round %d: the daemon still holds %llu blocks %d ms after the last run completed\n",
              h.rank, r, (unsigned long long)blocks, max_wait_ms);
      stayed++;
    }
    harness_progress();
    harness_download(&h, host, buf, count * sizeof(int32_t));
    wrong += harness_check_sum(&h, input_value, r, 0, host, count);
  }
  if (atomic_load(&done.errors)) wrong++;
  if (seen_resident == 0) /* then a daemon that never quits would pass too */
    fprintf(stderr, "rank %d: the daemon was never seen resident right after a run: this check sees nothing\n", h.rank);

  qsort(left_ms, (size_t)rounds, sizeof *left_ms, by_value);
  printf("idle rank %d: daemon of %llu blocks; after each of %d runs it left within %.1f ms (median; max %.1f ms)%s; "
         "seen resident right after %d of them\n",
         h.rank, (unsigned long long)held, rounds, left_ms[rounds / 2], left_ms[rounds - 1],
         stayed ? ", but STAYED" : ", 0 blocks held after", seen_resident);
  long failures = wrong + stayed + (seen_resident == 0);
  if (h.rank == 0 && failures == 0) printf("PASS: idle daemons hold no SM once the quit period has passed\n");
  fflush(stdout);
  harness_free(&h, buf);
  free(host);
  free(left_ms);
  return harness_finish(&h, failures);
}
