/*
 * dfccl_bench: NCCL side (compiled to nothing without -DDFCCL_HAVE_NCCL).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef DFCCL_HAVE_NCCL

struct bench_nccl {
  ncclComm_t comm;
  cudaStream_t stream;
  int nranks;
};

#define CHECK_NCCL(call)                                                                      \
  do {                                                                                        \
    ncclResult_t nc_rc_ = (call);                                                             \
    if (nc_rc_ != ncclSuccess) BENCH_DIE("%s failed: %s", #call, ncclGetErrorString(nc_rc_)); \
  } while (0)

static ncclDataType_t nccl_type(dfcclDataType_t t) {
  switch (t) {
    case dfcclInt8: return ncclInt8;
    case dfcclUint8: return ncclUint8;
    case dfcclInt32: return ncclInt32;
    case dfcclUint32: return ncclUint32;
    case dfcclInt64: return ncclInt64;
    case dfcclUint64: return ncclUint64;
    case dfcclFloat16: return ncclFloat16;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case dfcclBfloat16: return ncclBfloat16;
#endif
    case dfcclFloat32: return ncclFloat32;
    case dfcclFloat64: return ncclFloat64;
    default: BENCH_DIE("data type %s is not supported by this NCCL", bench_type_name(t));
  }
}

static ncclRedOp_t nccl_op(dfcclRedOp_t op) {
  switch (op) {
    case dfcclSum: return ncclSum;
    case dfcclProd: return ncclProd;
    case dfcclMax: return ncclMax;
    case dfcclMin: return ncclMin;
    default: BENCH_DIE("NCCL has no %s reduction (run DFCCL alone: -N 0)", bench_op_name(op));
  }
}

bench_nccl* bench_nccl_init(int rank, int nranks, cudaStream_t stream) {
  /* NVLink SHARP (multicast) stays off unless the user asked for it. */
  if (setenv("NCCL_NVLS_ENABLE", "0", 0) != 0) BENCH_DIE("setenv(NCCL_NVLS_ENABLE) failed");
  bench_nccl* n = calloc(1, sizeof(*n));
  if (n == NULL) BENCH_DIE("out of memory");
  n->stream = stream;
  n->nranks = nranks;
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  CHECK_MPI(MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
  CHECK_NCCL(ncclCommInitRank(&n->comm, nranks, id, rank));
  return n;
}

/* NCCL has no all-to-all: what nccl-tests and NCCL's users run is a group of one send and one
 * receive per peer. */
static void all_to_all(bench_nccl* n, const void* send, void* recv, size_t count, dfcclDataType_t dtype) {
  size_t block = count * bench_type_size(dtype);
  ncclDataType_t t = nccl_type(dtype);
  CHECK_NCCL(ncclGroupStart());
  for (int peer = 0; peer < n->nranks; peer++) {
    CHECK_NCCL(ncclSend((const char*)send + (size_t)peer * block, count, t, peer, n->comm, n->stream));
    CHECK_NCCL(ncclRecv((char*)recv + (size_t)peer * block, count, t, peer, n->comm, n->stream));
  }
  CHECK_NCCL(ncclGroupEnd());
}

/* NCCL has no all-gather-v either: what frameworks run (PyTorch's all_gather of uneven tensors, for
 * one) is a group of one broadcast per rank, each from that rank's block into its place in recvbuff.
 * sendbuff is read on its root only; in place, the root's sendbuff is its place in recvbuff. */
static void all_gather_v(bench_nccl* n, const void* send, void* recv, size_t count, dfcclDataType_t dtype) {
  size_t size = bench_type_size(dtype);
  ncclDataType_t t = nccl_type(dtype);
  CHECK_NCCL(ncclGroupStart());
  for (int root = 0; root < n->nranks; root++) {
    char* place = (char*)recv + bench_coll_block_displ(BENCH_ALLGATHERV, count, root) * size;
    CHECK_NCCL(
        ncclBroadcast(send, place, bench_coll_block_count(BENCH_ALLGATHERV, count, root), t, root, n->comm, n->stream));
  }
  CHECK_NCCL(ncclGroupEnd());
}

void bench_nccl_run(bench_nccl* n, bench_coll coll, const void* send, void* recv, size_t count, dfcclDataType_t dtype,
                    dfcclRedOp_t op, int root, int times) {
  ncclDataType_t t = nccl_type(dtype);
  ncclRedOp_t o = bench_coll_reduces(coll) ? nccl_op(op) : ncclSum;
  for (int i = 0; i < times; i++) {
    switch (coll) {
      case BENCH_ALLREDUCE: CHECK_NCCL(ncclAllReduce(send, recv, count, t, o, n->comm, n->stream)); break;
      case BENCH_ALLGATHER: CHECK_NCCL(ncclAllGather(send, recv, count, t, n->comm, n->stream)); break;
      case BENCH_REDUCESCATTER: CHECK_NCCL(ncclReduceScatter(send, recv, count, t, o, n->comm, n->stream)); break;
      case BENCH_BROADCAST: CHECK_NCCL(ncclBroadcast(send, recv, count, t, root, n->comm, n->stream)); break;
      case BENCH_REDUCE: CHECK_NCCL(ncclReduce(send, recv, count, t, o, root, n->comm, n->stream)); break;
      case BENCH_ALLTOALL: all_to_all(n, send, recv, count, dtype); break;
      case BENCH_ALLGATHERV: all_gather_v(n, send, recv, count, dtype); break;
      default: BENCH_DIE("unknown collective %d", (int)coll);
    }
  }
  CHECK_CUDA(cudaStreamSynchronize(n->stream));
}

void bench_nccl_fini(bench_nccl* n) {
  if (n == NULL) return;
  CHECK_NCCL(ncclCommDestroy(n->comm));
  free(n);
}

void bench_nccl_version(char* buf, size_t len) {
  int v = 0;
  CHECK_NCCL(ncclGetVersion(&v));
  /* NCCL_VERSION's encoding: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z after. */
  if (v < 10000) snprintf(buf, len, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
  else snprintf(buf, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

#else
/* ISO C forbids an empty translation unit. */
typedef int bench_nccl_unused;
#endif
