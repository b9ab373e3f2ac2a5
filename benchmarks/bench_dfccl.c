/*
 * dfccl_bench: DFCCL side.  One run at a time, each waited for through its completion callback
 * (a collective id cannot be resubmitted while a run of it is in flight).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "mpi_bootstrap.h"

struct bench_dfccl {
  dfcclRankCtx_t ctx;
  dfcclComm_t comm;       /* -A comm: runs are descriptors submitted to it */
  dfcclCollDesc_t* descs; /* -A comm: [collId], as registered           */
  size_t* blocks;         /* -A comm: [collId] all-gather-v's counts, then displs, nranks each;
                             registrations: [0], read during the call only */
  int ndescs;
  int nranks;
  dfcclBootstrap_t bootstrap;
  double timeoutSec;
  int takeCompletions;            /* -P 1: wait in dfcclProgress */
  dfcclTarget_t target;           /* how the wait pauses between polls   */
  uint64_t submitted;             /* runs submitted by the main thread  */
  atomic_uint_fast64_t completed; /* runs completed, by the callback     */
  atomic_int expectedColl;        /* the collective of the run in flight */
  atomic_int failedStatus;        /* first error a callback reported     */
  atomic_int failedColl;
};

/* Runs on DFCCL's poller thread, or in dfcclProgress on the waiting thread (-P 1). */
static void dfccl_done(int collId, dfcclResult_t status, void* arg) {
  bench_dfccl* d = arg;
  int expected = atomic_load(&d->expectedColl); /* -1: a communicator's run, numbered by it */
  int bad = status != dfcclSuccess ? (int)status : expected >= 0 && collId != expected ? (int)dfcclInternalError : 0;
  if (bad) {
    int none = dfcclSuccess;
    if (atomic_compare_exchange_strong(&d->failedStatus, &none, bad)) atomic_store(&d->failedColl, collId);
  }
  atomic_fetch_add_explicit(&d->completed, 1, memory_order_release);
}

bench_dfccl* bench_dfccl_init(const bench_opts* o, int device) {
  bench_dfccl* d = calloc(1, sizeof(*d));
  if (d == NULL) BENCH_DIE("out of memory");
  atomic_init(&d->completed, 0);
  atomic_init(&d->expectedColl, -1);
  atomic_init(&d->failedStatus, dfcclSuccess);
  atomic_init(&d->failedColl, -1);
  d->timeoutSec = o->timeoutSec;
  d->takeCompletions = o->takeCompletions;
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &d->nranks));
  d->blocks = malloc(2u * (size_t)d->nranks * sizeof *d->blocks);
  if (d->blocks == NULL) BENCH_DIE("out of memory");
  dfcclInitArgs_t args;
  memset(&args, 0, sizeof(args));
  args.target = o->target == BENCH_TARGET_CUDA ? dfcclTargetCuda : dfcclTargetHost;
  d->target = args.target;
  args.device = device;
  if (dfccl_mpi_bootstrap_init(MPI_COMM_WORLD, &args.bootstrap) != 0) BENCH_DIE("dfccl_mpi_bootstrap_init failed");
  d->bootstrap = args.bootstrap;
  CHECK_DFCCL(dfcclInit(&d->ctx, &args));
  if (o->viaComm) CHECK_DFCCL(dfcclCommCreate(d->ctx, NULL, 0, &d->comm));
  return d;
}

void bench_dfccl_fini(bench_dfccl* d) {
  if (d->comm) CHECK_DFCCL(dfcclCommDestroy(d->comm));
  free(d->descs);
  free(d->blocks);
  CHECK_DFCCL(dfcclDestroy(d->ctx));
  dfccl_mpi_bootstrap_fini(&d->bootstrap);
  free(d);
}

dfcclRankCtx_t bench_dfccl_ctx(const bench_dfccl* d) { return d->ctx; }

/* Collective collId's slot of d->blocks (-A comm; a registration passes slot 0 to its call). */
static size_t* blocks_of(const bench_dfccl* d, int collId) {
  return d->blocks + (size_t)collId * 2u * (size_t)d->nranks;
}

static void fill_blocks(const bench_dfccl* d, bench_coll coll, size_t count, size_t* blocks) {
  for (int r = 0; r < d->nranks; r++) {
    blocks[r] = bench_coll_block_count(coll, count, r);
    blocks[d->nranks + r] = bench_coll_block_displ(coll, count, r);
  }
}

/* Over all ranks; all-gather and reduce-scatter take the per-rank count, all-to-all the per-pair one,
 * all-gather-v its blocks (bench_coll_block_count). */
/* -A comm: what a registration would say, kept as the descriptor its runs submit, and a v kind's
 * blocks beside it (submit points the descriptor at them: the table moves when it grows). */
static void keep_descriptor(bench_dfccl* d, bench_coll coll, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op,
                            int root, int collId) {
  static const dfcclCollKind_t kinds[BENCH_NCOLLS] = {[BENCH_ALLREDUCE] = dfcclAllReduce,
                                                      [BENCH_ALLGATHER] = dfcclAllGather,
                                                      [BENCH_REDUCESCATTER] = dfcclReduceScatter,
                                                      [BENCH_BROADCAST] = dfcclBroadcast,
                                                      [BENCH_REDUCE] = dfcclReduce,
                                                      [BENCH_ALLTOALL] = dfcclAllToAll,
                                                      [BENCH_ALLGATHERV] = dfcclAllGatherV};
  if (collId >= d->ndescs) {
    int n = collId + 64;
    dfcclCollDesc_t* grown = realloc(d->descs, (size_t)n * sizeof *grown);
    if (grown == NULL) BENCH_DIE("out of memory");
    d->descs = grown;
    size_t* blocks = realloc(d->blocks, (size_t)n * 2u * (size_t)d->nranks * sizeof *blocks);
    if (blocks == NULL) BENCH_DIE("out of memory");
    d->blocks = blocks;
    d->ndescs = n;
  }
  d->descs[collId] = (dfcclCollDesc_t){.kind = kinds[coll], .count = count, .dtype = dtype, .op = op, .root = root};
  if (coll == BENCH_ALLGATHERV) fill_blocks(d, coll, count, blocks_of(d, collId));
}

void bench_dfccl_register(bench_dfccl* d, bench_coll coll, size_t count, dfcclDataType_t dtype, dfcclRedOp_t op,
                          int root, int collId) {
  if (d->comm) {
    keep_descriptor(d, coll, count, dtype, op, root, collId);
    return;
  }
  switch (coll) {
    case BENCH_ALLREDUCE: CHECK_DFCCL(dfcclRegisterAllReduce(d->ctx, count, dtype, op, collId, NULL, 0, 0)); break;
    case BENCH_ALLGATHER: CHECK_DFCCL(dfcclRegisterAllGather(d->ctx, count, dtype, collId, NULL, 0, 0)); break;
    case BENCH_REDUCESCATTER:
      CHECK_DFCCL(dfcclRegisterReduceScatter(d->ctx, count, dtype, op, collId, NULL, 0, 0));
      break;
    case BENCH_BROADCAST: CHECK_DFCCL(dfcclRegisterBroadcast(d->ctx, count, dtype, root, collId, NULL, 0, 0)); break;
    case BENCH_REDUCE: CHECK_DFCCL(dfcclRegisterReduce(d->ctx, count, dtype, op, root, collId, NULL, 0, 0)); break;
    case BENCH_ALLTOALL: CHECK_DFCCL(dfcclRegisterAllToAll(d->ctx, count, dtype, collId, NULL, 0, 0)); break;
    case BENCH_ALLGATHERV:
      fill_blocks(d, coll, count, blocks_of(d, 0));
      CHECK_DFCCL(dfcclRegisterAllGatherV(d->ctx, d->blocks, d->blocks + d->nranks, dtype, collId, NULL, 0, 0));
      break;
    default: BENCH_DIE("unknown collective %d", (int)coll);
  }
}

/* Waits for every submitted run's callback, or gives up after the timeout. */
static void dfccl_wait(bench_dfccl* d, int collId) {
  double start = bench_now_sec();
  unsigned spins = 0;
  while (atomic_load_explicit(&d->completed, memory_order_acquire) < d->submitted) {
    int taken = 0;
    if (d->takeCompletions) CHECK_DFCCL(dfcclProgress(d->ctx, &taken));
    if (taken == 0) dfcclWaitPause(d->target, spins);
    if ((++spins & 255u) == 0 && bench_now_sec() - start > d->timeoutSec)
      BENCH_DIE("collective %d: no completion callback within %.1f s (%llu of %llu runs completed); "
                "giving up",
                collId, d->timeoutSec, (unsigned long long)atomic_load(&d->completed),
                (unsigned long long)d->submitted);
  }
  int status = atomic_load(&d->failedStatus);
  if (status != dfcclSuccess)
    BENCH_DIE("collective %d: a run completed with %s%s", atomic_load(&d->failedColl),
              dfcclGetErrorString((dfcclResult_t)status),
              status == dfcclInternalError ? " (or its callback named another collective)" : "");
}

static void submit(bench_dfccl* d, bench_coll coll, int collId, const void* send, void* recv) {
  if (d->comm) {
    dfcclCollDesc_t desc = d->descs[collId];
    if (desc.kind == dfcclAllGatherV) {
      desc.counts = blocks_of(d, collId);
      desc.displs = desc.counts + d->nranks;
    }
    CHECK_DFCCL(dfcclSubmit(d->comm, &desc, send, recv, dfccl_done, d));
    return;
  }
  switch (coll) {
    case BENCH_ALLREDUCE: CHECK_DFCCL(dfcclRunAllReduce(d->ctx, send, recv, collId, dfccl_done, d)); break;
    case BENCH_ALLGATHER: CHECK_DFCCL(dfcclRunAllGather(d->ctx, send, recv, collId, dfccl_done, d)); break;
    case BENCH_REDUCESCATTER: CHECK_DFCCL(dfcclRunReduceScatter(d->ctx, send, recv, collId, dfccl_done, d)); break;
    case BENCH_BROADCAST: CHECK_DFCCL(dfcclRunBroadcast(d->ctx, send, recv, collId, dfccl_done, d)); break;
    case BENCH_REDUCE: CHECK_DFCCL(dfcclRunReduce(d->ctx, send, recv, collId, dfccl_done, d)); break;
    case BENCH_ALLTOALL: CHECK_DFCCL(dfcclRunAllToAll(d->ctx, send, recv, collId, dfccl_done, d)); break;
    case BENCH_ALLGATHERV: CHECK_DFCCL(dfcclRunAllGatherV(d->ctx, send, recv, collId, dfccl_done, d)); break;
    default: BENCH_DIE("unknown collective %d", (int)coll);
  }
}

void bench_dfccl_run(bench_dfccl* d, bench_coll coll, int collId, const void* send, void* recv, int times) {
  atomic_store(&d->expectedColl, d->comm ? -1 : collId);
  for (int i = 0; i < times; i++) {
    d->submitted++;
    submit(d, coll, collId, send, recv);
    dfccl_wait(d, collId);
  }
}
