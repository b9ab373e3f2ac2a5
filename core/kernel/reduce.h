/*
 * Element-wise copy and reduction: the data path of the daemon's primitives.
 *
 *   df_reduce_copy(b, dtype, op, src0, src1, dst0, dst1, nelem):
 *     for i in [0, nelem):  v = src1 ? op(src0[i], src1[i]) : src0[i];
 *                           dst0[i] = v;  if (dst1) dst1[i] = v;
 *
 * Every thread of the daemon block calls it with the same arguments; each thread does its share
 * (split by df_tid(b) / df_nthreads(b)) and together they write every byte of the destinations exactly
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
 * nelem x size bytes (3), logical per width and op (4 x 3).  Their code is written once, as
 * generic functions of the element size and of the computation (a df_calc code, reduce_ops.h):
 * df_reduce_layout, df_reduce_packs, df_reduce_elements and df_reduce_bytewise, always inlined.
 * Each routine and each of its pieces is a one-line DF_NOINLINE function that calls them with
 * constants (DF_DEFINE_REDUCE_COPY), in which every switch on the size or the code folds away,
 * leaving the code of a routine written out for its type and op.  C11 (the host target) has no
 * templates; constant arguments of inlined functions do their work in both languages.
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
#include "../platform/platform.h"
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

/* ========================= memory access =========================
 * The generic code carries an element of `size` bytes (1, 2, 4 or 8) in a uint64_t, zero-extended. */

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

/* The GPU's loads of one element aligned to its size, one per width. */
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
#endif

/* One element aligned to its size, from a source.  The host copies the bytes into the low ones of
 * the result, as on every (little-endian) target DFCCL runs on. */
DF_ALWAYS_INLINE uint64_t df_load_element(size_t size, const char* p) {
  DF_ASSERT_ALIGNED(p, size);
#if DF_CUDA
  switch (size) {
    case 1: return df_load_u8(p);
    case 2: return df_load_u16(p);
    case 4: return df_load_u32(p);
    default: return df_load_u64(p);
  }
#else
  uint64_t v = 0;
  memcpy(&v, p, size);
  return v;
#endif
}

/* One element aligned to its size, to a destination.  The host stores through memcpy because the
 * caller's buffer has another effective type (C's aliasing rules); the GPU stores directly. */
DF_ALWAYS_INLINE void df_store_element(size_t size, char* p, uint64_t v) {
  DF_ASSERT_ALIGNED(p, size);
#if DF_CUDA
  switch (size) {
    case 1: *(uint8_t*)p = (uint8_t)v; return;
    case 2: *(uint16_t*)p = (uint16_t)v; return;
    case 4: *(uint32_t*)p = (uint32_t)v; return;
    default: *(uint64_t*)p = v; return;
  }
#else
  memcpy(p, &v, size);
#endif
}

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

/* One element at any address, byte by byte (little-endian, like every target DFCCL runs on). */
DF_ALWAYS_INLINE uint64_t df_load_unaligned(size_t size, const char* p) {
  uint64_t v = 0;
  DF_UNROLL_LOOP
  for (size_t k = 0; k < size; k++) v |= df_load_element(1, p + k) << (8 * k);
  return v;
}

DF_ALWAYS_INLINE void df_store_unaligned(size_t size, char* p, uint64_t v) {
  DF_UNROLL_LOOP
  for (size_t k = 0; k < size; k++) df_store_byte(p + k, (uint32_t)(v >> (8 * k)) & 0xffu);
}

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

/* ========================= the generic routines =========================
 * Written once, for elements of `size` bytes combined by `calc` (reduce_ops.h); calc ==
 * DF_CALC_COPY copies src0 and ignores src1.  They are only ever inlined into the wrappers of
 * DF_DEFINE_REDUCE_COPY below, which pass constants: there every switch on size or calc folds away.
 * Indices are split over threads round-robin so that a warp's accesses are contiguous. */

/* The pack at byte `offset`. */
DF_ALWAYS_INLINE void df_reduce_one_pack(size_t size, df_calc calc, const char* s0, const char* s1, char* d0, char* d1,
                                         size_t offset) {
  df_pack v = df_load_pack(s0 + offset);
  if (calc != DF_CALC_COPY) v = df_apply_pack(size, calc, v, df_load_pack(s1 + offset));
  df_store_pack(d0 + offset, v);
  if (d1) df_store_pack(d1 + offset, v);
}

/* The 16-byte aligned bulk, DF_REDUCE_UNROLL packs per thread in flight. */
DF_ALWAYS_INLINE void df_reduce_packs(const df_block* b, size_t size, df_calc calc, const char* s0, const char* s1,
                                      char* d0, char* d1, size_t npacks) {
  const size_t nthreads = (size_t)df_nthreads(b);
  const size_t step = nthreads * DF_REDUCE_UNROLL;
  const size_t unrolled = npacks - npacks % step;
  size_t index = (size_t)df_tid(b);
  for (; index < unrolled; index += step) {
    df_pack v[DF_REDUCE_UNROLL], w[DF_REDUCE_UNROLL];
    /* All loads first, so that they are in flight together. */
    DF_UNROLL_LOOP
    for (int u = 0; u < DF_REDUCE_UNROLL; u++) v[u] = df_load_pack(s0 + (index + u * nthreads) * DF_PACK_BYTES);
    if (calc != DF_CALC_COPY) {
      DF_UNROLL_LOOP
      for (int u = 0; u < DF_REDUCE_UNROLL; u++) w[u] = df_load_pack(s1 + (index + u * nthreads) * DF_PACK_BYTES);
      DF_UNROLL_LOOP
      for (int u = 0; u < DF_REDUCE_UNROLL; u++) v[u] = df_apply_pack(size, calc, v[u], w[u]);
    }
    DF_UNROLL_LOOP
    for (int u = 0; u < DF_REDUCE_UNROLL; u++) df_store_pack(d0 + (index + u * nthreads) * DF_PACK_BYTES, v[u]);
    if (d1) {
      DF_UNROLL_LOOP
      for (int u = 0; u < DF_REDUCE_UNROLL; u++) df_store_pack(d1 + (index + u * nthreads) * DF_PACK_BYTES, v[u]);
    }
  }
  /* Fewer than DF_REDUCE_UNROLL packs per thread remain: one at a time. */
  for (; index < npacks; index += nthreads) df_reduce_one_pack(size, calc, s0, s1, d0, d1, index * DF_PACK_BYTES);
}

/* Elements aligned to their size, DF_REDUCE_UNROLL per thread in flight. */
DF_ALWAYS_INLINE void df_reduce_elements(const df_block* b, size_t size, df_calc calc, const char* s0, const char* s1,
                                         char* d0, char* d1, size_t nelem) {
  const size_t nthreads = (size_t)df_nthreads(b);
  const size_t step = nthreads * DF_REDUCE_UNROLL;
  const size_t unrolled = nelem - nelem % step;
  size_t index = (size_t)df_tid(b);
  for (; index < unrolled; index += step) {
    uint64_t v[DF_REDUCE_UNROLL], w[DF_REDUCE_UNROLL];
    DF_UNROLL_LOOP
    for (int u = 0; u < DF_REDUCE_UNROLL; u++) v[u] = df_load_element(size, s0 + (index + u * nthreads) * size);
    if (calc != DF_CALC_COPY) {
      DF_UNROLL_LOOP
      for (int u = 0; u < DF_REDUCE_UNROLL; u++) w[u] = df_load_element(size, s1 + (index + u * nthreads) * size);
      DF_UNROLL_LOOP
      for (int u = 0; u < DF_REDUCE_UNROLL; u++) v[u] = df_apply_elem(calc, v[u], w[u]);
    }
    DF_UNROLL_LOOP
    for (int u = 0; u < DF_REDUCE_UNROLL; u++) {
      df_store_element(size, d0 + (index + u * nthreads) * size, v[u]);
      if (d1) df_store_element(size, d1 + (index + u * nthreads) * size, v[u]);
    }
  }
  for (; index < nelem; index += nthreads) {
    const size_t offset = index * size;
    uint64_t v = df_load_element(size, s0 + offset);
    if (calc != DF_CALC_COPY) v = df_apply_elem(calc, v, df_load_element(size, s1 + offset));
    df_store_element(size, d0 + offset, v);
    if (d1) df_store_element(size, d1 + offset, v);
  }
}

/* Elements at any address. */
DF_ALWAYS_INLINE void df_reduce_bytewise(const df_block* b, size_t size, df_calc calc, const char* s0, const char* s1,
                                         char* d0, char* d1, size_t nelem) {
  for (size_t index = (size_t)df_tid(b); index < nelem; index += (size_t)df_nthreads(b)) {
    const size_t offset = index * size;
    uint64_t v = df_load_unaligned(size, s0 + offset);
    if (calc != DF_CALC_COPY) v = df_apply_elem(calc, v, df_load_unaligned(size, s1 + offset));
    df_store_unaligned(size, d0 + offset, v);
    if (d1) df_store_unaligned(size, d1 + offset, v);
  }
}

/* A piece of a routine: df_reduce_packs, df_reduce_elements or df_reduce_bytewise made a function
 * of its own for one size and calc. */
typedef void df_reduce_piece(const df_block* b, const char* s0, const char* s1, char* d0, char* d1, size_t n);

/* The routine: picks the layout, and the pieces that do the work. */
DF_ALWAYS_INLINE void df_reduce_layout(const df_block* b, size_t size, df_calc calc, df_reduce_piece* packs,
                                       df_reduce_piece* elements, df_reduce_piece* bytewise, const void* src0,
                                       const void* src1, void* dst0, void* dst1, size_t nelem) {
  const char* s0 = (const char*)src0;
  const char* s1 = calc != DF_CALC_COPY ? (const char*)src1 : NULL;
  char* d0 = (char*)dst0;
  char* d1 = (char*)dst1;
  const unsigned offset16 = df_common_offset16(s0, s1, d0, d1);
  if (offset16 == DF_NO_COMMON_OFFSET || offset16 % size != 0) {
    if (df_all_aligned(s0, s1, d0, d1, size)) elements(b, s0, s1, d0, d1, nelem);
    else bytewise(b, s0, s1, d0, d1, nelem);
    return;
  }
  /* Head elements up to the 16-byte boundary, the packs, then the tail elements. */
  size_t head = ((DF_PACK_BYTES - offset16) % DF_PACK_BYTES) / size;
  if (head > nelem) head = nelem;
  const size_t npacks = (nelem - head) * size / DF_PACK_BYTES;
  const size_t tail = nelem - head - npacks * (DF_PACK_BYTES / size);
  if (head) elements(b, s0, s1, d0, d1, head);
  size_t bytes = head * size;
  if (npacks) packs(b, s0 + bytes, df_offset_src(s1, bytes), d0 + bytes, df_offset_dst(d1, bytes), npacks);
  bytes += npacks * DF_PACK_BYTES;
  if (tail) elements(b, s0 + bytes, df_offset_src(s1, bytes), d0 + bytes, df_offset_dst(d1, bytes), tail);
}

/* ========================= the routines, by op family =========================
 * DF_DEFINE_REDUCE_COPY(NAME, SIZE, CALC) defines the routine NAME for elements of SIZE bytes
 * combined by CALC, and its pieces NAME_packs, NAME_elements and NAME_bytewise, each one call of a
 * generic routine with those constants.  The pieces stay functions of their own: inlined, the
 * element piece would be in the routine three times (all elements, head, tail), and every path of
 * the routine would need the registers of its largest piece. */
#define DF_DEFINE_REDUCE_COPY(NAME, SIZE, CALC)                                                                       \
  DF_NOINLINE void NAME##_packs(const df_block* b, const char* s0, const char* s1, char* d0, char* d1, size_t n) {    \
    df_reduce_packs(b, SIZE, CALC, s0, s1, d0, d1, n);                                                                \
  }                                                                                                                   \
  DF_NOINLINE void NAME##_elements(const df_block* b, const char* s0, const char* s1, char* d0, char* d1, size_t n) { \
    df_reduce_elements(b, SIZE, CALC, s0, s1, d0, d1, n);                                                             \
  }                                                                                                                   \
  DF_NOINLINE void NAME##_bytewise(const df_block* b, const char* s0, const char* s1, char* d0, char* d1, size_t n) { \
    df_reduce_bytewise(b, SIZE, CALC, s0, s1, d0, d1, n);                                                             \
  }                                                                                                                   \
  DF_NOINLINE void NAME(const df_block* b, const void* s0, const void* s1, void* d0, void* d1, size_t n) {            \
    df_reduce_layout(b, SIZE, CALC, NAME##_packs, NAME##_elements, NAME##_bytewise, s0, s1, d0, d1, n);               \
  }

/* Copies: the element width is all that matters. */
DF_DEFINE_REDUCE_COPY(df_copy8, 1, DF_CALC_COPY)
DF_DEFINE_REDUCE_COPY(df_copy16, 2, DF_CALC_COPY)
DF_DEFINE_REDUCE_COPY(df_copy32, 4, DF_CALC_COPY)
DF_DEFINE_REDUCE_COPY(df_copy64, 8, DF_CALC_COPY)

/* Arithmetic: one routine per (type, op), named df_reduce_<type>_<op>. */
DF_DEFINE_REDUCE_COPY(df_reduce_i8_sum, 1, DF_CALC_I8_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_i8_prod, 1, DF_CALC_I8_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_i8_max, 1, DF_CALC_I8_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_i8_min, 1, DF_CALC_I8_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_u8_sum, 1, DF_CALC_U8_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_u8_prod, 1, DF_CALC_U8_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_u8_max, 1, DF_CALC_U8_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_u8_min, 1, DF_CALC_U8_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_i16_sum, 2, DF_CALC_I16_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_i16_prod, 2, DF_CALC_I16_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_i16_max, 2, DF_CALC_I16_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_i16_min, 2, DF_CALC_I16_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_u16_sum, 2, DF_CALC_U16_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_u16_prod, 2, DF_CALC_U16_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_u16_max, 2, DF_CALC_U16_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_u16_min, 2, DF_CALC_U16_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_i32_sum, 4, DF_CALC_I32_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_i32_prod, 4, DF_CALC_I32_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_i32_max, 4, DF_CALC_I32_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_i32_min, 4, DF_CALC_I32_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_u32_sum, 4, DF_CALC_U32_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_u32_prod, 4, DF_CALC_U32_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_u32_max, 4, DF_CALC_U32_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_u32_min, 4, DF_CALC_U32_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_i64_sum, 8, DF_CALC_I64_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_i64_prod, 8, DF_CALC_I64_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_i64_max, 8, DF_CALC_I64_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_i64_min, 8, DF_CALC_I64_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_u64_sum, 8, DF_CALC_U64_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_u64_prod, 8, DF_CALC_U64_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_u64_max, 8, DF_CALC_U64_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_u64_min, 8, DF_CALC_U64_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_f16_sum, 2, DF_CALC_F16_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_f16_prod, 2, DF_CALC_F16_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_f16_max, 2, DF_CALC_F16_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_f16_min, 2, DF_CALC_F16_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_bf16_sum, 2, DF_CALC_BF16_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_bf16_prod, 2, DF_CALC_BF16_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_bf16_max, 2, DF_CALC_BF16_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_bf16_min, 2, DF_CALC_BF16_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_f32_sum, 4, DF_CALC_F32_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_f32_prod, 4, DF_CALC_F32_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_f32_max, 4, DF_CALC_F32_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_f32_min, 4, DF_CALC_F32_MIN)
DF_DEFINE_REDUCE_COPY(df_reduce_f64_sum, 8, DF_CALC_F64_SUM)
DF_DEFINE_REDUCE_COPY(df_reduce_f64_prod, 8, DF_CALC_F64_PROD)
DF_DEFINE_REDUCE_COPY(df_reduce_f64_max, 8, DF_CALC_F64_MAX)
DF_DEFINE_REDUCE_COPY(df_reduce_f64_min, 8, DF_CALC_F64_MIN)

/* Bitwise: one routine per op, over bytes (16-byte packs wherever the pointers allow them). */
DF_DEFINE_REDUCE_COPY(df_reduce_band, 1, DF_CALC_BAND)
DF_DEFINE_REDUCE_COPY(df_reduce_bor, 1, DF_CALC_BOR)
DF_DEFINE_REDUCE_COPY(df_reduce_bxor, 1, DF_CALC_BXOR)

/* Logical: one routine per (width, op), named df_reduce_<op><bits>. */
DF_DEFINE_REDUCE_COPY(df_reduce_land8, 1, DF_CALC_LAND)
DF_DEFINE_REDUCE_COPY(df_reduce_lor8, 1, DF_CALC_LOR)
DF_DEFINE_REDUCE_COPY(df_reduce_lxor8, 1, DF_CALC_LXOR)
DF_DEFINE_REDUCE_COPY(df_reduce_land16, 2, DF_CALC_LAND)
DF_DEFINE_REDUCE_COPY(df_reduce_lor16, 2, DF_CALC_LOR)
DF_DEFINE_REDUCE_COPY(df_reduce_lxor16, 2, DF_CALC_LXOR)
DF_DEFINE_REDUCE_COPY(df_reduce_land32, 4, DF_CALC_LAND)
DF_DEFINE_REDUCE_COPY(df_reduce_lor32, 4, DF_CALC_LOR)
DF_DEFINE_REDUCE_COPY(df_reduce_lxor32, 4, DF_CALC_LXOR)
DF_DEFINE_REDUCE_COPY(df_reduce_land64, 8, DF_CALC_LAND)
DF_DEFINE_REDUCE_COPY(df_reduce_lor64, 8, DF_CALC_LOR)
DF_DEFINE_REDUCE_COPY(df_reduce_lxor64, 8, DF_CALC_LXOR)

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
