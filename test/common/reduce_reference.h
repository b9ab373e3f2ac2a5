/*
 * The reference the data path's unit tests (the host's, test/unit/test_reduce.c, and the GPU's,
 * test/gpu/test_reduce_cuda.cu) hold the reduction code to: MPI's definitions for integers, and
 * reductions worked out by hand, which check the reference as much as the code under test.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_REDUCE_REFERENCE_H
#define DFCCL_TEST_REDUCE_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "dfccl.h"

/* op(a, b) for integers of `size` bytes, a and b holding the elements' bits; sets *defined to false
 * for an op integers do not have. */
static inline uint64_t reduce_reference_int(dfcclRedOp_t op, unsigned size, bool is_signed, uint64_t a, uint64_t b,
                                            bool* defined) {
  const unsigned unused = 64 - 8 * size;
  const uint64_t mask = ~0ull >> unused;
  /* Compare as sign-extended or unsigned 64-bit numbers. */
  const bool less = is_signed ? (int64_t)(a << unused) < (int64_t)(b << unused) : a < b;
  *defined = true;
  switch (op) {
    case dfcclSum: return (a + b) & mask;
    case dfcclProd: return (a * b) & mask;
    case dfcclMax: return (!less && a != b) ? a : b; /* a > b ? a : b */
    case dfcclMin: return less ? a : b;
    case dfcclBand: return a & b;
    case dfcclBor: return a | b;
    case dfcclBxor: return a ^ b;
    case dfcclLand: return a && b;
    case dfcclLor: return a || b;
    case dfcclLxor: return !a != !b;
    default: *defined = false; return 0;
  }
}

/* Integers that tell the ops' corner cases apart, as 64-bit patterns cut to `size` bytes by the
 * caller: zero, one, -1 (all ones), 2, 0x80 (a byte's top bit), 0x7f, 0x100 (nonzero with a zero
 * low byte), the sign bit alone (a value a logical op on the low bytes would miss), the largest
 * signed value. */
static inline uint64_t reduce_edge_value(unsigned size, unsigned which) {
  const unsigned top = 8 * size - 1;
  const uint64_t values[] = {0, 1, ~0ull, 2, 0x80, 0x7f, 0x100, 1ull << top, (1ull << top) - 1};
  return values[which % (sizeof values / sizeof values[0])];
}

/* An integer input of `size` bytes from the random bits r: any value, a small value or an edge
 * value (zero is frequent, so the logical ops produce both results). */
static inline uint64_t reduce_random_integer(unsigned size, uint64_t r) {
  const uint64_t mask = ~0ull >> (64 - 8 * size);
  switch (r & 7) {
    case 0:
    case 1:
    case 2: return r & mask;
    case 3: return (r >> 8) % 5;
    default: return reduce_edge_value(size, (unsigned)(r >> 8)) & mask;
  }
}

/* One element a, one element b, op(a, b) = want, each as the bits of the element type. */
typedef struct {
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  uint64_t a, b, want;
} reduce_example_t;

static const reduce_example_t reduce_examples[] = {
    {dfcclInt8, dfcclMax, 0x80, 0x01, 0x01},        /* -128 < 1 */
    {dfcclUint8, dfcclMax, 0x80, 0x01, 0x80},       /* 128 > 1 */
    {dfcclInt16, dfcclMin, 0x8000, 0x0001, 0x8000}, /* -32768 < 1 */
    {dfcclUint16, dfcclMin, 0x8000, 0x0001, 0x0001},
    {dfcclInt64, dfcclMax, 1ull << 63, 0x7f, 0x7f},
    {dfcclUint8, dfcclBand, 0xf0, 0x3c, 0x30},
    {dfcclInt16, dfcclBor, 0x00f0, 0x8001, 0x80f1},
    {dfcclInt64, dfcclBxor, ~0ull, 0x0f, ~0ull ^ 0x0f},
    {dfcclInt32, dfcclLand, 0x100, 2, 1}, /* nonzero with a zero low byte */
    {dfcclUint64, dfcclLand, 1ull << 63, 1, 1},
    {dfcclInt8, dfcclLand, 0, 0xff, 0}, /* 0 && -1 */
    {dfcclInt16, dfcclLor, 0, 0x8000, 1},
    {dfcclUint16, dfcclLor, 0, 0, 0},
    {dfcclUint32, dfcclLxor, 2, 0x80, 0}, /* both true */
    {dfcclInt64, dfcclLxor, 0, ~0ull, 1},
    {dfcclUint8, dfcclLxor, 0x80, 0, 1},
};

#endif /* DFCCL_TEST_REDUCE_REFERENCE_H */
