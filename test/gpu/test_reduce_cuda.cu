/*
 * GPU unit test and micro-benchmark of df_reduce_copy (core/kernel/reduce.h).
 *
 * Build:  nvcc -std=c++17 -O3 -arch=sm_90 -I core -I core/kernel -I test/common \
 *              test/gpu/test_reduce_cuda.cu -o build/test_reduce_cuda
 * Run:    build/test_reduce_cuda            (test, then benchmark)
 *         build/test_reduce_cuda --test     (test only)
 *         build/test_reduce_cuda --bench    (benchmark only)
 *
 * 1. The hardware fp16/bf16 conversions the data path uses on the GPU must equal the software
 *    ones the host target uses (all 2^16 codes, and many floats incl. every tie).
 * 2. Every (dtype, op) pair that df_op_defined_for allows, with/without src1 and dst1, separate or
 *    in place, for several counts and pointer offsets (16-byte path, element path, byte path),
 *    blockDim 512 and 96, against a host reference (MPI's definitions; integer inputs include edge
 *    values such as 0, 1, -1, 0x80, 0x100 and the sign bit); guard bytes around every buffer must
 *    survive.  Before the sweep, examples worked out by hand from MPI's definitions.
 * 3. GB/s of fp32 sum on 256 MiB buffers with 1 and 32 blocks of 512 threads (median of repeats,
 *    cudaEvent timing after warm-up), plus a few neighbouring cases for context.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reduce.h"
#include "reduce_reference.h" /* test/common */
#include "cuda_check.h"

static constexpr int kThreads = 512;

/* ================================================================ kernels */

/* Each block reduces its own slice of `per_block` elements. */
__global__ void reduce_copy_kernel(dfcclDataType_t dtype, dfcclRedOp_t op, const char* src0, const char* src1,
                                   char* dst0, char* dst1, size_t per_block) {
  const df_block block = {(int)threadIdx.x, (int)blockDim.x, (int)blockIdx.x, (int)gridDim.x};
  const size_t offset = (size_t)blockIdx.x * per_block * df_dtype_bytes(dtype);
  df_reduce_copy(&block, dtype, op, src0 + offset, src1 ? src1 + offset : nullptr, dst0 + offset,
                 dst1 ? dst1 + offset : nullptr, per_block);
}

struct ConversionMismatches {
  unsigned long long count;
  unsigned first_input; /* bits of the first input that mismatched */
  int first_kind;       /* 0 f16->f32, 1 bf16->f32, 2 f32->f16, 3 f32->bf16 */
};

__device__ bool same_float(float a, float b) {
  return (isnan(a) && isnan(b)) || __float_as_uint(a) == __float_as_uint(b);
}

__device__ bool same_f16(uint16_t a, uint16_t b) {
  const bool a_nan = (a & 0x7fff) > 0x7c00, b_nan = (b & 0x7fff) > 0x7c00;
  return (a_nan && b_nan) || a == b;
}

__device__ bool same_bf16(uint16_t a, uint16_t b) {
  const bool a_nan = (a & 0x7fff) > 0x7f80, b_nan = (b & 0x7fff) > 0x7f80;
  return (a_nan && b_nan) || a == b;
}

__device__ void record_mismatch(ConversionMismatches* m, unsigned input, int kind) {
  if (atomicAdd(&m->count, 1ull) == 0) {
    m->first_input = input;
    m->first_kind = kind;
  }
}

/* Hardware (df_*) against software (df_sw_*) conversions for the given float bit patterns, and
 * for every 16-bit code (the first 65536 threads). */
__global__ void conversion_kernel(const uint32_t* floats, size_t n, ConversionMismatches* m) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (i <= 0xffff) {
      const uint16_t h = (uint16_t)i;
      if (!same_float(df_f16_to_f32(h), df_sw_f16_to_f32(h))) record_mismatch(m, h, 0);
      if (!same_float(df_bf16_to_f32(h), df_sw_bf16_to_f32(h))) record_mismatch(m, h, 1);
    }
    const float f = __uint_as_float(floats[i]);
    if (!same_f16(df_f32_to_f16_rn(f), df_sw_f32_to_f16_rn(f))) record_mismatch(m, floats[i], 2);
    if (!same_bf16(df_f32_to_bf16_rn(f), df_sw_f32_to_bf16_rn(f))) record_mismatch(m, floats[i], 3);
  }
}

/* ================================================================ host reference */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rand64() { /* splitmix64 */
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

enum Kind { kSigned, kUnsigned, kF16, kBF16, kF32, kF64 };

struct TypeInfo {
  dfcclDataType_t dtype;
  const char* name;
  size_t size;
  Kind kind;
};

static const TypeInfo kTypes[] = {
    {dfcclInt8, "int8", 1, kSigned},       {dfcclUint8, "uint8", 1, kUnsigned},   {dfcclInt16, "int16", 2, kSigned},
    {dfcclUint16, "uint16", 2, kUnsigned}, {dfcclInt32, "int32", 4, kSigned},     {dfcclUint32, "uint32", 4, kUnsigned},
    {dfcclInt64, "int64", 8, kSigned},     {dfcclUint64, "uint64", 8, kUnsigned}, {dfcclFloat16, "fp16", 2, kF16},
    {dfcclBfloat16, "bf16", 2, kBF16},     {dfcclFloat32, "fp32", 4, kF32},       {dfcclFloat64, "fp64", 8, kF64},
};

static_assert(sizeof kTypes / sizeof kTypes[0] == dfcclNumTypes, "every type");

static bool is_integer(const TypeInfo& t) { return t.kind == kSigned || t.kind == kUnsigned; }

static float f32_of(uint64_t bits) {
  const uint32_t b = (uint32_t)bits;
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static uint64_t bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static double f64_of(uint64_t bits) {
  double d;
  memcpy(&d, &bits, 8);
  return d;
}
static uint64_t bits_of(double d) {
  uint64_t b;
  memcpy(&b, &d, 8);
  return b;
}
static float f16_value(uint64_t bits) { return __half2float(__ushort_as_half((unsigned short)bits)); }
static float bf16_value(uint64_t bits) { return __bfloat162float(__ushort_as_bfloat16((unsigned short)bits)); }
static uint64_t f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
static uint64_t bf16_bits(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }

static uint64_t ref_int_op(const TypeInfo& t, dfcclRedOp_t op, uint64_t a, uint64_t b) {
  bool defined;
  const uint64_t r = reduce_reference_int(op, (unsigned)t.size, t.kind == kSigned, a, b, &defined);
  if (!defined) {
    fprintf(stderr, "ref_int_op: op %d\n", (int)op);
    exit(1);
  }
  return r;
}

template <typename Decode, typename Encode, typename Compute>
static uint64_t ref_float_op(dfcclRedOp_t op, uint64_t a, uint64_t b, Decode decode, Encode encode, Compute) {
  const Compute x = decode(a), y = decode(b);
  if (op == dfcclMax) return x > y ? a : b;
  if (op == dfcclMin) return x < y ? a : b;
  return encode(op == dfcclSum ? x + y : x * y);
}

static uint64_t ref_op(const TypeInfo& t, dfcclRedOp_t op, uint64_t a, uint64_t b) {
  switch (t.kind) {
    case kF16: return ref_float_op(op, a, b, f16_value, f16_bits, 0.0f);
    case kBF16: return ref_float_op(op, a, b, bf16_value, bf16_bits, 0.0f);
    /* clang-format off */
    case kF32: return ref_float_op(op, a, b, f32_of, [](float f) { return bits_of(f); }, 0.0f);
    case kF64: return ref_float_op(op, a, b, f64_of, [](double d) { return bits_of(d); }, 0.0);
    /* clang-format on */
    default: return ref_int_op(t, op, a, b);
  }
}

/* Integers of any value, small values and edge values (zero is frequent, so logical ops produce
 * both results); floats mostly small integers, sometimes any finite value. */
static uint64_t random_value(const TypeInfo& t) {
  const uint64_t r = rand64();
  if (is_integer(t)) return reduce_random_integer((unsigned)t.size, r);
  const uint64_t mask = ~0ull >> (64 - 8 * t.size);
  if (r & 3) {
    const float k = (float)((int)(r >> 8) % 17);
    switch (t.kind) {
      case kF16: return f16_bits(k);
      case kBF16: return bf16_bits(k);
      case kF32: return bits_of(k);
      default: return bits_of((double)k);
    }
  }
  for (;;) {
    const uint64_t bits = rand64() & mask;
    const bool finite = t.kind == kF16    ? (bits & 0x7c00) != 0x7c00
                        : t.kind == kBF16 ? (bits & 0x7f80) != 0x7f80
                        : t.kind == kF32  ? std::isfinite(f32_of(bits))
                                          : std::isfinite(f64_of(bits));
    if (finite) return bits;
  }
}

static uint64_t get_element(const unsigned char* p, size_t size) {
  uint64_t v = 0;
  for (size_t k = 0; k < size; k++) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

static void put_element(unsigned char* p, size_t size, uint64_t v) {
  for (size_t k = 0; k < size; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* ================================================================ correctness */

static constexpr size_t kGuard = 256;
enum { S0, S1, D0, D1, kRoles };
static const char* const kRoleNames[] = {"src0", "src1", "dst0", "dst1"};

struct Case {
  const TypeInfo* type;
  dfcclRedOp_t op;
  bool has_src1, has_dst1, in_place; /* in place: dst0 == src0 */
  size_t count;
  unsigned offset[kRoles];
  int threads;
};

struct Buffers {
  char* device[kRoles];
  size_t capacity; /* bytes of each device region */
  std::vector<unsigned char> host[kRoles], before[kRoles];
  std::vector<uint64_t> expected;
};

static int region_of(const Case& c, int role) { return (role == D0 && c.in_place) ? S0 : role; }
static bool role_used(const Case& c, int role) { return (role != S1 || c.has_src1) && (role != D1 || c.has_dst1); }

static void describe(const Case& c, char* text, size_t size) {
  snprintf(text, size, "%s %s src1=%d dst1=%d in_place=%d count=%zu offsets=%u,%u,%u,%u threads=%d", c.type->name,
           df_op_name(c.op), c.has_src1, c.has_dst1, c.in_place, c.count, c.offset[S0], c.offset[S1], c.offset[D0],
           c.offset[D1], c.threads);
}

/* Returns the number of failures (prints the first few). */
static int run_case(Buffers& buf, const Case& c) {
  const size_t size = c.type->size, extent = 2 * kGuard + 16 + c.count * size;
  for (int r = 0; r < kRoles; r++) {
    buf.host[r].resize(extent);
    for (size_t i = 0; i < extent; i += 8) {
      const uint64_t bytes = rand64();
      memcpy(buf.host[r].data() + i, &bytes, std::min<size_t>(8, extent - i));
    }
  }
  auto data = [&](int role) { return buf.host[region_of(c, role)].data() + kGuard + c.offset[role]; };
  buf.expected.resize(c.count);
  for (size_t i = 0; i < c.count; i++) {
    const uint64_t a = random_value(*c.type);
    put_element(data(S0) + i * size, size, a);
    uint64_t v = a;
    if (c.has_src1) {
      const uint64_t b = random_value(*c.type);
      put_element(data(S1) + i * size, size, b);
      v = ref_op(*c.type, c.op, a, b);
    }
    buf.expected[i] = v;
    for (int role = D0; role <= D1; role++) /* poison that differs from the expected value */
      if (region_of(c, role) == role && get_element(data(role) + i * size, size) == v) data(role)[i * size] ^= 0xff;
  }
  for (int r = 0; r < kRoles; r++) {
    buf.before[r] = buf.host[r];
    CHECK_CUDA(cudaMemcpy(buf.device[r], buf.host[r].data(), extent, cudaMemcpyHostToDevice));
  }
  auto device_data = [&](int role) { return buf.device[region_of(c, role)] + kGuard + c.offset[role]; };
  reduce_copy_kernel<<<1, c.threads>>>(c.type->dtype, c.op, device_data(S0), c.has_src1 ? device_data(S1) : nullptr,
                                       device_data(D0), c.has_dst1 ? device_data(D1) : nullptr, c.count);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int r = 0; r < kRoles; r++)
    CHECK_CUDA(cudaMemcpy(buf.host[r].data(), buf.device[r], extent, cudaMemcpyDeviceToHost));

  int failures = 0;
  char text[256];
  auto report = [&](const char* what, long index, uint64_t got, uint64_t want) {
    if (failures++ < 5) {
      describe(c, text, sizeof text);
      fprintf(stderr, "FAIL: %s %s[%ld] = 0x%llx, want 0x%llx\n", text, what, index, (unsigned long long)got,
              (unsigned long long)want);
    }
  };
  for (int role = D0; role <= D1; role++) {
    if (!role_used(c, role)) continue;
    for (size_t i = 0; i < c.count; i++) {
      const uint64_t got = get_element(data(role) + i * size, size);
      if (got != buf.expected[i]) report(kRoleNames[role], (long)i, got, buf.expected[i]);
    }
  }
  for (int r = 0; r < kRoles; r++) { /* outside the destinations' data nothing may change */
    size_t lo = extent, hi = extent;
    for (int role = D0; role <= D1; role++) {
      if (role_used(c, role) && region_of(c, role) == r) {
        lo = kGuard + c.offset[role];
        hi = lo + c.count * size;
      }
    }
    for (size_t i = 0; i < extent; i++)
      if ((i < lo || i >= hi) && buf.host[r][i] != buf.before[r][i])
        report("guard/source byte of", (long)i - (long)kGuard, buf.host[r][i], buf.before[r][i]);
  }
  return failures;
}

static int test_conversions() {
  const size_t n = 1 << 24;
  std::vector<uint32_t> floats(n);
  for (size_t i = 0; i < n; i++) floats[i] = (uint32_t)rand64();
  /* Every fp16 / bf16 value, its float neighbours, and the midpoints between neighbours. */
  size_t k = 0;
  for (uint32_t h = 0; h < 0x10000 && k + 8 < n; h++) {
    const float v = f16_value(h), next = f16_value(h + 1 == 0x10000 ? h : h + 1);
    const float b = bf16_value(h), bnext = bf16_value(h + 1 == 0x10000 ? h : h + 1);
    const float mids[] = {v, (v + next) / 2, b, (b + bnext) / 2};
    for (float m : mids) {
      const uint32_t bits = (uint32_t)bits_of(m);
      floats[k++] = bits;
      floats[k++] = bits + 1;
    }
  }
  uint32_t* d_floats;
  ConversionMismatches* d_mismatches;
  CHECK_CUDA(cudaMalloc(&d_floats, n * sizeof(uint32_t)));
  CHECK_CUDA(cudaMalloc(&d_mismatches, sizeof(ConversionMismatches)));
  CHECK_CUDA(cudaMemcpy(d_floats, floats.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_mismatches, 0, sizeof(ConversionMismatches)));
  conversion_kernel<<<1024, 256>>>(d_floats, n, d_mismatches);
  CHECK_CUDA(cudaGetLastError());
  ConversionMismatches m;
  CHECK_CUDA(cudaMemcpy(&m, d_mismatches, sizeof m, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d_floats));
  CHECK_CUDA(cudaFree(d_mismatches));
  if (m.count) {
    static const char* const kinds[] = {"f16->f32", "bf16->f32", "f32->f16", "f32->bf16"};
    fprintf(stderr, "FAIL: %llu hardware/software conversion mismatches, first %s of 0x%x\n", m.count,
            kinds[m.first_kind], m.first_input);
    return 1;
  }
  printf("conversions: hardware == software for all 16-bit codes and %zu floats\n", n);
  return 0;
}

static const TypeInfo& type_of(dfcclDataType_t dtype) {
  for (const TypeInfo& t : kTypes)
    if (t.dtype == dtype) return t;
  fprintf(stderr, "no type %d\n", (int)dtype);
  exit(1);
}

/* Examples worked out by hand from MPI's definitions (the same as the host unit test's): they
 * check the reference as much as the GPU, on packs and a tail. */
static int test_examples() {
  const size_t n = 40; /* two packs and a tail for 1-byte elements */
  char *a, *b, *d;
  CHECK_CUDA(cudaMalloc(&a, n * 8));
  CHECK_CUDA(cudaMalloc(&b, n * 8));
  CHECK_CUDA(cudaMalloc(&d, n * 8));
  int failures = 0;
  for (const auto& e : reduce_examples) {
    const TypeInfo& t = type_of(e.dtype);
    const uint64_t ref = ref_op(t, e.op, e.a, e.b);
    std::vector<unsigned char> ha(n * t.size), hb(n * t.size), hd(n * t.size);
    for (size_t i = 0; i < n; i++) {
      put_element(ha.data() + i * t.size, t.size, e.a);
      put_element(hb.data() + i * t.size, t.size, e.b);
    }
    CHECK_CUDA(cudaMemcpy(a, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(d, 0x5a, n * 8));
    reduce_copy_kernel<<<1, 96>>>(t.dtype, e.op, a, b, d, nullptr, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(hd.data(), d, hd.size(), cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += get_element(hd.data() + i * t.size, t.size) != e.want;
    if (ref != e.want || wrong) {
      failures++;
      fprintf(stderr,
              "FAIL: example %s %s(0x%llx, 0x%llx): want 0x%llx, reference 0x%llx, %zu of %zu "
              "GPU elements differ (first 0x%llx)\n",
              t.name, df_op_name(e.op), (unsigned long long)e.a, (unsigned long long)e.b, (unsigned long long)e.want,
              (unsigned long long)ref, wrong, n, (unsigned long long)get_element(hd.data(), t.size));
    }
  }
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(d));
  printf("examples: %zu, %d failures\n", sizeof reduce_examples / sizeof reduce_examples[0], failures);
  return failures;
}

static int test_reduce() {
  static const size_t kCounts[] = {0, 1, 17, 1000, 4099, 98309};
  /* Equal offsets (16-byte path with head/tail), element-aligned but different (element path),
   * byte-misaligned (byte path); scaled by the element size where marked. */
  static const unsigned kOffsets[][kRoles] = {{0, 0, 0, 0}, {8, 8, 8, 8}, {0, 1, 2, 3}, {1, 3, 5, 7}};
  static const bool kScaled[] = {false, false, true, false};
  Buffers buf;
  buf.capacity = 2 * kGuard + 16 + 98309 * 8;
  for (int r = 0; r < kRoles; r++) CHECK_CUDA(cudaMalloc(&buf.device[r], buf.capacity));
  int failures = 0;
  long cases = 0;
  for (const TypeInfo& t : kTypes)
    for (int op = 0; op < dfcclNumOps; op++)
      for (int mode = 0; mode < 8; mode++)
        for (size_t count : kCounts)
          for (size_t o = 0; o < sizeof kOffsets / sizeof kOffsets[0]; o++)
            for (int threads : {kThreads, 96}) {
              if (!df_op_defined_for((dfcclRedOp_t)op, t.dtype)) continue;
              if (threads != kThreads && count > 4099) continue;
              Case c{&t, (dfcclRedOp_t)op, (mode & 1) != 0, (mode & 2) != 0, (mode & 4) != 0, count, {}, threads};
              for (int r = 0; r < kRoles; r++)
                c.offset[r] = kScaled[o] ? (unsigned)((kOffsets[o][r] * t.size) % 16) : kOffsets[o][r];
              if (c.in_place) c.offset[D0] = c.offset[S0];
              failures += run_case(buf, c);
              cases++;
              if (failures > 20) {
                fprintf(stderr, "too many failures, stopping\n");
                return 1;
              }
            }
  for (int r = 0; r < kRoles; r++) CHECK_CUDA(cudaFree(buf.device[r]));
  printf("reduce/copy: %ld cases, %d failures\n", cases, failures);
  return failures != 0;
}

/* ================================================================ benchmark */

struct BenchCase {
  const char* name;
  dfcclDataType_t dtype;
  bool has_src1, has_dst1;
  int blocks;
  unsigned dst_offset; /* bytes added to the destinations (misaligned: element path) */
};

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void bench(char* src0, char* src1, char* dst0, char* dst1, size_t bytes, const BenchCase& b) {
  const size_t size = b.dtype == dfcclFloat16 ? 2 : 4;
  const size_t per_block = bytes / size / b.blocks;
  const int kWarmup = 3, kRepeats = 15;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < kWarmup + kRepeats; i++) {
    CHECK_CUDA(cudaEventRecord(start));
    reduce_copy_kernel<<<b.blocks, kThreads>>>(b.dtype, dfcclSum, src0, b.has_src1 ? src1 : nullptr,
                                               dst0 + b.dst_offset, b.has_dst1 ? dst1 + b.dst_offset : nullptr,
                                               per_block);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= kWarmup) ms.push_back(t);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  const double seconds = median(ms) * 1e-3;
  const double moved = (double)per_block * b.blocks * size; /* bytes of one buffer processed */
  const int streams = 1 + b.has_src1 + 1 + b.has_dst1;      /* buffers read or written */
  printf("  %-40s blocks=%2d  %8.3f ms  %7.1f GB/s per buffer  %7.1f GB/s memory traffic"
         "  (%.1f GB/s per block)\n",
         b.name, b.blocks, median(ms), moved / seconds / 1e9, moved * streams / seconds / 1e9,
         moved / seconds / 1e9 / b.blocks);
}

/* The benchmark's fp32 sum result, spot-checked (src0[i] = i % 1000, src1[i] = 1). */
static int check_bench_result(const char* dst, size_t count) {
  const size_t kSamples = 4096;
  for (size_t s = 0; s < kSamples; s++) {
    const size_t i = s == 0 ? count - 1 : (size_t)(rand64() % count);
    float got;
    CHECK_CUDA(cudaMemcpy(&got, dst + i * 4, 4, cudaMemcpyDeviceToHost));
    if (got != (float)(i % 1000) + 1.0f) {
      fprintf(stderr, "FAIL: benchmark dst[%zu] = %g, want %g\n", i, got, (float)(i % 1000) + 1);
      return 1;
    }
  }
  return 0;
}

__global__ void fill_kernel(float* a, float* b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    a[i] = (float)(i % 1000);
    b[i] = 1.0f;
  }
}

static int run_benchmark() {
  const size_t bytes = 256ull << 20;
  char *src0, *src1, *dst0, *dst1;
  CHECK_CUDA(cudaMalloc(&src0, bytes));
  CHECK_CUDA(cudaMalloc(&src1, bytes));
  CHECK_CUDA(cudaMalloc(&dst0, bytes + 16));
  CHECK_CUDA(cudaMalloc(&dst1, bytes + 16));
  fill_kernel<<<1024, 256>>>((float*)src0, (float*)src1, bytes / 4);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaDeviceProp prop;
  int device;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  printf("benchmark on %s, 256 MiB per buffer, %d threads per block, median of 15:\n", prop.name, kThreads);
  static const BenchCase kCases[] = {
      {"fp32 sum src0+src1 -> dst0", dfcclFloat32, true, false, 1, 0},
      {"fp32 sum src0+src1 -> dst0,dst1", dfcclFloat32, true, true, 1, 0},
      {"fp32 sum src0+src1 -> dst0", dfcclFloat32, true, false, 32, 0},
      {"fp32 sum src0+src1 -> dst0,dst1", dfcclFloat32, true, true, 32, 0},
      {"copy src0 -> dst0 (context)", dfcclFloat32, false, false, 1, 0},
      {"copy src0 -> dst0 (context)", dfcclFloat32, false, false, 32, 0},
      {"fp16 sum src0+src1 -> dst0 (context)", dfcclFloat16, true, false, 1, 0},
      {"fp32 sum, dst +4 bytes: element path", dfcclFloat32, true, false, 1, 4},
      {"fp32 sum, dst +4 bytes: element path", dfcclFloat32, true, false, 32, 4},
  };
  int failures = 0;
  for (const BenchCase& b : kCases) {
    bench(src0, src1, dst0, dst1, bytes, b);
    if (b.dtype == dfcclFloat32 && b.has_src1) {
      failures += check_bench_result(dst0 + b.dst_offset, bytes / 4);
      if (b.has_dst1) failures += check_bench_result(dst1 + b.dst_offset, bytes / 4);
    }
  }
  CHECK_CUDA(cudaFree(src0));
  CHECK_CUDA(cudaFree(src1));
  CHECK_CUDA(cudaFree(dst0));
  CHECK_CUDA(cudaFree(dst1));
  return failures;
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && strcmp(only, "--test") != 0 && strcmp(only, "--bench") != 0)) {
    fprintf(stderr, "test_reduce_cuda: expected no argument, --test or --bench, got '%s'\n", argv[argc - 1]);
    return 2;
  }
  const bool test = strcmp(only, "--bench") != 0;
  const bool benchmark = strcmp(only, "--test") != 0;
  int failures = 0;
  if (test) failures += test_conversions() + test_examples() + test_reduce();
  if (benchmark) failures += run_benchmark();
  printf("test_reduce_cuda: %s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
