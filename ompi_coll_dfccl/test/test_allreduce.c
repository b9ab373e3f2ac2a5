/*
 * MPI_Allreduce through coll/dfccl (host-target test mode): exact results for several datatypes,
 * ops and counts, MPI_IN_PLACE, a sub-communicator freed before finalize, and calls that must fall
 * back (MAXLOC, a derived datatype, MPI_SHORT, a user op).  MPI_T counters of the component prove
 * the route: every supported call is counted as routed and every other one as fallen back.
 *
 * Run with: mpirun --mca coll_dfccl_host_target 1 --mca coll_dfccl_priority 90 ... test_allreduce
 * (see run.sh).  Prints "PASS" on rank 0 and exits 0 when every check holds.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { SIGNED, UNSIGNED, FLOATING } kind_t;
typedef struct {
  MPI_Datatype dt;
  const char* name;
  size_t size;
  kind_t kind;
} type_t;

static int rank, nranks, failures;

static void put(const type_t* t, void* buf, size_t i, long long v) {
  char* p = (char*)buf + i * t->size;
  if (t->kind == FLOATING) {
    if (t->size == 4) *(float*)p = (float)v;
    else *(double*)p = (double)v;
    return;
  }
  switch (t->size) {
    case 1: *(int8_t*)p = (int8_t)v; break;
    case 4: *(int32_t*)p = (int32_t)v; break;
    default: *(int64_t*)p = (int64_t)v; break;
  }
}

static long long get(const type_t* t, const void* buf, size_t i) {
  const char* p = (const char*)buf + i * t->size;
  if (t->kind == FLOATING) return t->size == 4 ? (long long)*(const float*)p : (long long)*(const double*)p;
  switch (t->size) {
    case 1: return t->kind == SIGNED ? *(const int8_t*)p : *(const uint8_t*)p;
    case 4: return t->kind == SIGNED ? (long long)*(const int32_t*)p : (long long)*(const uint32_t*)p;
    default: return *(const int64_t*)p;
  }
}

/* Small integers, exact in every type; products stay within int8 on 4 ranks. */
static long long value(const type_t* t, MPI_Op op, int r, size_t i) {
  if (op == MPI_PROD) return ((i + (size_t)r) % 3 == 0) ? 2 : 1;
  long long v = (long long)((i * 31 + (size_t)r * 17) % 11);
  return t->kind == UNSIGNED ? v : v - 5;
}

static long long expect(const type_t* t, MPI_Op op, size_t i) {
  long long acc = value(t, op, 0, i);
  for (int r = 1; r < nranks; r++) {
    long long v = value(t, op, r, i);
    if (op == MPI_SUM) acc += v;
    else if (op == MPI_PROD) acc *= v;
    else if (op == MPI_MAX) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  return acc;
}

static const char* op_name(MPI_Op op) {
  return op == MPI_SUM ? "SUM" : op == MPI_PROD ? "PROD" : op == MPI_MAX ? "MAX" : "MIN";
}

/* One allreduce on comm, checked exactly on every rank. */
static void check_allreduce(MPI_Comm comm, const type_t* t, MPI_Op op, size_t count, int in_place) {
  int crank, csize;
  MPI_Comm_rank(comm, &crank);
  MPI_Comm_size(comm, &csize);
  void* send = malloc(count * t->size);
  void* recv = malloc(count * t->size);
  for (size_t i = 0; i < count; i++) {
    put(t, in_place ? recv : send, i, value(t, op, crank, i));
    if (!in_place) put(t, recv, i, -1);
  }
  int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, t->dt, op, comm);
  int saved = nranks, bad = 0;
  nranks = csize; /* expect() over the communicator's ranks */
  for (size_t i = 0; i < count && rc == MPI_SUCCESS; i++) {
    long long want = expect(t, op, i), got = get(t, recv, i);
    if (got != want) {
      if (bad++ < 3)
        fprintf(stderr, "rank %d: %s %s count %zu%s: [%zu] = %lld, expected %lld\n", rank, t->name,
                op_name(op), count, in_place ? " in place" : "", i, got, want);
    }
  }
  nranks = saved;
  if (rc != MPI_SUCCESS) fprintf(stderr, "rank %d: MPI_Allreduce returned %d\n", rank, rc), bad = 1;
  if (bad) failures++;
  free(send);
  free(recv);
}

/* ---- fallback cases ---- */

/* A user op on MPI_INT, or on pairs of ints (a derived datatype takes user ops only). */
static void my_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  int n = *dt == MPI_INT ? *len : 2 * *len;
  for (int i = 0; i < n; i++) ((int*)inout)[i] += ((int*)in)[i];
}

/* Returns the number of MPI_Allreduce calls made. */
static int check_fallbacks(void) {
  struct { int v, r; } in = {rank * 10 % 7, rank}, out; /* MAXLOC */
  MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
  int best = -1, at = -1;
  for (int r = 0; r < nranks; r++)
    if (r * 10 % 7 > best) best = r * 10 % 7, at = r;
  if (out.v != best || out.r != at) fprintf(stderr, "rank %d: MAXLOC wrong\n", rank), failures++;

  MPI_Op op; /* a user op */
  MPI_Op_create(my_sum, 1, &op);
  MPI_Datatype pair; /* a derived datatype */
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int p[6] = {rank, 1, rank, 1, rank, 1};
  MPI_Allreduce(MPI_IN_PLACE, p, 3, pair, op, MPI_COMM_WORLD);
  for (int i = 0; i < 6; i++)
    if (p[i] != (i % 2 ? nranks : nranks * (nranks - 1) / 2))
      fprintf(stderr, "rank %d: derived datatype wrong\n", rank), failures++, i = 6;
  MPI_Type_free(&pair);

  short s = (short)(rank + 1), ssum = 0; /* a type DFCCL has not */
  MPI_Allreduce(&s, &ssum, 1, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
  if (ssum != nranks * (nranks + 1) / 2) fprintf(stderr, "rank %d: MPI_SHORT wrong\n", rank), failures++;

  int u = rank + 1, usum = 0;
  MPI_Allreduce(&u, &usum, 1, MPI_INT, op, MPI_COMM_WORLD);
  MPI_Op_free(&op);
  if (usum != nranks * (nranks + 1) / 2) fprintf(stderr, "rank %d: user op wrong\n", rank), failures++;

  int band = 0x7 ^ (1 << (rank % 3)), bres = 0; /* a bitwise op */
  MPI_Allreduce(&band, &bres, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
  int want = 0x7;
  for (int r = 0; r < nranks; r++) want &= 0x7 ^ (1 << (r % 3));
  if (bres != want) fprintf(stderr, "rank %d: BAND wrong\n", rank), failures++;
  return 5;
}

/* ---- MPI_T counters of coll/dfccl ---- */

typedef struct {
  MPI_T_pvar_handle handle;
  int found;
} counter_t;

static MPI_T_pvar_session session;

static counter_t open_counter(const char* name) {
  counter_t c = {MPI_T_PVAR_HANDLE_NULL, 0};
  int n = 0;
  MPI_T_pvar_get_num(&n);
  for (int i = 0; i < n; i++) {
    char pname[256], desc[256];
    int nlen = sizeof pname, dlen = sizeof desc, verb, cls, bind, ro, cont, atom, count;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_pvar_get_info(i, pname, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro, &cont, &atom) !=
        MPI_SUCCESS || strcmp(pname, name) != 0)
      continue;
    if (MPI_T_pvar_handle_alloc(session, i, NULL, &c.handle, &count) == MPI_SUCCESS) c.found = 1;
  }
  return c;
}

static unsigned long long read_counter(counter_t* c) {
  unsigned long long v = 0;
  if (c->found) MPI_T_pvar_read(session, c->handle, &v);
  return v;
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init(&argc, &argv);
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_T_pvar_session_create(&session);
  /* Counters report the increase since their handle was allocated. */
  counter_t routed = open_counter("coll_dfccl_allreduce_routed");
  counter_t fallen = open_counter("coll_dfccl_allreduce_fallback");

  const type_t types[] = {
      {MPI_INT, "MPI_INT", sizeof(int), SIGNED},
      {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), UNSIGNED},
      {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, SIGNED},
      {MPI_INT64_T, "MPI_INT64_T", 8, SIGNED},
      {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", 8, UNSIGNED},
      {MPI_FLOAT, "MPI_FLOAT", 4, FLOATING},
      {MPI_DOUBLE, "MPI_DOUBLE", 8, FLOATING},
  };
  const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  const size_t counts[] = {1, 1000};
  int expect_routed = 0;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (size_t o = 0; o < 4; o++)
      for (size_t c = 0; c < 2; c++)
        for (int in_place = 0; in_place < 2; in_place++) { /* the second run reuses the registration */
          check_allreduce(MPI_COMM_WORLD, &types[t], ops[o], counts[c], in_place);
          expect_routed++;
        }
  /* Larger than DFCCL_MIN_CHANNEL_BYTES on the host target (1 MiB): more than one channel. */
  check_allreduce(MPI_COMM_WORLD, &types[0], MPI_SUM, 262147, 0);
  check_allreduce(MPI_COMM_WORLD, &types[6], MPI_MAX, 262147, 1);
  check_allreduce(MPI_COMM_WORLD, &types[0], MPI_SUM, 262147, 1);
  expect_routed += 3;

  /* A sub-communicator: its own context, destroyed by MPI_Comm_free (size 1 on 2 ranks: declined). */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int half_size;
  MPI_Comm_size(half, &half_size);
  for (int i = 0; i < 3; i++) check_allreduce(half, &types[0], MPI_SUM, 4096, i % 2);
  if (half_size > 1) expect_routed += 3;
  MPI_Comm_free(&half);

  /* A duplicate of MPI_COMM_WORLD that stays alive: destroyed at MPI_Finalize. */
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  check_allreduce(dup, &types[6], MPI_SUM, 77, 1);
  expect_routed++;

  int expect_fallen = check_fallbacks();

  unsigned long long n_routed = read_counter(&routed), n_fallen = read_counter(&fallen);
  if (!routed.found || !fallen.found) {
    fprintf(stderr, "rank %d: coll_dfccl MPI_T counters not found: was coll/dfccl loaded?\n", rank);
    failures++;
  } else {
    /* Routed: exactly the test's calls.  Fallen back: at least the test's (Open MPI may add its own). */
    if (n_routed != (unsigned long long)expect_routed || n_fallen < (unsigned long long)expect_fallen) {
      fprintf(stderr, "rank %d: dfccl routed %llu (expected %d), fell back %llu (expected >= %d)\n", rank,
              n_routed, expect_routed, n_fallen, expect_fallen);
      failures++;
    }
  }
  if (rank == 0)
    printf("coll/dfccl: %llu allreduce calls routed through DFCCL, %llu fell back\n", n_routed, n_fallen);
  MPI_T_pvar_session_free(&session);
  MPI_T_finalize(); /* before MPI_Finalize: the reverse order crashes Open MPI 4.1.4 */

  int all = 0; /* MPI_Reduce: not taken over by coll/dfccl */
  MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Finalize(); /* destroys the contexts of MPI_COMM_WORLD and of `dup`, left alive on purpose */
  if (rank == 0) puts(all ? "FAIL" : "PASS");
  return all ? 1 : 0;
}
