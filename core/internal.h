/*
 * The host-side runtime's own types: the rank context, collectives, groups, execution targets.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_INTERNAL_H
#define DFCCL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "dfccl.h"
#include "kernel/daemon.h"

typedef struct dfcclRankCtx df_ctx;

/* ---- errors (error.c) ---- */

/* Records a sentence for dfcclGetLastErrorMessage and returns `result`. */
dfcclResult_t df_error(dfcclResult_t result, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void df_debug(const df_ctx* ctx, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define DF_CHECK(call)                                             \
  do {                                                             \
    dfcclResult_t df_check_result_ = (call);                       \
    if (df_check_result_ != dfcclSuccess) return df_check_result_; \
  } while (0)

/* ---- configuration (config.c) ---- */

typedef struct {
  dfcclTarget_t target;
  uint32_t max_channels;      /* blocks a collective may use                        */
  uint32_t gate_channels;     /* runs of up to this many channels are gated (DFCCL_GATE_CHANNELS) */
  uint64_t min_channel_bytes; /* a collective gets one channel per this many bytes   */
  uint32_t slot_bytes;        /* largest FIFO slot (small collectives get smaller)   */
  uint32_t sq_entries;
  uint64_t hang_report_s;      /* a hang report when a run is pending this long (0: never) */
  uint64_t timeout_s;          /* a run without progress this long fails (0: never)        */
  const char* report_dir;      /* DFCCL_REPORT_DIR: where reports go (NULL: stderr)        */
  uint32_t comm_sets;          /* connector sets per communicator (DFCCL_COMM_SETS)   */
  uint32_t comm_slot_bytes;    /* their FIFO slots (DFCCL_COMM_SLOT_BYTES)            */
  uint32_t cq_slots;           /* CQ entries per daemon block (DFCCL_CQ_SLOTS), a power of two */
  uint64_t submit_timeout_ms;  /* a full SQ makes dfcclRun* wait this long at most    */
  uint64_t destroy_timeout_ms; /* dfcclDestroy waits this long for outstanding runs   */
  uint64_t relaunch_delay_us;  /* first delay before relaunching for stalled runs     */
  uint64_t relaunch_cap_us;    /* the backoff of those relaunches stops here          */
  uint64_t gather_bytes;       /* all-reduces up to this size gather (DF_COLL_GATHER_REDUCE) */
  uint64_t gather_bytes_pair;  /* the same for all-reduces of 2 ranks                   */
  uint32_t ll_bytes;           /* gathering all-reduces whose channel shares are at most this
                                * move low-latency lines (DFCCL_LL_BYTES; 0: never)      */
  bool ll_check;               /* receivers wait for the lines' flags (DFCCL_LL_CHECK; 0 only for a twin) */
  uint64_t yield_delay_us;     /* before relaunching a daemon that yielded the GPU      */
  uint64_t poller_spin_rounds; /* idle poller rounds that only yield, before sleeping   */
  df_spin_policy spin;
  bool spin_set[3];      /* front, floor, ceiling came from the environment       */
  uint32_t transport;    /* df_transport: how connectors reach peers (DFCCL_TRANSPORT)     */
  uint32_t net_lanes;    /* UCX workers, each with its proxy thread (DFCCL_NET_LANES)        */
  bool show_transport;   /* say how each peer is reached (DFCCL_SHOW_TRANSPORT, DFCCL_DEBUG)  */
  bool stream_order;     /* runs wait for the caller's default streams (DFCCL_STREAM_ORDER) */
  bool stream_gate;      /* ... on the GPU: the streams open a run's gate (DFCCL_STREAM_GATE) */
  bool check_runs;       /* receivers check each slot's run tag (DFCCL_CHECK_RUNS; 0 only for a twin) */
  bool poller_set_aside; /* a poller waiting to submit takes completions aside (DFCCL_POLLER_SET_ASIDE; 0: a twin) */
  bool timeslice_yield;  /* yield the GPU to daemons that time-slice with ours (DFCCL_TIMESLICE_YIELD) */
  int debug;
} df_config;

/* DFCCL_TRANSPORT: auto (CUDA IPC or shared memory within a host, the network across hosts), p2p
 * (never the network), ucx (always the network, even within a host). */
typedef enum { DF_TRANSPORT_AUTO = 0, DF_TRANSPORT_P2P, DF_TRANSPORT_UCX } df_transport;
const char* df_transport_name(uint32_t transport);
dfcclResult_t df_config_transport(uint32_t* transport);
/* This process's host: boot id, host name and network namespace hashed, or DFCCL_HOST_ID. */
uint64_t df_host_identity(void);

/* The execution target that `requested` means (dfcclTargetDefault: DFCCL_TARGET, else cuda). */
dfcclResult_t df_config_target(dfcclTarget_t requested, dfcclTarget_t* target);
/* Defaults for the target, then DFCCL_* environment overrides.  Errors name the variable. */
dfcclResult_t df_config_load(df_config* cfg, dfcclTarget_t requested);
/* DFCCL_STREAM_ORDER (default 1; 0 only for the tests that show what the ordering prevents). */
dfcclResult_t df_env_stream_order(bool* on);
/* Spin thresholds from the measured cost of a poll: the waits the defaults intend, in polls of
 * this device (thresholds given in the environment stay as given, the others follow them).  False,
 * changing nothing, when poll_ns is no believable cost of a poll. */
bool df_config_calibrate(df_config* cfg, double poll_ns);

/* ---- execution targets (target_host.c, target_cuda.c) ---- */

#define DF_HANDLE_BYTES 128
typedef struct {
  unsigned char bytes[DF_HANDLE_BYTES];
} df_mem_handle;

typedef struct df_target_ops {
  const char* name;
  dfcclResult_t (*open)(df_ctx* ctx, int device);
  void (*close)(df_ctx* ctx);
  /* memory of the daemon (device memory on a GPU), zeroed */
  dfcclResult_t (*alloc)(df_ctx* ctx, size_t bytes, void** ptr);
  void (*free)(df_ctx* ctx, void* ptr);
  /* memory both the host and the daemon touch (pinned and mapped on a GPU), zeroed */
  dfcclResult_t (*alloc_mapped)(df_ctx* ctx, size_t bytes, void** host, void** daemon);
  void (*free_mapped)(df_ctx* ctx, void* host);
  dfcclResult_t (*copy_in)(df_ctx* ctx, void* daemon_dst, const void* host_src, size_t bytes);
  dfcclResult_t (*copy_out)(df_ctx* ctx, void* host_dst, const void* daemon_src, size_t bytes);
  /* memory shared with other processes (connectors), zeroed */
  dfcclResult_t (*alloc_shared)(df_ctx* ctx, size_t bytes, void** ptr, df_mem_handle* handle);
  void (*free_shared)(df_ctx* ctx, void* ptr, size_t bytes);
  dfcclResult_t (*map_peer)(df_ctx* ctx, const df_mem_handle* handle, size_t bytes, void** ptr);
  void (*unmap_peer)(df_ctx* ctx, void* ptr, size_t bytes);
  /* called once every peer has mapped our shared memory */
  void (*shared_setup_done)(df_ctx* ctx, const df_mem_handle* handle);
  /* the daemon, with its arguments (ctx->args: the addresses in them are the daemon's) */
  dfcclResult_t (*launch)(df_ctx* ctx, const df_daemon_args* daemon_args, int grid);
  /* Non-blocking: is a launch still running?  A failed daemon is reported as an error. */
  dfcclResult_t (*daemon_running)(df_ctx* ctx, bool* running);
  dfcclResult_t (*synchronize)(df_ctx* ctx);
  /* Optional: ns one poll of a connector counter takes on this target. */
  dfcclResult_t (*measure_poll)(df_ctx* ctx, double* ns);
  /* Is [p, p+bytes) memory the daemon can use as a user buffer? */
  dfcclResult_t (*check_buffer)(df_ctx* ctx, const void* p, size_t bytes, const char* what);
  /* Optional: returns once the work the calling thread has issued to its default streams is
   * complete (a run reads its buffers as the caller sees them; memory_cuda.c). */
  dfcclResult_t (*wait_caller)(df_ctx* ctx);
  /* Optional: has the GPU open a run's gate -- a write of `epoch` into `gate` (device memory) --
   * once the work the calling thread issued to its default streams is complete; false when it
   * cannot (memory_cuda.c), and the caller waits with wait_caller instead. */
  bool (*gate_on_streams)(df_ctx* ctx, uint32_t* gate, uint32_t epoch);
} df_target_ops;

extern const df_target_ops df_target_host;
/* The host target's device memory (host_memory.c): host memory reported as DFCCL_HOST_DEVICE. */
dfcclResult_t df_host_memory_alloc(size_t bytes, void** ptr);
bool df_host_memory_free(void* ptr); /* false: not such memory */
bool df_host_memory_contains(const void* p);

/* dfcclHostSynchronize: every host context's running daemon launch has ended; returns how many
 * host contexts there are (target_host.c). */
int df_host_synchronize_all(void);
#ifdef DFCCL_HAVE_CUDA
extern const df_target_ops df_target_cuda;
#endif

/* ---- the GPU under the public memory functions (memory_cuda.c; without CUDA, memory_none.c) ----
 * memory.c checks the arguments and keeps the host target's memory; what CUDA says and does is
 * here, so that memory.c has no #ifdef and a build without CUDA answers "no GPU here". */

/* Sets *kind and *device for GPU memory; leaves them (host memory) for any other pointer. */
dfcclResult_t df_gpu_pointer_kind(const void* p, dfcclMemoryKind_t* kind, int* device);
int df_gpu_device_count(void);             /* 0: no driver, no device, or no CUDA */
int df_gpu_default_device(int local_rank); /* dfcclDefaultDevice */
/* GPU memory on `device` (-1: the current one); the caller's current device is left as it was. */
dfcclResult_t df_gpu_alloc(int device, size_t bytes, void** ptr);
dfcclResult_t df_gpu_free(void* ptr);
/* Pinned host memory, or NULL where there is none (no GPU, none left): plain memory then. */
void* df_gpu_host_alloc(size_t bytes);
/* Frees `base` of df_gpu_host_alloc; `ptr` is the caller's pointer into it, named in errors. */
dfcclResult_t df_gpu_host_free(void* base, const void* ptr);
/* A copy between any two memories, complete when it returns. */
dfcclResult_t df_gpu_copy(void* dst, const void* src, size_t bytes);
/* The calling thread's legacy and per-thread default streams are idle. */
dfcclResult_t df_gpu_wait_default_streams(void);
/* Queues a write of `value` into `gate` (device memory of `device`) after the calling thread's
 * default streams' work; false when it cannot (no CUDA context here, another device current). */
bool df_gpu_gate_after_default_streams(int device, uint32_t* gate, uint32_t value);

/* ---- groups (group.c) ---- */

typedef struct df_group {
  struct df_group* next;
  int* ranks; /* world ranks in ring order (as registered)      */
  int nranks;
  int position; /* this rank's index in `ranks`                   */
  int users;    /* references: collectives and registrations in progress */
} df_group;

/* The group of these participants, with a reference the caller owns (df_group_put).  Caller holds
 * ctx->lock. */
dfcclResult_t df_group_get(df_ctx* ctx, const int* participants, int n, df_group** out);
/* Drops a reference; the last one frees the group.  Caller holds ctx->lock. */
void df_group_put(df_ctx* ctx, df_group* g);
/* Orders groups alike on every rank (by their rank lists), whatever order they were made in. */
int df_group_compare(const df_group* a, const df_group* b);
void df_group_free_all(df_ctx* ctx);

/* ---- a collective's connectors (connectors.c) ---- */

struct df_net_link;

/* One of a collective's regions: the host's pointer and the daemon's (the same but for memory
 * mapped into a GPU), and whether it is shared with a peer (alloc_shared / map_peer) or local
 * mapped memory that a network proxy serves (alloc_mapped). */
typedef struct {
  void* host;
  void* daemon;
  bool mapped;
} df_region;

typedef struct {
  size_t recv_bytes, send_bytes;
  df_region recv;                /* ours: FIFOs and tails, written by the predecessor (or our proxy)    */
  df_region send;                /* ours: heads, written by the successor (or our proxy)                */
  df_region next_recv;           /* the successor's, mapped; over the network a local copy our proxy sends */
  df_region prev_send;           /* the predecessor's, mapped; over the network a local copy our proxy reads */
  struct df_net_link* to_next;   /* the network link to the successor, or NULL (a peer mapping) */
  struct df_net_link* from_prev; /* the network link from the predecessor, or NULL              */
  void* tables;                  /* the connector tables and step counters, in daemon memory */
  df_links view;                 /* the daemon's view of them (df_coll_static.links) */
  bool timesliced_peer;          /* a participant's daemon time-slices our GPU with ours */
} df_coll_links;

/* A participant's daemon GPU, as its registration card tells it. */
typedef struct {
  uint8_t uuid[16];    /* zero on the host target */
  uint32_t timesliced; /* the GPU time-slices between processes (no MPS) */
  uint32_t networked;  /* set by the reader: we reach that participant over the network */
} df_daemon_gpu;

/* Does a participant other than `me` run its daemon on our GPU, both without MPS, and is it reached
 * through a peer mapping?  Then none of our collectives with it completes while our daemon holds the
 * GPU (DF_COLL_TIMESLICED_PEER; connectors.c). */
bool df_gpu_timesliced_with(const df_daemon_gpu* gpus, int n, int me);

/* Collective over the group: allocates, exchanges (with the signature; layout_hash: all-gather-v's
 * blocks table, 0 for the others) and maps.  A rank whose
 * registration already failed (prior) still exchanges, so that every participant fails. */
dfcclResult_t df_links_create(df_ctx* ctx, const df_group* g, int id, const df_coll_static* st, uint64_t layout_hash,
                              uint32_t slot_bytes, dfcclResult_t prior, df_coll_links* links);
/* The closing exchange, collective over the group: the participants check that they release the
 * same collectives `ids` (in the same order) and that none of them is in flight anywhere (each
 * rank's `prior`: a local failure, told to everyone so that every participant fails alike).  On
 * success no peer touches these collectives' connectors any more: they can be freed. */
dfcclResult_t df_links_close(df_ctx* ctx, const df_group* g, const int* ids, int n, dfcclResult_t prior);
/* Closes this rank's mappings of its peers' connectors. */
void df_links_unmap_peers(df_ctx* ctx, df_coll_links* links);
/* Collective over the group: returns once every participant has called it. */
dfcclResult_t df_links_barrier(df_ctx* ctx, const df_group* g);
/* Collective over the group: the bootstrap's allgather of `bytes` from each, in ring order. */
dfcclResult_t df_links_allgather(df_ctx* ctx, const df_group* g, const void* send, void* recv, size_t bytes);
void df_links_free(df_ctx* ctx, df_coll_links* links);

/* ---- the network transport (net_ucx.c; without UCX, net_none.c) ---- */

#define DF_NET_ADDRESS_MAX 2048 /* bytes of the worker addresses that a registration card carries */
#define DF_NET_LANES_MAX 8

/* dfcclInit: starts the transport (a UCX worker and its proxy thread) unless cfg.transport is p2p;
 * without UCX in the build, auto goes on without it and ucx is an error. */
dfcclResult_t df_net_open(df_ctx* ctx);
void df_net_close(df_ctx* ctx);
/* This rank's worker addresses, one per lane (0 bytes when there is no network transport). */
size_t df_net_address(const df_ctx* ctx, void* buf, size_t max);
/* Wakes the proxy: a run was submitted. */
void df_net_notify(df_ctx* ctx);

/* A connector set's network half, per direction.  The sending link reads the slots the daemon
 * posts in `fifo_region` (a local copy of the successor's recv region) and sends them to `peer`;
 * the peer's credits come back as heads in `ctrl_region` (our send region).  The receiving link
 * posts receives into the slots of `fifo_region` (our recv region), publishes their tails once the
 * data has landed, and returns as credits the heads the daemon writes into `ctrl_region` (a local
 * copy of the predecessor's send region).  Both regions are host views. */
typedef struct {
  bool sending;
  int peer; /* world rank */
  const void* peer_address;
  size_t peer_address_bytes;
  int id; /* the collective (or connector set): with the channel and step, the messages' tags */
  uint32_t nchannels, slot_bytes;
  void* fifo_region;
  void* ctrl_region;
} df_net_link_args;

dfcclResult_t df_net_link_open(df_ctx* ctx, const df_net_link_args* args, struct df_net_link** out);
/* Waits (bounded) until everything handed to the network has completed and the last credits have
 * been exchanged, so that nothing stale reaches a later collective with the same id; then frees. */
void df_net_link_close(df_ctx* ctx, struct df_net_link* link);
/* "tcp", "rc_mlx5,ud" ...: what the network uses to reach the link's peer (debug output). */
const char* df_net_link_describe(const struct df_net_link* link);

/* ---- collectives (registry.c) ---- */

/* A record's life: FREE -> JOINING (id and index reserved, the registration's exchange runs) ->
 * READY (runs may be submitted) -> LEAVING (the deregistration's exchange runs; no new runs) ->
 * FREE, or back to READY if the deregistration failed. */
typedef enum { DF_COLL_FREE = 0, DF_COLL_JOINING, DF_COLL_READY, DF_COLL_LEAVING } df_coll_state;

struct df_comm_run;

typedef struct {
  int id;
  df_coll_state state;
  bool in_flight;
  int callback_id;       /* what the running run's callback is told: its collId, or its number on its communicator */
  uint64_t submitted_us; /* when the running run was submitted (df_now_us) */
  uint32_t epoch;        /* of the latest run submitted; runs count from 1 */
  df_coll_static stat;
  df_group* group; /* holds a reference from JOINING to FREE          */
  df_coll_links links;
  dfcclCallback_t callback;
  void* callback_arg;
  uint64_t runs;                   /* completed */
  uint64_t* blocks;                /* a registered v collective: the host's copy of stat.blocks (malloc), else NULL */
  uint64_t send_elems, recv_elems; /* a registered v collective: what a run reads and writes on this rank */
  struct df_comm_run* queued;      /* a communicator's connector set: runs waiting for it (FIFO) */
  struct df_comm_run* queued_last;
  struct df_comm_table* table; /* a communicator's v run in flight: the blocks table it holds (comm.c) */
  dfcclResult_t failed;        /* a run failed with this (timeout.c): no new runs (dfcclRevoked) */
  bool timing_out;             /* the running run timed out here: the daemon was told to fail it */
  uint64_t progress_seen;      /* the daemon's progress stamp of the running run, as last read   */
  uint64_t progress_us;        /* when it last changed (df_now_us)                               */
} df_coll;

/* All of the registry's functions but init and fini are called with ctx->lock held. */
dfcclResult_t df_registry_init(df_ctx* ctx);
void df_registry_fini(df_ctx* ctx);
/* Index of the collective registered (READY or LEAVING) as id, or -1. */
int df_registry_find(const df_ctx* ctx, int id);
/* Index of the record that holds id in any state but FREE, or -1. */
int df_registry_lookup(const df_ctx* ctx, int id);
/* Reserves id and a free index for a registration (JOINING); the record takes over the caller's
 * reference to g.  dfcclDuplicateId or dfcclOutOfResources. */
dfcclResult_t df_registry_reserve(df_ctx* ctx, int id, df_group* g, int* index);
/* A reserved index becomes READY with its registration. */
void df_registry_publish(df_ctx* ctx, int index, const df_coll_static* stat, const df_coll_links* links);
/* Forgets the id, drops the record's group reference and puts the index on the free list.  The
 * caller has freed the links and reset the index's daemon state. */
void df_registry_release(df_ctx* ctx, int index);

/* ---- registration and runs, for the communicators (register.c, run.c) ---- */

/* A registration's shape given rather than derived from its size: channels and FIFO slot bytes. */
typedef struct {
  uint32_t nchannels;
  uint32_t slot_bytes;
} df_shape;

/* Collective over the ranks: a connector set registered like a collective under the internal id
 * `id` (< 0: never a user's), with the shape given; its runs install their own static contexts. */
dfcclResult_t df_register_connector_set(df_ctx* ctx, int id, const int* ranks, int nranks, const df_shape* shape);
/* dtype and op are known and go together, count does not overflow. */
dfcclResult_t df_check_signature(size_t count, dfcclDataType_t dtype, dfcclRedOp_t op);
/* The channels a run of `bytes` per rank's block (or buffer) takes by the configuration. */
uint32_t df_run_channels(const df_config* cfg, uint32_t kind, uint64_t bytes, uint32_t nranks);
/* Sets DF_COLL_GATHER_REDUCE on an all-reduce of the configured size whose channels' shares each
 * fit `slot_bytes`, on at most DF_FIFO_STEPS + 1 ranks (all_reduce_gathered.h), and DF_COLL_LL where
 * the shares are at most DFCCL_LL_BYTES (low_latency.h); clears them otherwise. */
void df_choose_all_reduce(const df_config* cfg, df_coll_static* st, uint32_t slot_bytes);
/* The bytes a run of st reads from sendbuff and writes to recvbuff on this rank (not the v kinds). */
void df_run_bytes(const df_coll_static* st, size_t* send_bytes, size_t* recv_bytes);
/* Checks a run's buffers (id names it in errors), then, when `order`, waits for the caller's work on
 * them (else the run is gated: df_gate_wanted). */
dfcclResult_t df_check_run_buffers(df_ctx* ctx, uint32_t kind, const void* sendbuff, size_t send_bytes,
                                   const void* recvbuff, size_t recv_bytes, int id, bool order);
/* Waits for the caller's work on its buffers (the target's wait_caller: on a GPU its CUDA default
 * streams), counted in dfcclStats_t.callerWaits. */
dfcclResult_t df_wait_caller(df_ctx* ctx);
/* Gates (kernel/daemon.h): whether a run of `nchannels` is published before the wait for the
 * caller's work, which then overlaps the SQ's latency while the daemon waits for the run's gate
 * (df_sq_run.gated; df_publish_runs shuts and opens the gates). */
bool df_gate_wanted(const df_ctx* ctx, uint32_t nchannels);
/* The daemon's static context of `index`, written while no run of it is in flight. */
dfcclResult_t df_install_static(df_ctx* ctx, int index, const df_coll_static* st);
/* Caller holds ctx->lock, the record is idle: it is now in flight with this run's callback;
 * returns the run's epoch.  df_record_cancel: the run was never published after all. */
uint32_t df_record_start(df_coll* c, dfcclCallback_t callback, void* callback_arg, int callback_id);
void df_record_cancel(df_coll* c);
/* Writes the SQE of run `epoch` of index (its record already in flight), counted outstanding until
 * it completes; `gated` (df_gate_wanted): its caller's work is waited for after the SQE.  On failure
 * the caller takes the record out of flight again. */
dfcclResult_t df_publish_run(df_ctx* ctx, uint32_t index, uint32_t epoch, uint32_t nchannels, const void* sendbuff,
                             void* recvbuff, bool gated);

/* ---- deregistration (deregister.c) ---- */

/* dfcclDestroy: every collective still registered leaves, a group at a time, each group with one
 * closing exchange over its participants. */
dfcclResult_t df_deregister_all(df_ctx* ctx);

/* ---- the v collectives' blocks tables (blocks.c) ---- */

/* A blocks table as the daemon reads it (DF_BLOCK_COUNT, DF_BLOCK_DISPL per ring position), with
 * what registrations and runs need of it. */
typedef struct {
  uint64_t* host;      /* malloc'd table; NULL: not a v collective */
  uint64_t largest;    /* elements of the largest block: the collective's count */
  uint64_t send_elems; /* what a run reads from sendbuff on this rank ... */
  uint64_t recv_elems; /* ... and writes to recvbuff */
  uint64_t hash;       /* of the table: the participants compare it, communicators intern by it */
} df_blocks;

/* All-gather-v's or reduce-scatter-v's (kind) table for the rank at `position` of nranks, from
 * counts (not NULL) and displs (NULL: packed, block i after blocks 0..i-1).  dfcclInvalidArgument
 * when a block overflows or two non-empty blocks overlap. */
dfcclResult_t df_blocks_table(int nranks, int position, df_coll_kind kind, const size_t* counts, const size_t* displs,
                              dfcclDataType_t dtype, df_blocks* b);
/* The daemon's copy of b's table (target memory, freed with ctx->target->free), for st.blocks. */
dfcclResult_t df_blocks_install(df_ctx* ctx, const df_blocks* b, uint32_t nranks, const uint64_t** dev);
/* Frees a registered v collective's table (both copies).  A communicator's connector set names its
 * last run's table in stat.blocks too, but the communicator owns that one (comm.c): it has no host
 * copy here and is left alone. */
void df_blocks_free(df_ctx* ctx, df_coll* c);

/* ---- hang reports (hang_report.c) ---- */

/* dfcclInit: takes SIGUSR1 if the program has not. */
void df_hang_report_init(df_ctx* ctx);
/* The poller, every round: a report when SIGUSR1 came or a run has been pending too long. */
void df_hang_report_poll(df_ctx* ctx);
dfcclResult_t df_hang_report_write(df_ctx* ctx, const char* reason);

/* ---- per-run timeouts and failed runs (timeout.c) ---- */

/* The poller, every round: a run without progress for DFCCL_TIMEOUT_S is failed (the daemon is
 * told; it revokes the run's connectors on every participant). */
void df_timeout_poll(df_ctx* ctx);
/* The poller, for a completion: dfcclSuccess, or what the run failed with (CQE error `error`).  A
 * failed run's collective takes no new runs (c->failed).  Caller holds ctx->lock. */
dfcclResult_t df_run_outcome(df_ctx* ctx, int index, uint32_t error);
/* Caller holds ctx->lock: dfcclRevoked with a sentence when the collective at `index` failed. */
dfcclResult_t df_check_not_failed(const df_ctx* ctx, int index, const char* what);

/* ---- communicators (comm.c) ---- */

/* A run submitted to a communicator's connector set while another run held it. */
typedef struct df_comm_run {
  struct df_comm_run* next;
  df_coll_static stat;
  const void* sendbuff;
  void* recvbuff;
  dfcclCallback_t callback;
  void* callback_arg;
  int callback_id;
  struct df_comm_table* table; /* a v run: the blocks table it holds, else NULL */
} df_comm_run;

/* Poller, after a completion of index: starts the run queued next on it, if any (the record is not
 * in flight).  True when one was started. */
bool df_comm_start_queued(df_ctx* ctx, int index);
/* Caller holds ctx->lock: the run of record c left flight (completed or failed); a communicator's
 * v run lets go of its blocks table. */
void df_comm_run_ended(df_coll* c);

#define DF_COMM_MAX_SETS 16 /* connector sets of a communicator at most (DFCCL_COMM_SETS) */

/* The stages of a communicator's life before it takes runs directly (ctx->lock). */
typedef enum {
  DF_COMM_CREATING,   /* dfcclCommCreateStart: its sets are being registered; runs are held    */
  DF_COMM_PUBLISHING, /* made: the test that saw it end submits the held runs; new ones are held */
  DF_COMM_READY,      /* runs are submitted as they come                                       */
  DF_COMM_FAILED      /* its creation failed: runs are refused (dfcclCreationFailed)           */
} df_comm_stage;

struct df_comm_table;
struct df_held_run;
struct df_creation;

/* A communicator (comm.c); its memory stays until dfcclDestroy. */
struct dfcclComm {
  uint64_t magic;
  df_ctx* ctx;
  struct dfcclComm* next; /* ctx->comms                                                    */
  int nranks;
  int position; /* this rank's index in the communicator                        */
  df_shape shape;
  int nsets;
  int set_ids[DF_COMM_MAX_SETS];
  int set_index[DF_COMM_MAX_SETS];
  uint64_t runs;                /* submitted: the next run's number                             */
  struct df_comm_table* tables; /* ctx->lock */
  int ntables;
  bool has_exchange;        /* made by dfcclCommCreateStart: its exchanges are the caller's */
  dfcclExchange_t exchange; /* ... also for its destruction                                  */
  /* A nonblocking creation (exchange.c) and the runs submitted meanwhile (comm_held.c). */
  df_comm_stage stage;                  /* ctx->lock                                    */
  struct df_creation* creation;         /* while it is CREATING (the tester's)          */
  atomic_bool testing;                  /* a thread is testing the creation             */
  struct df_held_run *held, *held_last; /* in call order (ctx->lock)                    */
  uint64_t nheld;                       /* held so far: the next held run's number      */
  dfcclResult_t failure;                /* FAILED: what ended the creation, and why     */
  char failure_message[512];
};

/* Validates a communicator handle passed to the API. */
dfcclResult_t df_comm_check(const struct dfcclComm* comm);
/* dfcclDestroy: frees the communicators' memory (their sets are deregistered with the rest); runs
 * still queued end with `error`. */
void df_comm_free_all(df_ctx* ctx, dfcclResult_t error);
/* A communicator of `nranks` with nothing registered yet (magic unset, not listed): the shape of
 * its sets from the configuration.  NULL when out of memory (said). */
struct dfcclComm* df_comm_new(df_ctx* ctx, int nranks, const dfcclExchange_t* exchange);
/* Registers c's sets under `serial` (a key, or an agreed serial; a key in use is a
 * dfcclDuplicateId).  Collective over `ranks`. */
dfcclResult_t df_comm_register_sets(struct dfcclComm* c, const int* ranks, int nranks, uint32_t serial);
/* c joins ctx->comms, its handle valid from now on, at `stage`. */
void df_comm_link(struct dfcclComm* c, df_comm_stage stage);
/* dfcclInvalidArgument, naming the caller, for a key that is not a caller's key. */
dfcclResult_t df_comm_check_key(uint32_t key, const char* caller);
/* Everything that can refuse a run before its communicator's sets exist: its descriptor, against
 * the communicator's ranks, and its buffers; then, where `wait`, the wait for the caller's work on
 * them (the run is published later, maybe by another thread; a batch waits at its first run). */
dfcclResult_t df_comm_check_held(struct dfcclComm* c, const dfcclSubmission_t* s, uint64_t number, bool wait);
/* dfcclSubmitBatch's work on a communicator that takes runs directly; caller_waited: the caller's
 * work on the buffers was waited for already (held runs), so nothing waits here. */
dfcclResult_t df_comm_submit(struct dfcclComm* c, const dfcclSubmission_t* runs, int n, bool caller_waited);

/* ---- runs held by a communicator being made (comm_held.c) ---- */

/* dfcclSubmitBatch on a communicator that is not READY: checks the runs and holds them in call
 * order (dfcclSuccess), refuses them (an error; nothing held), or -- the communicator became READY
 * meanwhile -- submits them (its result). */
dfcclResult_t df_comm_hold(struct dfcclComm* c, const dfcclSubmission_t* runs, int n);
/* The test that saw c made (PUBLISHING): submits the held runs in call order, until none is left;
 * then c is READY. */
void df_comm_publish_held(struct dfcclComm* c);
/* Each held run's callback gets `error` (c's creation failed: dfcclCreationFailed). */
void df_comm_fail_held(struct dfcclComm* c, dfcclResult_t error);

/* ---- nonblocking creation (exchange.c) ---- */

/* Tests c's creation, unless another thread is testing it (dfcclInProgress); at its end, the held
 * runs go (df_comm_publish_held, df_comm_fail_held).  The creation's result, or dfcclInProgress. */
dfcclResult_t df_creation_test(struct dfcclComm* c);
/* dfcclProgress: tests the context's creations (those no other thread is testing). */
void df_creations_progress(df_ctx* ctx);
/* dfcclDestroy: tests every creation still going on until it has ended. */
void df_creations_finish(df_ctx* ctx);

/* ---- exchanges (exchange.c) ---- */

/* Collective over `ranks`: an allgather of `bytes` from each, in their order, through this thread's
 * way of exchanging (the bootstrap's, a communicator's own, or a nonblocking creation's caller). */
dfcclResult_t df_exchange_allgather(df_ctx* ctx, const int* ranks, int nranks, const void* send, void* recv,
                                    size_t bytes);
/* This thread's blocking exchanges go through `exchange` (start, then test until done) until
 * called again with NULL. */
void df_exchange_wait_with(const dfcclExchange_t* exchange);

/* ---- queues (queue/sq_host.c, queue/cq_host.c) ---- */

typedef struct {
  df_sqe_lines* host;              /* the ring as the host writes it   */
  volatile uint64_t* acknowledged; /* entries block 0 handed back (df_sq_acknowledge), after the ring */
  df_sq_lines daemon;              /* the same memory as the daemon sees it */
  uint32_t entries;
  uint32_t readers;     /* daemon blocks that read each new entry (in the mirror) */
  uint64_t tail;        /* next sequence number             */
  uint64_t full_waits;  /* submissions that found the ring full (under lock) */
  pthread_mutex_t lock; /* one writer at a time             */
} df_sq_host;

dfcclResult_t df_sq_host_init(df_ctx* ctx, df_sq_host* sq, uint32_t entries);
void df_sq_host_fini(df_ctx* ctx, df_sq_host* sq);
/* Writes one entry; waits while the ring is full, up to timeout_ms (then dfcclTimeout).  A
 * submitter that must not block on the queue -- the poller, whose completions the daemon may be
 * waiting to store before it takes new entries -- passes while_full (else NULL): it is called
 * whenever the submitter waits, for the ring or for another submitter's lock. */
dfcclResult_t df_sq_host_submit(df_sq_host* sq, uint32_t coll, uint32_t epoch, uint32_t nchannels, const void* sendbuff,
                                void* recvbuff, uint64_t timeout_ms, void (*while_full)(void* arg), void* arg);
/* One entry of a batch (df_sq_host_submit_n). */
typedef struct {
  uint32_t coll, epoch, nchannels;
  const void* sendbuff;
  void* recvbuff;
  uint32_t gated; /* 1: the run waits for its gate: df_publish_runs waits for the caller's work after its SQE */
} df_sq_run;
/* Writes n entries in order under one hold of the lock (each published by its own sequence
 * store, as the daemon reads them); *written: how many, all of them unless the ring stayed full
 * past timeout_ms (dfcclTimeout). */
dfcclResult_t df_sq_host_submit_n(df_sq_host* sq, const df_sq_run* runs, int n, int* written, uint64_t timeout_ms,
                                  void (*while_full)(void* arg), void* arg);
/* df_publish_run of n runs: one hold of the queue's lock, one notification; *published: how many
 * (the first ones), all unless the queue stayed full.  A gated run's gate is shut before its SQE and
 * opened after the published entries are out (a failed wait fails the run through its gate). */
dfcclResult_t df_publish_runs(df_ctx* ctx, const df_sq_run* runs, int n, int* published);

/* ---- per-run stamps (a diagnostic build: ./configure --enable-stamps; stamps.c, kernel/stamps.h) ---- */
typedef enum {
  DF_HOST_STAMP_CALL,          /* the API call that submits the run began (this thread's df_stamp_call) */
  DF_HOST_STAMP_PUBLISH,       /* its SQE about to be written (the buffers checked)                       */
  DF_HOST_STAMP_PUBLISHED,     /* its SQE written                                                         */
  DF_HOST_STAMP_GATE_OPEN,     /* its gate opened (the caller's default streams waited for)               */
  DF_HOST_STAMP_COMPLETION,    /* its CQE taken                                                           */
  DF_HOST_STAMP_CALLBACK_DONE, /* its callback returned                                                   */
  DF_HOST_STAMP_POINTS
} df_host_stamp_point;
#ifdef DF_STAMPS
dfcclResult_t df_stamps_open(df_ctx* ctx); /* before the daemon's arguments are copied */
void df_stamps_close(df_ctx* ctx);         /* prints the report */
void df_stamp_call(void);
void df_host_stamp(df_ctx* ctx, uint32_t coll, uint32_t epoch, df_host_stamp_point point);
#else
static inline dfcclResult_t df_stamps_open(df_ctx* ctx) {
  (void)ctx;
  return dfcclSuccess;
}
static inline void df_stamps_close(df_ctx* ctx) { (void)ctx; }
static inline void df_stamp_call(void) {}
static inline void df_host_stamp(df_ctx* ctx, uint32_t coll, uint32_t epoch, df_host_stamp_point point) {
  (void)ctx;
  (void)coll;
  (void)epoch;
  (void)point;
}
#endif
/* From now on every entry is read by `readers` blocks; returns the sequence number of the first
 * such entry (where blocks that have not read the queue before must start). */
uint64_t df_sq_host_set_readers(df_sq_host* sq, uint32_t readers);

/* The completion queue (queue/cq.h) as the poller sees it, and `daemon`, the daemon's view. */
typedef struct {
  void* region;      /* the mapped allocation                     */
  uint64_t* heads;   /* [block * DF_CQ_STRIDE], written here      */
  uint64_t* entries; /* [block][ring]                             */
  uint32_t ring;
  uint64_t taken[DF_MAX_BLOCKS]; /* the poller's heads                        */
  df_cq daemon;
} df_cq_host;

/* `ring`: entries per daemon block, a power of two. */
dfcclResult_t df_cq_host_init(df_ctx* ctx, df_cq_host* cq, uint32_t ring);
void df_cq_host_fini(df_ctx* ctx, df_cq_host* cq);
/* Takes every published completion of daemon blocks [0, blocks) -- the grid: a block beyond it
 * never ran -- calling fn(arg, cqe) for each, in each block's order.  Returns how many. */
uint32_t df_cq_host_reap(df_cq_host* cq, uint32_t blocks, void (*fn)(void* arg, uint64_t cqe), void* arg);

/* ---- memory (memory.c) ---- */

/* The bytes a dfcclHostAlloc block was asked for; dfcclInvalidArgument, naming the caller, for
 * memory that is not such a block. */
dfcclResult_t df_host_alloc_size(void* ptr, size_t* bytes, const char* caller);

/* ---- poller (poller.c) ---- */

dfcclResult_t df_poller_start(df_ctx* ctx);
void df_poller_stop(df_ctx* ctx);
/* Wakes the poller: new work was submitted. */
void df_poller_notify(df_ctx* ctx);
/* Launches the daemon with the current grid (it must not be running). */
dfcclResult_t df_daemon_launch(df_ctx* ctx);
/* Ends every outstanding run with `error` (its callback gets it). */
void df_poller_fail_outstanding(df_ctx* ctx, dfcclResult_t error);
/* Whether the calling thread is taking ctx's completions now -- the poller, or a thread in
 * dfcclProgress -- so that it submits from a callback or starts a queued run. */
bool df_taking_completions(const df_ctx* ctx);
/* That thread, while it waits to submit: takes the published completions aside, to be completed
 * (callbacks run) once its submission is done; the daemon's blocks can store theirs meanwhile. */
void df_set_aside_completions(void* ctx);

/* ---- the rank context ---- */

#define DF_CTX_MAGIC 0x6466636375ull
#define DF_CTX_DEAD 0xdeadull

struct dfcclRankCtx {
  uint64_t magic;
  df_config cfg;
  const df_target_ops* target;
  void* target_state;
  int device;
  uint64_t host_id;         /* which host (and network namespace) this process runs on  */
  struct df_net* net;       /* the network transport, or NULL                            */
  unsigned char* announced; /* [nranks]: links to (1) and from (2) that rank were told of (debug) */
  uint8_t device_uuid[16];  /* the GPU's (cuda target), to tell which peers share it   */
  bool timesliced;          /* the GPU time-slices between processes (no MPS)           */
  int rank, nranks;
  dfcclBootstrap_t bootstrap;

  /* Neither lock is ever held across a bootstrap exchange: registrations on different groups,
   * from different threads, run their exchanges at the same time. */
  pthread_mutex_t tables_lock; /* the daemon's tables written by the host, and the grid       */
  pthread_mutex_t lock;        /* collective records, id map, free list, groups; held briefly */
  df_coll* colls;              /* [DF_MAX_COLLS] */
  int ncolls;                  /* indices handed out so far: [0, ncolls); freed ones are on the free list */
  int* free_indices;           /* [DF_MAX_COLLS]: a stack of indices to reuse */
  int nfree;
  int* id_index; /* open-addressing map (linear probing): collId -> index, -1 empty */
  size_t id_slots;
  df_group* groups;
  struct dfcclComm* comms; /* the communicators, for dfcclDestroy                          */
  atomic_int ncreating;    /* of them, being made by dfcclCommCreateStart (held runs too)   */
  uint32_t next_comm_serial;
  int report_signals_seen;    /* hang reports: SIGUSR1s answered, and when (df_now_us) the poller */
  uint64_t report_checked_us; /* last looked for old runs and last wrote a report            */
  uint64_t report_written_us; /* above every serial this rank's communicators agreed on      */

  /* the daemon's tables and its arguments */
  df_daemon_args args; /* set once, before the first launch; pointers into daemon memory */
  df_coll_static* dev_colls;
  volatile uint32_t* quit_request_host;
  volatile uint64_t* gates_host;                 /* [coll]: the runs' gates (df_publish_runs), read by daemon block 0 */
  volatile df_launch_report* launch_report_host; /* of the launch that ran last */
  volatile uint64_t* progress_host;              /* [DF_MAX_COLLS]: args.progress_ns as the host sees it */
  uint64_t timeouts_checked_us;                  /* the poller last looked for runs without progress */
  atomic_uint grid;                              /* blocks of the next launch: the most any collective needs */
  atomic_uint grid_launched; /* blocks of the launch running now, or of the last one (dfcclGetStats) */
  uint32_t grid_ever;        /* blocks whose state has been initialised                 */
#ifdef DF_STAMPS
  struct df_host_stamps* stamps; /* the host's per-run stamps (stamps.c) */
#endif

  df_sq_host sq;
  df_cq_host cq;

  /* poller and daemon management */
  pthread_t poller;
  bool poller_started;
  /* Completions that the thread taking them took while it waited to submit, not completed yet
   * (that thread's): one run at most per collective index is in flight, so they never outnumber
   * DF_MAX_COLLS. */
  uint64_t set_aside[DF_MAX_COLLS];
  uint32_t set_aside_head, set_aside_tail;
  atomic_bool taking; /* a thread is taking completions: the poller, or one in dfcclProgress */
  atomic_bool poller_stop;
  atomic_uint_fast64_t submitted;   /* SQEs written                          */
  atomic_uint_fast64_t outstanding; /* runs submitted and not completed      */
  atomic_uint_fast64_t completions;
  atomic_uint_fast64_t launches;
  atomic_uint_fast64_t caller_waits; /* waits for the caller's work on its buffers (df_wait_caller) */
  atomic_uint_fast64_t stream_gates; /* gates the caller's streams open on the GPU (gate_on_streams) */
  uint64_t submitted_at_launch;
  atomic_int fatal; /* a dfcclResult_t that ended the daemon */
  pthread_mutex_t wake_lock;
  pthread_cond_t wake;
  atomic_bool destroying;
  struct dfcclRankCtx* next_tombstone; /* destroyed contexts stay listed (context.c) */
};

/* Validates a handle passed to the API (context.c). */
dfcclResult_t df_ctx_check(const df_ctx* ctx);

#endif /* DFCCL_INTERNAL_H */
