/*
 * A daemon block's working memory (CUDA shared memory on a GPU, the thread's stack on the host
 * target) and the state of the run being executed.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_BLOCK_H
#define DFCCL_KERNEL_BLOCK_H

#include "daemon.h"

/* An active context slot: a collective's static and dynamic context while it is scheduled. */
typedef struct {
  df_coll_static stat;
  df_coll_dynamic dyn;
  int32_t coll;   /* collective index held, -1 when empty                       */
  uint32_t dirty; /* dyn differs from the copy in global memory (lazy saving)   */
  uint32_t tag;   /* the run's tag (df_run_tag): what its slots carry           */
} df_context_slot;

/* A task queue entry of a run completed in this traversal (dropped by df_task_queue_compact). */
#define DF_NO_TASK 0xFFFFu

typedef struct {
  df_context_slot slots[DF_CONTEXT_SLOTS];
  uint16_t tasks[DF_MAX_COLLS];        /* the task queue: collective indices, in scheduling order */
  uint32_t unbegun[DF_MAX_COLLS / 32]; /* bit per collective: its run was taken and has not run on
                                        * this block yet (df_queued_run_unbegun) */
  uint32_t ntasks;
  uint32_t disorder;    /* a run of the queue was preempted since it was last empty: waits send ahead */
  uint32_t current;     /* slot of the run being executed                          */
  uint32_t sqe_fetched; /* runs this round took: its fetch, and waits (df_take_in_wait) */
  uint32_t idle_round;  /* the last round took no SQE and ran nothing: a new SQE is likely alone */
  uint32_t quit;        /* 1: voluntary quit, 2: final exit                        */
  uint32_t ready;       /* queue position of a run a wait left for (DF_NO_TASK: none) */
  uint32_t position;    /* queue position the leader chose to run next             */
  /* Published by the leader for the other threads of the block. */
  volatile uint32_t go; /* df_prim_result of the current primitive's waits        */
  uint32_t gate;        /* df_prim_result of the run's gate (df_pass_gate)         */
  char* in_slot;        /* FIFO slot to read                                       */
  char* out_slot;       /* FIFO slot to write                                      */
  const char* ll_in;    /* low-latency slot to read (low_latency.h)               */
  uint32_t ll_in_flag;  /* its lines' flag                                         */
  uint32_t ll_out;      /* 1: out_slot is a low-latency slot                       */
  uint32_t ll_out_flag; /* the flag of the lines written to it                     */
  uint64_t last_progress_ns;
  uint32_t reported;        /* DF_LAUNCH_* bits this block has written to launch_report */
  uint32_t timesliced_seen; /* this launch ran a DF_COLL_TIMESLICED_PEER collective     */
  uint64_t error_look_ns;   /* when a wait that gave up last looked at the error words  */
#ifdef DF_STAMPS
  df_stamp_state stamp; /* block 0's leader: the run it time-stamps (stamps.h) */
#endif
} df_block_shared;

/* The run being executed: a collective on one block, from load to completion or preemption. */
typedef struct {
  const df_daemon_args* args;
  const df_block* blk;
  df_block_shared* sh;
  df_context_slot* ctx;
  uint64_t threshold; /* polls a wait may take before the run is preempted (leader's) */
  bool progressed;    /* a primitive completed during this run                       */
  bool timesliced;    /* its peers cannot run while it waits (DF_COLL_TIMESLICED_PEER) */
  uint32_t error;     /* df_run_error: why the run failed here (leader's)              */
  uint32_t ahead;     /* DF_PEEK: the slot read is this many past the next unconsumed one */
  bool head_pending;  /* the run's last slots are consumed but not yet credited (df_consume_last) */
} df_run;

#endif /* DFCCL_KERNEL_BLOCK_H */
