/*
 * Element types of the daemon's data path, seen as bits.
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
#include "platform.h"

#if DF_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

/* Bytes of one element; 0 for an unknown type. */
DF_FN size_t df_dtype_bytes(dfcclDataType_t dtype) {
  switch (dtype) {
    case dfcclInt8: case dfcclUint8: return 1;
    case dfcclFloat16: case dfcclBfloat16: return 2;
    case dfcclInt32: case dfcclUint32: case dfcclFloat32: return 4;
    case dfcclInt64: case dfcclUint64: case dfcclFloat64: return 8;
    default: return 0;
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
  if (magnitude < 0x38800000u) {                           /* below 2^-14: fp16 subnormal */
    if (magnitude <= 0x33000000u) return sign;             /* <= 2^-25 rounds to zero */
    const uint32_t exponent = magnitude >> 23;             /* 102..112 */
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
