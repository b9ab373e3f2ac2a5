/*
 * MPI_Iallreduce, MPI_Ibcast, MPI_Ireduce, MPI_Iallgather, MPI_Ireduce_scatter_block and
 * MPI_Ireduce_scatter through coll/dfccl (host-target test mode), with exact integer checks.
 *
 * A batch of calls -- every collective, several datatypes and ops, counts 1 .. 300000, roots other
 * than 0, MPI_IN_PLACE wherever MPI allows it, several calls of one signature outstanding at once
 * (more than a signature's pool, so that runs queue) -- is issued on a communicator and completed
 * with MPI_Waitall, MPI_Testall or MPI_Testany:
 *   1. on a fresh communicator, before any blocking call: every call is routed through DFCCL (its
 *      DFCCL communicator is made meanwhile, without waiting);
 *   2. again, completed by polling MPI_Testall, then MPI_Testany;
 * then a blocking call of a signature while nonblocking ones of it are outstanding, the same on a
 * sub-communicator whose ranks are in reverse world order (MPI_Comm_split), freed while calls on it
 * are outstanding, calls that always fall back (count 0, long double, MAXLOC, a complex product, a
 * user op) and calls routed on copies from their first use (datatypes with gaps, uneven
 * reduce_scatter counts).  The component's MPI_T counters prove each route: exactly the batch's
 * calls are counted as routed.
 *
 * Run with: mpirun --mca coll_dfccl_host_target 1 ... test_nonblocking  (see run.sh).  Prints
 * "PASS" on rank 0 and exits 0 when every check holds.
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

enum {
  IALLREDUCE = COLL_ALLREDUCE,
  IBCAST = COLL_BCAST,
  IREDUCE = COLL_REDUCE,
  IALLGATHER = COLL_ALLGATHER,
  IRSB = COLL_RSB,
  IRS = COLL_RS,
  NCOLLS
};
static const char* const coll_names[NCOLLS] = {
    "iallreduce", "ibcast", "ireduce", "iallgather", "ireduce_scatter_block", "ireduce_scatter"};

static int world_rank, world_size, failures;

/* ---- element access and expected values -------------------------------------------------------- */

/* ---- one nonblocking call ----------------------------------------------------------------------- */

typedef struct {
  int coll;
  const type_t* t;
  MPI_Op op;
  size_t count; /* per rank for all-gather and reduce-scatter */
  int root;
  int in_place;
  /* filled by start() */
  int salt, rank, size;
  void *send, *recv;
  int* rcounts;
} call_t;

static const long long UNTOUCHED = -1;

static size_t recv_elems(const call_t* c) {
  return c->coll == IALLGATHER || ((c->coll == IRSB || c->coll == IRS) && c->in_place) ? c->count * (size_t)c->size
                                                                                       : c->count;
}

static size_t send_elems(const call_t* c) {
  return c->coll == IRSB || c->coll == IRS ? c->count * (size_t)c->size : c->count;
}

static void fill(call_t* c) {
  const type_t* t = c->t;
  for (size_t j = 0; j < recv_elems(c); j++) put(t, c->recv, j, UNTOUCHED);
  void* in = c->in_place ? c->recv : c->send;
  size_t at = c->in_place && c->coll == IALLGATHER ? (size_t)c->rank * c->count : 0;
  if (c->coll == IBCAST) {
    for (size_t i = 0; i < c->count; i++)
      put(t, c->recv, i, c->rank == c->root ? value(t, c->op, c->root, i, c->salt) : 3);
    return;
  }
  if (c->coll == IREDUCE && c->in_place && c->rank != c->root) in = c->send; /* MPI_IN_PLACE at the root only */
  for (size_t i = 0; i < send_elems(c); i++) put(t, in, at + i, value(t, c->op, c->rank, i, c->salt));
}

static MPI_Request start(call_t* c, MPI_Comm comm, int salt) {
  CHECK_MPI(MPI_Comm_rank(comm, &c->rank));
  CHECK_MPI(MPI_Comm_size(comm, &c->size));
  c->salt = salt;
  size_t elems = c->count * (size_t)c->size;
  c->send = malloc(elems * c->t->size + 1);
  c->recv = malloc(elems * c->t->size + 1);
  c->rcounts = malloc((size_t)c->size * sizeof *c->rcounts);
  if (!c->send || !c->recv || !c->rcounts) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int r = 0; r < c->size; r++) c->rcounts[r] = (int)c->count;
  fill(c);
  const void* sbuf = c->in_place ? MPI_IN_PLACE : c->send;
  int n = (int)c->count;
  MPI_Request req = MPI_REQUEST_NULL;
  switch (c->coll) {
    case IALLREDUCE: CHECK_MPI(MPI_Iallreduce(sbuf, c->recv, n, c->t->dt, c->op, comm, &req)); break;
    case IBCAST: CHECK_MPI(MPI_Ibcast(c->recv, n, c->t->dt, c->root, comm, &req)); break;
    case IREDUCE:
      sbuf = c->in_place && c->rank == c->root ? MPI_IN_PLACE : c->send;
      CHECK_MPI(MPI_Ireduce(sbuf, c->recv, n, c->t->dt, c->op, c->root, comm, &req));
      break;
    case IALLGATHER: CHECK_MPI(MPI_Iallgather(sbuf, n, c->t->dt, c->recv, n, c->t->dt, comm, &req)); break;
    case IRSB: CHECK_MPI(MPI_Ireduce_scatter_block(sbuf, c->recv, n, c->t->dt, c->op, comm, &req)); break;
    case IRS: CHECK_MPI(MPI_Ireduce_scatter(sbuf, c->recv, c->rcounts, c->t->dt, c->op, comm, &req)); break;
  }
  return req;
}

static long long wanted(const call_t* c, size_t i) {
  const type_t* t = c->t;
  switch (c->coll) {
    case IALLREDUCE: return expect(t, c->op, c->size, i, c->salt);
    case IBCAST: return value(t, c->op, c->root, i, c->salt);
    case IREDUCE: return c->rank == c->root ? expect(t, c->op, c->size, i, c->salt) : UNTOUCHED;
    case IALLGATHER: return value(t, c->op, (int)(i / c->count), i % c->count, c->salt);
    default: return expect(t, c->op, c->size, (size_t)c->rank * c->count + i, c->salt); /* reduce-scatter */
  }
}

static void check(call_t* c, const char* pass) {
  size_t n = c->coll == IALLGATHER ? c->count * (size_t)c->size : c->count;
  if (c->coll == IREDUCE && c->in_place && c->rank == c->root) n = c->count;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    long long got = get(c->t, c->recv, i), want = wanted(c, i);
    if (c->coll == IREDUCE && c->rank != c->root) {
      char cell[8];
      put(c->t, cell, 0, UNTOUCHED);
      want = get(c->t, cell, 0);
    }
    if (got != want && bad++ < 3)
      fprintf(stderr, "rank %d: %s: %s %s count %zu root %d%s: [%zu] = %lld, expected %lld\n", world_rank, pass,
              coll_names[c->coll], c->t->name, c->count, c->root, c->in_place ? " in place" : "", i, got, want);
  }
  if (bad) failures++;
  free(c->send), free(c->recv), free(c->rcounts);
}

/* ---- batches ------------------------------------------------------------------------------------ */

typedef enum { WAIT_ALL, TEST_ALL, TEST_ANY } completion_t;

static void complete_all(int n, MPI_Request* reqs, completion_t how) {
  if (how == WAIT_ALL) {
    CHECK_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
  } else if (how == TEST_ALL) {
    for (int done = 0; !done;) CHECK_MPI(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
  } else {
    for (int left = n; left > 0;) {
      int index = MPI_UNDEFINED, flag = 0;
      CHECK_MPI(MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE));
      if (flag && index != MPI_UNDEFINED) left--;
    }
  }
  for (int i = 0; i < n; i++)
    if (reqs[i] != MPI_REQUEST_NULL) fprintf(stderr, "rank %d: request %d not freed\n", world_rank, i), failures++;
}

/* Issues every call of the batch, completes them all at once, checks them. */
static void run_batch(call_t* calls, int n, MPI_Comm comm, completion_t how, const char* pass) {
  MPI_Request* reqs = malloc((size_t)n * sizeof *reqs);
  for (int i = 0; i < n; i++) reqs[i] = start(&calls[i], comm, i);
  complete_all(n, reqs, how);
  for (int i = 0; i < n; i++) check(&calls[i], pass);
  free(reqs);
}

static const type_t T_INT = {MPI_INT, "MPI_INT", sizeof(int), SIGNED};
static const type_t T_I64 = {MPI_INT64_T, "MPI_INT64_T", 8, SIGNED};
static const type_t T_FLOAT = {MPI_FLOAT, "MPI_FLOAT", 4, FLOATING};

/* The routed batch: every collective, both buffer layouts, and signatures used several times. */
static int make_batch(call_t* calls, int size) {
  int last = size - 1, n = 0;
  coll_case_t cases[ROUTED_CASES];
  for (int k = 0, nc = routed_cases(cases, size); k < nc; k++) {
    const coll_case_t* c = &cases[k];
    calls[n++] =
        (call_t){.coll = c->coll, .t = c->t, .op = c->op, .count = c->count, .root = c->root, .in_place = c->in_place};
  }
  /* One signature, five calls outstanding at once: more than its pool, so runs queue. */
  for (int k = 0; k < 5; k++)
    calls[n++] = (call_t){.coll = IALLREDUCE, .t = &T_INT, .op = MPI_SUM, .count = 1000, .root = -1, .in_place = k % 2};
  /* More than one channel on the host target (1 MiB per channel). */
  calls[n++] = (call_t){.coll = IALLREDUCE, .t = &T_FLOAT, .op = MPI_SUM, .count = 300000, .root = -1};
  calls[n++] = (call_t){.coll = IBCAST, .t = &T_INT, .op = MPI_SUM, .count = 300000, .root = last};
  return n;
}

#define MAX_BATCH 64

/* ---- MPI_T counters of coll/dfccl --------------------------------------------------------------- */

static entry_counters_t counters;

static counts_t read_counts(void) { return entry_counters_read(&counters); }

/* Routed and fallen-back calls since `before`: exactly `routed` and `fallback` of the batch. */
static void expect_counts(const counts_t* before, const call_t* calls, int n, int routed, const char* pass) {
  counts_t now = read_counts();
  unsigned long long want[NCOLLS] = {0};
  for (int i = 0; i < n; i++) want[calls[i].coll]++;
  for (int k = 0; k < NCOLLS; k++) {
    unsigned long long r = now.routed[k] - before->routed[k], f = now.fallback[k] - before->fallback[k];
    unsigned long long wr = routed ? want[k] : 0, wf = routed ? 0 : want[k];
    if (r != wr || f != wf) {
      fprintf(stderr, "rank %d: %s: %s routed %llu (expected %llu), fell back %llu (expected %llu)\n", world_rank, pass,
              coll_names[k], r, wr, f, wf);
      failures++;
    }
  }
}

/* ---- the scenarios ------------------------------------------------------------------------------ */

/* A fresh communicator: the batch is routed from its first call, with no blocking call before. */
static void routed_from_first_call(MPI_Comm comm, const char* name) {
  int size, n = 0;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  call_t calls[MAX_BATCH];
  char pass[96];
  const completion_t hows[] = {WAIT_ALL, TEST_ALL, TEST_ANY};
  const char* const how_names[] = {"MPI_Waitall", "MPI_Testall", "MPI_Testany"};
  for (int h = 0; h < 3; h++) {
    n = make_batch(calls, size);
    snprintf(pass, sizeof pass, "%s, %s (%s)", name, h == 0 ? "first calls" : "routed", how_names[h]);
    counts_t before = read_counts();
    run_batch(calls, n, comm, hows[h], pass);
    expect_counts(&before, calls, n, 1, pass);
  }
  if (world_rank == 0) printf("%s: %d nonblocking calls routed from their first call, 3 times\n", name, n);
}

/* A blocking call of a signature while nonblocking calls of it are outstanding: it queues too. */
static void blocking_among_nonblocking(MPI_Comm comm) {
  call_t calls[3];
  MPI_Request reqs[3];
  for (int i = 0; i < 3; i++) {
    calls[i] = (call_t){.coll = IALLREDUCE, .t = &T_INT, .op = MPI_SUM, .count = 1000, .root = -1};
    reqs[i] = start(&calls[i], comm, 100 + i);
  }
  int size, mine[1000], sum[1000];
  CHECK_MPI(MPI_Comm_size(comm, &size));
  for (int i = 0; i < 1000; i++) mine[i] = world_rank + i;
  CHECK_MPI(MPI_Allreduce(mine, sum, 1000, MPI_INT, MPI_SUM, comm));
  for (int i = 0; i < 1000; i++)
    if (sum[i] != size * (size - 1) / 2 + size * i) {
      fprintf(stderr, "rank %d: blocking allreduce among nonblocking ones: [%d] = %d\n", world_rank, i, sum[i]);
      failures++;
      break;
    }
  CHECK_MPI(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
  for (int i = 0; i < 3; i++) check(&calls[i], "blocking among nonblocking");
}

/* Calls on a communicator that is freed while they are outstanding complete normally. */
static void freed_while_outstanding(MPI_Comm comm) {
  call_t calls[4];
  MPI_Request reqs[4];
  int size;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  for (int i = 0; i < 4; i++) {
    calls[i] = (call_t){.coll = i % 2 ? IALLGATHER : IALLREDUCE, .t = &T_I64, .op = MPI_MAX, .count = 1, .root = -1};
    reqs[i] = start(&calls[i], comm, 200 + i);
  }
  CHECK_MPI(MPI_Comm_free(&comm));
  CHECK_MPI(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
  for (int i = 0; i < 4; i++) check(&calls[i], "communicator freed while outstanding");
}

static void my_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] += ((int*)in)[i];
}

/* Calls that always fall back, and calls routed on copies (gaps, uneven blocks) from their first
 * use, completed with one MPI_Waitall. */
static void fallbacks(MPI_Comm comm) {
  counts_t before = read_counts();
  MPI_Request reqs[9];
  int n = 0;
  int s[6] = {-1, -2, -1, -4, -1, -6};
  if (world_rank == world_size - 1) s[0] = 7, s[2] = -8, s[4] = 9;
  MPI_Datatype gaps; /* 3 ints with a hole after each: a datatype with gaps on every rank */
  CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &gaps));
  CHECK_MPI(MPI_Type_commit(&gaps));
  CHECK_MPI(MPI_Ibcast(s, 1, gaps, world_size - 1, comm, &reqs[n++]));
  long double lval = world_rank + 1, lsum = 0; /* a type DFCCL has not */
  CHECK_MPI(MPI_Iallreduce(&lval, &lsum, 1, MPI_LONG_DOUBLE, MPI_SUM, comm, &reqs[n++]));
  struct {
    int v, r;
  } in = {world_rank * 10 % 7, world_rank}, out; /* MAXLOC */
  CHECK_MPI(MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, comm, &reqs[n++]));
  float _Complex z = (float)(world_rank + 1) + 1.0f * I, zprod = 0; /* complex products: not DFCCL's */
  CHECK_MPI(MPI_Ireduce(&z, &zprod, 1, MPI_C_FLOAT_COMPLEX, MPI_PROD, 0, comm, &reqs[n++]));
  MPI_Op op; /* a user op */
  CHECK_MPI(MPI_Op_create(my_sum, 1, &op));
  int u = world_rank + 1, usum = 0;
  CHECK_MPI(MPI_Iallreduce(&u, &usum, 1, MPI_INT, op, comm, &reqs[n++]));
  CHECK_MPI(MPI_Op_free(&op));       /* still outstanding: the MPI layer retains it through our request */
  MPI_Datatype spread, spread_block; /* received with gaps: 3 ints a rank, each followed by a hole */
  CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &spread));
  CHECK_MPI(MPI_Type_create_resized(spread, 0, 6 * sizeof(int), &spread_block));
  CHECK_MPI(MPI_Type_commit(&spread_block));
  int mine[3] = {world_rank, -world_rank, 5}, *all = malloc(6 * (size_t)world_size * sizeof *all);
  for (int i = 0; i < 6 * world_size; i++) all[i] = -9;
  CHECK_MPI(MPI_Iallgather(mine, 3, MPI_INT, all, 1, spread_block, comm, &reqs[n++]));
  CHECK_MPI(MPI_Type_free(&spread));
  CHECK_MPI(MPI_Type_free(&spread_block));
  CHECK_MPI(MPI_Type_free(&gaps));
  int* counts = malloc((size_t)world_size * sizeof *counts); /* uneven recvcounts: rank r gets r + 1 */
  int total = 0;
  for (int r = 0; r < world_size; r++) counts[r] = r + 1, total += r + 1;
  int* vals = malloc((size_t)total * sizeof *vals);
  int* res = malloc((size_t)(world_rank + 1) * sizeof *res);
  for (int j = 0; j < total; j++) vals[j] = j + world_rank;
  CHECK_MPI(MPI_Ireduce_scatter(vals, res, counts, MPI_INT, MPI_SUM, comm, &reqs[n++]));
  int zero = 42, zeros = 43; /* count 0 */
  CHECK_MPI(MPI_Ibcast(&zero, 0, MPI_INT, 0, comm, &reqs[n++]));
  CHECK_MPI(MPI_Iallgather(&zero, 0, MPI_INT, &zeros, 0, MPI_INT, comm, &reqs[n++]));
  CHECK_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));

  int bad = 0, best = -1, at = -1, first = world_rank * (world_rank + 1) / 2;
  for (int r = 0; r < world_size; r++)
    if (r * 10 % 7 > best) best = r * 10 % 7, at = r;
  bad += s[0] != 7 || s[2] != -8 || s[4] != 9 || s[1] != -2 || s[3] != -4 || s[5] != -6;
  bad += lsum != world_size * (world_size + 1) / 2;
  bad += out.v != best || out.r != at;
  float _Complex zwant = 1;
  for (int r = 0; r < world_size; r++) zwant *= (float)(r + 1) + 1.0f * I;
  bad += world_rank == 0 && zprod != zwant;
  bad += usum != world_size * (world_size + 1) / 2;
  for (int r = 0; r < world_size; r++)
    bad += all[6 * r] != r || all[6 * r + 2] != -r || all[6 * r + 4] != 5 || all[6 * r + 1] != -9;
  for (int i = 0; i <= world_rank; i++) bad += res[i] != world_size * (first + i) + world_size * (world_size - 1) / 2;
  bad += zero != 42 || zeros != 43;
  if (bad) fprintf(stderr, "rank %d: fallbacks: %d wrong results\n", world_rank, bad), failures++;
  counts_t now = read_counts();
  unsigned long long routed = 0, fallen = 0;
  for (int k = 0; k < NCOLLS; k++)
    routed += now.routed[k] - before.routed[k], fallen += now.fallback[k] - before.fallback[k];
  /* count 0 may be answered by the MPI layer itself: at least the 4 others fall back; the two
   * datatypes with gaps and the uneven reduce_scatter are routed */
  if (routed != 3 || fallen < 4) {
    fprintf(stderr, "rank %d: fallbacks: %llu routed (expected 3), %llu fell back (expected >= 4)\n", world_rank,
            routed, fallen);
    failures++;
  }
  free(all), free(counts), free(vals), free(res);
}

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  options_none(mpi_options("test_nonblocking", "usage: test_nonblocking (no options)", argc, argv, ""));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  entry_counters_open(&counters, coll_names, NCOLLS);

  MPI_Comm dup;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  routed_from_first_call(dup, "MPI_Comm_dup");
  blocking_among_nonblocking(dup);
  fallbacks(dup);

  /* Ranks in reverse world order, in pairs when there are 4 or more. */
  MPI_Comm sub;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, world_size >= 4 ? world_rank / 2 : 0, -world_rank, &sub));
  routed_from_first_call(sub, "MPI_Comm_split");
  freed_while_outstanding(sub);
  CHECK_MPI(MPI_Comm_free(&dup));

  entry_counters_close(&counters);
  int all = 0;
  CHECK_MPI(MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Finalize());
  if (world_rank == 0) puts(all ? "FAIL" : "PASS");
  return all ? 1 : 0;
}
