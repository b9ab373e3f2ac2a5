/*
 * The microbenchmarks' tables (host_read_cost.cu, fence_cost.cu, local_after_acquire.cu,
 * crossing_cost.cu): the median and the p90 of a rep's times in ns; print_ns_row prints them as a
 * row after a kernel that stored one time per rep in device memory.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_BENCHMARKS_NS_ROWS_H
#define DFCCL_BENCHMARKS_NS_ROWS_H

#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "../test/common/cuda_check.h"

typedef struct {
  unsigned long long median, p90;
} ns_stats;

/* Sorts `t` (ns, one per rep) and gives its median and p90. */
static ns_stats ns_stats_of(std::vector<uint64_t>& t) {
  std::sort(t.begin(), t.end());
  return ns_stats{t[t.size() / 2], t[t.size() * 9 / 10]};
}

static void print_ns_header(const char* what) { printf("# %-44s %8s %8s\n", what, "median", "p90"); }

/* Waits for the kernel just launched, then prints its `reps` times (ns, device memory) as a row
 * named `name`; round 1 is marked (each table runs twice). */
static void print_ns_row(const uint64_t* ns, int reps, const char* name, int round) {
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<uint64_t> t(reps);
  CHECK_CUDA(cudaMemcpy(t.data(), ns, (size_t)reps * sizeof *ns, cudaMemcpyDeviceToHost));
  ns_stats s = ns_stats_of(t);
  printf("  %-44s %8llu %8llu%s\n", name, s.median, s.p90, round == 0 ? "" : " (round 2)");
}

#endif /* DFCCL_BENCHMARKS_NS_ROWS_H */
