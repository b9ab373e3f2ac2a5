/*
 * Element-wise copy and reduction: the data path of the daemon's primitives.
 *
 *   df_reduce_copy(b, dtype, op, src0, src1, dst0, dst1, nelem):
 *     for i in [0, nelem):  v = src1 ? op(src0[i], src1[i]) : src0[i];
 *                           dst0[i] = v;  if (dst1) dst1[i] = v;
 *
 * Every thread of the daemon block calls it with the same arguments; each thread does its share
 * (split by b->tid / b->nthreads) and together they write every byte of the destinations exactly
 * once (a share is made of elements, or of bytes for the bitwise ops).  There is no barrier inside:
 * the caller synchronizes before publishing the result.  A destination may alias a source exactly
 * (in place); partial overlaps are not supported.
 *
 * `op` is one that dtype has (df_op_defined_for, checked at registration), with dfcclRedOp_t's
 * meaning: integers wrap (sum/prod modulo 2^bits); fp16/bf16 are computed in float and rounded to
 * nearest even; max/min are plain comparisons: max(a,b) = a > b ? a : b, min(a,b) = a < b ? a : b;
 * band/bor/bxor combine bits; land/lor/lxor give 1 or 0.  The element operations are in
 * reduce_ops.h.
 *
 * Routines go by op family (dtypes.h), as many as there are distinct computations: copies per
 * element width (4), arithmetic per type and op (12 x 4), bitwise per op on the buffers seen as
 * nelem x size bytes (3), logical per width and op (4 x 3).
 *
 * Layout of the work: when all pointers share the same offset modulo 16 and that offset is a whole
 * number of elements, a few head elements bring them to a 16-byte boundary, the bulk moves as
 * 16-byte packs (several loads in flight per thread), and a few tail elements finish.  Otherwise
 * the work goes element by element -- by bytes when an element is not even aligned to its size.
 * The bitwise ops work on bytes, so any common offset gives them packs.
 *
 * On the GPU every source load bypasses L1 (ld.volatile.global): a source can be a FIFO slot that
 * another GPU rewrites, and a stale L1 line would return old data.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_REDUCE_H
#define DFCCL_KERNEL_REDUCE_H

#include "dfccl.h"
#include "dtypes.h"
#include "platform.h"
#include "reduce_ops.h"

/* 16-byte packs each thread keeps in flight per source (and elements, on the element path). */
#ifndef DF_REDUCE_UNROLL
#define DF_REDUCE_UNROLL 4
#endif

/* The host does not fault on misaligned accesses that would fault on the GPU; the unit test
 * defines DF_REDUCE_CHECK_ALIGNMENT to make the host check them. */
#if !DF_CUDA && defined(DF_REDUCE_CHECK_ALIGNMENT)
#include <stdio.h>
#include <stdlib.h>
#define DF_ASSERT_ALIGNED(p, bytes)                                                                           \
  do {                                                                                                        \
    if ((uintptr_t)(p) % (bytes) != 0) {                                                                      \
      fprintf(stderr, "reduce.h:%d: %p not aligned to %d bytes\n", __LINE__, (const void*)(p), (int)(bytes)); \
      abort();                                                                                                \
    }                                                                                                         \
  } while (0)
#else
#define DF_ASSERT_ALIGNED(p, bytes) ((void)0)
#endif

/* ========================= memory access ========================= */

DF_FN const char* df_offset_src(const void* p, size_t bytes) { return p ? (const char*)p + bytes : NULL; }

DF_FN char* df_offset_dst(void* p, size_t bytes) { return p ? (char*)p + bytes : NULL; }

/* A 16-byte aligned pack from a source. */
DF_FN df_pack df_load_pack(const char* p) {
  df_pack v;
#if DF_CUDA
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(v.u64[0]), "=l"(v.u64[1])
               : "l"(__cvta_generic_to_global(p)));
#else
  DF_ASSERT_ALIGNED(p, DF_PACK_BYTES);
  memcpy(&v, p, sizeof v);
#endif
  return v;
}

/* A 16-byte aligned pack to a destination. */
DF_FN void df_store_pack(char* p, df_pack v) {
#if DF_CUDA
  *(ulonglong2*)p = make_ulonglong2(v.u64[0], v.u64[1]);
#else
  DF_ASSERT_ALIGNED(p, DF_PACK_BYTES);
  memcpy(p, &v, sizeof v);
#endif
}

/* Loads of one element aligned to its size, from a source. */
#if DF_CUDA
DF_FN uint8_t df_load_u8(const char* p) {
  uint32_t v;
  asm volatile("ld.volatile.global.u8 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)));
  return (uint8_t)v;
}
DF_FN uint16_t df_load_u16(const char* p) {
  uint32_t v;
  asm volatile("ld.volatile.global.u16 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)));
  return (uint16_t)v;
}
DF_FN uint32_t df_load_u32(const char* p) {
  uint32_t v;
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)));
  return v;
}
DF_FN uint64_t df_load_u64(const char* p) {
  uint64_t v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(__cvta_generic_to_global(p)));
  return v;
}
#else
#define DF_DEFINE_HOST_LOAD(BITS)                       \
  DF_FN uint##BITS##_t df_load_u##BITS(const char* p) { \
    uint##BITS##_t v;                                   \
    DF_ASSERT_ALIGNED(p, sizeof v);                     \
    memcpy(&v, p, sizeof v);                            \
    return v;                                           \
  }
DF_DEFINE_HOST_LOAD(8)
DF_DEFINE_HOST_LOAD(16)
DF_DEFINE_HOST_LOAD(32)
DF_DEFINE_HOST_LOAD(64)
#undef DF_DEFINE_HOST_LOAD
#endif

/* The host stores through memcpy because the caller's buffer has another effective type (C's
 * aliasing rules); the GPU stores directly. */
#if DF_CUDA
#define DF_STORE_ALIGNED(T, p, v) (*(T*)(p) = (v))
#else
#define DF_STORE_ALIGNED(T, p, v) memcpy((p), &(v), sizeof(T))
#endif

/* One byte of an element at any address.  The GPU stores it with inline PTX: ptxas 13.0 turned a
 * byte store of the result of a float->fp16 conversion into a numeric fp16->u8 conversion
 * (F2I.U8.F16), storing a wrong byte; an opaque 32-bit operand keeps that peephole away. */
DF_FN void df_store_byte(char* p, uint32_t byte) {
#if DF_CUDA
  asm volatile("st.global.u8 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(byte) : "memory");
#else
  *p = (char)(uint8_t)byte;
#endif
}

/* Stores of one element aligned to its size; and loads/stores of one element at any address
 * (byte by byte, little-endian like every target DFCCL runs on). */
#define DF_DEFINE_ELEMENT_ACCESS(BITS)                                                                           \
  DF_FN void df_store_u##BITS(char* p, uint##BITS##_t v) {                                                       \
    DF_ASSERT_ALIGNED(p, sizeof v);                                                                              \
    DF_STORE_ALIGNED(uint##BITS##_t, p, v);                                                                      \
  }                                                                                                              \
  DF_FN uint##BITS##_t df_load_unaligned_u##BITS(const char* p) {                                                \
    uint##BITS##_t v = 0;                                                                                        \
    DF_UNROLL_LOOP                                                                                               \
    for (unsigned k = 0; k < BITS / 8; k++) v |= (uint##BITS##_t)((uint##BITS##_t)df_load_u8(p + k) << (8 * k)); \
    return v;                                                                                                    \
  }                                                                                                              \
  DF_FN void df_store_unaligned_u##BITS(char* p, uint##BITS##_t v) {                                             \
    DF_UNROLL_LOOP                                                                                               \
    for (unsigned k = 0; k < BITS / 8; k++) df_store_byte(p + k, (uint32_t)(v >> (8 * k)) & 0xffu);              \
  }
DF_DEFINE_ELEMENT_ACCESS(8)
DF_DEFINE_ELEMENT_ACCESS(16)
DF_DEFINE_ELEMENT_ACCESS(32)
DF_DEFINE_ELEMENT_ACCESS(64)
#undef DF_DEFINE_ELEMENT_ACCESS

/* ========================= work layout ========================= */

#define DF_NO_COMMON_OFFSET 16u

/* The offset modulo 16 shared by all non-null pointers, or DF_NO_COMMON_OFFSET. */
DF_FN unsigned df_common_offset16(const void* s0, const void* s1, const void* d0, const void* d1) {
  const uintptr_t offset = (uintptr_t)s0 & 15u;
  uintptr_t differences = ((uintptr_t)d0 & 15u) ^ offset;
  if (s1) differences |= ((uintptr_t)s1 & 15u) ^ offset;
  if (d1) differences |= ((uintptr_t)d1 & 15u) ^ offset;
  return differences ? DF_NO_COMMON_OFFSET : (unsigned)offset;
}

/* Whether all non-null pointers are aligned to `bytes` (a power of two). */
DF_FN bool df_all_aligned(const void* s0, const void* s1, const void* d0, const void* d1, size_t bytes) {
  const uintptr_t any = (uintptr_t)s0 | (uintptr_t)s1 | (uintptr_t)d0 | (uintptr_t)d1;
  return (any & (bytes - 1u)) == 0;
}

/* ========================= the routine of one element operation =========================
 * DF_DEFINE_REDUCE_COPY(NAME, BITS, HAS_SRC1, OP) defines, for elements of BITS bits combined by
 * df_op_<OP> and packs combined by df_pack_<OP> (HAS_SRC1 = 0: copy of src0, src1 is ignored):
 *   NAME_packs      the 16-byte aligned bulk, DF_REDUCE_UNROLL packs per thread in flight
 *   NAME_elements   elements aligned to their size, DF_REDUCE_UNROLL per thread in flight
 *   NAME_bytewise   elements at any address
 *   NAME            the routine: picks the layout above
 * Indices are split over threads round-robin so that a warp's accesses are contiguous. */

/* clang-format off */
#define DF_DEFINE_REDUCE_COPY(NAME, BITS, HAS_SRC1, OP)                                           \
  DF_FN void NAME##_one_pack(const char* s0, const char* s1, char* d0, char* d1, size_t offset) { \
    df_pack v = df_load_pack(s0 + offset);                                                        \
    if (HAS_SRC1) v = df_pack_##OP(v, df_load_pack(s1 + offset));                                 \
    df_store_pack(d0 + offset, v);                                                                \
    if (d1) df_store_pack(d1 + offset, v);                                                        \
  }                                                                                               \
                                                                                                  \
  DF_NOINLINE void NAME##_packs(const df_block* b, const char* s0, const char* s1, char* d0,      \
                                char* d1, size_t npacks) {                                        \
    const size_t nthreads = (size_t)b->nthreads;                                                  \
    const size_t step = nthreads * DF_REDUCE_UNROLL;                                              \
    const size_t unrolled = npacks - npacks % step;                                               \
    size_t index = (size_t)b->tid;                                                                \
    for (; index < unrolled; index += step) {                                                     \
      df_pack v[DF_REDUCE_UNROLL], w[DF_REDUCE_UNROLL];                                           \
      /* All loads first, so that they are in flight together. */                                 \
      DF_UNROLL_LOOP                                                                              \
      for (int u = 0; u < DF_REDUCE_UNROLL; u++)                                                  \
        v[u] = df_load_pack(s0 + (index + u * nthreads) * DF_PACK_BYTES);                         \
      if (HAS_SRC1) {                                                                             \
        DF_UNROLL_LOOP                                                                            \
        for (int u = 0; u < DF_REDUCE_UNROLL; u++)                                                \
          w[u] = df_load_pack(s1 + (index + u * nthreads) * DF_PACK_BYTES);                       \
        DF_UNROLL_LOOP                                                                            \
        for (int u = 0; u < DF_REDUCE_UNROLL; u++) v[u] = df_pack_##OP(v[u], w[u]);               \
      }                                                                                           \
      DF_UNROLL_LOOP                                                                              \
      for (int u = 0; u < DF_REDUCE_UNROLL; u++)                                                  \
        df_store_pack(d0 + (index + u * nthreads) * DF_PACK_BYTES, v[u]);                         \
      if (d1) {                                                                                   \
        DF_UNROLL_LOOP                                                                            \
        for (int u = 0; u < DF_REDUCE_UNROLL; u++)                                                \
          df_store_pack(d1 + (index + u * nthreads) * DF_PACK_BYTES, v[u]);                       \
      }                                                                                           \
    }                                                                                             \
    /* Fewer than DF_REDUCE_UNROLL packs per thread remain: one at a time. */                     \
    for (; index < npacks; index += nthreads)                                                     \
      NAME##_one_pack(s0, s1, d0, d1, index * DF_PACK_BYTES);                                     \
  }                                                                                               \
                                                                                                  \
  DF_NOINLINE void NAME##_elements(const df_block* b, const char* s0, const char* s1, char* d0,   \
                                   char* d1, size_t nelem) {                                      \
    const size_t size = BITS / 8;                                                                 \
    const size_t nthreads = (size_t)b->nthreads;                                                  \
    const size_t step = nthreads * DF_REDUCE_UNROLL;                                              \
    const size_t unrolled = nelem - nelem % step;                                                 \
    size_t index = (size_t)b->tid;                                                                \
    for (; index < unrolled; index += step) {                                                     \
      uint##BITS##_t v[DF_REDUCE_UNROLL], w[DF_REDUCE_UNROLL];                                    \
      DF_UNROLL_LOOP                                                                              \
      for (int u = 0; u < DF_REDUCE_UNROLL; u++)                                                  \
        v[u] = df_load_u##BITS(s0 + (index + u * nthreads) * size);                               \
      if (HAS_SRC1) {                                                                             \
        DF_UNROLL_LOOP                                                                            \
        for (int u = 0; u < DF_REDUCE_UNROLL; u++)                                                \
          w[u] = df_load_u##BITS(s1 + (index + u * nthreads) * size);                             \
        DF_UNROLL_LOOP                                                                            \
        for (int u = 0; u < DF_REDUCE_UNROLL; u++) v[u] = df_op_##OP(v[u], w[u]);                 \
      }                                                                                           \
      DF_UNROLL_LOOP                                                                              \
      for (int u = 0; u < DF_REDUCE_UNROLL; u++) {                                                \
        df_store_u##BITS(d0 + (index + u * nthreads) * size, v[u]);                               \
        if (d1) df_store_u##BITS(d1 + (index + u * nthreads) * size, v[u]);                       \
      }                                                                                           \
    }                                                                                             \
    for (; index < nelem; index += nthreads) {                                                    \
      const size_t offset = index * size;                                                         \
      uint##BITS##_t v = df_load_u##BITS(s0 + offset);                                            \
      if (HAS_SRC1) v = df_op_##OP(v, df_load_u##BITS(s1 + offset));                              \
      df_store_u##BITS(d0 + offset, v);                                                           \
      if (d1) df_store_u##BITS(d1 + offset, v);                                                   \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  DF_NOINLINE void NAME##_bytewise(const df_block* b, const char* s0, const char* s1, char* d0,   \
                                   char* d1, size_t nelem) {                                      \
    for (size_t index = (size_t)b->tid; index < nelem; index += (size_t)b->nthreads) {            \
      const size_t offset = index * (BITS / 8);                                                   \
      uint##BITS##_t v = df_load_unaligned_u##BITS(s0 + offset);                                  \
      if (HAS_SRC1) v = df_op_##OP(v, df_load_unaligned_u##BITS(s1 + offset));                    \
      df_store_unaligned_u##BITS(d0 + offset, v);                                                 \
      if (d1) df_store_unaligned_u##BITS(d1 + offset, v);                                         \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  DF_NOINLINE void NAME(const df_block* b, const void* src0, const void* src1, void* dst0,        \
                        void* dst1, size_t nelem) {                                               \
    const size_t size = BITS / 8;                                                                 \
    const char* s0 = (const char*)src0;                                                           \
    const char* s1 = HAS_SRC1 ? (const char*)src1 : NULL;                                         \
    char* d0 = (char*)dst0;                                                                       \
    char* d1 = (char*)dst1;                                                                       \
    const unsigned offset16 = df_common_offset16(s0, s1, d0, d1);                                 \
    if (offset16 == DF_NO_COMMON_OFFSET || offset16 % size != 0) {                                \
      if (df_all_aligned(s0, s1, d0, d1, size))                                                   \
        NAME##_elements(b, s0, s1, d0, d1, nelem);                                                \
      else                                                                                        \
        NAME##_bytewise(b, s0, s1, d0, d1, nelem);                                                \
      return;                                                                                     \
    }                                                                                             \
    /* Head elements up to the 16-byte boundary, the packs, then the tail elements. */            \
    size_t head = ((DF_PACK_BYTES - offset16) % DF_PACK_BYTES) / size;                            \
    if (head > nelem) head = nelem;                                                               \
    const size_t npacks = (nelem - head) * size / DF_PACK_BYTES;                                  \
    const size_t tail = nelem - head - npacks * (DF_PACK_BYTES / size);                           \
    if (head) NAME##_elements(b, s0, s1, d0, d1, head);                                           \
    size_t bytes = head * size;                                                                   \
    if (npacks) {                                                                                 \
      NAME##_packs(b, s0 + bytes, df_offset_src(s1, bytes), d0 + bytes, df_offset_dst(d1, bytes), \
                   npacks);                                                                       \
    }                                                                                             \
    bytes += npacks * DF_PACK_BYTES;                                                              \
    if (tail) {                                                                                   \
      NAME##_elements(b, s0 + bytes, df_offset_src(s1, bytes), d0 + bytes,                        \
                      df_offset_dst(d1, bytes), tail);                                            \
    }                                                                                             \
  }
/* clang-format on */

/* ========================= the routines, by op family ========================= */

/* Copies: the element width is all that matters. */
DF_DEFINE_REDUCE_COPY(df_copy8, 8, 0, copy8)
DF_DEFINE_REDUCE_COPY(df_copy16, 16, 0, copy16)
DF_DEFINE_REDUCE_COPY(df_copy32, 32, 0, copy32)
DF_DEFINE_REDUCE_COPY(df_copy64, 64, 0, copy64)

/* Arithmetic: one routine per (type, op), named df_reduce_<type>_<op>. */
#define DF_DEFINE_ARITHMETIC(TYPE, BITS)                               \
  DF_DEFINE_REDUCE_COPY(df_reduce_##TYPE##_sum, BITS, 1, TYPE##_sum)   \
  DF_DEFINE_REDUCE_COPY(df_reduce_##TYPE##_prod, BITS, 1, TYPE##_prod) \
  DF_DEFINE_REDUCE_COPY(df_reduce_##TYPE##_max, BITS, 1, TYPE##_max)   \
  DF_DEFINE_REDUCE_COPY(df_reduce_##TYPE##_min, BITS, 1, TYPE##_min)
DF_DEFINE_ARITHMETIC(i8, 8)
DF_DEFINE_ARITHMETIC(u8, 8)
DF_DEFINE_ARITHMETIC(i16, 16)
DF_DEFINE_ARITHMETIC(u16, 16)
DF_DEFINE_ARITHMETIC(i32, 32)
DF_DEFINE_ARITHMETIC(u32, 32)
DF_DEFINE_ARITHMETIC(i64, 64)
DF_DEFINE_ARITHMETIC(u64, 64)
DF_DEFINE_ARITHMETIC(f16, 16)
DF_DEFINE_ARITHMETIC(bf16, 16)
DF_DEFINE_ARITHMETIC(f32, 32)
DF_DEFINE_ARITHMETIC(f64, 64)
#undef DF_DEFINE_ARITHMETIC

/* Bitwise: one routine per op, over bytes (16-byte packs wherever the pointers allow them). */
DF_DEFINE_REDUCE_COPY(df_reduce_band, 8, 1, band)
DF_DEFINE_REDUCE_COPY(df_reduce_bor, 8, 1, bor)
DF_DEFINE_REDUCE_COPY(df_reduce_bxor, 8, 1, bxor)

/* Logical: one routine per (width, op), named df_reduce_<op><bits>. */
#define DF_DEFINE_LOGICAL(BITS)                                    \
  DF_DEFINE_REDUCE_COPY(df_reduce_land##BITS, BITS, 1, land##BITS) \
  DF_DEFINE_REDUCE_COPY(df_reduce_lor##BITS, BITS, 1, lor##BITS)   \
  DF_DEFINE_REDUCE_COPY(df_reduce_lxor##BITS, BITS, 1, lxor##BITS)
DF_DEFINE_LOGICAL(8)
DF_DEFINE_LOGICAL(16)
DF_DEFINE_LOGICAL(32)
DF_DEFINE_LOGICAL(64)
#undef DF_DEFINE_LOGICAL

/* ========================= entry point ========================= */

DF_FN void df_copy(const df_block* b, size_t size, const void* src0, void* dst0, void* dst1, size_t nelem) {
  switch (size) {
    case 1: df_copy8(b, src0, NULL, dst0, dst1, nelem); return;
    case 2: df_copy16(b, src0, NULL, dst0, dst1, nelem); return;
    case 4: df_copy32(b, src0, NULL, dst0, dst1, nelem); return;
    case 8: df_copy64(b, src0, NULL, dst0, dst1, nelem); return;
    default: return;
  }
}

#define DF_ARITHMETIC_CASE(DTYPE, TYPE)                                                  \
  case DTYPE:                                                                            \
    switch (op) {                                                                        \
      case dfcclSum: df_reduce_##TYPE##_sum(b, src0, src1, dst0, dst1, nelem); return;   \
      case dfcclProd: df_reduce_##TYPE##_prod(b, src0, src1, dst0, dst1, nelem); return; \
      case dfcclMax: df_reduce_##TYPE##_max(b, src0, src1, dst0, dst1, nelem); return;   \
      case dfcclMin: df_reduce_##TYPE##_min(b, src0, src1, dst0, dst1, nelem); return;   \
      default: return;                                                                   \
    }

DF_FN void df_reduce_arithmetic(const df_block* b, dfcclDataType_t dtype, dfcclRedOp_t op, const void* src0,
                                const void* src1, void* dst0, void* dst1, size_t nelem) {
  switch (dtype) {
    DF_ARITHMETIC_CASE(dfcclInt8, i8)
    DF_ARITHMETIC_CASE(dfcclUint8, u8)
    DF_ARITHMETIC_CASE(dfcclInt16, i16)
    DF_ARITHMETIC_CASE(dfcclUint16, u16)
    DF_ARITHMETIC_CASE(dfcclInt32, i32)
    DF_ARITHMETIC_CASE(dfcclUint32, u32)
    DF_ARITHMETIC_CASE(dfcclInt64, i64)
    DF_ARITHMETIC_CASE(dfcclUint64, u64)
    DF_ARITHMETIC_CASE(dfcclFloat16, f16)
    DF_ARITHMETIC_CASE(dfcclBfloat16, bf16)
    DF_ARITHMETIC_CASE(dfcclFloat32, f32)
    DF_ARITHMETIC_CASE(dfcclFloat64, f64)
    default: return;
  }
}
#undef DF_ARITHMETIC_CASE

/* The buffers as `nbytes` bytes: the element type plays no part. */
DF_FN void df_reduce_bitwise(const df_block* b, dfcclRedOp_t op, const void* src0, const void* src1, void* dst0,
                             void* dst1, size_t nbytes) {
  switch (op) {
    case dfcclBand: df_reduce_band(b, src0, src1, dst0, dst1, nbytes); return;
    case dfcclBor: df_reduce_bor(b, src0, src1, dst0, dst1, nbytes); return;
    case dfcclBxor: df_reduce_bxor(b, src0, src1, dst0, dst1, nbytes); return;
    default: return;
  }
}

#define DF_LOGICAL_CASE(BITS)                                                         \
  case BITS / 8:                                                                      \
    switch (op) {                                                                     \
      case dfcclLand: df_reduce_land##BITS(b, src0, src1, dst0, dst1, nelem); return; \
      case dfcclLor: df_reduce_lor##BITS(b, src0, src1, dst0, dst1, nelem); return;   \
      case dfcclLxor: df_reduce_lxor##BITS(b, src0, src1, dst0, dst1, nelem); return; \
      default: return;                                                                \
    }

/* Only the element's width matters, not its sign. */
DF_FN void df_reduce_logical(const df_block* b, size_t size, dfcclRedOp_t op, const void* src0, const void* src1,
                             void* dst0, void* dst1, size_t nelem) {
  switch (size) {
    DF_LOGICAL_CASE(8)
    DF_LOGICAL_CASE(16)
    DF_LOGICAL_CASE(32)
    DF_LOGICAL_CASE(64)
    default: return;
  }
}
#undef DF_LOGICAL_CASE

/* Copies src0 (src1 == NULL) or reduces src0 with src1 into dst0 and, if not NULL, dst1.
 * A dtype or op out of range does nothing: registration refuses them, and every pair that
 * df_op_defined_for refuses. */
DF_FN void df_reduce_copy(const df_block* b, dfcclDataType_t dtype, dfcclRedOp_t op, const void* src0, const void* src1,
                          void* dst0, void* dst1, size_t nelem) {
  const size_t size = df_dtype_bytes(dtype);
  if (src1 == NULL) {
    df_copy(b, size, src0, dst0, dst1, nelem);
    return;
  }
  switch (df_op_family_of(op)) {
    case DF_OP_ARITHMETIC: df_reduce_arithmetic(b, dtype, op, src0, src1, dst0, dst1, nelem); return;
    case DF_OP_BITWISE: df_reduce_bitwise(b, op, src0, src1, dst0, dst1, nelem * size); return;
    case DF_OP_LOGICAL: df_reduce_logical(b, size, op, src0, src1, dst0, dst1, nelem); return;
  }
}

#endif /* DFCCL_KERNEL_REDUCE_H */
