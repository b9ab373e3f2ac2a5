/*
 * Elements of any DFCCL data type, read and written as float64 on the host -- for tests and
 * benchmarks that fill inputs and check results exactly.  fp16/bf16 use the data path's own
 * conversions (core/kernel/dtypes.h, round to nearest even).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_ELEMENTS_H
#define DFCCL_TEST_ELEMENTS_H

#include <math.h>
#include <stdint.h>

#include "dtypes.h"

static inline void element_store(void* buf, dfcclDataType_t t, size_t i, double v) {
  switch (t) {
    case dfcclInt8: ((int8_t*)buf)[i] = (int8_t)v; break;
    case dfcclUint8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case dfcclInt16: ((int16_t*)buf)[i] = (int16_t)v; break;
    case dfcclUint16: ((uint16_t*)buf)[i] = (uint16_t)v; break;
    case dfcclInt32: ((int32_t*)buf)[i] = (int32_t)v; break;
    case dfcclUint32: ((uint32_t*)buf)[i] = (uint32_t)v; break;
    case dfcclInt64: ((int64_t*)buf)[i] = (int64_t)v; break;
    case dfcclUint64: ((uint64_t*)buf)[i] = (uint64_t)v; break;
    case dfcclFloat16: ((uint16_t*)buf)[i] = df_f32_to_f16_rn((float)v); break;
    case dfcclBfloat16: ((uint16_t*)buf)[i] = df_f32_to_bf16_rn((float)v); break;
    case dfcclFloat32: ((float*)buf)[i] = (float)v; break;
    default: ((double*)buf)[i] = v; break;
  }
}

static inline double element_load(const void* buf, dfcclDataType_t t, size_t i) {
  switch (t) {
    case dfcclInt8: return ((const int8_t*)buf)[i];
    case dfcclUint8: return ((const uint8_t*)buf)[i];
    case dfcclInt16: return ((const int16_t*)buf)[i];
    case dfcclUint16: return ((const uint16_t*)buf)[i];
    case dfcclInt32: return ((const int32_t*)buf)[i];
    case dfcclUint32: return ((const uint32_t*)buf)[i];
    case dfcclInt64: return (double)((const int64_t*)buf)[i];
    case dfcclUint64: return (double)((const uint64_t*)buf)[i];
    case dfcclFloat16: return df_f16_to_f32(((const uint16_t*)buf)[i]);
    case dfcclBfloat16: return df_bf16_to_f32(((const uint16_t*)buf)[i]);
    case dfcclFloat32: return ((const float*)buf)[i];
    default: return ((const double*)buf)[i];
  }
}

/* MPI's definition of op(a, b) on values that are integers for the bitwise and logical ops (and that
 * int64_t holds: two's complement makes the bits of a narrower signed type come out right).  An op
 * that is not one of DFCCL's returns NaN, which no check accepts. */
static inline double element_reduce(dfcclRedOp_t op, double a, double b) {
  switch (op) {
    case dfcclSum: return a + b;
    case dfcclProd: return a * b;
    case dfcclMax: return b > a ? b : a;
    case dfcclMin: return b < a ? b : a;
    case dfcclBand: return (double)((int64_t)a & (int64_t)b);
    case dfcclBor: return (double)((int64_t)a | (int64_t)b);
    case dfcclBxor: return (double)((int64_t)a ^ (int64_t)b);
    case dfcclLand: return a != 0 && b != 0;
    case dfcclLor: return a != 0 || b != 0;
    case dfcclLxor: return (a != 0) != (b != 0);
    default: return NAN;
  }
}

#endif /* DFCCL_TEST_ELEMENTS_H */
