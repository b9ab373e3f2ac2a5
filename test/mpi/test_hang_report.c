/*
 * A rank that is late for a collective, and the hang report that names it.  Every rank registers
 * all-reduce 5 (1024 int32, sum); all but the last run it at once and wait, the last runs it only
 * after -s seconds.  Meanwhile the waiting ranks' reports (DFCCL_HANG_REPORT_S, or SIGUSR1 with -u,
 * which the late rank raises too) show run 1 of collective 5 pending; tools/dfccl-hang-report, given
 * their directory, must name the last rank (hang_report.sh checks that).  Then everyone completes, with the exact sum.
 *
 *   mpirun -np N test_hang_report [-s seconds] [-u]      (N >= 2)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define COUNT 1024

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_hang_report");
  int late_s = 3;
  bool signal_it = false;
  options o = harness_options(&h, "usage: test_hang_report [-s seconds] [-u]", argc, argv, "s:u");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 's') late_s = option_int(&o, 0, 600);
    else if (opt == 'u') signal_it = true;
  }
  harness_watchdog_start(late_s + 60.0, "a late rank");
  CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, COUNT, dfcclInt32, dfcclSum, 5, NULL, 0, 0));
  int32_t host[COUNT];
  for (int i = 0; i < COUNT; i++) host[i] = (h.rank + 1) * (i % 7 + 1);
  void* buf = harness_alloc(&h, sizeof host);
  harness_upload(&h, buf, host, sizeof host);
  harness_counter done = {0};
  bool late = h.rank == h.nranks - 1;
  if (late && signal_it) raise(SIGUSR1); /* its report: collective 5 registered, no run submitted */
  if (late) sleep((unsigned)late_s);     /* the others wait for this rank meanwhile */
  CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf, buf, 5, harness_on_complete, &done));
  if (signal_it && !late) {
    usleep(200000); /* the run is pending now: the report shows it */
    raise(SIGUSR1);
  }
  harness_wait(&done, 1);
  harness_download(&h, host, buf, sizeof host);
  long wrong = 0;
  int sum = h.nranks * (h.nranks + 1) / 2;
  for (int i = 0; i < COUNT; i++) wrong += host[i] != sum * (i % 7 + 1);
  harness_free(&h, buf);
  if (h.rank == 0) printf("the late rank came after %d s: %s\n", late_s, wrong ? "WRONG RESULTS" : "result exact");
  return harness_finish(&h, wrong + atomic_load(&done.errors));
}
