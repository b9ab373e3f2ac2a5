/*
 * The element operations of the data path, each in two forms:
 *   df_op_<name>(a, b)    two elements, given as the unsigned integers of their width
 *                         (core/kernel/dtypes.h); returns the result's bits;
 *   df_pack_<name>(a, b)  the same on every element of two 16-byte packs.
 * core/kernel/reduce.h turns each operation into routines over buffers.
 *
 * There is one operation per distinct computation, named after what it depends on (the op
 * families of dtypes.h):
 *   copy<bits>          keeps the first operand (the copy routines have no second source);
 *   <type>_<op>         arithmetic, per type: sum, prod, max, min;
 *   band, bor, bxor     bitwise, on bytes: every bit is combined on its own, so an element of any
 *                       type is just its bytes, and a pack is combined a 64-bit word at a time;
 *   <op><bits>          logical, per width: land, lor, lxor are the bitwise ops applied to the
 *                       operands' truth values (1 if nonzero, else 0), which do not depend on the
 *                       sign; a pack is combined a 64-bit word of lanes at a time.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_REDUCE_OPS_H
#define DFCCL_KERNEL_REDUCE_OPS_H

#include "dtypes.h"
#include "platform.h"

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

/* The pack form of an operation that needs nothing better: df_op_<OP> on every element. */
#define DF_DEFINE_PACK_BY_ELEMENTS(OP, BITS)                                                                         \
  DF_FN df_pack df_pack_##OP(df_pack a, df_pack b) {                                                                 \
    DF_UNROLL_LOOP                                                                                                   \
    for (unsigned k = 0; k < DF_PACK_BYTES / (BITS / 8); k++) a.u##BITS[k] = df_op_##OP(a.u##BITS[k], b.u##BITS[k]); \
    return a;                                                                                                        \
  }

/* ---- copy ---- */

#define DF_DEFINE_COPY_OP(BITS)                                               \
  DF_FN uint##BITS##_t df_op_copy##BITS(uint##BITS##_t a, uint##BITS##_t b) { \
    (void)b;                                                                  \
    return a;                                                                 \
  }                                                                           \
  DF_DEFINE_PACK_BY_ELEMENTS(copy##BITS, BITS)
DF_DEFINE_COPY_OP(8)
DF_DEFINE_COPY_OP(16)
DF_DEFINE_COPY_OP(32)
DF_DEFINE_COPY_OP(64)
#undef DF_DEFINE_COPY_OP

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

/* ---- bitwise: on bytes, whatever the type ---- */

#define DF_DEFINE_BITWISE_OP(NAME, OPERATOR)                                           \
  DF_FN uint8_t df_op_##NAME(uint8_t a, uint8_t b) { return (uint8_t)(a OPERATOR b); } \
  DF_FN df_pack df_pack_##NAME(df_pack a, df_pack b) {                                 \
    a.u64[0] = a.u64[0] OPERATOR b.u64[0];                                             \
    a.u64[1] = a.u64[1] OPERATOR b.u64[1];                                             \
    return a;                                                                          \
  }
DF_DEFINE_BITWISE_OP(band, &)
DF_DEFINE_BITWISE_OP(bor, |)
DF_DEFINE_BITWISE_OP(bxor, ^)
#undef DF_DEFINE_BITWISE_OP

/* ---- logical: per width ---- */

/* Every BITS-bit lane of `word` becomes 1 if it is nonzero, else 0, with no carry between lanes:
 * adding the lane's low bits to all-ones-below-the-top sets the top bit exactly when one of them
 * is set, and or-ing the lane itself adds its own top bit.  Word-wide because, element by element
 * (compare, select, reassemble the bytes), the byte-wide pack routine took 72 registers instead of
 * 48, and the daemon kernel, which calls every routine, paid for them in spills (ptxas: 156/116
 * bytes of spill stores/loads instead of 140/96). */
#define DF_DEFINE_TRUTH_LANES(BITS)                                                    \
  DF_FN uint64_t df_truth_lanes##BITS(uint64_t word) {                                 \
    const uint64_t ones = ~0ull / (~0ull >> (64 - BITS));    /* 1 in every lane */     \
    const uint64_t low = ones * ((1ull << (BITS - 1)) - 1u); /* all but the top bit */ \
    return ((((word & low) + low) | word) >> (BITS - 1)) & ones;                       \
  }
DF_DEFINE_TRUTH_LANES(8)
DF_DEFINE_TRUTH_LANES(16)
DF_DEFINE_TRUTH_LANES(32)
DF_DEFINE_TRUTH_LANES(64)
#undef DF_DEFINE_TRUTH_LANES

/* clang-format off */
#define DF_DEFINE_LOGICAL_OP(NAME, OPERATOR, BITS)                                             \
  DF_FN uint##BITS##_t df_op_##NAME##BITS(uint##BITS##_t a, uint##BITS##_t b) {                \
    return (uint##BITS##_t)((a != 0) OPERATOR (b != 0));                                       \
  }                                                                                            \
  DF_FN df_pack df_pack_##NAME##BITS(df_pack a, df_pack b) {                                   \
    DF_UNROLL_LOOP                                                                             \
    for (unsigned k = 0; k < 2; k++)                                                           \
      a.u64[k] = df_truth_lanes##BITS(a.u64[k]) OPERATOR df_truth_lanes##BITS(b.u64[k]);       \
    return a;                                                                                  \
  }
/* clang-format on */
#define DF_DEFINE_LOGICAL_OPS(BITS)   \
  DF_DEFINE_LOGICAL_OP(land, &, BITS) \
  DF_DEFINE_LOGICAL_OP(lor, |, BITS)  \
  DF_DEFINE_LOGICAL_OP(lxor, ^, BITS)
DF_DEFINE_LOGICAL_OPS(8)
DF_DEFINE_LOGICAL_OPS(16)
DF_DEFINE_LOGICAL_OPS(32)
DF_DEFINE_LOGICAL_OPS(64)
#undef DF_DEFINE_LOGICAL_OPS
#undef DF_DEFINE_LOGICAL_OP

#endif /* DFCCL_KERNEL_REDUCE_OPS_H */
