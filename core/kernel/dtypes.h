/*
 * Element types of the daemon's data path, seen as bits; and the rule of which reduction op each
 * type has.
 *
 * The data path stores every element as the unsigned integer of its width (a float is a uint32_t,
 * an fp16 a uint16_t, ...): packs of 16 bytes then need one union of integer arrays, integer
 * arithmetic wraps without undefined behaviour, and the same code compiles as C11 and CUDA C++.
 * Floating-point values are produced from those bits only where an operation needs them.
 *
 * fp16 and bf16 are computed in float and rounded back to nearest, ties to even.  The software
 * conversions (df_sw_*) are exact and define the host's results; on the GPU the hardware
 * conversions give the same values (the GPU unit test checks it), NaN payloads aside.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_DTYPES_H
#define DFCCL_KERNEL_DTYPES_H

#include "dfccl.h"
#include "../platform/platform.h"

#if DF_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

/* ---- the types and the ops: sizes, op families, which op each type has, names ---- */

/* Bytes of one element; 0 for an unknown type. */
DF_HOST_DEVICE_FN size_t df_dtype_bytes(dfcclDataType_t dtype) {
  switch (dtype) {
    case dfcclInt8:
    case dfcclUint8: return 1;
    case dfcclInt16:
    case dfcclUint16:
    case dfcclFloat16:
    case dfcclBfloat16: return 2;
    case dfcclInt32:
    case dfcclUint32:
    case dfcclFloat32: return 4;
    case dfcclInt64:
    case dfcclUint64:
    case dfcclFloat64: return 8;
    default: return 0;
  }
}

DF_HOST_DEVICE_FN bool df_dtype_is_integer(dfcclDataType_t dtype) {
  switch (dtype) {
    case dfcclInt8:
    case dfcclUint8:
    case dfcclInt16:
    case dfcclUint16:
    case dfcclInt32:
    case dfcclUint32:
    case dfcclInt64:
    case dfcclUint64: return true;
    default: return false;
  }
}

/* What an op's result depends on -- and so how many routines of the data path it needs
 * (core/kernel/reduce.h). */
typedef enum {
  DF_OP_ARITHMETIC, /* sum, prod, max, min: the type (width, sign, integer or float)        */
  DF_OP_BITWISE,    /* band, bor, bxor: nothing, every bit is combined on its own            */
  DF_OP_LOGICAL     /* land, lor, lxor: the width (is the element zero? the result 1 or 0) */
} df_op_family;

DF_HOST_DEVICE_FN df_op_family df_op_family_of(dfcclRedOp_t op) {
  switch (op) {
    case dfcclBand:
    case dfcclBor:
    case dfcclBxor: return DF_OP_BITWISE;
    case dfcclLand:
    case dfcclLor:
    case dfcclLxor: return DF_OP_LOGICAL;
    default: return DF_OP_ARITHMETIC;
  }
}

/* Whether `op` is defined for `dtype`, as in MPI: the arithmetic ops for every type, the bitwise
 * and logical ops for the integers only.  This is the one statement of the rule: registration
 * refuses every other pair (core/register.c), and the tests enumerate the pairs from it. */
DF_HOST_DEVICE_FN bool df_op_defined_for(dfcclRedOp_t op, dfcclDataType_t dtype) {
  if ((unsigned)op >= dfcclNumOps || df_dtype_bytes(dtype) == 0) return false;
  return df_op_family_of(op) == DF_OP_ARITHMETIC || df_dtype_is_integer(dtype);
}

/* Names, for messages; "?" for an unknown value. */
DF_HOST_DEVICE_FN const char* df_dtype_name(dfcclDataType_t dtype) {
  switch (dtype) {
    case dfcclInt8: return "int8";
    case dfcclUint8: return "uint8";
    case dfcclInt16: return "int16";
    case dfcclUint16: return "uint16";
    case dfcclInt32: return "int32";
    case dfcclUint32: return "uint32";
    case dfcclInt64: return "int64";
    case dfcclUint64: return "uint64";
    case dfcclFloat16: return "fp16";
    case dfcclBfloat16: return "bf16";
    case dfcclFloat32: return "fp32";
    case dfcclFloat64: return "fp64";
    default: return "?";
  }
}

DF_HOST_DEVICE_FN const char* df_op_name(dfcclRedOp_t op) {
  switch (op) {
    case dfcclSum: return "sum";
    case dfcclProd: return "prod";
    case dfcclMax: return "max";
    case dfcclMin: return "min";
    case dfcclBand: return "band";
    case dfcclBor: return "bor";
    case dfcclBxor: return "bxor";
    case dfcclLand: return "land";
    case dfcclLor: return "lor";
    case dfcclLxor: return "lxor";
    default: return "?";
  }
}

/* ---- bit casts (memcpy is the portable way in C; the compiler turns it into a move) ---- */

DF_FN float df_bits_to_f32(uint32_t bits) {
#if DF_CUDA
  return __uint_as_float(bits);
#else
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

DF_FN uint32_t df_f32_to_bits(float f) {
#if DF_CUDA
  return __float_as_uint(f);
#else
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

DF_FN double df_bits_to_f64(uint64_t bits) {
#if DF_CUDA
  return __longlong_as_double((long long)bits);
#else
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
#endif
}

DF_FN uint64_t df_f64_to_bits(double d) {
#if DF_CUDA
  return (uint64_t)__double_as_longlong(d);
#else
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return bits;
#endif
}

/* ---- software fp16 (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits) ---- */

#define DF_F32_SIGN 0x80000000u
#define DF_F32_INF 0x7f800000u
#define DF_F16_INF 0x7c00u
#define DF_F16_QNAN 0x7fffu /* what the GPU's conversion produces for any NaN */

DF_FN float df_sw_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return df_bits_to_f32(sign | DF_F32_INF | (mantissa << 13));
  if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in float */
    return df_bits_to_f32(sign | df_f32_to_bits((float)mantissa * 0x1p-24f));
  }
  return df_bits_to_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/* Shifts `value` right by `shift` (1..31) rounding to nearest, ties to even. */
DF_FN uint32_t df_shift_right_rne(uint32_t value, unsigned shift) {
  const uint32_t kept = value >> shift;
  const uint32_t dropped = value & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return kept + (dropped > half || (dropped == half && (kept & 1u)));
}

DF_FN uint16_t df_sw_f32_to_f16_rn(float f) {
  const uint32_t bits = df_f32_to_bits(f);
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & ~DF_F32_SIGN;
  if (magnitude > DF_F32_INF) return DF_F16_QNAN;
  if (magnitude >= 0x477ff000u) return sign | DF_F16_INF; /* >= 65520 rounds past 65504 */
  if (magnitude < 0x38800000u) {                          /* below 2^-14: fp16 subnormal */
    if (magnitude <= 0x33000000u) return sign;            /* <= 2^-25 rounds to zero */
    const uint32_t exponent = magnitude >> 23;            /* 102..112 */
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    /* value = significand * 2^(exponent-150); in units of 2^-24 that is a shift by 126-exponent.
     * A carry into bit 10 correctly yields the smallest normal. */
    return sign | (uint16_t)df_shift_right_rne(significand, 126u - exponent);
  }
  /* Normal: rebias the exponent and round the mantissa; a carry out of the mantissa bumps the
   * exponent, which is the right result (65520 and up was handled above). */
  const uint32_t rebased = magnitude - ((127u - 15u) << 23);
  return sign | (uint16_t)df_shift_right_rne(rebased, 13);
}

/* ---- software bf16 (the upper half of a float) ---- */

#define DF_BF16_QNAN 0x7fffu

DF_FN float df_sw_bf16_to_f32(uint16_t h) { return df_bits_to_f32((uint32_t)h << 16); }

DF_FN uint16_t df_sw_f32_to_bf16_rn(float f) {
  const uint32_t bits = df_f32_to_bits(f);
  if ((bits & ~DF_F32_SIGN) > DF_F32_INF) return DF_BF16_QNAN;
  /* Adding 0x7fff plus the kept lowest bit rounds to nearest even; overflow reaches infinity. */
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* ---- the conversions the data path uses: hardware on the GPU, software on the host ---- */

DF_FN float df_f16_to_f32(uint16_t h) {
#if DF_CUDA
  return __half2float(__ushort_as_half(h));
#else
  return df_sw_f16_to_f32(h);
#endif
}

DF_FN uint16_t df_f32_to_f16_rn(float f) {
#if DF_CUDA
  return __half_as_ushort(__float2half_rn(f));
#else
  return df_sw_f32_to_f16_rn(f);
#endif
}

DF_FN float df_bf16_to_f32(uint16_t h) {
#if DF_CUDA
  return __bfloat162float(__ushort_as_bfloat16(h));
#else
  return df_sw_bf16_to_f32(h);
#endif
}

DF_FN uint16_t df_f32_to_bf16_rn(float f) {
#if DF_CUDA
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  return df_sw_f32_to_bf16_rn(f);
#endif
}

#endif /* DFCCL_KERNEL_DTYPES_H */
