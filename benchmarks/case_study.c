/*
 * The paper's case study (§6.4): the 161 gradient all-reduces of a ResNet-50 training step,
 * invoked in bursts in backward order (as data-parallel training does), with one rank slightly
 * late every burst.  With a naive, fixed spin threshold the late rank's peers keep fetching and
 * preempting, their task queues grow and collectives are preempted many times; the adaptive
 * stickiness policy (the default) keeps the ranks together.
 *
 *   mpirun -np N case_study [-i steps] [-b burst] [-g gap_us] [-d late_rank] [-l late_us] [-z shrink] [-v]
 *
 * -z divides every tensor by `shrink` (at least one element): the same pattern of 161 collectives
 * with less data, for the host execution target.
 *
 * The policy comes from the environment: the defaults are the adaptive one; the naive one is
 *   DFCCL_SPIN_GROWTH=1 DFCCL_SPIN_DECAY_SHIFT=0 DFCCL_SPIN_FRONT=T DFCCL_SPIN_FLOOR=T
 * (see benchmarks/case_study.sh, which runs both).  -v prints per-collective counters.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TENSORS 200

/* ResNet-50's parameter tensors (torchvision layout), in forward order: element counts. */
static int resnet50_sizes(size_t* sizes) {
  int n = 0;
  sizes[n++] = 64 * 3 * 7 * 7; /* conv1 */
  sizes[n++] = 64;             /* bn1 weight, bias */
  sizes[n++] = 64;
  static const int planes_of[] = {64, 128, 256, 512}, blocks_of[] = {3, 4, 6, 3};
  size_t inplanes = 64;
  for (int layer = 0; layer < 4; layer++) {
    size_t planes = (size_t)planes_of[layer];
    for (int b = 0; b < blocks_of[layer]; b++) {
      sizes[n++] = planes * inplanes; /* conv1 1x1 */
      sizes[n++] = planes, sizes[n++] = planes;
      sizes[n++] = planes * planes * 9; /* conv2 3x3 */
      sizes[n++] = planes, sizes[n++] = planes;
      sizes[n++] = planes * 4 * planes; /* conv3 1x1 */
      sizes[n++] = planes * 4, sizes[n++] = planes * 4;
      if (b == 0) { /* downsample */
        sizes[n++] = planes * 4 * inplanes;
        sizes[n++] = planes * 4, sizes[n++] = planes * 4;
      }
      inplanes = planes * 4;
    }
  }
  sizes[n++] = 1000 * 2048; /* fc */
  sizes[n++] = 1000;
  return n;
}

static void sleep_us(long us) {
  if (us > 0) nanosleep(&(struct timespec){.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000}, NULL);
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "case_study");
  int steps = 20, burst = 10, late_rank = -1, verbose = 0;
  long gap_us = 200, late_us = 1000, shrink = 1;
  options o = harness_options(
      &h, "usage: case_study [-i steps] [-b burst] [-g gap_us] [-d late_rank] [-l late_us] [-z shrink] [-v]", argc,
      argv, "i:b:g:d:l:z:v");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') steps = option_int(&o, 1, 1000000);
    else if (opt == 'b') burst = option_int(&o, 1, MAX_TENSORS);
    else if (opt == 'g') gap_us = option_int(&o, 0, 10000000);
    else if (opt == 'd') late_rank = option_int(&o, 0, h.nranks - 1);
    else if (opt == 'l') late_us = option_int(&o, 0, 10000000);
    else if (opt == 'z') shrink = option_int(&o, 1, 1 << 30);
    else if (opt == 'v') verbose = 1;
  }
  if (late_rank < 0) late_rank = h.nranks > 2 ? 2 : h.nranks - 1;
  harness_watchdog_start(120, "ResNet-50 case study");

  size_t sizes[MAX_TENSORS];
  int n = resnet50_sizes(sizes);
  for (int t = 0; t < n; t++) sizes[t] = sizes[t] / (size_t)shrink ? sizes[t] / (size_t)shrink : 1;
  void* buf[MAX_TENSORS];
  for (int t = 0; t < n; t++) {
    CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, sizes[t], dfcclFloat32, dfcclSum, t, NULL, 0, 0));
    buf[t] = harness_alloc(&h, sizes[t] * sizeof(float));
  }
  size_t total = 0;
  for (int t = 0; t < n; t++) total += sizes[t];
  if (h.rank == 0)
    printf("%d gradient tensors, %.1f MiB; bursts of %d every %ld us, rank %d late by %ld us per burst\n", n,
           (double)total * 4 / (1 << 20), burst, gap_us, late_rank, late_us);

  harness_counter done = {0};
  MPI_Barrier(MPI_COMM_WORLD);
  double start = harness_now_s();
  for (int s = 0; s < steps; s++) {
    /* Backward pass: the last layer's gradients are ready first. */
    for (int t = n - 1; t >= 0;) {
      if (h.rank == late_rank) sleep_us(late_us);
      for (int k = 0; k < burst && t >= 0; k++, t--)
        CHECK_DFCCL(dfcclRunAllReduce(h.ctx, buf[t], buf[t], t, harness_on_complete, &done));
      sleep_us(gap_us); /* computing the next layers' gradients */
    }
    harness_wait(&done, (s + 1) * n);
    harness_progress();
  }
  double elapsed = harness_now_s() - start;

  /* Per collective: how often it was preempted before completing, and the task queue it met. */
  unsigned long long preempt_max = 0, preempt_sum = 0, queue_max = 0;
  int stormy = 0;
  for (int t = 0; t < n; t++) {
    dfcclCollStats_t c;
    CHECK_DFCCL(dfcclGetCollStats(h.ctx, t, &c));
    double per_run = (double)c.preemptions / (double)(c.runs ? c.runs : 1);
    if (per_run >= 10) stormy++;
    preempt_sum += c.preemptions;
    if (c.preemptions > preempt_max) preempt_max = c.preemptions;
    if (c.maxTaskQueueLength > queue_max) queue_max = c.maxTaskQueueLength;
    if (verbose && (h.rank == 0 || h.rank == late_rank))
      printf("rank %d collective %3d (%8zu floats): %6.1f preemptions per run, max queue %llu\n", h.rank, t, sizes[t],
             per_run, (unsigned long long)c.maxTaskQueueLength);
  }
  printf("rank %d: %.2f ms per step; preemptions per run: mean %.1f, max %.1f; collectives preempted >= 10 "
         "times per run: %d of %d; longest task queue %llu\n",
         h.rank, elapsed * 1e3 / steps, (double)preempt_sum / steps / n, (double)preempt_max / steps, stormy, n,
         queue_max);
  fflush(stdout);
  harness_report_stats(&h);
  for (int t = 0; t < n; t++) harness_free(&h, buf[t]);
  return harness_finish(&h, atomic_load(&done.errors));
}
