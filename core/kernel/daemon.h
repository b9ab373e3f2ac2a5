/*
 * What the host and the daemon share: the layout of connectors, collective contexts, per-block
 * state and the daemon's arguments.  Plain structs, no code.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_DAEMON_H
#define DFCCL_KERNEL_DAEMON_H

#include "../platform/platform.h"
#include "../queue/cq.h"
#include "../queue/sq.h"
#include "stamps.h"

#define DF_MAX_BLOCKS 64   /* daemon blocks (= channels) at most                        */
#define DF_MAX_COLLS 2048  /* registered collectives per rank at most                   */
#define DF_FIFO_STEPS 8    /* slots in a connector's FIFO                               */
#define DF_CONTEXT_SLOTS 4 /* active context slots per block (direct-mapped cache)      */

/* ---------------------------------------------------------------------------------------------
 * Connectors.  A connector carries data from a sender to a receiver in one channel: a FIFO of
 * DF_FIFO_STEPS slots and `tail` (slots posted) live in the receiver's memory and are written by
 * the sender; `head` (slots consumed, i.e. credits) lives in the sender's memory and is written by
 * the receiver.  Each side polls only its own memory.
 *
 * Every collective has connectors of its own, one pair per channel, sized to it: a preempted
 * collective leaves data in its FIFOs that only it will consume, and no other collective ever
 * waits for those slots -- which is what makes independent preemption deadlock-free.  Successive
 * runs of one collective use its FIFOs one after the other, in order on both sides.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
  volatile uint64_t tail; /* written by the sender: slots posted since the connector was made */
  /* Bytes in each slot, written before the tail when the links say so (df_links.slot_sizes): a
   * network proxy sends only what the slot holds. */
  uint32_t bytes[DF_FIFO_STEPS];
  /* Each slot's tag word (df_slot_tag: the run's tag, df_run_tag, and the step), written before
   * the tail: a receiver takes only a slot of the run it is in -- ranks that disagree on a run fail
   * it rather than mix its data with another's. */
  volatile uint32_t tags[DF_FIFO_STEPS];
  uint64_t pad[15 - DF_FIFO_STEPS];
} df_recv_ctrl; /* in the receiver's memory                                         */

typedef struct {
  volatile uint64_t head; /* written by the receiver: slots consumed                          */
  uint64_t pad[15];
} df_send_ctrl; /* in the sender's memory                                           */

/* A failed run revokes its connectors: the rank stores, in every channel, a revoked tail into its
 * successor's memory and a revoked head into its predecessor's -- words that it alone writes, so no
 * later store of a peer undoes them.  A peer waiting on either sees the mark in the value it polls
 * (no extra load on the way of data), fails its run with the same reason and revokes its own
 * connectors in turn: the failure reaches every participant, and nothing runs on them again. */
#define DF_REVOKED_BIT (1ull << 63)
#define DF_REVOKED(reason) (DF_REVOKED_BIT | ((uint64_t)(reason) << 56))
#define DF_REVOKED_REASON(value) ((uint32_t)((value) >> 56) & 0x7fu)

/* Why a run failed (a run's error word, a revoked counter, a CQE). */
typedef enum {
  DF_RUN_OK = 0,
  DF_RUN_TIMED_OUT = 1,    /* no progress for DFCCL_TIMEOUT_S on some participant */
  DF_RUN_MISMATCH = 2,     /* the participants disagree on the run (kind, count, type, op, root, run number) */
  DF_RUN_CALLER_FAILED = 3 /* the host could not wait for the caller's work on the run's buffers (a
                            * CUDA error of the caller's streams): the run's gate failed it */
} df_run_error;

/* One connector as one side sees it (pointers valid in that side's daemon). */
typedef struct {
  df_recv_ctrl* recv_ctrl; /* receiver's control block (local to a receiver, remote to a sender) */
  df_send_ctrl* send_ctrl; /* sender's control block (local to a sender, remote to a receiver)   */
  char* fifo;              /* DF_FIFO_STEPS slots, in the receiver's memory                       */
  char* ll;                /* DF_FIFO_STEPS low-latency slots beside them, or NULL where the link
                            * has none (DFCCL_LL_BYTES=0, or a network link: low_latency.h)    */
  /* A sender's: the receiver's head as the sender last read it.  Heads only grow, so the slots
   * below credit + DF_FIFO_STEPS are free without another look (df_look). */
  uint64_t credit;
} df_connector;

/* A collective's connectors, as this rank's daemon sees them. */
typedef struct {
  uint32_t nchannels;
  uint32_t slot_bytes;     /* bytes per FIFO slot (a multiple of 16)                   */
  uint32_t slot_sizes;     /* 1: the successor is reached through a network proxy, which
                            * needs each slot's size (df_recv_ctrl.bytes)               */
  uint32_t prev_tagged;    /* 1: the predecessor's slots come with tag words, each stored
                            * whole before the tail -- by its daemon, or by the network
                            * proxy that received it -- so that a look may load it
                            * beside the tail (df_look); 0: DFCCL_CHECK_RUNS=0          */
  uint32_t ll_slot_bytes;  /* bytes per low-latency slot (df_connector.ll)             */
  uint32_t ll_unchecked;   /* 1: low-latency lines are read without their flags
                            * (DFCCL_LL_CHECK=0: only for the twin that shows them needed) */
  df_connector* to_next;   /* [channel]: this rank sends to its ring successor         */
  df_connector* from_prev; /* [channel]: this rank receives from its predecessor       */
  uint64_t* sent;          /* [channel]: slots this rank has posted to its successor   */
  uint64_t* consumed;      /* [channel]: slots this rank has taken from its predecessor */
} df_links;

/* ---------------------------------------------------------------------------------------------
 * Collective contexts.  The static context is the collective's registration (one per collective,
 * shared by all blocks).  The dynamic context is where one block stands in one run of it: saved
 * when the run is preempted after progress, loaded when it is scheduled again.
 * ------------------------------------------------------------------------------------------- */

typedef enum {
  DF_COLL_ALL_REDUCE = 0,
  DF_COLL_ALL_GATHER,
  DF_COLL_REDUCE_SCATTER,
  DF_COLL_BROADCAST,
  DF_COLL_REDUCE,
  DF_COLL_ALL_TO_ALL,
  DF_COLL_NUM_KINDS
} df_coll_kind;

typedef struct {
  uint32_t kind;      /* df_coll_kind                                        */
  uint32_t dtype;     /* dfcclDataType_t                                     */
  uint32_t op;        /* dfcclRedOp_t                                        */
  uint32_t nranks;    /* participants                                        */
  uint32_t rank;      /* this rank's position in the ring of participants    */
  uint32_t nchannels; /* blocks that take part                               */
  union {
    int32_t root;          /* broadcast and reduce: the root's ring position                */
    uint32_t gather_share; /* an all-reduce that gathers: elements per channel (the host's) */
  };
  int32_t priority;
  uint64_t count;         /* elements: all-gather and reduce-scatter, per rank; all-to-all, per pair of
                          * ranks; all-gather-v: the largest block */
  uint32_t flags;         /* DF_COLL_*                                           */
  uint32_t order;         /* its id, which every participant agrees on (a communicator's connector
                          * set: the set's internal id): the task queue's order among equal
                          * priorities with DFCCL_QUEUE_ORDER=id (df_task_queue_insert) */
  const uint64_t* blocks; /* all-gather-v, reduce-scatter-v: per ring position, elements and
                           * displacement (DF_BLOCK_COUNT, DF_BLOCK_DISPL) in daemon memory; else NULL */
  /* Its connectors' tables and sizes, held here rather than behind a pointer: they come with the
   * context's own loads, and every step reads them from the block's context slot, where through a
   * pointer each step's first read was a trip to L2 before the loads of its connector.  All zeros
   * when the collective has one participant (nchannels 0). */
  df_links links;
  uint64_t pad[2];
} df_coll_static; /* 128 bytes: two lines, loaded together (static_assert in daemon_cuda.cu) */

/* The v collectives' blocks table: two entries per ring position. */
#define DF_BLOCK_COUNT(blocks, position) ((blocks)[2 * (position)])
#define DF_BLOCK_DISPL(blocks, position) ((blocks)[2 * (position) + 1])

/* A participant of the collective shares this rank's GPU without MPS: the GPU time-slices between
 * their daemons, so the collective cannot complete while this daemon spins -- what it waits for
 * comes from that participant, directly (a ring neighbour) or through the ranks between -- and
 * waiting only burns the time slice the participant needs.  Such a collective waits briefly and the
 * daemon yields the GPU (quits) as soon as a pass over its queue progresses nothing. */
#define DF_COLL_TIMESLICED_PEER 1u
/* An all-reduce that gathers every rank's input around the ring and reduces them in rank order on
 * each rank (all_reduce_gathered.h): n-1 hops instead of the ring's 2(n-1).  The host sets it alike
 * on every rank (DFCCL_ALLREDUCE_GATHER_BYTES), only where each channel's share of the input fits
 * one FIFO slot and the n-1 gathered slots fit the FIFO; it is part of the run's tag, so that ranks
 * configured differently fail the run instead of mixing algorithms. */
#define DF_COLL_GATHER_REDUCE 2u
/* An all-reduce that gathers moves its slots as low-latency lines (low_latency.h) on the links that
 * have them: each channel's share is at most DFCCL_LL_BYTES.  Set alike on every rank and part of
 * the run's tag, as DF_COLL_GATHER_REDUCE. */
#define DF_COLL_LL 4u
#define DF_LL_BYTES_MAX (64u << 10) /* DFCCL_LL_BYTES at most */
/* A low-latency slot: a header line, then a line per 8 bytes of data (low_latency.h). */
#define DF_LL_LINE_BYTES 16u
#define DF_LL_LINE_DATA 8u
#define DF_LL_SLOT_BYTES(ll_bytes) (DF_LL_LINE_BYTES * (1u + ((ll_bytes) + DF_LL_LINE_DATA - 1u) / DF_LL_LINE_DATA))

typedef struct {
  const void* sendbuff; /* of the current run, from its SQE                    */
  void* recvbuff;
  uint64_t iteration; /* algorithm loop iteration                            */
  uint32_t epoch;     /* which run                                           */
  uint32_t step;      /* primitive within the iteration                      */
  uint32_t gated;     /* 1: the run waits for its gate (df_daemon_args.gates) before it reads a buffer */
  uint32_t received;  /* slots this block received in the run (saturating): see df_prim's growth */
  uint32_t pad[2];
} df_coll_dynamic; /* 48 bytes */

/* A run's gate (df_daemon_args.gates): the host publishes a run of up to DFCCL_GATE_CHANNELS
 * channels before it knows that the caller's work on the run's buffers is done -- the queries of
 * the caller's default streams then overlap the SQ's latency -- and stores the run's epoch in its
 * collective's gate once it does, with DF_GATE_FAILED when the queries failed.  Block 0 alone reads
 * it (host memory: with every block polling it, each PCIe read would wait behind the others); a run
 * of several channels finds the value block 0 let through in device memory (gates_passed).  On a
 * GPU the caller's streams open the gate themselves (stream_gates: a write queued behind their work,
 * memory_cuda.c); block 0 reads that word first, and the host's only when it is still shut -- the
 * host opens its word when it could not queue the write, and fails the run there. */
#define DF_GATE_FAILED (1ull << 32)

/* Counters per collective, summed over blocks with atomics. */
typedef struct {
  uint32_t preemptions;
  uint32_t context_loads;
  uint32_t context_saves;
  uint32_t last_queue_length;
  uint32_t max_queue_length;
  uint32_t pad[3];
} df_coll_counters;

/* Counters per block (only its own block writes them). */
typedef struct {
  uint64_t sqes_read;
  uint64_t preemptions;
  uint64_t context_loads;
  uint64_t context_saves;
  uint64_t voluntary_quits;
  uint64_t max_queue_length;
  uint64_t cq_full_waits; /* completions held because the block's CQ ring was full */
} df_block_counters;

/* What survives a block's exit: where it stands in the SQ and which runs it holds. */
typedef struct {
  uint64_t sq_frontier;     /* next entry of the SQ mirror to read                  */
  uint64_t sq_forwarded;    /* block 0: next entry of the host's SQ to copy over    */
  uint64_t sq_acknowledged; /* block 0: first host entry not yet handed back (df_sq_acknowledge) */
  uint32_t ntasks;          /* entries of the block's row of saved_tasks          */
  uint32_t exited;          /* saw the final-exit SQE                             */
  uint64_t cq_tail;         /* completions this block stored in its CQ ring         */
  uint64_t cq_head_seen;    /* the host's head of that ring, as last read           */
  df_block_counters counters;
} df_block_state;

/* What a launch tells the host (host memory, zeroed by the host before each launch): whether it
 * progressed, whether it quit to yield the GPU to daemons that time-slice with it (the host then
 * relaunches it soon: the quit was not for a device synchronization), and when block 0 started and
 * ended, in the GPU's global time (one clock for every process on the GPU: DFCCL_DEBUG=2 prints it,
 * and the launches of ranks sharing a GPU line up). */
#define DF_LAUNCH_PROGRESSED 1u /* a block's own record of what it reported (df_block_shared) */
#define DF_LAUNCH_YIELDED 2u
typedef struct {
  uint32_t progressed; /* 1 when a block progressed: each block stores 1, nobody adds or ors */
  uint32_t yielded;    /* 1 when a block asked to yield the GPU                             */
  uint64_t start_ns;   /* block 0                                                           */
  uint64_t end_ns;
} df_launch_report;

/* Spin thresholds (paper §4.3): the run at the front of a task queue waits longest, later ones
 * progressively less, and a run that just made progress waits `growth` times longer. */
typedef struct {
  uint64_t front;             /* polls for the first run of the task queue           */
  uint64_t floor;             /* the least any run gets                              */
  uint32_t decay_shift;       /* each later position gets threshold >> decay_shift   */
  uint32_t growth;            /* multiplier after a primitive succeeds               */
  uint64_t ceiling;           /* no threshold grows beyond this                      */
  uint64_t quit_period_ns;    /* quit after this long without progress or new SQEs   */
  uint32_t preemption;        /* 0: never preempt (test twin: shows the deadlock)    */
  uint32_t leave_share;       /* a wait looks for a queued run that can move from threshold/this on; 0: never */
  uint32_t follow;            /* 1: a run's ring positions but the first look from the floor on */
  uint32_t queue_by_id;       /* 1: equal priorities queue by id (df_coll_static.order), not arrival */
  uint32_t take_in_wait;      /* a wait takes SQEs that join the task queue at its end (df_take_in_wait): 1 once
                                * its share has passed, 2 from its first look; 0: it leaves for them */
  uint32_t send_ahead;        /* 1: once a run of the queue was preempted, a wait's first pass leaves
                                * for queued runs that begin by sending (df_other_run_ready) */
  uint64_t timeslice_idle_ns; /* after DF_COLL_TIMESLICED_PEER work, quit after this long idle */
} df_spin_policy;

/* A DF_COLL_TIMESLICED_PEER collective's wait: a few polls -- the peer's counters cannot move while
 * this daemon holds the GPU, only what it posted in its last turn may still be landing. */
#define DF_TIMESLICED_POLLS 16

typedef struct {
  df_sq_lines sq_host; /* the host's SQ (pinned host memory): block 0 reads it */
  df_sq sq;            /* its mirror in device memory: every block reads it    */
  df_cq cq;
  const df_coll_static* colls;           /* [DF_MAX_COLLS]                                */
  df_coll_dynamic* dynamic;              /* [block * DF_MAX_COLLS + coll]                 */
  uint32_t* done_blocks;                 /* [coll]: blocks that finished the current run  */
  uint32_t* run_errors;                  /* [coll]: the current run failed (df_run_error), as the
                                          * block that failed tells the run's other blocks */
  const volatile uint32_t* timed_out;    /* [coll]: the epoch of a run the host timed out (an epoch,
                                          * not a flag: a run that completed meanwhile leaves
                                          * nothing behind for the next one) */
  const volatile uint64_t* gates;        /* [coll], host memory: the epoch of the collective's last run
                                          * the host let through (DF_GATE_FAILED: failed it) */
  uint64_t* gates_passed;                /* [coll]: the gate's value block 0 last let a run of several
                                          * channels through with, for the run's other blocks */
  const volatile uint32_t* stream_gates; /* [coll], device memory: the epoch of the collective's last
                                          * run the caller's default streams let through, written
                                          * behind their work (DFCCL_STREAM_GATE; NULL: off) */
  volatile uint64_t* progress_ns;        /* [coll], host memory: the daemon's time when a block last
                                          * left the current run with progress (the host's timeouts;
                                          * NULL without DFCCL_TIMEOUT_S) */
  df_coll_counters* coll_counters;       /* [coll]                                      */
  df_block_state* blocks;                /* [block]                                       */
  uint16_t* saved_tasks;                 /* [block * DF_MAX_COLLS + i]                    */
  const volatile uint32_t* quit_request; /* host asks the blocks to quit soon (block 0 reads it) */
  df_launch_report* launch_report;       /* in host memory                                  */
  uint64_t* quit_votes;                  /* [0] bit b: block b offers to quit; [1] nonzero: a block asks
                                          * to yield the GPU (DF_COLL_TIMESLICED_PEER); [2] blocks that have
                                          * left after the vote: the last one zeroes all three for the next
                                          * launch (no copy from the host between launches, which on a GPU
                                          * that time-slices would cost a turn of its own) */
  df_spin_policy spin;
#ifdef DF_STAMPS
  df_stamp_record* stamps; /* [DF_STAMP_RUNS], daemon memory: block 0's per-run stamps (stamps.h) */
  df_trace_event* trace;   /* [DF_TRACE_EVENTS], daemon memory: block 0's events; NULL: no trace */
  uint64_t* trace_count;   /* daemon memory: events appended so far                                */
#endif
} df_daemon_args;

#endif /* DFCCL_KERNEL_DAEMON_H */
