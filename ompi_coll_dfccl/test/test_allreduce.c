/*
 * MPI_Allreduce through coll/dfccl (host-target test mode): exact results for several datatypes,
 * ops and counts, MPI_IN_PLACE, a sub-communicator freed before finalize, calls that must fall
 * back (MAXLOC, a user op on a derived datatype, MPI_LONG_DOUBLE, a user op, a complex product),
 * and calls DFCCL took on later (MPI_SHORT, MPI_BAND).  Then MPI_Bcast, MPI_Reduce,
 * MPI_Allgather, MPI_Reduce_scatter_block and MPI_Reduce_scatter (equal counts) the same way:
 * exact results, MPI_IN_PLACE, roots other than 0, calls that must fall back (datatypes with gaps,
 * user ops) and calls now routed (bitwise ops, contiguous derived datatypes, uneven
 * reduce-scatter counts: DFCCL's reduce-scatter-v).
 * MPI_T counters of the component prove the route: every supported call is counted as routed and
 * every other one as fallen back.
 *
 * Run with: mpirun --mca coll_dfccl_host_target 1 --mca coll_dfccl_priority 90 ... test_allreduce
 * (see run.sh).  Prints "PASS" on rank 0 and exits 0 when every check holds.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <complex.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "mpi_options.h" /* test/common */

static int rank, nranks, failures;

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
    put(t, in_place ? recv : send, i, value(t, op, crank, i, 0));
    if (!in_place) put(t, recv, i, -1);
  }
  int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, t->dt, op, comm);
  int saved = nranks, bad = 0;
  nranks = csize; /* expect() over the communicator's ranks */
  for (size_t i = 0; i < count && rc == MPI_SUCCESS; i++) {
    long long want = expect(t, op, nranks, i, 0), got = get(t, recv, i);
    if (got != want) {
      if (bad++ < 3)
        fprintf(stderr, "rank %d: %s %s count %zu%s: [%zu] = %lld, expected %lld\n", rank, t->name, op_name(op), count,
                in_place ? " in place" : "", i, got, want);
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
  struct {
    int v, r;
  } in = {rank * 10 % 7, rank}, out; /* MAXLOC */
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

  long double ld = rank + 1, ldsum = 0; /* a type DFCCL has not */
  MPI_Allreduce(&ld, &ldsum, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (ldsum != nranks * (nranks + 1) / 2) fprintf(stderr, "rank %d: MPI_LONG_DOUBLE wrong\n", rank), failures++;

  int u = rank + 1, usum = 0;
  MPI_Allreduce(&u, &usum, 1, MPI_INT, op, MPI_COMM_WORLD);
  MPI_Op_free(&op);
  if (usum != nranks * (nranks + 1) / 2) fprintf(stderr, "rank %d: user op wrong\n", rank), failures++;

  int band = 0x7 ^ (1 << (rank % 3)), bres = 0; /* a complex product: DFCCL sums complex numbers only */
  float _Complex z = (float)(rank + 1) + 1.0f * I, zprod = 0;
  MPI_Allreduce(&z, &zprod, 1, MPI_C_FLOAT_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
  float _Complex zwant = 1;
  for (int r = 0; r < nranks; r++) zwant *= (float)(r + 1) + 1.0f * I;
  if (zprod != zwant) fprintf(stderr, "rank %d: complex PROD wrong\n", rank), failures++;
  (void)band, (void)bres;
  return 5;
}

/* Types and ops DFCCL took on later (MPI_SHORT, a bitwise op): routed.  Returns the calls made. */
static int check_newly_routed(void) {
  short s = (short)(rank + 1), ssum = 0;
  MPI_Allreduce(&s, &ssum, 1, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
  if (ssum != nranks * (nranks + 1) / 2) fprintf(stderr, "rank %d: MPI_SHORT wrong\n", rank), failures++;
  int band = 0x7 ^ (1 << (rank % 3)), bres = 0;
  MPI_Allreduce(&band, &bres, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
  int want = 0x7;
  for (int r = 0; r < nranks; r++) want &= 0x7 ^ (1 << (r % 3));
  if (bres != want) fprintf(stderr, "rank %d: BAND wrong\n", rank), failures++;
  return 2;
}

/* ---- MPI_Bcast, MPI_Reduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Reduce_scatter ---- */

enum { BCAST, REDUCE, ALLGATHER, RSB, RS, NCOLLS };
static const char* const coll_names[NCOLLS] = {"bcast", "reduce", "allgather", "reduce_scatter_block",
                                               "reduce_scatter"};
static int expect_routed_of[NCOLLS], expect_fallen_of[NCOLLS];

static void report(int bad, int rc, const char* what, const type_t* t, size_t count, int root, int in_place) {
  if (rc != MPI_SUCCESS) fprintf(stderr, "rank %d: %s returned %d\n", rank, what, rc), bad = 1;
  if (bad) {
    fprintf(stderr, "rank %d: %s %s count %zu root %d%s: %d wrong elements\n", rank, what, t->name, count, root,
            in_place ? " in place" : "", bad);
    failures++;
  }
}

static void check_bcast(const type_t* t, size_t count, int root) {
  void* buf = malloc(count * t->size);
  for (size_t i = 0; i < count; i++) put(t, buf, i, rank == root ? value(t, MPI_SUM, root, i, 0) : 3);
  int rc = MPI_Bcast(buf, (int)count, t->dt, root, MPI_COMM_WORLD), bad = 0;
  for (size_t i = 0; i < count; i++) bad += get(t, buf, i) != value(t, MPI_SUM, root, i, 0);
  report(bad, rc, "MPI_Bcast", t, count, root, 0);
  free(buf);
  expect_routed_of[BCAST]++;
}

static void check_reduce(const type_t* t, MPI_Op op, size_t count, int root, int in_place) {
  void* send = malloc(count * t->size);
  void* recv = malloc(count * t->size);
  int at_root = in_place && rank == root; /* MPI_IN_PLACE at the root only */
  for (size_t i = 0; i < count; i++) {
    put(t, at_root ? recv : send, i, value(t, op, rank, i, 0));
    if (!at_root) put(t, recv, i, -1);
  }
  int rc = MPI_Reduce(at_root ? MPI_IN_PLACE : send, recv, (int)count, t->dt, op, root, MPI_COMM_WORLD), bad = 0;
  for (size_t i = 0; i < count && rank == root; i++) bad += get(t, recv, i) != expect(t, op, nranks, i, 0);
  char cell[8];
  put(t, cell, 0, -1);
  for (size_t i = 0; i < count && rank != root; i++) bad += get(t, recv, i) != get(t, cell, 0); /* untouched */
  report(bad, rc, "MPI_Reduce", t, count, root, in_place);
  free(send);
  free(recv);
  expect_routed_of[REDUCE]++;
}

/* send_as_block: the send side described as one contiguous datatype of `count` elements. */
static void check_allgather(const type_t* t, size_t count, int in_place, int send_as_block) {
  void* send = malloc(count * t->size);
  void* recv = malloc(nranks * count * t->size);
  for (size_t j = 0; j < nranks * count; j++) put(t, recv, j, 3);
  for (size_t i = 0; i < count; i++)
    put(t, in_place ? recv : send, in_place ? rank * count + i : i, value(t, MPI_SUM, rank, i, 0));
  MPI_Datatype block = t->dt;
  int scount = (int)count;
  if (send_as_block) MPI_Type_contiguous((int)count, t->dt, &block), MPI_Type_commit(&block), scount = 1;
  int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : send, scount, block, recv, (int)count, t->dt, MPI_COMM_WORLD),
      bad = 0;
  if (send_as_block) MPI_Type_free(&block);
  for (int r = 0; r < nranks; r++)
    for (size_t i = 0; i < count; i++) bad += get(t, recv, r * count + i) != value(t, MPI_SUM, r, i, 0);
  report(bad, rc, "MPI_Allgather", t, count, -1, in_place);
  free(send);
  free(recv);
  expect_routed_of[ALLGATHER]++;
}

/* Reduce-scatter with equal blocks: MPI_Reduce_scatter_block, or MPI_Reduce_scatter (`irregular`). */
static void check_reduce_scatter(const type_t* t, MPI_Op op, size_t count, int in_place, int irregular) {
  void* send = malloc(nranks * count * t->size);
  void* recv = malloc(nranks * count * t->size);
  for (size_t j = 0; j < nranks * count; j++) {
    put(t, in_place ? recv : send, j, value(t, op, rank, j, 0));
    if (!in_place) put(t, recv, j, -1);
  }
  int* counts = malloc(nranks * sizeof *counts);
  for (int r = 0; r < nranks; r++) counts[r] = (int)count;
  const void* sbuf = in_place ? MPI_IN_PLACE : send;
  int rc = irregular ? MPI_Reduce_scatter(sbuf, recv, counts, t->dt, op, MPI_COMM_WORLD)
                     : MPI_Reduce_scatter_block(sbuf, recv, (int)count, t->dt, op, MPI_COMM_WORLD),
      bad = 0;
  for (size_t i = 0; i < count; i++) bad += get(t, recv, i) != expect(t, op, nranks, rank * count + i, 0);
  report(bad, rc, irregular ? "MPI_Reduce_scatter" : "MPI_Reduce_scatter_block", t, count, -1, in_place);
  free(counts);
  free(send);
  free(recv);
  expect_routed_of[irregular ? RS : RSB]++;
}

/* A user op: a bitwise or that DFCCL cannot know to be one. */
static void user_bor(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] |= ((int*)in)[i];
}

/* One call of each that must fall back, and one of each that DFCCL took on later (a bitwise op, a
 * contiguous derived datatype, MPI_SHORT moved as bytes): routed. */
static void check_other_fallbacks(void) {
  short s[3] = {0, 0, 0};
  if (rank == nranks - 1) s[0] = 7, s[1] = -8, s[2] = 9;
  MPI_Bcast(s, 3, MPI_SHORT, nranks - 1, MPI_COMM_WORLD); /* bytes: routed */
  if (s[0] != 7 || s[1] != -8 || s[2] != 9) fprintf(stderr, "rank %d: MPI_SHORT bcast wrong\n", rank), failures++;
  expect_routed_of[BCAST]++;
  MPI_Datatype gaps; /* 3 ints with a hole after each, on every rank: staged */
  MPI_Type_vector(3, 1, 2, MPI_INT, &gaps);
  MPI_Type_commit(&gaps);
  int v[6] = {-1, -2, -1, -4, -1, -6};
  if (rank == nranks - 1) v[0] = 7, v[2] = 8, v[4] = 9;
  MPI_Bcast(v, 1, gaps, nranks - 1, MPI_COMM_WORLD);
  if (v[0] != 7 || v[2] != 8 || v[4] != 9 || v[1] != -2 || v[5] != -6)
    fprintf(stderr, "rank %d: vector bcast wrong\n", rank), failures++;
  MPI_Type_free(&gaps);
  expect_fallen_of[BCAST]++;

  int bits = 1 << rank, bor = 0; /* a bitwise op: routed */
  MPI_Reduce(&bits, &bor, 1, MPI_INT, MPI_BOR, nranks - 1, MPI_COMM_WORLD);
  if (rank == nranks - 1 && bor != (1 << nranks) - 1) fprintf(stderr, "rank %d: BOR reduce wrong\n", rank), failures++;
  expect_routed_of[REDUCE]++;
  MPI_Op user; /* the same as a user op: staged */
  MPI_Op_create(user_bor, 1, &user);
  bor = 0;
  MPI_Reduce(&bits, &bor, 1, MPI_INT, user, nranks - 1, MPI_COMM_WORLD);
  if (rank == nranks - 1 && bor != (1 << nranks) - 1)
    fprintf(stderr, "rank %d: user-op reduce wrong\n", rank), failures++;
  expect_fallen_of[REDUCE]++;

  MPI_Datatype pair; /* a contiguous derived receive datatype: bytes, routed */
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int mine[2] = {rank, -rank}, *all = malloc(2 * nranks * sizeof *all);
  MPI_Allgather(mine, 2, MPI_INT, all, 1, pair, MPI_COMM_WORLD);
  for (int r = 0; r < nranks; r++)
    if (all[2 * r] != r || all[2 * r + 1] != -r) {
      fprintf(stderr, "rank %d: derived allgather wrong\n", rank), failures++;
      break;
    }
  MPI_Type_free(&pair);
  expect_routed_of[ALLGATHER]++;
  MPI_Datatype spread; /* 12 bytes a rank, new, received with gaps on every rank: staged */
  MPI_Type_vector(3, 1, 2, MPI_INT, &spread);
  MPI_Datatype spread_block;
  MPI_Type_create_resized(spread, 0, 6 * sizeof(int), &spread_block);
  MPI_Type_commit(&spread_block);
  int three[3] = {rank, -rank, 2 * rank}, *wide = malloc(6 * nranks * sizeof *wide);
  for (int i = 0; i < 6 * nranks; i++) wide[i] = -9;
  MPI_Allgather(three, 3, MPI_INT, wide, 1, spread_block, MPI_COMM_WORLD);
  for (int r = 0; r < nranks; r++)
    if (wide[6 * r] != r || wide[6 * r + 2] != -r || wide[6 * r + 4] != 2 * r || wide[6 * r + 1] != -9 ||
        wide[6 * r + 5] != -9) {
      fprintf(stderr, "rank %d: allgather with gaps wrong\n", rank), failures++;
      break;
    }
  MPI_Type_free(&spread);
  MPI_Type_free(&spread_block);
  free(wide);
  expect_fallen_of[ALLGATHER]++;

  int* in = malloc(nranks * sizeof *in); /* a bitwise op: routed; a user op: staged */
  for (int r = 0; r < nranks; r++) in[r] = 0xF ^ (1 << ((rank + r) % 4));
  int out = 0;
  MPI_Reduce_scatter_block(in, &out, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
  int want = 0xF;
  for (int q = 0; q < nranks; q++) want &= 0xF ^ (1 << ((q + rank) % 4));
  if (out != want) fprintf(stderr, "rank %d: BAND reduce_scatter_block wrong\n", rank), failures++;
  expect_routed_of[RSB]++;
  for (int r = 0; r < nranks; r++) in[r] = 1 << ((rank + r) % 8);
  out = 0;
  MPI_Reduce_scatter_block(in, &out, 1, MPI_INT, user, MPI_COMM_WORLD);
  want = 0;
  for (int q = 0; q < nranks; q++) want |= 1 << ((q + rank) % 8);
  if (out != want) fprintf(stderr, "rank %d: user-op reduce_scatter_block wrong\n", rank), failures++;
  expect_fallen_of[RSB]++;
  MPI_Op_free(&user);

  /* Uneven recvcounts: rank r gets r + 1 elements (DFCCL's reduce-scatter-v). */
  int* counts = malloc(nranks * sizeof *counts);
  int total = 0;
  for (int r = 0; r < nranks; r++) counts[r] = r + 1, total += r + 1;
  int* vals = malloc(total * sizeof *vals);
  int* res = malloc((rank + 1) * sizeof *res);
  for (int j = 0; j < total; j++) vals[j] = j + rank;
  MPI_Reduce_scatter(vals, res, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int first = rank * (rank + 1) / 2;
  for (int i = 0; i <= rank; i++)
    if (res[i] != nranks * (first + i) + nranks * (nranks - 1) / 2) {
      fprintf(stderr, "rank %d: uneven reduce_scatter wrong\n", rank), failures++;
      break;
    }
  expect_routed_of[RS]++; /* DFCCL's reduce-scatter-v */
  free(in), free(all), free(counts), free(vals), free(res);
}

static void check_other_colls(const type_t* types, size_t ntypes, const MPI_Op* ops) {
  const type_t byte = {MPI_BYTE, "MPI_BYTE", 1, UNSIGNED};
  const type_t* moved[] = {&types[0], &types[6], &types[2], &byte};
  int last = nranks - 1, mid = nranks > 2 ? 2 : 1;
  for (size_t k = 0; k < 4; k++) {
    for (int rep = 0; rep < 2; rep++) { /* the second round reuses the registrations */
      check_bcast(moved[k], 1000, last);
      check_bcast(moved[k], 1, k % 2 ? 0 : mid);
      for (int in_place = 0; in_place < 2; in_place++) check_allgather(moved[k], k % 2 ? 1 : 1000, in_place, 0);
    }
  }
  check_allgather(&types[0], 4, 0, 1);  /* send side as one contiguous block: still routed */
  check_bcast(&types[0], 262147, last); /* more than one channel */
  check_allgather(&types[6], 70001, 1, 0);
  for (size_t t = 0; t < ntypes; t++)
    for (int in_place = 0; in_place < 2; in_place++) {
      MPI_Op op = ops[t % 4];
      check_reduce(&types[t], op, 1000, t % 2 ? last : mid, in_place);
      check_reduce_scatter(&types[t], op, t % 2 ? 1 : 1000, in_place, 0);
    }
  check_reduce(&types[0], MPI_SUM, 1, 0, 1);
  check_reduce(&types[6], MPI_SUM, 262147, last, 0);
  check_reduce_scatter(&types[0], MPI_SUM, 100001, 0, 0);
  for (int in_place = 0; in_place < 2; in_place++) { /* equal counts: the block collectives' registrations */
    check_reduce_scatter(&types[0], MPI_SUM, 1000, in_place, 1);
    check_reduce_scatter(&types[5], MPI_MAX, 3, in_place, 1);
  }
  check_other_fallbacks();
}

/* ---- MPI_T counters of coll/dfccl ---- */

typedef struct {
  MPI_T_pvar_handle handle;
  int found;
} counter_t;

static MPI_T_pvar_session session;

static counter_t open_counter(const char* name) {
  counter_t c = {MPI_T_PVAR_HANDLE_NULL, 0};
  int index = find_pvar(name), count;
  if (index >= 0 && MPI_T_pvar_handle_alloc(session, index, NULL, &c.handle, &count) == MPI_SUCCESS) c.found = 1;
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
  options_none(mpi_options("test_allreduce", "usage: test_allreduce (no options)", argc, argv, ""));
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

  /* The other collectives, on MPI_COMM_WORLD; their counters compared over this block only (the
   * MPI_Comm_split below may call MPI_Allgather internally, which coll/dfccl routes too). */
  counter_t routed_of[NCOLLS], fallen_of[NCOLLS];
  unsigned long long before_routed[NCOLLS], before_fallen[NCOLLS];
  for (int k = 0; k < NCOLLS; k++) {
    char name[96];
    snprintf(name, sizeof name, "coll_dfccl_%s_routed", coll_names[k]);
    routed_of[k] = open_counter(name);
    snprintf(name, sizeof name, "coll_dfccl_%s_fallback", coll_names[k]);
    fallen_of[k] = open_counter(name);
    before_routed[k] = read_counter(&routed_of[k]);
    before_fallen[k] = read_counter(&fallen_of[k]);
  }
  check_other_colls(types, sizeof types / sizeof types[0], ops);
  for (int k = 0; k < NCOLLS; k++) {
    unsigned long long r = read_counter(&routed_of[k]) - before_routed[k];
    unsigned long long f = read_counter(&fallen_of[k]) - before_fallen[k];
    if (!routed_of[k].found || !fallen_of[k].found) {
      fprintf(stderr, "rank %d: coll_dfccl_%s MPI_T counters not found\n", rank, coll_names[k]);
      failures++;
    } else if (r != (unsigned long long)expect_routed_of[k] || f != (unsigned long long)expect_fallen_of[k]) {
      fprintf(stderr, "rank %d: %s: dfccl routed %llu (expected %d), fell back %llu (expected %d)\n", rank,
              coll_names[k], r, expect_routed_of[k], f, expect_fallen_of[k]);
      failures++;
    }
    if (rank == 0) printf("coll/dfccl: %llu %s calls routed through DFCCL, %llu fell back\n", r, coll_names[k], f);
  }

  /* A sub-communicator: its own context, destroyed by MPI_Comm_free (size 1 on 2 ranks: local copies). */
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
  expect_routed += check_newly_routed();

  unsigned long long n_routed = read_counter(&routed), n_fallen = read_counter(&fallen);
  if (!routed.found || !fallen.found) {
    fprintf(stderr, "rank %d: coll_dfccl MPI_T counters not found: was coll/dfccl loaded?\n", rank);
    failures++;
  } else {
    /* Routed: exactly the test's calls.  Fallen back: at least the test's (Open MPI may add its own). */
    if (n_routed != (unsigned long long)expect_routed || n_fallen < (unsigned long long)expect_fallen) {
      fprintf(stderr, "rank %d: dfccl routed %llu (expected %d), fell back %llu (expected >= %d)\n", rank, n_routed,
              expect_routed, n_fallen, expect_fallen);
      failures++;
    }
  }
  if (rank == 0) printf("coll/dfccl: %llu allreduce calls routed through DFCCL, %llu fell back\n", n_routed, n_fallen);
  MPI_T_pvar_session_free(&session);
  MPI_T_finalize(); /* before MPI_Finalize: the reverse order crashes Open MPI 4.1.4 */

  int all = 0; /* routed through DFCCL too */
  MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Finalize(); /* destroys the contexts of MPI_COMM_WORLD and of `dup`, left alive on purpose */
  if (rank == 0) puts(all ? "FAIL" : "PASS");
  return all ? 1 : 0;
}
