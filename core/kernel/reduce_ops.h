/*
 * The element operations of the data path, and the codes that name them.
 *
 * The data path (core/kernel/reduce.h) carries an element as the bits of the unsigned integer of
 * its width (core/kernel/dtypes.h) in a uint64_t, zero-extended, and 16 bytes of elements as a
 * df_pack.  A df_calc names one computation; two functions apply it:
 *   df_apply_elem(calc, a, b)          two elements; returns the result's bits;
 *   df_apply_pack(size, calc, v, w)    the same on every element (of `size` bytes) of two packs.
 * Both are switches over the code.  reduce.h calls them with constant arguments from routines
 * that are inlined (DF_ALWAYS_INLINE), so that each switch folds to the one operation.
 *
 * There is one code per distinct computation, named after what it depends on (the op families of
 * dtypes.h):
 *   COPY                keeps the first operand (the copy routines have no second source);
 *   <TYPE>_<OP>         arithmetic, per type: SUM, PROD, MAX, MIN; an element is computed by
 *                       df_op_<type>_<op>, a pack element by element by df_pack_<type>_<op>;
 *   BAND, BOR, BXOR     bitwise: every bit is combined on its own, so an element of any type is
 *                       just its bytes, and a pack is combined a 64-bit word at a time;
 *   LAND, LOR, LXOR     logical: the bitwise ops applied to the operands' truth values (1 if
 *                       nonzero, else 0), which depend on the width alone, not on the sign; a pack
 *                       is combined a 64-bit word of lanes at a time.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_REDUCE_OPS_H
#define DFCCL_KERNEL_REDUCE_OPS_H

#include "dtypes.h"
#include "../platform/platform.h"

#define DF_PACK_BYTES 16

#if DF_CUDA
#define DF_UNROLL_LOOP _Pragma("unroll")
#define DF_ALIGN16 __align__(16)
#else
#define DF_UNROLL_LOOP
#define DF_ALIGN16 _Alignas(16)
#endif

/* One 16-byte pack, seen as the elements of any width. */
typedef union {
  DF_ALIGN16 uint64_t u64[2];
  uint32_t u32[4];
  uint16_t u16[8];
  uint8_t u8[16];
} df_pack;

/* The pack form of an arithmetic operation: df_op_<OP> on every element. */
#define DF_DEFINE_PACK_BY_ELEMENTS(OP, BITS)                                                                         \
  DF_FN df_pack df_pack_##OP(df_pack a, df_pack b) {                                                                 \
    DF_UNROLL_LOOP                                                                                                   \
    for (unsigned k = 0; k < DF_PACK_BYTES / (BITS / 8); k++) a.u##BITS[k] = df_op_##OP(a.u##BITS[k], b.u##BITS[k]); \
    return a;                                                                                                        \
  }

/* ---- arithmetic: per type ---- */

/* Integers: unsigned arithmetic wraps without UB; CMP_T gives max/min their signedness. */
#define DF_DEFINE_INT_OPS(NAME, BITS, CMP_T)                                                                          \
  DF_FN uint##BITS##_t df_op_##NAME##_sum(uint##BITS##_t a, uint##BITS##_t b) { return (uint##BITS##_t)(a + b); }     \
  DF_FN uint##BITS##_t df_op_##NAME##_prod(uint##BITS##_t a, uint##BITS##_t b) { return (uint##BITS##_t)(a * b); }    \
  DF_FN uint##BITS##_t df_op_##NAME##_max(uint##BITS##_t a, uint##BITS##_t b) { return (CMP_T)a > (CMP_T)b ? a : b; } \
  DF_FN uint##BITS##_t df_op_##NAME##_min(uint##BITS##_t a, uint##BITS##_t b) { return (CMP_T)a < (CMP_T)b ? a : b; } \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_sum, BITS)                                                                        \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_prod, BITS)                                                                       \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_max, BITS)                                                                        \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_min, BITS)
DF_DEFINE_INT_OPS(i8, 8, int8_t)
DF_DEFINE_INT_OPS(u8, 8, uint8_t)
DF_DEFINE_INT_OPS(i16, 16, int16_t)
DF_DEFINE_INT_OPS(u16, 16, uint16_t)
DF_DEFINE_INT_OPS(i32, 32, int32_t)
DF_DEFINE_INT_OPS(u32, 32, uint32_t)
DF_DEFINE_INT_OPS(i64, 64, int64_t)
DF_DEFINE_INT_OPS(u64, 64, uint64_t)
#undef DF_DEFINE_INT_OPS

/* Floating point: TO_F decodes the bits into the compute type, FROM_F rounds back.  max/min
 * return an operand's bits unchanged, so they never round. */
#define DF_DEFINE_FLOAT_OPS(NAME, BITS, TO_F, FROM_F)                                                                \
  DF_FN uint##BITS##_t df_op_##NAME##_sum(uint##BITS##_t a, uint##BITS##_t b) { return FROM_F(TO_F(a) + TO_F(b)); }  \
  DF_FN uint##BITS##_t df_op_##NAME##_prod(uint##BITS##_t a, uint##BITS##_t b) { return FROM_F(TO_F(a) * TO_F(b)); } \
  DF_FN uint##BITS##_t df_op_##NAME##_max(uint##BITS##_t a, uint##BITS##_t b) { return TO_F(a) > TO_F(b) ? a : b; }  \
  DF_FN uint##BITS##_t df_op_##NAME##_min(uint##BITS##_t a, uint##BITS##_t b) { return TO_F(a) < TO_F(b) ? a : b; }  \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_sum, BITS)                                                                       \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_prod, BITS)                                                                      \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_max, BITS)                                                                       \
  DF_DEFINE_PACK_BY_ELEMENTS(NAME##_min, BITS)
DF_DEFINE_FLOAT_OPS(f16, 16, df_f16_to_f32, df_f32_to_f16_rn)
DF_DEFINE_FLOAT_OPS(bf16, 16, df_bf16_to_f32, df_f32_to_bf16_rn)
DF_DEFINE_FLOAT_OPS(f32, 32, df_bits_to_f32, df_f32_to_bits)
DF_DEFINE_FLOAT_OPS(f64, 64, df_bits_to_f64, df_f64_to_bits)
#undef DF_DEFINE_FLOAT_OPS
#undef DF_DEFINE_PACK_BY_ELEMENTS

/* ---- the computations ---- */

typedef enum {
  DF_CALC_COPY,
  /* arithmetic, per type */
  DF_CALC_I8_SUM,
  DF_CALC_I8_PROD,
  DF_CALC_I8_MAX,
  DF_CALC_I8_MIN,
  DF_CALC_U8_SUM,
  DF_CALC_U8_PROD,
  DF_CALC_U8_MAX,
  DF_CALC_U8_MIN,
  DF_CALC_I16_SUM,
  DF_CALC_I16_PROD,
  DF_CALC_I16_MAX,
  DF_CALC_I16_MIN,
  DF_CALC_U16_SUM,
  DF_CALC_U16_PROD,
  DF_CALC_U16_MAX,
  DF_CALC_U16_MIN,
  DF_CALC_I32_SUM,
  DF_CALC_I32_PROD,
  DF_CALC_I32_MAX,
  DF_CALC_I32_MIN,
  DF_CALC_U32_SUM,
  DF_CALC_U32_PROD,
  DF_CALC_U32_MAX,
  DF_CALC_U32_MIN,
  DF_CALC_I64_SUM,
  DF_CALC_I64_PROD,
  DF_CALC_I64_MAX,
  DF_CALC_I64_MIN,
  DF_CALC_U64_SUM,
  DF_CALC_U64_PROD,
  DF_CALC_U64_MAX,
  DF_CALC_U64_MIN,
  DF_CALC_F16_SUM,
  DF_CALC_F16_PROD,
  DF_CALC_F16_MAX,
  DF_CALC_F16_MIN,
  DF_CALC_BF16_SUM,
  DF_CALC_BF16_PROD,
  DF_CALC_BF16_MAX,
  DF_CALC_BF16_MIN,
  DF_CALC_F32_SUM,
  DF_CALC_F32_PROD,
  DF_CALC_F32_MAX,
  DF_CALC_F32_MIN,
  DF_CALC_F64_SUM,
  DF_CALC_F64_PROD,
  DF_CALC_F64_MAX,
  DF_CALC_F64_MIN,
  /* bitwise, on bytes */
  DF_CALC_BAND,
  DF_CALC_BOR,
  DF_CALC_BXOR,
  /* logical, on elements of the routine's width */
  DF_CALC_LAND,
  DF_CALC_LOR,
  DF_CALC_LXOR
} df_calc;

/* The bitwise operation of a bitwise or logical calc (that of land is band, ...), on 64 bits. */
DF_ALWAYS_INLINE uint64_t df_bitwise(df_calc calc, uint64_t a, uint64_t b) {
  switch (calc) {
    case DF_CALC_BAND:
    case DF_CALC_LAND: return a & b;
    case DF_CALC_BOR:
    case DF_CALC_LOR: return a | b;
    default: return a ^ b;
  }
}

/* Two elements, a and b zero-extended from their width; returns the result in the low bits (an
 * arithmetic op receives and returns the unsigned integer of its width). */
DF_ALWAYS_INLINE uint64_t df_apply_elem(df_calc calc, uint64_t a, uint64_t b) {
  switch (calc) {
    case DF_CALC_COPY: return a;
    case DF_CALC_I8_SUM: return df_op_i8_sum(a, b);
    case DF_CALC_I8_PROD: return df_op_i8_prod(a, b);
    case DF_CALC_I8_MAX: return df_op_i8_max(a, b);
    case DF_CALC_I8_MIN: return df_op_i8_min(a, b);
    case DF_CALC_U8_SUM: return df_op_u8_sum(a, b);
    case DF_CALC_U8_PROD: return df_op_u8_prod(a, b);
    case DF_CALC_U8_MAX: return df_op_u8_max(a, b);
    case DF_CALC_U8_MIN: return df_op_u8_min(a, b);
    case DF_CALC_I16_SUM: return df_op_i16_sum(a, b);
    case DF_CALC_I16_PROD: return df_op_i16_prod(a, b);
    case DF_CALC_I16_MAX: return df_op_i16_max(a, b);
    case DF_CALC_I16_MIN: return df_op_i16_min(a, b);
    case DF_CALC_U16_SUM: return df_op_u16_sum(a, b);
    case DF_CALC_U16_PROD: return df_op_u16_prod(a, b);
    case DF_CALC_U16_MAX: return df_op_u16_max(a, b);
    case DF_CALC_U16_MIN: return df_op_u16_min(a, b);
    case DF_CALC_I32_SUM: return df_op_i32_sum(a, b);
    case DF_CALC_I32_PROD: return df_op_i32_prod(a, b);
    case DF_CALC_I32_MAX: return df_op_i32_max(a, b);
    case DF_CALC_I32_MIN: return df_op_i32_min(a, b);
    case DF_CALC_U32_SUM: return df_op_u32_sum(a, b);
    case DF_CALC_U32_PROD: return df_op_u32_prod(a, b);
    case DF_CALC_U32_MAX: return df_op_u32_max(a, b);
    case DF_CALC_U32_MIN: return df_op_u32_min(a, b);
    case DF_CALC_I64_SUM: return df_op_i64_sum(a, b);
    case DF_CALC_I64_PROD: return df_op_i64_prod(a, b);
    case DF_CALC_I64_MAX: return df_op_i64_max(a, b);
    case DF_CALC_I64_MIN: return df_op_i64_min(a, b);
    case DF_CALC_U64_SUM: return df_op_u64_sum(a, b);
    case DF_CALC_U64_PROD: return df_op_u64_prod(a, b);
    case DF_CALC_U64_MAX: return df_op_u64_max(a, b);
    case DF_CALC_U64_MIN: return df_op_u64_min(a, b);
    case DF_CALC_F16_SUM: return df_op_f16_sum(a, b);
    case DF_CALC_F16_PROD: return df_op_f16_prod(a, b);
    case DF_CALC_F16_MAX: return df_op_f16_max(a, b);
    case DF_CALC_F16_MIN: return df_op_f16_min(a, b);
    case DF_CALC_BF16_SUM: return df_op_bf16_sum(a, b);
    case DF_CALC_BF16_PROD: return df_op_bf16_prod(a, b);
    case DF_CALC_BF16_MAX: return df_op_bf16_max(a, b);
    case DF_CALC_BF16_MIN: return df_op_bf16_min(a, b);
    case DF_CALC_F32_SUM: return df_op_f32_sum(a, b);
    case DF_CALC_F32_PROD: return df_op_f32_prod(a, b);
    case DF_CALC_F32_MAX: return df_op_f32_max(a, b);
    case DF_CALC_F32_MIN: return df_op_f32_min(a, b);
    case DF_CALC_F64_SUM: return df_op_f64_sum(a, b);
    case DF_CALC_F64_PROD: return df_op_f64_prod(a, b);
    case DF_CALC_F64_MAX: return df_op_f64_max(a, b);
    case DF_CALC_F64_MIN: return df_op_f64_min(a, b);
    case DF_CALC_BAND:
    case DF_CALC_BOR:
    case DF_CALC_BXOR: return df_bitwise(calc, a, b);
    case DF_CALC_LAND:
    case DF_CALC_LOR:
    case DF_CALC_LXOR: return df_bitwise(calc, a != 0, b != 0);
  }
  return a;
}

/* Every `bits`-bit lane of `word` becomes 1 if it is nonzero, else 0, with no carry between lanes:
 * adding the lane's low bits to all-ones-below-the-top sets the top bit exactly when one of them
 * is set, and or-ing the lane itself adds its own top bit.  Word-wide because, element by element
 * (compare, select, reassemble the bytes), the byte-wide pack routine took 72 registers instead of
 * 48, and the daemon kernel, which calls every routine, paid for them in spills (ptxas: 156/116
 * bytes of spill stores/loads instead of 140/96). */
DF_ALWAYS_INLINE uint64_t df_truth_lanes(size_t bits, uint64_t word) {
  const uint64_t ones = ~0ull / (~0ull >> (64 - bits));    /* 1 in every lane */
  const uint64_t low = ones * ((1ull << (bits - 1)) - 1u); /* all but the top bit */
  return ((((word & low) + low) | word) >> (bits - 1)) & ones;
}

/* Every element of two packs of `size`-byte elements. */
DF_ALWAYS_INLINE df_pack df_apply_pack(size_t size, df_calc calc, df_pack v, df_pack w) {
  switch (calc) {
    case DF_CALC_COPY: return v;
    case DF_CALC_I8_SUM: return df_pack_i8_sum(v, w);
    case DF_CALC_I8_PROD: return df_pack_i8_prod(v, w);
    case DF_CALC_I8_MAX: return df_pack_i8_max(v, w);
    case DF_CALC_I8_MIN: return df_pack_i8_min(v, w);
    case DF_CALC_U8_SUM: return df_pack_u8_sum(v, w);
    case DF_CALC_U8_PROD: return df_pack_u8_prod(v, w);
    case DF_CALC_U8_MAX: return df_pack_u8_max(v, w);
    case DF_CALC_U8_MIN: return df_pack_u8_min(v, w);
    case DF_CALC_I16_SUM: return df_pack_i16_sum(v, w);
    case DF_CALC_I16_PROD: return df_pack_i16_prod(v, w);
    case DF_CALC_I16_MAX: return df_pack_i16_max(v, w);
    case DF_CALC_I16_MIN: return df_pack_i16_min(v, w);
    case DF_CALC_U16_SUM: return df_pack_u16_sum(v, w);
    case DF_CALC_U16_PROD: return df_pack_u16_prod(v, w);
    case DF_CALC_U16_MAX: return df_pack_u16_max(v, w);
    case DF_CALC_U16_MIN: return df_pack_u16_min(v, w);
    case DF_CALC_I32_SUM: return df_pack_i32_sum(v, w);
    case DF_CALC_I32_PROD: return df_pack_i32_prod(v, w);
    case DF_CALC_I32_MAX: return df_pack_i32_max(v, w);
    case DF_CALC_I32_MIN: return df_pack_i32_min(v, w);
    case DF_CALC_U32_SUM: return df_pack_u32_sum(v, w);
    case DF_CALC_U32_PROD: return df_pack_u32_prod(v, w);
    case DF_CALC_U32_MAX: return df_pack_u32_max(v, w);
    case DF_CALC_U32_MIN: return df_pack_u32_min(v, w);
    case DF_CALC_I64_SUM: return df_pack_i64_sum(v, w);
    case DF_CALC_I64_PROD: return df_pack_i64_prod(v, w);
    case DF_CALC_I64_MAX: return df_pack_i64_max(v, w);
    case DF_CALC_I64_MIN: return df_pack_i64_min(v, w);
    case DF_CALC_U64_SUM: return df_pack_u64_sum(v, w);
    case DF_CALC_U64_PROD: return df_pack_u64_prod(v, w);
    case DF_CALC_U64_MAX: return df_pack_u64_max(v, w);
    case DF_CALC_U64_MIN: return df_pack_u64_min(v, w);
    case DF_CALC_F16_SUM: return df_pack_f16_sum(v, w);
    case DF_CALC_F16_PROD: return df_pack_f16_prod(v, w);
    case DF_CALC_F16_MAX: return df_pack_f16_max(v, w);
    case DF_CALC_F16_MIN: return df_pack_f16_min(v, w);
    case DF_CALC_BF16_SUM: return df_pack_bf16_sum(v, w);
    case DF_CALC_BF16_PROD: return df_pack_bf16_prod(v, w);
    case DF_CALC_BF16_MAX: return df_pack_bf16_max(v, w);
    case DF_CALC_BF16_MIN: return df_pack_bf16_min(v, w);
    case DF_CALC_F32_SUM: return df_pack_f32_sum(v, w);
    case DF_CALC_F32_PROD: return df_pack_f32_prod(v, w);
    case DF_CALC_F32_MAX: return df_pack_f32_max(v, w);
    case DF_CALC_F32_MIN: return df_pack_f32_min(v, w);
    case DF_CALC_F64_SUM: return df_pack_f64_sum(v, w);
    case DF_CALC_F64_PROD: return df_pack_f64_prod(v, w);
    case DF_CALC_F64_MAX: return df_pack_f64_max(v, w);
    case DF_CALC_F64_MIN: return df_pack_f64_min(v, w);
    case DF_CALC_BAND:
    case DF_CALC_BOR:
    case DF_CALC_BXOR: /* every bit on its own: a 64-bit word at a time */
      DF_UNROLL_LOOP
      for (unsigned k = 0; k < 2; k++) v.u64[k] = df_bitwise(calc, v.u64[k], w.u64[k]);
      return v;
    case DF_CALC_LAND:
    case DF_CALC_LOR:
    case DF_CALC_LXOR: /* on the lanes' truth values, a 64-bit word of lanes at a time */
      DF_UNROLL_LOOP
      for (unsigned k = 0; k < 2; k++)
        v.u64[k] = df_bitwise(calc, df_truth_lanes(8 * size, v.u64[k]), df_truth_lanes(8 * size, w.u64[k]));
      return v;
  }
  return v;
}

#endif /* DFCCL_KERNEL_REDUCE_OPS_H */
