/*
 * Which collectives yield the GPU (df_gpu_timesliced_with, connectors.c): a collective is flagged
 * DF_COLL_TIMESLICED_PEER when any other participant's daemon runs on our GPU without MPS and is
 * reached through a peer mapping -- not only a ring neighbour.  The layouts users run: two ranks on
 * one GPU, four ranks on two GPUs placed round-robin (every neighbour on the other GPU), MPS, the
 * host target, peers across the network.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <string.h>

#include "../common/unit_check.h"
#include "internal.h"

enum { MAX_RANKS = 8 };

/* Ranks on GPUs `gpu[i]` (0: the host target's "no GPU"; else a UUID built from the number),
 * time-sliced unless `mps`; `networked`: the ranks that the rank asking reaches over the network. */
static void layout(df_daemon_gpu* gpus, const int* gpu, int n, bool mps, unsigned networked) {
  memset(gpus, 0, (size_t)n * sizeof *gpus);
  for (int i = 0; i < n; i++) {
    if (gpu[i]) memset(gpus[i].uuid, gpu[i], sizeof gpus[i].uuid);
    gpus[i].timesliced = !mps && gpu[i] != 0;
    gpus[i].networked = (networked >> i) & 1u;
  }
}

static void expect_one(const char* what, const int* gpu, int n, bool mps, unsigned networked, int me, bool flagged) {
  df_daemon_gpu gpus[MAX_RANKS];
  layout(gpus, gpu, n, mps, networked);
  bool got = df_gpu_timesliced_with(gpus, n, me);
  if (got != flagged)
    FAIL("%s: rank %d %s flagged, expected %s", what, me, got ? "is" : "is not", flagged ? "flagged" : "not");
}

/* Every rank of the layout, all peers reached through peer mappings. */
static void expect(const char* what, const int* gpu, int n, bool mps, const bool* flagged) {
  for (int me = 0; me < n; me++) expect_one(what, gpu, n, mps, 0, me, flagged[me]);
}

int main(void) {
  const bool all[MAX_RANKS] = {true, true, true, true, true, true, true, true};
  const bool none[MAX_RANKS] = {false};

  const int one_gpu[2] = {1, 1};
  expect("2 ranks on one GPU", one_gpu, 2, false, all);
  expect("2 ranks on one GPU under MPS", one_gpu, 2, true, none);
  const int two_gpus[2] = {1, 2};
  expect("2 ranks on 2 GPUs", two_gpus, 2, false, none);

  /* local rank % 2: ranks 0 and 2 on GPU 1, ranks 1 and 3 on GPU 2.  Every ring neighbour is on the
   * other GPU: a rule of neighbours only flags nobody here (OSU's all-reduce took 8 ms). */
  const int round_robin[4] = {1, 2, 1, 2};
  expect("4 ranks on 2 GPUs, round-robin", round_robin, 4, false, all);
  expect("4 ranks on 2 GPUs under MPS", round_robin, 4, true, none);
  const int blocked[4] = {1, 1, 2, 3};
  const bool first_two[4] = {true, true, false, false};
  expect("2 ranks share a GPU, 2 have their own", blocked, 4, false, first_two);

  const int host[3] = {0, 0, 0};
  expect("the host target", host, 3, false, none);

  /* The participant on rank 0's GPU (rank 2) reached over the network (DFCCL_TRANSPORT=ucx): its
   * counters move through our CPU proxy while we hold the GPU, so it does not count; through a peer
   * mapping it does. */
  expect_one("rank 2 across the network", round_robin, 4, false, 1u << 2, 0, false);
  expect_one("rank 1 across the network", round_robin, 4, false, 1u << 1, 0, true);

  printf("gpu sharing: %s\n", failures ? "FAILED" : "every layout flagged as expected");
  return failures ? 1 : 0;
}
