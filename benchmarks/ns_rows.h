/*
 * The microbenchmarks' tables (host_read_cost.cu, fence_cost.cu): after a kernel that stored one
 * time in ns per rep in device memory, one row -- the median and the p90.
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

static void print_ns_header(const char* what) { printf("# %-44s %8s %8s\n", what, "median", "p90"); }

/* Waits for the kernel just launched, then prints its `reps` times (ns, device memory) as a row
 * named `name`; round 1 is marked (each table runs twice). */
static void print_ns_row(const uint64_t* ns, int reps, const char* name, int round) {
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<uint64_t> t(reps);
  CHECK_CUDA(cudaMemcpy(t.data(), ns, (size_t)reps * sizeof *ns, cudaMemcpyDeviceToHost));
  std::sort(t.begin(), t.end());
  printf("  %-44s %8llu %8llu%s\n", name, (unsigned long long)t[reps / 2], (unsigned long long)t[reps * 9 / 10],
         round == 0 ? "" : " (round 2)");
}

#endif /* DFCCL_BENCHMARKS_NS_ROWS_H */
