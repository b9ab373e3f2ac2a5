/*
 * The daemon on the host execution target: each daemon block is one CPU thread running the same
 * scheduler and primitives as the GPU kernel, with its "shared memory" on its stack.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "daemon_launch.h"
#include "scheduler.h"

void df_host_daemon_block(const df_daemon_args* args, int block, int nblocks) {
  df_block_shared shared;
  memset(&shared, 0, sizeof shared);
  df_block blk = {.tid = 0, .nthreads = 1, .bid = block, .nblocks = nblocks};
  df_daemon_block_main(args, &blk, &shared);
}

size_t df_host_daemon_shared_bytes(void) { return sizeof(df_block_shared); }
