/*
 * dfccl_bench data: the check pattern, buffers on the execution target.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "elements.h"

/* ---- the check pattern ---- */

static int is_unsigned(dfcclDataType_t t) {
  return t == dfcclUint8 || t == dfcclUint16 || t == dfcclUint32 || t == dfcclUint64;
}

/* The largest magnitude up to which every integer is exact in the type. */
static double exact_limit(dfcclDataType_t t) {
  switch (t) {
    case dfcclInt8: return 127.0;
    case dfcclUint8: return 255.0;
    case dfcclInt16: return 32767.0;
    case dfcclUint16: return 65535.0;
    case dfcclFloat16: return 2048.0;
    case dfcclBfloat16: return 256.0;
    case dfcclFloat32: return 16777216.0;
    default: return 2147483647.0; /* 32- and 64-bit integers, float64 */
  }
}

/* Largest modulus <= 32 whose values summed over `terms` ranks stay exact; 1 (all zeros) when nothing
 * fits. */
static void choose_modulus(bench_pattern* p, int terms) {
  double limit = exact_limit(p->dtype);
  for (int m = 32; m >= 1; m--) {
    int offset = is_unsigned(p->dtype) ? 0 : m / 2;
    int largest = offset > m - 1 - offset ? offset : m - 1 - offset;
    if ((double)largest * terms <= limit || m == 1) {
      p->modulus = m;
      p->offset = offset;
      return;
    }
  }
}

/* Input element i of `rank`.  prod: rank i % nranks contributes 1, 2 or 3, the others 1; signed
 * types flip some signs; so every partial product is one of +-1, +-2, +-3. */
static double input_value(const bench_pattern* p, int rank, size_t i) {
  if (p->op == dfcclProd) {
    size_t n = (size_t)p->nranks;
    double v = (size_t)rank == i % n ? (double)(1u + (i / n) % 3u) : 1.0;
    if (!is_unsigned(p->dtype) && (i + 2u * (size_t)rank) % 3u == 0) v = -v;
    return v;
  }
  /* The product term keeps the sum over ranks index-dependent even when nranks is a multiple of m. */
  size_t m = (size_t)p->modulus, j = i % m;
  return (double)((((size_t)rank + 1u) * (j + 1u) + 7u * j) % m) - p->offset;
}

void bench_pattern_init(bench_pattern* p, bench_coll coll, dfcclDataType_t dtype, dfcclRedOp_t op, int rank, int nranks,
                        int root) {
  int reduces = bench_coll_reduces(coll);
  memset(p, 0, sizeof(*p));
  p->coll = coll;
  p->dtype = dtype;
  p->op = reduces ? op : dfcclSum; /* no reduction: the sum pattern, one term per output */
  p->rank = rank;
  p->nranks = nranks;
  p->root = root;
  choose_modulus(p, reduces ? nranks : 1);
  p->period = p->op == dfcclProd ? 3u * (size_t)nranks : (size_t)p->modulus;
  if (!reduces) return;
  p->expected = malloc(p->period * sizeof(double));
  if (p->expected == NULL) BENCH_DIE("out of memory for %zu expected values", p->period);
  for (size_t i = 0; i < p->period; i++) {
    double acc = input_value(p, 0, i);
    for (int r = 1; r < nranks; r++) acc = element_reduce(p->op, acc, input_value(p, r, i));
    p->expected[i] = acc;
  }
}

void bench_pattern_fini(bench_pattern* p) {
  free(p->expected);
  p->expected = NULL;
}

void bench_pattern_fill(const bench_pattern* p, void* host, size_t count) {
  for (size_t i = 0; i < count; i++) element_store(host, p->dtype, i, input_value(p, p->rank, i));
}

/* Output element k of this rank (see bench.h). */
static double expected_value(const bench_pattern* p, size_t k, size_t collCount) {
  switch (p->coll) {
    case BENCH_ALLGATHER:
    case BENCH_ALLGATHERV: {
      int from = bench_coll_block_of(p->coll, collCount, p->nranks, k);
      return input_value(p, from, k - bench_coll_block_displ(p->coll, collCount, from));
    }
    case BENCH_ALLTOALL: /* block j came from rank j, which sent its block for this rank */
      return input_value(p, (int)(k / collCount), (size_t)p->rank * collCount + k % collCount);
    case BENCH_BROADCAST: return input_value(p, p->root, k);
    case BENCH_REDUCESCATTER: return p->expected[((size_t)p->rank * collCount + k) % p->period];
    default: return p->expected[k % p->period];
  }
}

size_t bench_pattern_count_wrong(const bench_pattern* p, const void* host, size_t count, size_t collCount) {
  size_t wrong = 0;
  for (size_t k = 0; k < count; k++)
    if (element_load(host, p->dtype, k) != expected_value(p, k, collCount)) wrong++;
  return wrong;
}

/* ---- buffers ---- */

static void* host_alloc(size_t bytes, const char* what) {
  void* p = NULL;
  int rc = posix_memalign(&p, 4096, bytes > 0 ? bytes : 1);
  if (rc != 0) BENCH_DIE("posix_memalign of %zu bytes for %s failed: %s", bytes, what, strerror(rc));
  return p;
}

void bench_buffers_alloc(bench_buffers* b, bench_target target, size_t bytes) {
  memset(b, 0, sizeof(*b));
  b->target = target;
  b->bytes = bytes;
  if (target == BENCH_TARGET_HOST) {
    b->send = host_alloc(bytes, "the send buffer");
    b->recv = host_alloc(bytes, "the receive buffer");
    return;
  }
#ifdef DFCCL_HAVE_CUDA
  CHECK_CUDA(cudaMalloc(&b->send, bytes));
  CHECK_CUDA(cudaMalloc(&b->recv, bytes));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
  b->staging = host_alloc(bytes, "the staging buffer");
#else
  BENCH_DIE("the cuda target needs a build with -DDFCCL_HAVE_CUDA");
#endif
}

void bench_buffers_free(bench_buffers* b) {
  if (b->target == BENCH_TARGET_HOST) {
    free(b->send);
    free(b->recv);
  } else {
#ifdef DFCCL_HAVE_CUDA
    CHECK_CUDA(cudaFree(b->send));
    CHECK_CUDA(cudaFree(b->recv));
    CHECK_CUDA(cudaStreamDestroy(b->stream));
    free(b->staging);
#endif
  }
  memset(b, 0, sizeof(*b));
}

/* The reset value of an output: all bits set (-1 or NaN), never an expected value. */
#define BENCH_RESET_BYTE 0xff

void* bench_buffers_send(const bench_buffers* b, const bench_layout* l) {
  return (char*)(l->inPlace ? b->recv : b->send) + l->sendOffset * l->typeSize;
}

void* bench_buffers_recv(const bench_buffers* b, const bench_layout* l) {
  return (char*)b->recv + l->recvOffset * l->typeSize;
}

void bench_buffers_prepare(bench_buffers* b, const bench_pattern* p, const bench_layout* l) {
  size_t inBytes = l->sendCount * l->typeSize, outBytes = l->recvCount * l->typeSize;
  if ((l->sendOffset + l->sendCount) * l->typeSize > b->bytes ||
      (l->recvOffset + l->recvCount) * l->typeSize > b->bytes)
    BENCH_DIE("the %s layout of count %zu does not fit the %zu-byte buffers", bench_coll_name(l->coll), l->count,
              b->bytes);
  void* input = bench_buffers_send(b, l);
  void* output = bench_buffers_recv(b, l);
  /* Reset first: in place, the input may lie inside the output (all-gather) or around it. */
  if (b->target == BENCH_TARGET_HOST) {
    memset(output, BENCH_RESET_BYTE, outBytes);
    if (l->hasInput) bench_pattern_fill(p, input, l->sendCount);
    return;
  }
#ifdef DFCCL_HAVE_CUDA
  /* Asynchronous copies on our own non-blocking stream, then wait for that stream only: a device
   * synchronization would wait for DFCCL's persistent daemon. */
  CHECK_CUDA(cudaMemsetAsync(output, BENCH_RESET_BYTE, outBytes, b->stream));
  if (l->hasInput) {
    bench_pattern_fill(p, b->staging, l->sendCount);
    CHECK_CUDA(cudaMemcpyAsync(input, b->staging, inBytes, cudaMemcpyHostToDevice, b->stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(b->stream));
#else
  (void)inBytes;
#endif
}

size_t bench_buffers_count_wrong(bench_buffers* b, const bench_pattern* p, const bench_layout* l) {
  if (!l->hasOutput) return 0;
  const void* output = bench_buffers_recv(b, l);
  if (b->target == BENCH_TARGET_HOST) return bench_pattern_count_wrong(p, output, l->recvCount, l->count);
#ifdef DFCCL_HAVE_CUDA
  CHECK_CUDA(cudaMemcpyAsync(b->staging, output, l->recvCount * l->typeSize, cudaMemcpyDeviceToHost, b->stream));
  CHECK_CUDA(cudaStreamSynchronize(b->stream));
  return bench_pattern_count_wrong(p, b->staging, l->recvCount, l->count);
#else
  return l->recvCount;
#endif
}
