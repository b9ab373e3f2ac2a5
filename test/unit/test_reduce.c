/*
 * Unit test of df_reduce_copy (core/kernel/reduce.h) and of the fp16/bf16 conversions
 * (core/kernel/dtypes.h) on the host execution target.
 *
 * Build and run:  gcc -std=c11 -O2 -Wall -Wextra -I core -I core/kernel \
 *                     test/unit/test_reduce.c -o build/test_reduce && build/test_reduce
 *
 * Every (dtype, op) pair that df_op_defined_for allows, with and without src1 and dst1, in place
 * or not, for many counts and independent byte offsets of every pointer, with the block split into
 * 1, 3 or 32 simulated threads.  Results are compared bit for bit with a reference written
 * independently of the code under test (its fp16/bf16 rounding searches a table of all
 * representable values; its integer ops follow MPI's definitions).  Guard bytes around every
 * buffer must survive, sources must not change, and -- when no destination aliases a source --
 * every destination byte must be written by exactly one thread.  Integer inputs mix random values
 * with edge values (0, 1, -1, 2, 0x80, the sign bit, ...), which tell signed from unsigned max/min
 * and a logical op's 1 from the operand.  Also: the rule itself (the pairs it refuses), and a few
 * examples worked out by hand from MPI's definitions.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
/* platform.h uses clock_gettime, which strict C11 hides without a POSIX feature macro. */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Abort on an access the GPU would fault on (a 16-byte pack or an element not aligned). */
#define DF_REDUCE_CHECK_ALIGNMENT 1
#include "reduce.h"
#include "reduce_reference.h" /* test/common */

/* ---------------------------------------------------------------- failures */

static char g_context[512]; /* what the test is doing, printed with a failure */

static void fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "test_reduce: FAIL: ");
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n  while testing: %s\n", g_context);
  va_end(args);
  exit(1);
}

/* ---------------------------------------------------------------- random numbers (seeded) */

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint64_t rand64(void) { /* splitmix64 */
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static unsigned rand_below(unsigned n) { return (unsigned)(rand64() % n); }

/* ---------------------------------------------------------------- reference fp16 / bf16
 * Tables of every non-negative finite value, decoded with ldexp from the format's definition; a
 * rounding finds the neighbours by binary search and breaks ties towards the even code. */

#define F16_FINITE_CODES 0x7c00u  /* codes 0 .. 0x7bff  */
#define BF16_FINITE_CODES 0x7f80u /* codes 0 .. 0x7f7f  */

static double g_f16_value[F16_FINITE_CODES];
static double g_bf16_value[BF16_FINITE_CODES];

static double decode_binary(unsigned code, int mantissa_bits, int bias) {
  const unsigned exponent = code >> mantissa_bits;
  const unsigned mantissa = code & ((1u << mantissa_bits) - 1u);
  if (exponent == 0) return ldexp((double)mantissa, 1 - bias - mantissa_bits);
  return ldexp((double)((1u << mantissa_bits) + mantissa), (int)exponent - bias - mantissa_bits);
}

static void build_tables(void) {
  for (unsigned c = 0; c < F16_FINITE_CODES; c++) g_f16_value[c] = decode_binary(c, 10, 15);
  for (unsigned c = 0; c < BF16_FINITE_CODES; c++) g_bf16_value[c] = decode_binary(c, 7, 127);
}

/* Rounds |x| to the nearest code of a table, ties to even; codes >= ncodes mean infinity. */
static unsigned round_to_table(const double* table, unsigned ncodes, double ax) {
  const double largest = table[ncodes - 1];
  const double half_ulp_of_largest = (largest - table[ncodes - 2]) / 2;
  if (ax >= largest + half_ulp_of_largest) return ncodes; /* the tie goes to the even: infinity */
  unsigned lo = 0, hi = ncodes - 1;                       /* invariant: table[lo] <= ax */
  while (lo < hi) {
    const unsigned mid = (lo + hi + 1) / 2;
    if (table[mid] <= ax) lo = mid;
    else hi = mid - 1;
  }
  if (table[lo] == ax || lo == ncodes - 1) return lo;
  const double below = ax - table[lo], above = table[lo + 1] - ax;
  if (below < above) return lo;
  if (above < below) return lo + 1;
  return (lo & 1u) ? lo + 1 : lo;
}

static uint16_t ref_round_f16(double x) {
  if (isnan(x)) return 0x7e00;
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  return sign | (uint16_t)round_to_table(g_f16_value, F16_FINITE_CODES, fabs(x));
}

static uint16_t ref_round_bf16(double x) {
  if (isnan(x)) return 0x7fc0;
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  return sign | (uint16_t)round_to_table(g_bf16_value, BF16_FINITE_CODES, fabs(x));
}

static double ref_decode_f16(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const unsigned code = h & 0x7fffu;
  if (code < F16_FINITE_CODES) return sign * g_f16_value[code];
  return code == F16_FINITE_CODES ? sign * INFINITY : NAN;
}

static double ref_decode_bf16(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const unsigned code = h & 0x7fffu;
  if (code < BF16_FINITE_CODES) return sign * g_bf16_value[code];
  return code == BF16_FINITE_CODES ? sign * INFINITY : NAN;
}

static bool f16_is_nan(uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }

static float float_of_bits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
static uint32_t bits_of_float(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static double double_of_bits(uint64_t bits) {
  double d;
  memcpy(&d, &bits, 8);
  return d;
}
static uint64_t bits_of_double(double d) {
  uint64_t b;
  memcpy(&b, &d, 8);
  return b;
}

/* ---------------------------------------------------------------- conversion tests */

static void check_f32_to_f16(float f) {
  const uint16_t got = df_f32_to_f16_rn(f), want = ref_round_f16(f);
  if (isnan(f) ? !f16_is_nan(got) : got != want)
    fail("df_f32_to_f16_rn(%a) = 0x%04x, want 0x%04x", (double)f, got, want);
}

static void check_f32_to_bf16(float f) {
  const uint16_t got = df_f32_to_bf16_rn(f), want = ref_round_bf16(f);
  if (isnan(f) ? !bf16_is_nan(got) : got != want)
    fail("df_f32_to_bf16_rn(%a) = 0x%04x, want 0x%04x", (double)f, got, want);
}

/* Floats just below, at and just above x. */
static void check_rounding_around(double x) {
  const float f = (float)x; /* callers pass values exact in float */
  check_f32_to_f16(f);
  check_f32_to_f16(nextafterf(f, -INFINITY));
  check_f32_to_f16(nextafterf(f, INFINITY));
  check_f32_to_bf16(f);
  check_f32_to_bf16(nextafterf(f, -INFINITY));
  check_f32_to_bf16(nextafterf(f, INFINITY));
}

static void test_conversions(void) {
  snprintf(g_context, sizeof g_context, "fp16/bf16 <-> float conversions");
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    const double want16 = ref_decode_f16((uint16_t)h), wantb = ref_decode_bf16((uint16_t)h);
    const float got16 = df_f16_to_f32((uint16_t)h), gotb = df_bf16_to_f32((uint16_t)h);
    if (isnan(want16) ? !isnan(got16) : bits_of_double(got16) != bits_of_double(want16))
      fail("df_f16_to_f32(0x%04x) = %a, want %a", h, (double)got16, want16);
    if (isnan(wantb) ? !isnan(gotb) : bits_of_double(gotb) != bits_of_double(wantb))
      fail("df_bf16_to_f32(0x%04x) = %a, want %a", h, (double)gotb, wantb);
  }
  /* Every representable value and every midpoint between neighbours (ties), both signs. */
  for (int sign = 1; sign >= -1; sign -= 2) {
    for (unsigned c = 0; c + 1 < F16_FINITE_CODES; c++) {
      check_rounding_around(sign * g_f16_value[c]);
      check_rounding_around(sign * (g_f16_value[c] + g_f16_value[c + 1]) / 2);
    }
    for (unsigned c = 0; c + 1 < BF16_FINITE_CODES; c++) {
      check_rounding_around(sign * g_bf16_value[c]);
      check_rounding_around(sign * (g_bf16_value[c] + g_bf16_value[c + 1]) / 2);
    }
    check_rounding_around(sign * 65504.0); /* fp16 overflow boundary: 65520 ties to infinity */
    check_rounding_around(sign * 65520.0);
    check_rounding_around(sign * ldexp(1, -25)); /* smallest fp16 subnormal / 2 ties to zero */
    /* bf16 overflow boundary: largest finite + half an ulp ties to infinity */
    check_rounding_around(sign * (g_bf16_value[BF16_FINITE_CODES - 1] + ldexp(1, 119)));
    check_rounding_around(sign * (double)FLT_MAX);
    check_rounding_around(sign * INFINITY);
  }
  check_f32_to_f16(NAN);
  check_f32_to_bf16(NAN);
  for (int i = 0; i < 1000000; i++) {
    const float f = float_of_bits((uint32_t)rand64());
    check_f32_to_f16(f);
    check_f32_to_bf16(f);
  }
}

/* ---------------------------------------------------------------- reference reduction */

typedef enum { KIND_SIGNED, KIND_UNSIGNED, KIND_F16, KIND_BF16, KIND_F32, KIND_F64 } kind_t;

typedef struct {
  dfcclDataType_t dtype;
  const char* name;
  size_t size;
  kind_t kind;
} type_info;

static const type_info g_types[] = {
    {dfcclInt8, "int8", 1, KIND_SIGNED},   {dfcclUint8, "uint8", 1, KIND_UNSIGNED},
    {dfcclInt16, "int16", 2, KIND_SIGNED}, {dfcclUint16, "uint16", 2, KIND_UNSIGNED},
    {dfcclInt32, "int32", 4, KIND_SIGNED}, {dfcclUint32, "uint32", 4, KIND_UNSIGNED},
    {dfcclInt64, "int64", 8, KIND_SIGNED}, {dfcclUint64, "uint64", 8, KIND_UNSIGNED},
    {dfcclFloat16, "fp16", 2, KIND_F16},   {dfcclBfloat16, "bf16", 2, KIND_BF16},
    {dfcclFloat32, "fp32", 4, KIND_F32},   {dfcclFloat64, "fp64", 8, KIND_F64},
};
#define NTYPES (sizeof g_types / sizeof g_types[0])
_Static_assert(NTYPES == dfcclNumTypes, "every type");

static bool is_integer(const type_info* t) { return t->kind == KIND_SIGNED || t->kind == KIND_UNSIGNED; }

static uint64_t get_element(const unsigned char* p, size_t size) {
  uint64_t v = 0;
  for (size_t k = 0; k < size; k++) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

static void put_element(unsigned char* p, size_t size, uint64_t v) {
  for (size_t k = 0; k < size; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static double ref_decode(const type_info* t, uint64_t bits) {
  switch (t->kind) {
    case KIND_F16: return ref_decode_f16((uint16_t)bits);
    case KIND_BF16: return ref_decode_bf16((uint16_t)bits);
    case KIND_F32: return float_of_bits((uint32_t)bits);
    default: return double_of_bits(bits);
  }
}

static uint64_t ref_int_op(const type_info* t, dfcclRedOp_t op, uint64_t a, uint64_t b) {
  bool defined;
  const uint64_t r = reduce_reference_int(op, (unsigned)t->size, t->kind == KIND_SIGNED, a, b, &defined);
  if (!defined) fail("ref_int_op: op %d", (int)op);
  return r;
}

/* Floats: the exact result in double (or, for sums of bf16, a double rounding that is
 * innocuous since 53 >= 2*24+2), rounded to float, then to the 16-bit format. */
static uint64_t ref_float_op(const type_info* t, dfcclRedOp_t op, uint64_t a, uint64_t b) {
  const double x = ref_decode(t, a), y = ref_decode(t, b);
  if (op == dfcclMax) return x > y ? a : b;
  if (op == dfcclMin) return x < y ? a : b;
  const double exact = op == dfcclSum ? x + y : x * y;
  switch (t->kind) {
    case KIND_F64: return bits_of_double(exact);
    case KIND_F32: return bits_of_float((float)exact);
    case KIND_F16: return ref_round_f16((float)exact);
    default: return ref_round_bf16((float)exact);
  }
}

static uint64_t ref_op(const type_info* t, dfcclRedOp_t op, uint64_t a, uint64_t b) {
  return is_integer(t) ? ref_int_op(t, op, a, b) : ref_float_op(t, op, a, b);
}

/* Inputs: integers of any value, small values and edge values (zero is frequent, so logical ops
 * produce both results); floats mostly small integers (so that sums and products are exact and
 * ties with max/min occur), sometimes any finite value. */
static uint64_t random_value(const type_info* t) {
  const uint64_t r = rand64();
  if (is_integer(t)) return reduce_random_integer((unsigned)t->size, r);
  if (r & 3) {
    const double k = (double)((int)(r >> 8) % 17);
    switch (t->kind) {
      case KIND_F16: return ref_round_f16(k);
      case KIND_BF16: return ref_round_bf16(k);
      case KIND_F32: return bits_of_float((float)k);
      default: return bits_of_double(k);
    }
  }
  for (;;) {
    const uint64_t bits = rand64();
    switch (t->kind) {
      case KIND_F16:
        if ((bits & 0x7c00u) != 0x7c00u) return bits & 0xffffu;
        break;
      case KIND_BF16:
        if ((bits & 0x7f80u) != 0x7f80u) return bits & 0xffffu;
        break;
      case KIND_F32:
        if (isfinite(float_of_bits((uint32_t)bits))) return bits & 0xffffffffu;
        break;
      default:
        if (isfinite(double_of_bits(bits))) return bits;
        break;
    }
  }
}

/* ---------------------------------------------------------------- buffers */

#define GUARD 64
#define MAX_COUNT 4097
#define REGION (GUARD + 16 + MAX_COUNT * 8 + GUARD)

enum { S0, S1, D0, D1, NROLES };
static const char* const g_role_names[] = {"src0", "src1", "dst0", "dst1"};

typedef struct {
  unsigned char region[NROLES][REGION]; /* buffers with guard bytes around them */
  unsigned char before[NROLES][REGION]; /* their contents before the call */
  unsigned char poison[NROLES][REGION]; /* destination contents before each thread's call */
  uint64_t expected[MAX_COUNT];
  int owner[2][MAX_COUNT * 8]; /* thread that wrote each dst0 / dst1 byte */
} buffers;

static buffers g_buf;

/* Aliasing of destinations to sources: which source (S0, S1) each destination is, or -1. */
typedef struct {
  const char* name;
  int d0, d1;
  bool needs_src1, needs_dst1;
} alias_mode;

static const alias_mode g_aliases[] = {
    {"separate", -1, -1, false, false}, {"dst0=src0", S0, -1, false, false},
    {"dst0=src1", S1, -1, true, false}, {"dst1=src0", -1, S0, false, true},
    {"dst1=src1", -1, S1, true, true},  {"dst0=src0,dst1=src1", S0, S1, true, true},
};
#define NALIASES (sizeof g_aliases / sizeof g_aliases[0])

typedef struct {
  const type_info* type;
  dfcclRedOp_t op;
  bool has_src1, has_dst1;
  const alias_mode* alias;
  size_t count;
  unsigned offset[NROLES];
  int nthreads;
} test_case;

/* The region (buffer index) a role uses: a destination aliased to a source uses its region. */
static int region_of(const test_case* tc, int role) {
  if (role == D0 && tc->alias->d0 >= 0) return tc->alias->d0;
  if (role == D1 && tc->alias->d1 >= 0) return tc->alias->d1;
  return role;
}

static unsigned char* data_of(const test_case* tc, int role) {
  return g_buf.region[region_of(tc, role)] + GUARD + tc->offset[role];
}

static bool role_used(const test_case* tc, int role) {
  return (role != S1 || tc->has_src1) && (role != D1 || tc->has_dst1);
}

static bool is_aliased(const test_case* tc) { return tc->alias->d0 >= 0 || tc->alias->d1 >= 0; }

/* The bytes of a region a case can reach: guards, the largest offset, the data. */
static size_t extent_of(const test_case* tc) { return 2 * GUARD + 16 + tc->count * tc->type->size; }

/* Fills sources with inputs and separate destinations with poison that differs from the
 * expected value in every byte, and computes the expected values. */
static void prepare(const test_case* tc) {
  const size_t size = tc->type->size, extent = extent_of(tc);
  for (int r = 0; r < NROLES; r++) {
    for (size_t i = 0; i < extent; i += 8) {
      const uint64_t bytes = rand64();
      memcpy(&g_buf.region[r][i], &bytes, 8);
    }
  }
  for (size_t i = 0; i < tc->count; i++) {
    const uint64_t a = random_value(tc->type);
    put_element(data_of(tc, S0) + i * size, size, a);
    uint64_t v = a;
    if (tc->has_src1) {
      const uint64_t b = random_value(tc->type);
      put_element(data_of(tc, S1) + i * size, size, b);
      v = ref_op(tc->type, tc->op, a, b);
    }
    g_buf.expected[i] = v;
    for (int role = D0; role <= D1; role++) {
      if (!role_used(tc, role) || region_of(tc, role) != role) continue;
      unsigned char* p = data_of(tc, role) + i * size;
      for (size_t k = 0; k < size; k++)
        if (p[k] == (unsigned char)(v >> (8 * k))) p[k] ^= 0xff;
    }
  }
  for (int r = 0; r < NROLES; r++) {
    memcpy(g_buf.before[r], g_buf.region[r], extent);
    memcpy(g_buf.poison[r], g_buf.region[r], extent);
  }
}

static void call_thread(const test_case* tc, int tid) {
  const df_block block = {tid, tc->nthreads, 0, 1};
  df_reduce_copy(&block, tc->type->dtype, tc->op, data_of(tc, S0), tc->has_src1 ? data_of(tc, S1) : NULL,
                 data_of(tc, D0), tc->has_dst1 ? data_of(tc, D1) : NULL, tc->count);
}

/* Everything outside the destinations' data must be as before the call. */
static void check_range_untouched(const test_case* tc, int r, size_t lo, size_t hi) {
  if (memcmp(g_buf.region[r] + lo, g_buf.before[r] + lo, hi - lo) == 0) return;
  for (size_t i = lo; i < hi; i++) {
    if (g_buf.region[r][i] != g_buf.before[r][i])
      fail("byte %ld relative to the start of region %s's data was modified (0x%02x -> 0x%02x)",
           (long)i - GUARD - (long)tc->offset[r], g_role_names[r], g_buf.before[r][i], g_buf.region[r][i]);
  }
}

static void check_untouched(const test_case* tc) {
  const size_t extent = extent_of(tc);
  for (int r = 0; r < NROLES; r++) {
    size_t lo = extent, hi = extent; /* the written data range of this region, if any */
    for (int role = D0; role <= D1; role++) {
      if (role_used(tc, role) && region_of(tc, role) == r) {
        lo = GUARD + tc->offset[role];
        hi = lo + tc->count * tc->type->size;
      }
    }
    check_range_untouched(tc, r, 0, lo);
    check_range_untouched(tc, r, hi, extent);
  }
}

static void check_value(const test_case* tc, int role, size_t i) {
  const uint64_t got = get_element(data_of(tc, role) + i * tc->type->size, tc->type->size);
  if (got != g_buf.expected[i])
    fail("%s[%zu] = 0x%llx, want 0x%llx", g_role_names[role], i, (unsigned long long)got,
         (unsigned long long)g_buf.expected[i]);
}

/* Separate destinations: each thread runs on poisoned destinations; the bytes it changed are its
 * own (a thread's share is whole elements, or bytes for the bitwise ops), each must be the
 * expected byte, and no byte may belong to two threads or to none. */
static void run_separate(const test_case* tc) {
  const size_t size = tc->type->size, nbytes = tc->count * size;
  for (int d = 0; d < 2; d++)
    for (size_t j = 0; j < nbytes; j++) g_buf.owner[d][j] = -1;
  for (int tid = 0; tid < tc->nthreads; tid++) {
    memcpy(g_buf.region[D0], g_buf.poison[D0], extent_of(tc));
    memcpy(g_buf.region[D1], g_buf.poison[D1], extent_of(tc));
    call_thread(tc, tid);
    for (int role = D0; role <= D1; role++) {
      if (!role_used(tc, role)) continue;
      const unsigned char* now = data_of(tc, role);
      const unsigned char* was = g_buf.poison[role] + GUARD + tc->offset[role];
      for (size_t j = 0; j < nbytes; j++) {
        if (now[j] == was[j]) continue;
        const size_t i = j / size, k = j % size;
        int* owner = &g_buf.owner[role - D0][j];
        if (*owner >= 0) fail("%s[%zu] byte %zu written by threads %d and %d", g_role_names[role], i, k, *owner, tid);
        *owner = tid;
        const unsigned char want = (unsigned char)(g_buf.expected[i] >> (8 * k));
        if (now[j] != want)
          fail("%s[%zu] byte %zu = 0x%02x, want 0x%02x (element 0x%llx)", g_role_names[role], i, k, now[j], want,
               (unsigned long long)g_buf.expected[i]);
      }
    }
    check_untouched(tc);
  }
  for (int role = D0; role <= D1; role++) {
    if (!role_used(tc, role)) continue;
    for (size_t j = 0; j < nbytes; j++)
      if (g_buf.owner[role - D0][j] < 0) fail("%s[%zu] byte %zu never written", g_role_names[role], j / size, j % size);
  }
}

/* In place: the threads run one after the other on the same buffers; an element processed twice
 * (or never) shows up as a wrong value unless the operation happens to hide it. */
static void run_aliased(const test_case* tc) {
  for (int tid = 0; tid < tc->nthreads; tid++) call_thread(tc, tid);
  for (int role = D0; role <= D1; role++) {
    if (!role_used(tc, role)) continue;
    for (size_t i = 0; i < tc->count; i++) check_value(tc, role, i);
  }
  check_untouched(tc);
}

static void run_case(const test_case* tc) {
  snprintf(g_context, sizeof g_context,
           "%s %s src1=%s dst1=%s %s count=%zu offsets(src0,src1,dst0,dst1)=%u,%u,%u,%u "
           "threads=%d",
           tc->type->name, df_op_name(tc->op), tc->has_src1 ? "yes" : "no", tc->has_dst1 ? "yes" : "no",
           tc->alias->name, tc->count, tc->offset[S0], tc->offset[S1], tc->offset[D0], tc->offset[D1], tc->nthreads);
  prepare(tc);
  if (is_aliased(tc)) run_aliased(tc);
  else run_separate(tc);
}

/* ---------------------------------------------------------------- the sweep */

static const size_t g_counts[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 1023, 4097};
static const int g_thread_counts[] = {1, 3, 32};

/* Offset tuples: all equal (head/pack/tail path), independent element multiples (element path),
 * independent bytes (byte path).  Aliased destinations take their source's offset. */
static void choose_offsets(test_case* tc, unsigned variant) {
  const unsigned elements_per_16 = (unsigned)(16 / tc->type->size);
  for (int role = 0; role < NROLES; role++) {
    if (variant < 16) tc->offset[role] = variant;
    else if (variant < 24) tc->offset[role] = (unsigned)tc->type->size * rand_below(elements_per_16);
    else tc->offset[role] = rand_below(16);
  }
  if (tc->alias->d0 >= 0) tc->offset[D0] = tc->offset[tc->alias->d0];
  if (tc->alias->d1 >= 0) tc->offset[D1] = tc->offset[tc->alias->d1];
}

/* A copy ignores op: one op of each family, and a second arithmetic one, are enough to show it. */
static bool copy_tried_with(dfcclRedOp_t op) {
  return op == dfcclSum || op == dfcclMin || op == dfcclBand || op == dfcclLand;
}

static unsigned long run_sweep(void) {
  unsigned long cases = 0;
  for (size_t t = 0; t < NTYPES; t++)
    for (int op = 0; op < dfcclNumOps; op++)
      for (int has_src1 = 0; has_src1 <= 1; has_src1++)
        for (int has_dst1 = 0; has_dst1 <= 1; has_dst1++)
          for (size_t a = 0; a < NALIASES; a++) {
            if (!df_op_defined_for((dfcclRedOp_t)op, g_types[t].dtype)) continue;
            if (!has_src1 && !copy_tried_with((dfcclRedOp_t)op)) continue;
            const alias_mode* alias = &g_aliases[a];
            if ((alias->needs_src1 && !has_src1) || (alias->needs_dst1 && !has_dst1)) continue;
            for (size_t c = 0; c < sizeof g_counts / sizeof g_counts[0]; c++) {
              /* Large counts take fewer offset variants to keep the test fast. */
              const unsigned nvariants = g_counts[c] > 100 ? 8 : 32;
              for (unsigned v = 0; v < nvariants; v++) {
                for (size_t n = 0; n < sizeof g_thread_counts / sizeof g_thread_counts[0]; n++) {
                  test_case tc = {&g_types[t], (dfcclRedOp_t)op, has_src1,     has_dst1,
                                  alias,       g_counts[c],      {0, 0, 0, 0}, g_thread_counts[n]};
                  /* Large counts: variants 0, 8 (equal), then element and byte offsets. */
                  const unsigned variant = g_counts[c] > 100 ? (v < 2 ? v * 8 : 14 + 2 * v) : v;
                  choose_offsets(&tc, variant);
                  run_case(&tc);
                  cases++;
                }
              }
            }
          }
  return cases;
}

/* ---------------------------------------------------------------- the rule and worked examples */

/* df_op_defined_for against MPI's rule stated here independently: sum, prod, max, min for every
 * type; band, bor, bxor, land, lor, lxor for the integers only; nothing out of range. */
static unsigned test_rule(void) {
  static const dfcclRedOp_t arithmetic[] = {dfcclSum, dfcclProd, dfcclMax, dfcclMin};
  unsigned allowed = 0;
  for (size_t t = 0; t < NTYPES; t++) {
    for (int op = 0; op < dfcclNumOps; op++) {
      bool is_arithmetic = false;
      for (size_t k = 0; k < sizeof arithmetic / sizeof arithmetic[0]; k++) is_arithmetic |= op == (int)arithmetic[k];
      const bool want = is_arithmetic || is_integer(&g_types[t]);
      snprintf(g_context, sizeof g_context, "the rule for %s %s", g_types[t].name, df_op_name(op));
      if (df_op_defined_for((dfcclRedOp_t)op, g_types[t].dtype) != want)
        fail("df_op_defined_for says %s, MPI says %s", want ? "no" : "yes", want ? "yes" : "no");
      allowed += want;
    }
    if (df_op_defined_for(dfcclNumOps, g_types[t].dtype) || df_op_defined_for((dfcclRedOp_t)-1, g_types[t].dtype))
      fail("an op out of range is allowed for %s", g_types[t].name);
  }
  if (df_op_defined_for(dfcclSum, dfcclNumTypes) || df_op_defined_for(dfcclBand, (dfcclDataType_t)-1))
    fail("a type out of range is allowed");
  return allowed;
}

static const type_info* type_of(dfcclDataType_t dtype) {
  for (size_t t = 0; t < NTYPES; t++)
    if (g_types[t].dtype == dtype) return &g_types[t];
  fail("no type %d", (int)dtype);
  return NULL;
}

/* Examples worked out by hand from MPI's definitions: they check the reference above as much as
 * the code under test, in both the element and the pack path. */
static void test_examples(void) {
  enum { N = 40 }; /* two packs and a tail for 1-byte elements */
  for (size_t e = 0; e < sizeof reduce_examples / sizeof reduce_examples[0]; e++) {
    const type_info* t = type_of(reduce_examples[e].dtype);
    snprintf(g_context, sizeof g_context, "example %s %s(0x%llx, 0x%llx)", t->name, df_op_name(reduce_examples[e].op),
             (unsigned long long)reduce_examples[e].a, (unsigned long long)reduce_examples[e].b);
    const uint64_t ref = ref_op(t, reduce_examples[e].op, reduce_examples[e].a, reduce_examples[e].b);
    if (ref != reduce_examples[e].want)
      fail("the test's reference gives 0x%llx, want 0x%llx", (unsigned long long)ref,
           (unsigned long long)reduce_examples[e].want);
    DF_ALIGN16 unsigned char a[N * 8], b[N * 8], d[N * 8];
    for (size_t i = 0; i < N; i++) {
      put_element(a + i * t->size, t->size, reduce_examples[e].a);
      put_element(b + i * t->size, t->size, reduce_examples[e].b);
    }
    memset(d, 0x5a, sizeof d);
    const df_block block = {0, 1, 0, 1};
    df_reduce_copy(&block, t->dtype, reduce_examples[e].op, a, b, d, NULL, N);
    for (size_t i = 0; i < N; i++) {
      const uint64_t got = get_element(d + i * t->size, t->size);
      if (got != reduce_examples[e].want)
        fail("df_reduce_copy gives 0x%llx at element %zu, want 0x%llx", (unsigned long long)got, i,
             (unsigned long long)reduce_examples[e].want);
    }
  }
}

int main(void) {
  build_tables();
  test_conversions();
  const unsigned pairs = test_rule();
  test_examples();
  const unsigned long cases = run_sweep();
  printf("test_reduce: OK (conversions; the rule: %u of %d type x op pairs; examples; %lu reduce/copy "
         "cases)\n",
         pairs, (int)(dfcclNumTypes * dfcclNumOps), cases);
  return 0;
}
