/*
 * coll/dfccl under the calls of ordinary MPI programs: every predefined datatype and op, datatypes
 * with and without gaps, communicators of one rank, and ranks that pass different kinds of memory.
 * Every result is checked exactly, and the component's MPI_T counters must say how each call ran:
 * routed through DFCCL, fallen back to the previous component, or done by a local copy.
 *
 *   test_coverage [-m types|layouts|single|mixed|all] [-d host|device] [-w watchdog_s]
 *
 *   -d: the memory of the buffers.  host: malloc.  device: dfcclMemAlloc of DFCCL_TARGET's target
 *       (a GPU's memory, or on the host target the host target's device memory, which the component
 *       in coll_dfccl_host_target=simulated takes for device memory, as on a GPU machine).
 *   types    every predefined datatype with every op MPI defines for it, through MPI_Allreduce (out
 *            of place and in place), MPI_Reduce and MPI_Reduce_scatter_block; routed unless DFCCL
 *            has no equivalent (long double, complex products).  MPI_Bcast and MPI_Allgather of
 *            every predefined datatype: they move bytes, so every one is routed.
 *   layouts  MPI_Bcast and MPI_Allgather with derived datatypes: contiguous ones (MPI_Type_contiguous,
 *            a struct without gaps) are routed; one with gaps on every rank falls back; one rank
 *            describing the bytes with gaps where the others do not (legal MPI) -- the first call of
 *            the signature falls back everywhere, and a signature that every rank set up contiguous
 *            stays routed when one rank later uses gaps (its elements are packed).
 *   single   MPI_COMM_SELF and a split that leaves every rank alone: the six collectives in their
 *            three forms, in and out of place: local copies, never a fallback.
 *   mixed    (with -d device) one rank passes host memory where the others pass device memory: for a
 *            new signature of a blocking call every rank falls back (and none hangs); a nonblocking
 *            call, which cannot wait to agree, is routed (that rank on a copy), and so is every call
 *            of a signature the ranks set up on device memory.  Blocking and nonblocking.
 *
 * Run with mpirun.sh through coll/dfccl (see coverage.sh).  The last line on rank 0 is "PASS ..." or
 * "FAIL ..."; the exit status is nonzero on failure.  A watchdog turns a hang into a failure.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <complex.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dfccl.h>

#include "cudart.h" /* the CUDA runtime at run time, on GPU machines; select_node_gpu */
#include "elements.h"
#include "mpi_options.h" /* test/common */

static int rank, nranks, failures;
static bool device_memory;

#define REPORT(...)                                    \
  do {                                                 \
    if (failures++ < 40) fprintf(stderr, __VA_ARGS__); \
  } while (0)

/* ---- memory ----------------------------------------------------------------------------------------- */

/* A buffer in the memory under test, or in host memory (host == true). */
static void* buf_alloc(size_t bytes, bool host) {
  if (host || !device_memory) {
    void* p = malloc(bytes ? bytes : 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
    return p;
  }
  void* p = NULL;
  dfcclResult_t r = dfcclMemAlloc(dfcclTargetDefault, -1, bytes, &p);
  if (r != dfcclSuccess) {
    fprintf(stderr, "rank %d: dfcclMemAlloc(%zu): %s\n", rank, bytes, dfcclGetLastErrorMessage());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

static void buf_free(void* p) {
  dfcclMemoryKind_t kind;
  int device;
  if (dfcclPointerGetKind(p, &kind, &device) == dfcclSuccess && kind != dfcclMemoryHost) (void)dfcclMemFree(p);
  else free(p);
}

static void put_bytes(void* buf, const void* host, size_t bytes) {
  if (dfcclCopy(buf, host, bytes) != dfcclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
}

static void get_bytes(void* host, const void* buf, size_t bytes) {
  if (dfcclCopy(host, buf, bytes) != dfcclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- datatypes and ops ------------------------------------------------------------------------------- */

typedef enum { C_INT, C_UINT, C_FLOAT, C_BOOL, C_BYTE, C_COMPLEX, C_LDOUBLE, C_MOVE } class_t;
typedef struct {
  MPI_Datatype dt;
  const char* name;
  class_t cls;
} dtype_t;

/* clang-format off */
#define T(dt, cls) {dt, #dt, cls}
static const dtype_t types[] = {
    T(MPI_CHAR, C_INT),           T(MPI_SIGNED_CHAR, C_INT),       T(MPI_UNSIGNED_CHAR, C_UINT),
    T(MPI_BYTE, C_BYTE),          T(MPI_SHORT, C_INT),             T(MPI_UNSIGNED_SHORT, C_UINT),
    T(MPI_INT, C_INT),            T(MPI_UNSIGNED, C_UINT),         T(MPI_LONG, C_INT),
    T(MPI_UNSIGNED_LONG, C_UINT), T(MPI_LONG_LONG, C_INT),         T(MPI_UNSIGNED_LONG_LONG, C_UINT),
    T(MPI_INT8_T, C_INT),         T(MPI_UINT8_T, C_UINT),          T(MPI_INT16_T, C_INT),
    T(MPI_UINT16_T, C_UINT),      T(MPI_INT32_T, C_INT),           T(MPI_UINT32_T, C_UINT),
    T(MPI_INT64_T, C_INT),        T(MPI_UINT64_T, C_UINT),         T(MPI_AINT, C_INT),
    T(MPI_OFFSET, C_UINT),        T(MPI_COUNT, C_INT),             T(MPI_FLOAT, C_FLOAT),
    T(MPI_DOUBLE, C_FLOAT),       T(MPI_C_BOOL, C_BOOL),           T(MPI_C_FLOAT_COMPLEX, C_COMPLEX),
    T(MPI_C_DOUBLE_COMPLEX, C_COMPLEX), T(MPI_LONG_DOUBLE, C_LDOUBLE), T(MPI_WCHAR, C_MOVE),
    T(MPI_2INT, C_MOVE),          T(MPI_FLOAT_INT, C_MOVE),
};
/* clang-format on */
#undef T

typedef struct {
  MPI_Op op;
  const char* name;
} op_t;
static const op_t ops[] = {{MPI_SUM, "SUM"},   {MPI_PROD, "PROD"}, {MPI_MAX, "MAX"},   {MPI_MIN, "MIN"},
                           {MPI_BAND, "BAND"}, {MPI_BOR, "BOR"},   {MPI_BXOR, "BXOR"}, {MPI_LAND, "LAND"},
                           {MPI_LOR, "LOR"},   {MPI_LXOR, "LXOR"}};
enum { SUM, PROD, MAX, MIN, BAND, BOR, BXOR, LAND, LOR, LXOR, NOPS };

/* MPI's table of which op takes which datatype (MPI 3.1 section 5.9.2). */
static bool op_defined(const dtype_t* t, int op) {
  bool arithmetic = op <= MIN, bitwise = op >= BAND && op <= BXOR, logical = op >= LAND;
  switch (t->cls) {
    case C_INT:
    case C_UINT: return true;
    case C_FLOAT:
    case C_LDOUBLE: return arithmetic;
    case C_COMPLEX: return op == SUM || op == PROD;
    case C_BOOL: return logical;
    case C_BYTE: return bitwise;
    default: return false;
  }
  (void)bitwise;
}

/* DFCCL reduces it (the rest is staged): what the component's datatype table promises. */
static bool dfccl_reduces(const dtype_t* t, int op) {
  return t->cls != C_LDOUBLE && !(t->cls == C_COMPLEX && op != SUM);
}

static size_t type_size(MPI_Datatype dt) {
  int size;
  CHECK_MPI(MPI_Type_size(dt, &size));
  return (size_t)size;
}

/* The value element i of rank r holds for op: small integers whose results are exact in every
 * type, and that tell signed from unsigned comparisons apart. */
static long long value_of(const dtype_t* t, int op, int r, size_t i) {
  unsigned k = (unsigned)(i * 7 + (size_t)r * 5);
  switch (op) {
    case PROD: return (k % 3 == 0) ? 2 : 1;
    case BAND:
    case BOR:
    case BXOR: return (long long)(k % 16);
    case LAND:
    case LOR:
    case LXOR: return t->cls == C_BOOL ? (long long)(k % 2) : (long long)(k % 3);
    default: return t->cls == C_UINT || t->cls == C_BYTE ? (long long)(k % 8) : (long long)(k % 8) - 4;
  }
}

static long long combine(int op, long long a, long long b) {
  switch (op) {
    case SUM: return a + b;
    case PROD: return a * b;
    case MAX: return a > b ? a : b;
    case MIN: return a < b ? a : b;
    case BAND: return a & b;
    case BOR: return a | b;
    case BXOR: return a ^ b;
    case LAND: return (a != 0) && (b != 0);
    case LOR: return (a != 0) || (b != 0);
    default: return (a != 0) != (b != 0);
  }
}

/* Writes v as element i of type t (a complex number is v + (v+1)i). */
static void store(const dtype_t* t, void* buf, size_t i, long long v) {
  size_t size = type_size(t->dt);
  char* p = (char*)buf + i * size;
  switch (t->cls) {
    case C_FLOAT:
      if (size == 4) *(float*)p = (float)v;
      else *(double*)p = (double)v;
      return;
    case C_LDOUBLE: *(long double*)p = (long double)v; return;
    case C_COMPLEX:
      if (size == 8) *(float _Complex*)p = (float)v + (float)(v + 1) * I;
      else *(double _Complex*)p = (double)v + (double)(v + 1) * I;
      return;
    case C_BOOL: *(_Bool*)p = v != 0; return;
    default:
      switch (size) {
        case 1: *(uint8_t*)p = (uint8_t)v; return;
        case 2: *(uint16_t*)p = (uint16_t)v; return;
        case 4: *(uint32_t*)p = (uint32_t)v; return;
        default: *(uint64_t*)p = (uint64_t)v; return;
      }
  }
}

/* The complex result of op over ranks 0..n-1 of element i (sum or product of v + (v+1)i). */
static double _Complex complex_result(const dtype_t* t, int op, int n, size_t i) {
  double _Complex acc = op == SUM ? 0 : 1;
  for (int r = 0; r < n; r++) {
    long long v = value_of(t, op, r, i);
    double _Complex z = (double)v + (double)(v + 1) * I;
    acc = op == SUM ? acc + z : acc * z;
  }
  return acc;
}

/* Fills `count` elements the way rank r does for op. */
static void fill(const dtype_t* t, int op, int r, void* host, size_t count) {
  for (size_t i = 0; i < count; i++) store(t, host, i, value_of(t, op, r, i));
}

/* The expected result of op over ranks 0..n-1, element by element, in memory form. */
static void expected(const dtype_t* t, int op, int n, void* host, size_t count) {
  for (size_t i = 0; i < count; i++) {
    if (t->cls == C_COMPLEX) {
      double _Complex z = complex_result(t, op, n, i);
      char* p = (char*)host + i * type_size(t->dt);
      if (type_size(t->dt) == 8) *(float _Complex*)p = (float _Complex)z;
      else *(double _Complex*)p = z;
      continue;
    }
    long long acc = value_of(t, op, 0, i);
    for (int r = 1; r < n; r++) acc = combine(op, acc, value_of(t, op, r, i));
    store(t, host, i, acc);
  }
}

static void compare(const char* what, const dtype_t* t, const void* got, const void* want, size_t count) {
  size_t size = type_size(t->dt);
  for (size_t i = 0; i < count; i++)
    if (memcmp((const char*)got + i * size, (const char*)want + i * size, t->cls == C_LDOUBLE ? 10 : size) != 0) {
      REPORT("rank %d: %s %s: element %zu differs\n", rank, what, t->name, i);
      return;
    }
}

/* ---- counters ---------------------------------------------------------------------------------------- */

enum { ALLREDUCE, BCAST, REDUCE, ALLGATHER, RSB, RS, NKINDS };
/* clang-format off */
static const char* const kind_names[NKINDS] = {"allreduce", "bcast", "reduce", "allgather", "reduce_scatter_block",
                                               "reduce_scatter"};
/* clang-format on */
enum { BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
#define NCOUNTERS (NFORMS * NKINDS)
static entry_counters_t counters;
static char labels[NCOUNTERS][64];
static counts_t want; /* the counts this program expects since the last mark */
static counts_t base;

static void counters_start(void) {
  const char* names[NCOUNTERS];
  for (int k = 0; k < NCOUNTERS; k++) {
    int form = k / NKINDS;
    snprintf(labels[k], sizeof labels[k], "%s%s%s", form == NONBLOCKING ? "i" : "", kind_names[k % NKINDS],
             form == PERSISTENT ? "_init" : "");
    names[k] = labels[k];
  }
  entry_counters_open(&counters, names, NCOUNTERS);
}

static void counters_mark(void) {
  base = entry_counters_read(&counters);
  memset(&want, 0, sizeof want);
}

/* The counters moved exactly as expected since the mark. */
static void counters_check(const char* phase) {
  counts_t now = entry_counters_read(&counters);
  for (int k = 0; k < NCOUNTERS; k++) {
    unsigned long long routed = now.routed[k] - base.routed[k], fallback = now.fallback[k] - base.fallback[k],
                       local = now.local[k] - base.local[k];
    if (routed != want.routed[k] || fallback != want.fallback[k] || local != want.local[k])
      REPORT("rank %d: %s: %s routed %llu fell back %llu local %llu, expected %llu / %llu / %llu\n", rank, phase,
             labels[k], routed, fallback, local, want.routed[k], want.fallback[k], want.local[k]);
  }
}

typedef enum { ROUTED, FALLBACK, LOCAL } how_t;
static void expect_call(int kind, int form, how_t how) {
  int k = form * NKINDS + kind;
  if (how == ROUTED) want.routed[k]++;
  else if (how == FALLBACK) want.fallback[k]++;
  else want.local[k]++;
}

/* ---- types: every datatype with every op it takes ---------------------------------------------------- */

static void reductions_of(MPI_Comm comm, const dtype_t* t, int op) {
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  size_t size = type_size(t->dt), count = 37, all = count * (size_t)n;
  char *host = malloc(all * size), *out = malloc(all * size), *ref = malloc(all * size);
  void *send = buf_alloc(all * size, false), *recv = buf_alloc(all * size, false);
  how_t how = dfccl_reduces(t, op) ? ROUTED : FALLBACK;
  char what[96];
  expected(t, op, n, ref, all);

  for (int in_place = 0; in_place < 2; in_place++) { /* MPI_Allreduce */
    fill(t, op, r, host, count);
    put_bytes(in_place ? recv : send, host, count * size);
    CHECK_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, t->dt, ops[op].op, comm));
    get_bytes(out, recv, count * size);
    snprintf(what, sizeof what, "MPI_Allreduce %s%s", ops[op].name, in_place ? " in place" : "");
    compare(what, t, out, ref, count);
    expect_call(ALLREDUCE, BLOCKING, how);
  }
  fill(t, op, r, host, count); /* MPI_Reduce to the last rank */
  put_bytes(send, host, count * size);
  CHECK_MPI(MPI_Reduce(send, recv, (int)count, t->dt, ops[op].op, n - 1, comm));
  if (r == n - 1) {
    get_bytes(out, recv, count * size);
    snprintf(what, sizeof what, "MPI_Reduce %s", ops[op].name);
    compare(what, t, out, ref, count);
  }
  expect_call(REDUCE, BLOCKING, how);
  fill(t, op, r, host, all); /* MPI_Reduce_scatter_block: this rank's block of the result */
  put_bytes(send, host, all * size);
  CHECK_MPI(MPI_Reduce_scatter_block(send, recv, (int)count, t->dt, ops[op].op, comm));
  get_bytes(out, recv, count * size);
  snprintf(what, sizeof what, "MPI_Reduce_scatter_block %s", ops[op].name);
  compare(what, t, out, ref + (size_t)r * count * size, count);
  expect_call(RSB, BLOCKING, how);
  buf_free(send);
  buf_free(recv);
  free(host);
  free(out);
  free(ref);
}

/* MPI_Bcast from the last rank and MPI_Allgather of `count` elements of dt (any datatype). */
static void movement_of(MPI_Comm comm, MPI_Datatype dt, const char* name, int count, how_t how) {
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  MPI_Aint lb, extent;
  CHECK_MPI(MPI_Type_get_extent(dt, &lb, &extent));
  size_t bytes = (size_t)extent * (size_t)count * (size_t)n;
  unsigned char *host = malloc(bytes), *out = malloc(bytes);
  void* buf = buf_alloc(bytes, false);
  for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(r == n - 1 ? i * 13 + 1 : 0);
  put_bytes(buf, host, (size_t)extent * (size_t)count);
  CHECK_MPI(MPI_Bcast(buf, count, dt, n - 1, comm));
  get_bytes(out, buf, (size_t)extent * (size_t)count);
  for (size_t i = 0; i < (size_t)extent * (size_t)count; i++) /* every byte: MPI datatypes here have no gaps */
    if (out[i] != (unsigned char)(i * 13 + 1)) {
      REPORT("rank %d: MPI_Bcast %s: byte %zu is %u\n", rank, name, i, out[i]);
      break;
    }
  expect_call(BCAST, BLOCKING, how);

  void* send = buf_alloc((size_t)extent * (size_t)count, false);
  size_t block = (size_t)extent * (size_t)count;
  for (size_t i = 0; i < block; i++) host[i] = (unsigned char)(i * 7 + (size_t)r * 31 + 3);
  put_bytes(send, host, block);
  CHECK_MPI(MPI_Allgather(send, count, dt, buf, count, dt, comm));
  get_bytes(out, buf, bytes);
  for (int q = 0; q < n; q++)
    for (size_t i = 0; i < block; i++)
      if (out[(size_t)q * block + i] != (unsigned char)(i * 7 + (size_t)q * 31 + 3)) {
        REPORT("rank %d: MPI_Allgather %s: rank %d's byte %zu is %u\n", rank, name, q, i, out[(size_t)q * block + i]);
        q = n;
        break;
      }
  expect_call(ALLGATHER, BLOCKING, how);
  buf_free(send);
  buf_free(buf);
  free(host);
  free(out);
}

static void test_types(MPI_Comm comm) {
  counters_mark();
  int pairs = 0, staged = 0;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (int op = 0; op < NOPS; op++) {
      if (!op_defined(&types[t], op)) continue;
      reductions_of(comm, &types[t], op);
      pairs++;
      staged += !dfccl_reduces(&types[t], op);
    }
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) movement_of(comm, types[t].dt, types[t].name, 5, ROUTED);
  counters_check("types");
  if (rank == 0)
    printf("types: %d (datatype, op) pairs reduced, %d of them staged; %zu datatypes moved\n", pairs, staged,
           sizeof types / sizeof types[0]);
}

/* ---- layouts: derived datatypes on broadcast and all-gather ----------------------------------------- */

/* A broadcast of `n` ints from the last rank, described on this rank as `dt` (count elements). */
static void bcast_as(MPI_Comm comm, MPI_Datatype dt, int count, int ints, const char* name, how_t how) {
  int size, r;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &r);
  MPI_Aint lb, extent;
  CHECK_MPI(MPI_Type_get_extent(dt, &lb, &extent));
  size_t span = (size_t)extent * (size_t)count;
  int* host = malloc(span);
  int* back = malloc(span);
  for (size_t i = 0; i < span / sizeof(int); i++) host[i] = -1000 - (int)i; /* holes keep these */
  int packed[64];
  for (int i = 0; i < ints; i++) packed[i] = r == size - 1 ? 100 + i : 0;
  int position = 0; /* the ints in dt's layout */
  CHECK_MPI(MPI_Unpack(packed, (int)sizeof packed, &position, host, count, dt, MPI_COMM_SELF));
  void* buf = buf_alloc(span, false);
  put_bytes(buf, host, span);
  CHECK_MPI(MPI_Bcast(buf, count, dt, size - 1, comm));
  get_bytes(back, buf, span);
  position = 0;
  int got[64];
  CHECK_MPI(MPI_Pack(back, count, dt, got, (int)sizeof got, &position, MPI_COMM_SELF));
  for (int i = 0; i < ints; i++)
    if (got[i] != 100 + i) {
      REPORT("rank %d: MPI_Bcast as %s: int %d is %d\n", rank, name, i, got[i]);
      break;
    }
  /* The holes came back unchanged. */
  for (size_t i = 0; i < span / sizeof(int); i++) {
    bool hole = true;
    for (int k = 0; k < ints; k++) hole = hole && back[i] != 100 + k;
    if (hole && back[i] != -1000 - (int)i) {
      REPORT("rank %d: MPI_Bcast as %s: the hole at int %zu changed to %d\n", rank, name, i, back[i]);
      break;
    }
  }
  expect_call(BCAST, BLOCKING, how);
  buf_free(buf);
  free(host);
  free(back);
}

static void test_layouts(MPI_Comm comm) {
  counters_mark();
  MPI_Datatype triple, pair_struct, gappy, gappy14;
  CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &triple));
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {0, sizeof(int)};
  MPI_Datatype members[2] = {MPI_INT, MPI_FLOAT};
  CHECK_MPI(MPI_Type_create_struct(2, lens, disps, members, &pair_struct));
  CHECK_MPI(MPI_Type_vector(6, 1, 2, MPI_INT, &gappy));   /* 6 ints with a hole after each */
  CHECK_MPI(MPI_Type_vector(7, 2, 3, MPI_INT, &gappy14)); /* 14 ints in pairs, holes between */
  MPI_Datatype all[] = {triple, pair_struct, gappy, gappy14};
  for (int i = 0; i < 4; i++) CHECK_MPI(MPI_Type_commit(&all[i]));

  /* Broadcasts (from the last rank) of 48 and 32 bytes, all-gathers of 48 and 32 bytes a rank. */
  movement_of(comm, triple, "MPI_Type_contiguous(3, MPI_INT)", 4, ROUTED);
  movement_of(comm, pair_struct, "struct {int, float}", 4, ROUTED);
  bcast_as(comm, MPI_INT, 6, 6, "6 MPI_INT", ROUTED);             /* 24 bytes: routed, new */
  bcast_as(comm, gappy, 1, 6, "a vector with gaps", ROUTED);      /* same 24 bytes: routed, packed */
  bcast_as(comm, gappy14, 1, 14, "a vector with gaps", FALLBACK); /* 56 bytes, new, gaps: fallback */
  bcast_as(comm, MPI_INT, 14, 14, "14 MPI_INT", FALLBACK);        /* decided: stays with the fallback */
  /* 44 bytes, new (the types phase broadcasts 5, 10, 20, 40 and 80 bytes): the last rank describes
   * them with gaps, the others do not. */
  MPI_Datatype gappy11;
  CHECK_MPI(MPI_Type_vector(11, 1, 2, MPI_INT, &gappy11));
  CHECK_MPI(MPI_Type_commit(&gappy11));
  if (rank == nranks - 1) bcast_as(comm, gappy11, 1, 11, "a vector with gaps (one rank)", FALLBACK);
  else bcast_as(comm, MPI_INT, 11, 11, "11 MPI_INT (the other ranks)", FALLBACK);
  CHECK_MPI(MPI_Type_free(&gappy11));
  for (int i = 0; i < 4; i++) CHECK_MPI(MPI_Type_free(&all[i]));
  counters_check("layouts");
  if (rank == 0) printf("layouts: contiguous derived datatypes routed, datatypes with gaps packed or staged\n");
}

/* ---- single: communicators of one rank --------------------------------------------------------------- */

static void single_on(MPI_Comm comm, const char* name) {
  const int count = 1000;
  size_t bytes = (size_t)count * sizeof(int);
  int *host = malloc(bytes), *out = malloc(bytes);
  for (int i = 0; i < count; i++) host[i] = i * 3 - 7 + rank;
  void *send = buf_alloc(bytes, false), *recv = buf_alloc(bytes, false);
  for (int form = 0; form < NFORMS; form++)
    for (int kind = 0; kind < NKINDS; kind++)
      for (int in_place = 0; in_place < 2; in_place++) {
        if (kind == BCAST && in_place) continue; /* broadcast has one buffer */
        put_bytes(send, host, bytes);
        int junk = -99;
        for (int i = 0; i < count; i++) out[i] = junk;
        put_bytes(recv, in_place ? host : out, bytes);
        void* s = in_place ? MPI_IN_PLACE : send;
        void* rb = kind == BCAST ? send : recv;
        int rcounts[1] = {count};
        MPI_Request req = MPI_REQUEST_NULL;
        MPI_Info info = MPI_INFO_NULL;
        /* clang-format off */
        switch (form * NKINDS + kind) {
          case BLOCKING * NKINDS + ALLREDUCE: CHECK_MPI(MPI_Allreduce(s, recv, count, MPI_INT, MPI_SUM, comm)); break;
          case BLOCKING * NKINDS + BCAST: CHECK_MPI(MPI_Bcast(send, count, MPI_INT, 0, comm)); break;
          case BLOCKING * NKINDS + REDUCE: CHECK_MPI(MPI_Reduce(s, recv, count, MPI_INT, MPI_MAX, 0, comm)); break;
          case BLOCKING * NKINDS + ALLGATHER: CHECK_MPI(MPI_Allgather(s, count, MPI_INT, recv, count, MPI_INT, comm)); break;
          case BLOCKING * NKINDS + RSB: CHECK_MPI(MPI_Reduce_scatter_block(s, recv, count, MPI_INT, MPI_SUM, comm)); break;
          case BLOCKING * NKINDS + RS: CHECK_MPI(MPI_Reduce_scatter(s, recv, rcounts, MPI_INT, MPI_SUM, comm)); break;
          case NONBLOCKING * NKINDS + ALLREDUCE: CHECK_MPI(MPI_Iallreduce(s, recv, count, MPI_INT, MPI_SUM, comm, &req)); break;
          case NONBLOCKING * NKINDS + BCAST: CHECK_MPI(MPI_Ibcast(send, count, MPI_INT, 0, comm, &req)); break;
          case NONBLOCKING * NKINDS + REDUCE: CHECK_MPI(MPI_Ireduce(s, recv, count, MPI_INT, MPI_MAX, 0, comm, &req)); break;
          case NONBLOCKING * NKINDS + ALLGATHER: CHECK_MPI(MPI_Iallgather(s, count, MPI_INT, recv, count, MPI_INT, comm, &req)); break;
          case NONBLOCKING * NKINDS + RSB: CHECK_MPI(MPI_Ireduce_scatter_block(s, recv, count, MPI_INT, MPI_SUM, comm, &req)); break;
          case NONBLOCKING * NKINDS + RS: CHECK_MPI(MPI_Ireduce_scatter(s, recv, rcounts, MPI_INT, MPI_SUM, comm, &req)); break;
          case PERSISTENT * NKINDS + ALLREDUCE: CHECK_MPI(MPIX_Allreduce_init(s, recv, count, MPI_INT, MPI_SUM, comm, info, &req)); break;
          case PERSISTENT * NKINDS + BCAST: CHECK_MPI(MPIX_Bcast_init(send, count, MPI_INT, 0, comm, info, &req)); break;
          case PERSISTENT * NKINDS + REDUCE: CHECK_MPI(MPIX_Reduce_init(s, recv, count, MPI_INT, MPI_MAX, 0, comm, info, &req)); break;
          case PERSISTENT * NKINDS + ALLGATHER: CHECK_MPI(MPIX_Allgather_init(s, count, MPI_INT, recv, count, MPI_INT, comm, info, &req)); break;
          case PERSISTENT * NKINDS + RSB: CHECK_MPI(MPIX_Reduce_scatter_block_init(s, recv, count, MPI_INT, MPI_SUM, comm, info, &req)); break;
          default: CHECK_MPI(MPIX_Reduce_scatter_init(s, recv, rcounts, MPI_INT, MPI_SUM, comm, info, &req)); break;
        }
        /* clang-format on */
        for (int start = 0; start < (form == PERSISTENT ? 2 : 1); start++) {
          if (form == PERSISTENT) {
            if (start > 0) { /* a second start copies the input anew */
              put_bytes(send, host, bytes);
              put_bytes(recv, in_place ? host : out, bytes);
            }
            CHECK_MPI(MPI_Start(&req));
          }
          if (req != MPI_REQUEST_NULL) CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
          get_bytes(out, rb, bytes);
          for (int i = 0; i < count; i++)
            if (out[i] != host[i]) {
              REPORT("rank %d: %s on %s (%s%s): [%d] = %d, expected %d\n", rank, labels[form * NKINDS + kind], name,
                     in_place ? "in place" : "out of place", form == PERSISTENT && start ? ", second start" : "", i,
                     out[i], host[i]);
              break;
            }
          if (form != PERSISTENT) break;
        }
        if (form == PERSISTENT) CHECK_MPI(MPI_Request_free(&req));
        /* Open MPI's MPI layer answers MPI_Bcast and MPI_Ibcast on one rank itself. */
        if (!(kind == BCAST && form != PERSISTENT)) expect_call(kind, form, LOCAL);
      }
  buf_free(send);
  buf_free(recv);
  free(host);
  free(out);
}

static void test_single(MPI_Comm alone) {
  counters_mark();
  single_on(MPI_COMM_SELF, "MPI_COMM_SELF");
  single_on(alone, "a split of one rank");
  counters_check("single");
  if (rank == 0) printf("single: the six collectives in three forms on communicators of one rank\n");
}

/* ---- mixed: ranks that pass different kinds of memory -------------------------------------------------- */

/* One all-reduce of `count` ints (SUM), host memory on rank `host_rank`, through `form`. */
static void allreduce_mixed(MPI_Comm comm, int count, int host_rank, int form, how_t how, const char* what) {
  size_t bytes = (size_t)count * sizeof(int);
  int *host = malloc(bytes), *out = malloc(bytes);
  for (int i = 0; i < count; i++) host[i] = i + rank;
  void *send = buf_alloc(bytes, rank == host_rank), *recv = buf_alloc(bytes, rank == host_rank);
  put_bytes(send, host, bytes);
  if (form == BLOCKING) {
    CHECK_MPI(MPI_Allreduce(send, recv, count, MPI_INT, MPI_SUM, comm));
  } else {
    MPI_Request req;
    CHECK_MPI(MPI_Iallreduce(send, recv, count, MPI_INT, MPI_SUM, comm, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  }
  get_bytes(out, recv, bytes);
  for (int i = 0; i < count; i++)
    if (out[i] != i * nranks + nranks * (nranks - 1) / 2) {
      REPORT("rank %d: %s: [%d] = %d\n", rank, what, i, out[i]);
      break;
    }
  expect_call(ALLREDUCE, form, how);
  buf_free(send);
  buf_free(recv);
  free(host);
  free(out);
}

/* One broadcast of `count` bytes from rank 0, host memory on rank `host_rank`. */
static void bcast_mixed(MPI_Comm comm, int count, int host_rank, how_t how, const char* what) {
  unsigned char *host = malloc((size_t)count), *out = malloc((size_t)count);
  for (int i = 0; i < count; i++) host[i] = (unsigned char)(rank == 0 ? i * 5 + 1 : 0);
  void* buf = buf_alloc((size_t)count, rank == host_rank);
  put_bytes(buf, host, (size_t)count);
  CHECK_MPI(MPI_Bcast(buf, count, MPI_BYTE, 0, comm));
  get_bytes(out, buf, (size_t)count);
  for (int i = 0; i < count; i++)
    if (out[i] != (unsigned char)(i * 5 + 1)) {
      REPORT("rank %d: %s: byte %d is %u\n", rank, what, i, out[i]);
      break;
    }
  expect_call(BCAST, BLOCKING, how);
  buf_free(buf);
  free(host);
  free(out);
}

/* Reduce, all-gather and reduce-scatter with host memory on rank `host_rank` (count ints each). */
static void others_mixed(MPI_Comm comm, int count, int host_rank, how_t how, const char* what) {
  size_t bytes = (size_t)count * sizeof(int);
  int *host = malloc(bytes * (size_t)nranks), *out = malloc(bytes * (size_t)nranks);
  bool mine = rank == host_rank;
  void *send = buf_alloc(bytes * (size_t)nranks, mine), *recv = buf_alloc(bytes * (size_t)nranks, mine);
  for (int i = 0; i < count * nranks; i++) host[i] = i + 10 * rank;
  put_bytes(send, host, bytes * (size_t)nranks);
  CHECK_MPI(MPI_Reduce(send, recv, count, MPI_INT, MPI_SUM, nranks - 1, comm));
  if (rank == nranks - 1) {
    get_bytes(out, recv, bytes);
    for (int i = 0; i < count; i++)
      if (out[i] != i * nranks + 10 * nranks * (nranks - 1) / 2) {
        REPORT("rank %d: %s MPI_Reduce: [%d] = %d\n", rank, what, i, out[i]);
        break;
      }
  }
  expect_call(REDUCE, BLOCKING, how);
  CHECK_MPI(MPI_Allgather(send, count, MPI_INT, recv, count, MPI_INT, comm));
  get_bytes(out, recv, bytes * (size_t)nranks);
  for (int q = 0; q < nranks; q++)
    for (int i = 0; i < count; i++)
      if (out[q * count + i] != i + 10 * q) {
        REPORT("rank %d: %s MPI_Allgather: rank %d's [%d] = %d\n", rank, what, q, i, out[q * count + i]);
        q = nranks;
        break;
      }
  expect_call(ALLGATHER, BLOCKING, how);
  CHECK_MPI(MPI_Reduce_scatter_block(send, recv, count, MPI_INT, MPI_SUM, comm));
  get_bytes(out, recv, bytes);
  for (int i = 0; i < count; i++) {
    int index = rank * count + i;
    if (out[i] != index * nranks + 10 * nranks * (nranks - 1) / 2) {
      REPORT("rank %d: %s MPI_Reduce_scatter_block: [%d] = %d\n", rank, what, i, out[i]);
      break;
    }
  }
  expect_call(RSB, BLOCKING, how);
  buf_free(send);
  buf_free(recv);
  free(host);
  free(out);
}

static void test_mixed(MPI_Comm comm) {
  counters_mark();
  int last = nranks - 1;
  /* A new signature with host memory on one rank: every rank falls back, nobody waits forever. */
  allreduce_mixed(comm, 301, 0, BLOCKING, FALLBACK, "MPI_Allreduce, first call mixed");
  allreduce_mixed(comm, 301, -1, BLOCKING, FALLBACK, "MPI_Allreduce, decided for the fallback");
  bcast_mixed(comm, 501, last, FALLBACK, "MPI_Bcast, first call mixed");
  others_mixed(comm, 17, 0, FALLBACK, "first calls mixed");
  /* Set up on device memory everywhere; then one rank passes host memory: it runs on a copy. */
  allreduce_mixed(comm, 302, -1, BLOCKING, ROUTED, "MPI_Allreduce on device memory");
  allreduce_mixed(comm, 302, last, BLOCKING, ROUTED, "MPI_Allreduce, one rank on host memory");
  bcast_mixed(comm, 502, -1, ROUTED, "MPI_Bcast on device memory");
  bcast_mixed(comm, 502, 0, ROUTED, "MPI_Bcast, the root on host memory");
  others_mixed(comm, 18, -1, ROUTED, "on device memory");
  others_mixed(comm, 18, last, ROUTED, "one rank on host memory");
  /* Nonblocking: the ranks cannot wait to compare their buffers, so a new signature runs on DFCCL
   * whatever they are (a rank with host memory on a copy); a signature a blocking call decided for
   * the fallback stays there in every form. */
  allreduce_mixed(comm, 303, 0, NONBLOCKING, ROUTED, "MPI_Iallreduce, first call mixed");
  allreduce_mixed(comm, 303, -1, NONBLOCKING, ROUTED, "MPI_Iallreduce, then on device memory");
  allreduce_mixed(comm, 304, -1, NONBLOCKING, ROUTED, "MPI_Iallreduce, first call on device memory");
  allreduce_mixed(comm, 304, last, NONBLOCKING, ROUTED, "MPI_Iallreduce, one rank on host memory");
  allreduce_mixed(comm, 301, last, NONBLOCKING, FALLBACK, "MPI_Iallreduce of a signature decided for the fallback");
  counters_check("mixed");
  if (rank == 0) printf("mixed: host memory on one rank, device memory on the others: one decision everywhere\n");
}

/* ---- main ------------------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
  const char* mode = "all";
  unsigned watchdog_s = 120;
  int provided;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  static const char* const modes[] = {"all", "types", "layouts", "single", "mixed", NULL};
  static const char* const memories[] = {"host", "device", NULL};
  options o =
      mpi_options("test_coverage", "usage: test_coverage [-m all|types|layouts|single|mixed] [-d host|device] [-w s]",
                  argc, argv, "m:d:w:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'm') mode = modes[option_choice(&o, modes)];
    else if (opt == 'd') device_memory = option_choice(&o, memories) == 1;
    else if (opt == 'w') watchdog_s = (unsigned)option_int(&o, 1, 86400);
  }
  bool all = strcmp(mode, "all") == 0;
  if (strcmp(mode, "mixed") == 0 && !device_memory) options_fail(&o, "-m mixed needs -d device");
  if (device_memory && option_env_target_is_gpu(&o)) use_node_gpu_or_abort(); /* local rank % GPUs */
  watchdog_start(watchdog_s);
  counters_start();
  MPI_Comm comm;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  /* The communicator's DFCCL context first: setting it up duplicates the communicator, and Open
   * MPI's own collectives for that (host memory) would show in the counters of the first phase. */
  int* one = buf_alloc(sizeof(int), false);
  put_bytes(one, &rank, sizeof(int));
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, one, 1, MPI_INT, MPI_SUM, comm));
  buf_free(one);
  MPI_Comm alone;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &alone)); /* (ditto) for the single phase */
  if (all || strcmp(mode, "types") == 0) test_types(comm), watchdog_reset();
  if (all || strcmp(mode, "layouts") == 0) test_layouts(comm), watchdog_reset();
  if (all || strcmp(mode, "single") == 0) test_single(alone), watchdog_reset();
  if ((all && device_memory) || strcmp(mode, "mixed") == 0) {
    test_mixed(comm);
    watchdog_reset();
  }
  CHECK_MPI(MPI_Comm_free(&comm));
  CHECK_MPI(MPI_Comm_free(&alone));
  int total = 0;
  CHECK_MPI(MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  entry_counters_close(&counters);
  if (rank == 0)
    printf("%s: test_coverage -m %s -d %s on %d ranks (%d failures)\n", total ? "FAIL" : "PASS", mode,
           device_memory ? "device" : "host", nranks, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
