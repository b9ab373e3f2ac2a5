/*
 * DFCCL: deadlock-free collective communication.
 *
 * Every collective of a rank runs inside one persistent daemon (a kernel on a GPU, or threads on the
 * host execution target).  A collective that cannot progress is preempted and another one runs, so
 * collectives invoked in different orders on different ranks, or a device synchronization between
 * them, never deadlock.
 *
 * Life cycle: dfcclInit -> dfcclRegister* (any time, once per collective id) -> dfcclRun* (any number
 * of times, asynchronous; the callback runs on DFCCL's poller thread, or in dfcclProgress) ->
 * dfcclDeregister (optional; the id may then be registered again) -> dfcclDestroy.  Or, without a
 * registration per
 * collective: dfcclCommCreate -> dfcclSubmit (any collective, any number of runs in flight) ->
 * dfcclCommDestroy (below).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_H
#define DFCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DFCCL_VERSION_MAJOR 0
#define DFCCL_VERSION_MINOR 1

typedef enum {
  dfcclSuccess = 0,
  dfcclInvalidArgument, /* null/misaligned pointer, bad count, dtype, op, participants ... */
  dfcclUnregisteredId,  /* dfcclRun* or dfcclDeregister of an id that is not registered   */
  dfcclDuplicateId,     /* dfcclRegister* with an id that is already registered           */
  dfcclInFlight,        /* dfcclRun* or dfcclDeregister while a run has not completed     */
  dfcclDestroyed,       /* the context was destroyed                                      */
  dfcclWrongDevice,     /* a buffer is not memory of the context's device                 */
  dfcclTimeout,         /* the submission queue stayed full longer than the timeout       */
  dfcclUnsupported,     /* the requested execution target is not available here           */
  dfcclOutOfResources,  /* too many collectives / participants / memory                   */
  dfcclSystemError,     /* an operating-system call failed                                */
  dfcclCudaError,       /* a CUDA call failed                                             */
  dfcclBootstrapError,  /* the caller's allgather failed                                  */
  dfcclInternalError,
  dfcclTimedOut,       /* a run made no progress for DFCCL_TIMEOUT_S (here or on a participant) */
  dfcclMismatch,       /* the participants disagree on a run: kind, count, type, op, root, or
                        * which run it is (a rank skipped one)                                  */
  dfcclRevoked,        /* a run of this collective (communicator) failed earlier: it takes no
                        * new runs (deregister or destroy it; make a new one)                   */
  dfcclInProgress,     /* dfcclCommCreateTest: the creation is still exchanging; test again   */
  dfcclCreationFailed, /* a run held by a communicator whose nonblocking creation failed, or
                        * submitted to it after (dfcclCommCreateTest says why)                  */
  dfcclNumResults
} dfcclResult_t;

/* Element types.  Integers wrap (sum and prod modulo 2^bits); fp16 and bf16 are computed in float
 * and rounded to nearest even. */
typedef enum {
  dfcclInt8 = 0,
  dfcclUint8,
  dfcclInt16,
  dfcclUint16,
  dfcclInt32,
  dfcclUint32,
  dfcclInt64,
  dfcclUint64,
  dfcclFloat16,
  dfcclBfloat16,
  dfcclFloat32,
  dfcclFloat64,
  dfcclNumTypes
} dfcclDataType_t;

/* Reduction ops, with MPI's meaning.  sum, prod, max and min are defined for every type (max/min
 * compare as the type does: signed, unsigned or floating point).  The others are defined for the
 * integer types only (a registration that pairs them with fp16, bf16, fp32 or fp64 fails with
 * dfcclInvalidArgument): band, bor, bxor act on the element's bits; land, lor, lxor take nonzero as
 * true and produce 1 or 0 in the element type (land = a && b, lor = a || b,
 * lxor = (a != 0) != (b != 0)). */
typedef enum {
  dfcclSum = 0,
  dfcclProd,
  dfcclMax,
  dfcclMin,
  dfcclBand,
  dfcclBor,
  dfcclBxor,
  dfcclLand,
  dfcclLor,
  dfcclLxor,
  dfcclNumOps
} dfcclRedOp_t;

typedef enum {
  dfcclTargetDefault = 0, /* DFCCL_TARGET from the environment ("cuda" or "host"), else cuda */
  dfcclTargetCuda,        /* the daemon is a kernel on a GPU                                  */
  dfcclTargetHost         /* the daemon is CPU threads; connectors in POSIX shared memory     */
} dfcclTarget_t;

/*
 * Bootstrap: DFCCL never talks to MPI (or anything else) to exchange connection information; the
 * caller provides an allgather.  `ranks` lists the participating world ranks in ring order (as the
 * collective was registered; the caller is one of them); each contributes `bytes` bytes and
 * receives all contributions in that order.  Every listed rank makes the same sequence of such
 * calls.  Return 0 on success.
 */
typedef int (*dfcclAllgatherFn)(void* state, const int* ranks, int nranks, const void* sendbuf, void* recvbuf,
                                size_t bytes);

typedef struct {
  int rank; /* this process's rank in [0, nranks)          */
  int nranks;
  dfcclAllgatherFn allgather;
  void* state; /* passed back to allgather                    */
} dfcclBootstrap_t;

typedef struct {
  dfcclTarget_t target;
  int device; /* CUDA device ordinal, or -1 for the current device (cuda target) */
  dfcclBootstrap_t bootstrap;
} dfcclInitArgs_t;

typedef struct dfcclRankCtx* dfcclRankCtx_t;

/* Runs when a run completes, on DFCCL's poller thread or inside a dfcclProgress of the context on
 * the thread that calls it (a run held by a communicator being made that cannot start: inside the
 * test that saw its creation end); keep it short.  `status` is dfcclSuccess, or the error that
 * ended the run: dfcclTimedOut (no progress for DFCCL_TIMEOUT_S on some participant),
 * dfcclMismatch (the participants disagree on the run), dfcclDestroyed (the context went away
 * first), dfcclCreationFailed (its communicator could not be made) ...  After dfcclTimedOut or
 * dfcclMismatch the collective (communicator) takes no new runs: dfcclRevoked
 * (docs/reliability.md). */
typedef void (*dfcclCallback_t)(int collId, dfcclResult_t status, void* arg);

dfcclResult_t dfcclInit(dfcclRankCtx_t* ctx, const dfcclInitArgs_t* args);

/*
 * Registers all-reduce `collId` (any int >= 0, unique among the registered collectives).
 * `participants` lists world ranks in ring order (every participant passes the same list; NULL with
 * nparticipants 0 means all ranks in ascending order).  At most 2048 collectives are registered at
 * once (dfcclOutOfResources).  Registration is collective over
 * the participants, like creating a communicator: each registers the same collective (id, count,
 * type, op) in the same order, and they exchange the collective's connectors through the
 * bootstrap; a mismatch is reported as dfcclInvalidArgument on every participant.  Each collective
 * gets connectors of its own, sized to it, so a preempted collective never blocks another.
 * Higher `priority` runs first when several collectives are ready (0 is the default).  `op` must be
 * defined for `dtype` (dfcclRedOp_t says which are), else dfcclInvalidArgument.
 */
dfcclResult_t dfcclRegisterAllReduce(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op,
                                     int collId, const int* participants, int nparticipants, int priority);

/* The other collectives, on the same machinery.  Counts are per rank where MPI has them so:
 * all-gather gathers `sendcount` elements from each participant (recvbuff holds nparticipants x
 * sendcount, in ring order: the order of `participants`); reduce-scatter leaves `recvcount` reduced
 * elements on each (sendbuff holds nparticipants x recvcount, in ring order).  `root` is a world rank among the
 * participants. */
dfcclResult_t dfcclRegisterAllGather(dfcclRankCtx_t ctx, size_t sendcount, dfcclDataType_t dtype, int collId,
                                     const int* participants, int nparticipants, int priority);
/* All-gather-v: participant i (in ring order) contributes recvcounts[i] elements, which land at
 * recvbuff + displs[i] elements on every participant; a participant's sendbuff holds its own
 * recvcounts[i] elements (sendbuff == recvbuff + displs[i] runs in place).  Blocks may be empty;
 * non-empty ones must not overlap (dfcclInvalidArgument).  Every participant passes the same
 * arrays: a mismatch is dfcclInvalidArgument on every participant.  Runs with dfcclRunAllGatherV. */
dfcclResult_t dfcclRegisterAllGatherV(dfcclRankCtx_t ctx, const size_t* recvcounts, const size_t* displs,
                                      dfcclDataType_t dtype, int collId, const int* participants, int nparticipants,
                                      int priority);
dfcclResult_t dfcclRegisterReduceScatter(dfcclRankCtx_t ctx, size_t recvcount, dfcclDataType_t dtype, dfcclRedOp_t op,
                                         int collId, const int* participants, int nparticipants, int priority);
/* Reduce-scatter-v: participant i (in ring order) ends with recvcounts[i] reduced elements; sendbuff
 * holds every participant's block packed (block i after blocks 0..i-1, as MPI_Reduce_scatter's).
 * In place: recvbuff == sendbuff + the elements before this participant's block.  Every participant
 * passes the same recvcounts (a mismatch is dfcclInvalidArgument on every participant).  Runs with
 * dfcclRunReduceScatterV. */
dfcclResult_t dfcclRegisterReduceScatterV(dfcclRankCtx_t ctx, const size_t* recvcounts, dfcclDataType_t dtype,
                                          dfcclRedOp_t op, int collId, const int* participants, int nparticipants,
                                          int priority);
/* All-to-all: every participant sends `count` elements to each participant, itself included:
 * block i of sendbuff (elements i x count ..) goes to participant i (in ring order), which receives
 * it as block `position` of its recvbuff.  Not in place: sendbuff and recvbuff must not overlap
 * (dfcclInvalidArgument at dfcclRunAllToAll).  It runs on the ring's connectors, so each link
 * carries n(n-1)/2 blocks (n-1 for a direct exchange): as fast as one for 2 participants. */
dfcclResult_t dfcclRegisterAllToAll(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, int collId,
                                    const int* participants, int nparticipants, int priority);
dfcclResult_t dfcclRegisterBroadcast(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, int root, int collId,
                                     const int* participants, int nparticipants, int priority);
dfcclResult_t dfcclRegisterReduce(dfcclRankCtx_t ctx, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op, int root,
                                  int collId, const int* participants, int nparticipants, int priority);

/*
 * Deregisters the n collectives `collIds`, which must all have the same participants (else
 * dfcclInvalidArgument at once, on the caller).  Collective over those participants, like a
 * registration: each passes the same ids in the same order, and they meet through the bootstrap
 * allgather, after which no peer touches the collectives' connectors and they are freed.  Their ids
 * and daemon indices can be registered again (dfcclRegister* of the same id, with anything else
 * changed, is a new collective).  Errors are told to every participant, and then none of the
 * collectives is deregistered anywhere: dfcclUnregisteredId (an id that is not registered),
 * dfcclInFlight (a run whose callback has not run yet, on any participant), dfcclInvalidArgument (an
 * id listed twice, or id lists that differ between participants).  A rank that knows none of the
 * ids returns dfcclUnregisteredId at once; lists that name collectives of different participants
 * on different ranks are, like mismatched registrations, the caller's error (those ranks would wait
 * for each other).  n == 0 does nothing.  Registrations and deregistrations on different groups of
 * participants may run at the same time on different threads.
 */
dfcclResult_t dfcclDeregister(dfcclRankCtx_t ctx, const int* collIds, int n);

/* Submits one run of a registered all-reduce.  sendbuff == recvbuff is in place.  The run sees
 * the buffers as the calling thread does when it calls: it first waits for the work this thread
 * has issued to its CUDA default streams (the legacy stream 0 and its per-thread default stream:
 * a cudaMemcpy from pageable memory, a kernel on stream 0), which is free when they are idle (see
 * dfcclWaitDefaultStreams).  Work on streams the caller created must be complete first
 * (synchronize them).  recvbuff is ready when the callback runs. */
dfcclResult_t dfcclRunAllReduce(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                dfcclCallback_t callback, void* callbackArg);

/* In place: all-gather with sendbuff == recvbuff + position x sendcount; reduce-scatter with
 * recvbuff == sendbuff + position x recvcount; broadcast and reduce with sendbuff == recvbuff.
 * Broadcast reads sendbuff on the root only; reduce writes recvbuff on the root only (the others
 * may pass NULL). */
dfcclResult_t dfcclRunAllGather(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                dfcclCallback_t callback, void* callbackArg);
dfcclResult_t dfcclRunAllGatherV(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                 dfcclCallback_t callback, void* callbackArg);
dfcclResult_t dfcclRunReduceScatter(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                    dfcclCallback_t callback, void* callbackArg);
dfcclResult_t dfcclRunReduceScatterV(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                     dfcclCallback_t callback, void* callbackArg);
dfcclResult_t dfcclRunAllToAll(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                               dfcclCallback_t callback, void* callbackArg);
dfcclResult_t dfcclRunBroadcast(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                                dfcclCallback_t callback, void* callbackArg);
dfcclResult_t dfcclRunReduce(dfcclRankCtx_t ctx, const void* sendbuff, void* recvbuff, int collId,
                             dfcclCallback_t callback, void* callbackArg);

/*
 * Communicators and descriptors: the same collectives without registering each one.
 *
 * dfcclCommCreate is collective over `ranks` (world ranks in ring order, the caller among them;
 * NULL with nranks 0: all ranks), like creating an MPI or NCCL communicator: the only exchange.  It
 * sets up DFCCL_COMM_SETS connector sets of DFCCL_MAX_CHANNELS channels with DFCCL_COMM_SLOT_BYTES
 * FIFO slots (defaults: 1 set of 512 KiB slots on a GPU, 128 MiB of FIFOs; 4 of 128 KiB on the
 * host target).
 *
 * dfcclSubmit runs the collective that `desc` describes, with no exchange.  Every participant
 * submits the same descriptors to a communicator in the same order (MPI's rule for one
 * communicator); submissions to different communicators may come in any order on different ranks
 * -- DFCCL's preemption resolves that disorder.  Submit to one communicator from one thread at a
 * time.  Any number of runs may be outstanding: run i of the communicator takes connector set
 * i mod DFCCL_COMM_SETS, and a run whose set is busy waits for the run before it, inside DFCCL
 * (no dfcclInFlight).  Buffers are as for dfcclRun* of the same collective (in place likewise; not
 * all-to-all); the run sees them as the calling thread does when it calls (dfcclRunAllReduce says
 * how).  The callback's collId is the run's number on the communicator (0, 1, ..., modulo 2^31).
 *
 * The v kinds take their blocks from `counts` and `displs` (read during the call only), as
 * dfcclRegisterAllGatherV and dfcclRegisterReduceScatterV do, and every participant passes the same
 * arrays -- unlike a registration nothing compares them, so different arrays are the caller's error
 * (as different counts are).  The communicator keeps each distinct blocks table in daemon memory
 * while runs in flight or queued use it, and up to 64 of them after: a layout used again costs no
 * copy.  A run with a new layout while 64 tables are all in use is dfcclOutOfResources (wait for
 * some runs to complete).
 *
 * dfcclCommDestroy is collective, once every run's callback has run (else dfcclInFlight on every
 * participant, and the communicator stays); a later use of the handle is dfcclInvalidArgument until
 * dfcclDestroy, which frees every communicator.
 */
typedef struct dfcclComm* dfcclComm_t;

typedef enum {
  dfcclAllReduce = 0,
  dfcclAllGather,
  dfcclReduceScatter,
  dfcclBroadcast,
  dfcclReduce,
  dfcclAllToAll,
  dfcclAllGatherV,     /* blocks of their own sizes: desc.counts, desc.displs */
  dfcclReduceScatterV, /* blocks of their own sizes: desc.counts               */
  dfcclNumCollKinds
} dfcclCollKind_t;

/* Members after `root` were added later: initialize descriptors with designated initializers (or
 * zero them), so that the members a kind ignores are NULL. */
typedef struct {
  dfcclCollKind_t kind;
  size_t count; /* as dfcclRegister* counts: per rank for all-gather and reduce-scatter, per
                          * pair of ranks for all-to-all, else the whole buffer; ignored by the v kinds */
  dfcclDataType_t dtype;
  dfcclRedOp_t op; /* all-reduce, reduce-scatter(-v), reduce; ignored by the others */
  int root;        /* broadcast, reduce: the root's index in the communicator's ranks */
  /* The v kinds only; the others ignore both.  counts: the elements of each position's block (one
   * per rank of the communicator, in its order; blocks may be empty, not all of them).  displs
   * (all-gather-v only; NULL: packed, block i right after blocks 0..i-1): where each block lies in
   * recvbuff, in elements; non-empty blocks must not overlap.  All-gather-v's sendbuff holds this
   * rank's block (counts[position]; in place: sendbuff == recvbuff + displs[position]).
   * Reduce-scatter-v's sendbuff holds every block packed, and recvbuff gets this rank's
   * counts[position] reduced elements (in place: recvbuff == sendbuff + the elements of the blocks
   * before it). */
  const size_t* counts;
  const size_t* displs;
} dfcclCollDesc_t;

dfcclResult_t dfcclCommCreate(dfcclRankCtx_t ctx, const int* ranks, int nranks, dfcclComm_t* comm);
/* dfcclCommCreate agrees with the participants on a serial that names the communicator's connector
 * sets, which is not safe when threads create communicators over overlapping ranks at the same time
 * (two creations may agree on one serial: dfcclDuplicateId).  Callers that can name a communicator
 * alike on every participant and uniquely among their live ones (an MPI communicator's context id)
 * pass that key, below 2^26, and skip the agreement; a key may be used again once its communicator
 * is destroyed. */
dfcclResult_t dfcclCommCreateWithKey(dfcclRankCtx_t ctx, const int* ranks, int nranks, uint32_t key, dfcclComm_t* comm);
dfcclResult_t dfcclSubmit(dfcclComm_t comm, const dfcclCollDesc_t* desc, const void* sendbuff, void* recvbuff,
                          dfcclCallback_t callback, void* callbackArg);
/* dfcclSubmit of n runs in order, as the submissions of a burst or of MPI_Startall: every run is
 * checked first, and one that would be refused refuses the batch (nothing is submitted; the error
 * message names the run); then the runs take their numbers under one lock, and the ones whose
 * connector sets are free reach the daemon under one hold of the submission queue, with one
 * notification, as liburing publishes a batch.  An error return means nothing was submitted and no
 * callback will run.  dfcclSuccess means the batch was accepted and every run reports through its
 * callback -- with an error if the daemon stopped taking submissions midway (the queue stayed full
 * past DFCCL_SUBMIT_TIMEOUT_MS) before that run reached it. */
typedef struct {
  const dfcclCollDesc_t* desc;
  const void* sendbuff;
  void* recvbuff;
  dfcclCallback_t callback;
  void* callbackArg;
} dfcclSubmission_t;
dfcclResult_t dfcclSubmitBatch(dfcclComm_t comm, const dfcclSubmission_t* runs, int n);
dfcclResult_t dfcclCommDestroy(dfcclComm_t comm);

/*
 * Nonblocking creation, for callers that may not wait for the other participants where they create
 * (an MPI library creating the communicator inside a nonblocking collective: the others may reach
 * that call only after a blocking call of their own that waits for this rank).  The communicator's
 * exchanges are then the caller's: `exchange` starts an allgather among the participants (each
 * contributes `bytes`, received in the order of `ranks`) without waiting, and tests it.  They are
 * called only where the caller tests the creation -- dfcclCommCreateTest, and dfcclProgress of the
 * context -- on the thread that calls it (and later from dfcclCommDestroy, or from dfcclDestroy
 * for a creation still going on, which wait, calling test in a loop: test must then make progress
 * itself); the creation's CUDA and memory work runs meanwhile on a thread of DFCCL's.
 *
 * dfcclCommCreateStart returns at once with the communicator, which takes runs at once: dfcclSubmit
 * and dfcclSubmitBatch on it check each run and wait for the caller's work on its buffers as usual,
 * then hold it in call order; the test that sees the creation end submits the held runs in that
 * order, before any later one.  If the creation fails, each held run's callback reports
 * dfcclCreationFailed (its collId the number it would have had), a later submission is refused with
 * dfcclCreationFailed, and dfcclCommDestroy of the communicator meets nobody.
 *
 * dfcclCommCreateTest returns dfcclInProgress until the creation has ended and its held runs are
 * submitted (or while another thread tests it), then dfcclSuccess, or the error that ended the
 * creation, with its sentence (dfcclGetLastErrorMessage), as often as it is asked.  Any thread may
 * test; one at a time does.  The key is as for dfcclCommCreateWithKey.
 */
typedef struct {
  /* Starts the allgather; *request is the caller's.  Returns 0 on success. */
  int (*start)(void* arg, const void* sendbuf, void* recvbuf, size_t bytes, void** request);
  /* *done = 1 once the allgather has completed (the request is then the caller's to forget).
   * Returns 0 on success. */
  int (*test)(void* arg, void* request, int* done);
  void* arg;
} dfcclExchange_t;

dfcclResult_t dfcclCommCreateStart(dfcclRankCtx_t ctx, const int* ranks, int nranks, uint32_t key,
                                   const dfcclExchange_t* exchange, dfcclComm_t* comm);
dfcclResult_t dfcclCommCreateTest(dfcclComm_t comm);

/*
 * Hang report: every collective registered on this rank, and for each pending run how long it has
 * waited, its preemptions and each channel's iteration and step (of how many).  Lines to stderr, or
 * with DFCCL_REPORT_DIR=dir to dir/dfccl-hang-rank<R>.txt and .json, which tools/dfccl-hang-report
 * merges to name the rank the others wait for.  Written by this call, by the poller when a run has
 * been pending DFCCL_HANG_REPORT_S seconds (0, the default: never; then again every as many seconds
 * while one is), and on SIGUSR1 when the program has no handler of its own for it.
 */
dfcclResult_t dfcclWriteHangReport(dfcclRankCtx_t ctx);

/* Takes the completions the daemon has published and runs their callbacks on the calling thread,
 * unless another thread (DFCCL's poller, or another caller) is taking them at this moment; then it
 * returns at once.  It also tests the context's nonblocking creations that no other thread is
 * testing (dfcclCommCreateStart), submitting a communicator's held runs once it exists.
 * *completed (if not NULL): how many callbacks it ran.  A thread that waits for a run calls it to
 * see the run end as soon as the daemon reports it, without waiting for the poller thread to look
 * and hand it over.  Never required: the poller completes every run anyway.  The
 * callbacks run inside it, so do not call it holding a lock that a callback takes.  Safe from any
 * thread and from a callback (which returns at once when that callback's context is the one). */
dfcclResult_t dfcclProgress(dfcclRankCtx_t ctx, int* completed);

/* For a thread that polls for a run's end (dfcclProgress, or its own flag), between two polls;
 * `poll` counts them from 0 for each wait.  On the GPU target it spins for the first
 * DFCCL_WAIT_SPIN_POLLS polls -- a small run ends within microseconds, and a poll that yielded the
 * core would see it only when the yield returns -- and yields after that.  On the host target it
 * always yields: the daemon's threads need the cores. */
#define DFCCL_WAIT_SPIN_POLLS 1024
void dfcclWaitPause(dfcclTarget_t target, unsigned poll);

/* Waits for every submitted run to complete, stops the daemon and frees everything.  Collective
 * over the participants of the collectives still registered: it deregisters them, one closing
 * exchange per group of participants (so call it on every rank that registered any, after all
 * their runs completed everywhere).  Ranks that share no registered collective never meet; a
 * context with none left (all deregistered) meets nobody. */
dfcclResult_t dfcclDestroy(dfcclRankCtx_t ctx);

/* A device synchronization of the context's execution target: cudaDeviceSynchronize() for the cuda
 * target; for the host target, blocks until the running daemon has exited, as a device
 * synchronization waits for a running kernel.  Tests use it to build synchronization deadlocks. */
dfcclResult_t dfcclTargetSynchronize(dfcclRankCtx_t ctx);
/* The GPU the context's daemon runs on (the device dfcclInit chose for -1); -1 on the host target. */
dfcclResult_t dfcclContextDevice(dfcclRankCtx_t ctx, int* device);

/* The host target's cudaDeviceSynchronize, without a context: blocks until the daemon launches
 * running in every host-target context of this process have exited; *contexts (if not NULL) says
 * how many contexts that was.  For programs that reach DFCCL through another library (the Open MPI
 * component in its host-target test mode) and need their GPU runs' device synchronizations. */
dfcclResult_t dfcclHostSynchronize(int* contexts);

const char* dfcclGetErrorString(dfcclResult_t result);
/* A sentence about the last error returned to this thread (empty if none). */
const char* dfcclGetLastErrorMessage(void);

/* Counters of the daemon on this rank, summed over its blocks. */
typedef struct {
  uint64_t sqesRead;           /* SQEs taken into a task queue                          */
  uint64_t preemptions;        /* runs of a collective that ended before its completion (a run
                                * still waiting at its gate for the caller's streams is not one) */
  uint64_t contextLoads;       /* contexts loaded into an active slot                   */
  uint64_t contextSaves;       /* dynamic contexts written back (lazily)                */
  uint64_t voluntaryQuits;     /* blocks that quit because nothing could progress       */
  uint64_t relaunches;         /* daemon launches after the first                       */
  uint64_t launches;           /* daemon launches                                       */
  uint64_t maxTaskQueueLength; /* longest task queue seen by any block                  */
  uint64_t completions;        /* completed runs reported by the completion queue       */
  uint64_t sqFullWaits;        /* submissions that found the submission queue full and waited */
  uint64_t cqFullWaits;        /* completions a block held because its completion ring was full */
  uint64_t daemonBlocks;       /* blocks of a daemon launch running now: its grid (one block per SM on
                                * a GPU), 0 once it has quit -- idle, DFCCL holds no SM */
  uint64_t callerWaits;        /* waits for the caller's work on its buffers (its CUDA default
                                * streams): one per submission call -- a batch waits once */
  uint64_t streamGates;        /* runs whose gate the caller's default streams opened on the GPU
                                * instead (DFCCL_STREAM_GATE): the host neither waited nor asked */
} dfcclStats_t;

typedef struct {
  uint64_t runs;        /* completed runs                                        */
  uint64_t preemptions; /* summed over blocks                                    */
  uint64_t contextLoads;
  uint64_t contextSaves;
  uint64_t lastTaskQueueLength; /* task-queue length when block 0 read its latest SQE    */
  uint64_t maxTaskQueueLength;
} dfcclCollStats_t;

dfcclResult_t dfcclGetStats(dfcclRankCtx_t ctx, dfcclStats_t* stats);
dfcclResult_t dfcclGetCollStats(dfcclRankCtx_t ctx, int collId, dfcclCollStats_t* stats);

size_t dfcclTypeSize(dfcclDataType_t dtype);

/* ---- memory: for glue code that routes calls by their buffers (the Open MPI component) ---- */

typedef enum { dfcclMemoryHost = 0, dfcclMemoryDevice, dfcclMemoryManaged } dfcclMemoryKind_t;

/* The "device" of the host execution target's device memory (see dfcclMemAlloc). */
#define DFCCL_HOST_DEVICE (-2)

/* Where p points: device or managed memory of *device (a GPU, or DFCCL_HOST_DEVICE), or host
 * memory (pageable, pinned, NULL, or anything when this build or machine has no CUDA; *device is
 * then -1).  Creates no CUDA context of its own. */
dfcclResult_t dfcclPointerGetKind(const void* p, dfcclMemoryKind_t* kind, int* device);
/* Device memory for runs of `target` (dfcclTargetDefault: DFCCL_TARGET): cudaMalloc on GPU `device`
 * (-1: the current one; the caller's current device is left as it was), or, for the host target,
 * host memory that dfcclPointerGetKind reports as device memory of DFCCL_HOST_DEVICE -- with which
 * programs on machines without GPUs pass "device buffers" and take the decisions they take on a GPU
 * machine.  Free it with dfcclMemFree. */
dfcclResult_t dfcclMemAlloc(dfcclTarget_t target, int device, size_t bytes, void** ptr);
dfcclResult_t dfcclMemFree(void* ptr);
/* GPUs this process can use: 0 without CUDA, a driver or a device.  Initialises the driver but
 * creates no context. */
int dfcclDeviceCount(void);
/* The GPU a process uses when it has not said which: the calling thread's current device once the
 * thread has a CUDA context (the program chose one, or used CUDA), else localRank % the GPUs -- the
 * usual one-rank-per-GPU mapping, which each process of a node computes alone.  -1 without GPUs.
 * For glue code that must make its context before the program picks a GPU (Open MPI runs
 * collectives of its own inside MPI_Init and communicator creation, before a program's
 * cudaSetDevice: device 0 would put every rank of a node on the first GPU). */
int dfcclDefaultDevice(int localRank);
/* Host memory for copies to and from device memory: page-locked (cudaHostAlloc) where CUDA can
 * pin it, so that dfcclCopy moves it at the link's rate rather than through the driver's bounce
 * buffer; plain host memory otherwise (no CUDA, no GPU).  Pinning costs far more than a copy: keep
 * such blocks for reuse.  Free it with dfcclHostFree. */
dfcclResult_t dfcclHostAlloc(size_t bytes, void** ptr);
dfcclResult_t dfcclHostFree(void* ptr);
/* dfcclHostAlloc blocks kept for reuse, for glue code that copies device buffers through host
 * memory call after call (coll/dfccl's fallbacks to a library that is not CUDA-aware).
 * dfcclHostBlockTake: a block of at least `bytes` -- the kept one that fits most closely, else a
 * new one of the next power of two (at least 4 KiB) -- whose size is *capacity (if not NULL).
 * dfcclHostBlockGive: a dfcclHostAlloc block back for later takes (NULL: nothing); at most 8
 * blocks, 512 MiB in all, are kept: one given back beyond that frees smaller kept ones to make
 * room, or else is freed itself.  dfcclHostBlocksFree: frees every kept block (a library that
 * closes); *freed (if not NULL): how many.  Safe from any thread. */
dfcclResult_t dfcclHostBlockTake(size_t bytes, void** block, size_t* capacity);
dfcclResult_t dfcclHostBlockGive(void* block);
dfcclResult_t dfcclHostBlocksFree(int* freed);
/* A copy between any host and device memory, complete when it returns (memmove without CUDA);
 * ordered after the caller's work on the default streams, like a cudaMemcpy. */
dfcclResult_t dfcclCopy(void* dst, const void* src, size_t bytes);
/* Returns once the work the calling thread has issued to its CUDA default streams (legacy and
 * per-thread) is complete: what dfcclRun* does first.  For glue code that hands a user's call to
 * DFCCL later or from another thread (a queued run): call it at the time of the user's call.  Free
 * when the streams are idle, and when the thread has no CUDA context.  DFCCL_STREAM_ORDER=0 turns
 * the wait off here and in dfcclRun* (only for tests that show what it prevents). */
dfcclResult_t dfcclWaitDefaultStreams(void);

#ifdef __cplusplus
}
#endif
#endif /* DFCCL_H */
