/*
 * MPIX_Allreduce_init, MPIX_Bcast_init, MPIX_Reduce_init, MPIX_Allgather_init,
 * MPIX_Reduce_scatter_block_init and MPIX_Reduce_scatter_init through coll/dfccl (host-target test
 * mode), with exact integer checks after every start.
 *
 *   cycles       every collective, MPI_IN_PLACE wherever MPI allows it, several datatypes, ops,
 *                counts and roots: each initialised once (routed at once: an init is a set-up
 *                point) and run 4 times with MPI_Start + MPI_Wait, its input rewritten before each
 *                start and its output checked after each;
 *   startall     the same requests together with MPI_Startall, completed by MPI_Waitall, then by
 *                polling MPI_Testall; five requests of one signature among them (more in flight
 *                than its pool of coll_dfccl_concurrent_runs, so runs queue), and a blocking call of
 *                that signature while they run;
 *   kept         MPI_Op_free / MPI_Type_free right after the init, then started: a user op and a
 *                derived datatype with gaps (fallbacks, through libnbc, which crashes here
 *                unprotected), a dup of MPI_INT in a broadcast (routed: broadcast moves bytes),
 *                and a routed all-gather with a contiguous derived send type;
 *   free         MPI_Request_free of never-started and of completed requests, and its refusal
 *                while a request is active;
 *   fallbacks    every case that falls back (long double, MAXLOC, user ops, complex products,
 *                datatypes with gaps, count 0) and an uneven reduce_scatter (now DFCCL's
 *                reduce-scatter-v, its init routed), started several times, results checked;
 *   comm freed   a request started before MPI_Comm_free of its communicator completes normally;
 *                started after it, it reports MPI_ERR_COMM (erroneous in MPI); a request never
 *                started can still be freed after the communicator.
 * The MPI_T counters coll_dfccl_<coll>_init_routed/_fallback prove each route: every scenario
 * checks that exactly its inits were routed, or fell back.  Starts are not counted.
 *
 * Run with: mpirun --mca coll_dfccl_host_target 1 ... test_persistent  (see persistent.sh).  Prints
 * "PASS" on rank 0 and exits 0 when every check holds.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <complex.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "mpi_options.h" /* test/common */

#if !defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) || !OMPI_HAVE_MPI_EXT_PCOLLREQ
#error "test_persistent needs Open MPI's pcollreq extension (MPIX_..._init)"
#endif

enum {
  ALLREDUCE = COLL_ALLREDUCE,
  BCAST = COLL_BCAST,
  REDUCE = COLL_REDUCE,
  ALLGATHER = COLL_ALLGATHER,
  RSB = COLL_RSB,
  RS = COLL_RS,
  NCOLLS
};
/* clang-format off */
static const char* const coll_names[NCOLLS] = {"allreduce_init", "bcast_init", "reduce_init",
                                               "allgather_init", "reduce_scatter_block_init", "reduce_scatter_init"};
/* clang-format on */

static int world_rank, world_size, failures;

static void fail(const char* pass, const char* what) {
  fprintf(stderr, "rank %d: %s: %s\n", world_rank, pass, what);
  failures++;
}

/* ---- expected values ---------------------------------------------------------------------------- */

/* ---- one persistent collective ------------------------------------------------------------------ */

typedef struct {
  int coll;
  const type_t* t;
  MPI_Op op;
  size_t count; /* per rank for all-gather and reduce-scatter */
  int root;
  int in_place;
  /* set by init() */
  int rank, size;
  void *send, *recv;
  int* rcounts;
  MPI_Request req;
} pcoll_t;

static const long long UNTOUCHED = -1;

static size_t recv_elems(const pcoll_t* c) {
  return c->coll == ALLGATHER || ((c->coll == RSB || c->coll == RS) && c->in_place) ? c->count * (size_t)c->size
                                                                                    : c->count;
}

static size_t send_elems(const pcoll_t* c) {
  return c->coll == RSB || c->coll == RS ? c->count * (size_t)c->size : c->count;
}

/* This start's input (and UNTOUCHED where the output goes). */
static void fill(pcoll_t* c, int salt) {
  const type_t* t = c->t;
  for (size_t j = 0; j < recv_elems(c); j++) put(t, c->recv, j, UNTOUCHED);
  if (c->coll == BCAST) {
    for (size_t i = 0; i < c->count; i++)
      put(t, c->recv, i, c->rank == c->root ? value(t, c->op, c->root, i, salt) : 3);
    return;
  }
  void* in = c->in_place ? c->recv : c->send;
  size_t at = c->in_place && c->coll == ALLGATHER ? (size_t)c->rank * c->count : 0;
  if (c->coll == REDUCE && c->in_place && c->rank != c->root) in = c->send; /* MPI_IN_PLACE at the root only */
  for (size_t i = 0; i < send_elems(c); i++) put(t, in, at + i, value(t, c->op, c->rank, i, salt));
}

static void init(pcoll_t* c, MPI_Comm comm) {
  CHECK_MPI(MPI_Comm_rank(comm, &c->rank));
  CHECK_MPI(MPI_Comm_size(comm, &c->size));
  size_t elems = c->count * (size_t)c->size;
  c->send = malloc(elems * c->t->size + 1);
  c->recv = malloc(elems * c->t->size + 1);
  c->rcounts = malloc((size_t)c->size * sizeof *c->rcounts);
  if (!c->send || !c->recv || !c->rcounts) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int r = 0; r < c->size; r++) c->rcounts[r] = (int)c->count;
  const void* sbuf = c->in_place ? MPI_IN_PLACE : c->send;
  int n = (int)c->count;
  MPI_Datatype dt = c->t->dt;
  switch (c->coll) {
    case ALLREDUCE: CHECK_MPI(MPIX_Allreduce_init(sbuf, c->recv, n, dt, c->op, comm, MPI_INFO_NULL, &c->req)); break;
    case BCAST: CHECK_MPI(MPIX_Bcast_init(c->recv, n, dt, c->root, comm, MPI_INFO_NULL, &c->req)); break;
    case REDUCE:
      sbuf = c->in_place && c->rank == c->root ? MPI_IN_PLACE : c->send;
      CHECK_MPI(MPIX_Reduce_init(sbuf, c->recv, n, dt, c->op, c->root, comm, MPI_INFO_NULL, &c->req));
      break;
    case ALLGATHER: CHECK_MPI(MPIX_Allgather_init(sbuf, n, dt, c->recv, n, dt, comm, MPI_INFO_NULL, &c->req)); break;
    case RSB:
      CHECK_MPI(MPIX_Reduce_scatter_block_init(sbuf, c->recv, n, dt, c->op, comm, MPI_INFO_NULL, &c->req));
      break;
    case RS:
      CHECK_MPI(MPIX_Reduce_scatter_init(sbuf, c->recv, c->rcounts, dt, c->op, comm, MPI_INFO_NULL, &c->req));
      break;
  }
}

static long long wanted(const pcoll_t* c, size_t i, int salt) {
  const type_t* t = c->t;
  switch (c->coll) {
    case ALLREDUCE: return expect(t, c->op, c->size, i, salt);
    case BCAST: return value(t, c->op, c->root, i, salt);
    case REDUCE: return c->rank == c->root ? expect(t, c->op, c->size, i, salt) : UNTOUCHED;
    case ALLGATHER: return value(t, c->op, (int)(i / c->count), i % c->count, salt);
    default: return expect(t, c->op, c->size, (size_t)c->rank * c->count + i, salt); /* reduce-scatter */
  }
}

static void check(const pcoll_t* c, int salt, const char* pass) {
  size_t n = c->coll == ALLGATHER ? c->count * (size_t)c->size : c->count;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    long long got = get(c->t, c->recv, i), want = wanted(c, i, salt);
    if (c->coll == REDUCE && c->rank != c->root) { /* UNTOUCHED as the type stores it */
      char cell[8];
      put(c->t, cell, 0, UNTOUCHED);
      want = get(c->t, cell, 0);
    }
    if (got != want && bad++ < 3)
      fprintf(stderr, "rank %d: %s: %s %s count %zu root %d%s, start %d: [%zu] = %lld, expected %lld\n", world_rank,
              pass, coll_names[c->coll], c->t->name, c->count, c->root, c->in_place ? " in place" : "", salt, i, got,
              want);
  }
  if (bad) failures++;
  if (c->req == MPI_REQUEST_NULL) fail(pass, "a persistent request was freed by its completion");
}

static void release(pcoll_t* c) {
  CHECK_MPI(MPI_Request_free(&c->req));
  if (c->req != MPI_REQUEST_NULL) fail("release", "MPI_Request_free left the handle");
  free(c->send), free(c->recv), free(c->rcounts);
}

static const type_t T_INT = {MPI_INT, "MPI_INT", sizeof(int), SIGNED};

enum { SAME_SIG = 5, MAX_SET = 64 };

/* Every collective with both buffer layouts, then SAME_SIG requests of one signature. */
static int make_set(pcoll_t* cs, int size) {
  int n = 0;
  coll_case_t cases[ROUTED_CASES];
  for (int k = 0, nc = routed_cases(cases, size); k < nc; k++) {
    const coll_case_t* c = &cases[k];
    cs[n++] =
        (pcoll_t){.coll = c->coll, .t = c->t, .op = c->op, .count = c->count, .root = c->root, .in_place = c->in_place};
  }
  for (int k = 0; k < SAME_SIG; k++)
    cs[n++] = (pcoll_t){.coll = ALLREDUCE, .t = &T_INT, .op = MPI_SUM, .count = 1000, .root = -1, .in_place = k % 2};
  return n;
}

/* ---- MPI_T counters of coll/dfccl --------------------------------------------------------------- */

static entry_counters_t counters;

static counts_t read_counts(void) { return entry_counters_read(&counters); }

/* Inits since `before`: exactly `want`. */
static void expect_counts(const counts_t* before, const counts_t* want, const char* pass) {
  counts_t now = read_counts();
  for (int k = 0; k < NCOLLS; k++) {
    unsigned long long r = now.routed[k] - before->routed[k], f = now.fallback[k] - before->fallback[k];
    if (r != want->routed[k] || f != want->fallback[k]) {
      fprintf(stderr, "rank %d: %s: %s routed %llu (expected %llu), fell back %llu (expected %llu)\n", world_rank, pass,
              coll_names[k], r, want->routed[k], f, want->fallback[k]);
      failures++;
    }
  }
}

/* ---- the scenarios ------------------------------------------------------------------------------ */

enum { CYCLES = 3 };

/* Initialises the set (all routed), runs each request CYCLES times alone, then all of them together
 * with MPI_Startall, and frees them. */
static void cycles_and_startall(MPI_Comm comm, const char* name) {
  int size, rank;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  pcoll_t cs[MAX_SET];
  int n = make_set(cs, size);
  char pass[128];
  counts_t before = read_counts(), want = {{0}, {0}, {0}};
  for (int i = 0; i < n; i++) init(&cs[i], comm), want.routed[cs[i].coll]++;
  snprintf(pass, sizeof pass, "%s: inits", name);
  expect_counts(&before, &want, pass);

  snprintf(pass, sizeof pass, "%s: MPI_Start/MPI_Wait", name);
  for (int cycle = 0; cycle < CYCLES; cycle++)
    for (int i = 0; i < n; i++) {
      int salt = cycle * 100 + i;
      fill(&cs[i], salt);
      CHECK_MPI(MPI_Start(&cs[i].req));
      CHECK_MPI(MPI_Wait(&cs[i].req, MPI_STATUS_IGNORE));
      check(&cs[i], salt, pass);
    }

  MPI_Request reqs[MAX_SET];
  int mine[1000], sum[1000];
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    for (int i = 0; i < n; i++) fill(&cs[i], 1000 + cycle * 100 + i), reqs[i] = cs[i].req;
    CHECK_MPI(MPI_Startall(n, reqs));
    /* A blocking call of the SAME_SIG signature while its persistent runs are in flight: it queues
     * on the same pool, in the same order on every rank. */
    for (int i = 0; i < 1000; i++) mine[i] = rank + i + cycle;
    CHECK_MPI(MPI_Allreduce(mine, sum, 1000, MPI_INT, MPI_SUM, comm));
    if (cycle % 2 == 0) {
      CHECK_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
    } else {
      for (int done = 0; !done;) CHECK_MPI(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    }
    snprintf(pass, sizeof pass, "%s: MPI_Startall + %s", name, cycle % 2 ? "MPI_Testall" : "MPI_Waitall");
    for (int i = 0; i < n; i++) {
      if (reqs[i] != cs[i].req) fail(pass, "a persistent request handle changed");
      check(&cs[i], 1000 + cycle * 100 + i, pass);
    }
    for (int i = 0; i < 1000; i++)
      if (sum[i] != size * (i + cycle) + size * (size - 1) / 2) {
        fail(pass, "the blocking allreduce among the persistent runs is wrong");
        break;
      }
  }
  for (int i = 0; i < n; i++) release(&cs[i]);
  expect_counts(&before, &want, pass); /* starts are not counted */
  if (world_rank == 0)
    printf("%s: %d persistent inits routed, each started %d times alone and %d times with MPI_Startall\n", name, n,
           CYCLES, CYCLES);
}

static void my_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] += ((int*)in)[i];
}

/* A bitwise or as a user op: DFCCL cannot know it to be one. */
static void my_bor(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] |= ((int*)in)[i];
}

static void start_wait(MPI_Request* req) {
  CHECK_MPI(MPI_Start(req));
  CHECK_MPI(MPI_Wait(req, MPI_STATUS_IGNORE));
}

/* The op and datatypes of an init freed right after it, then the request started several times. */
static void kept_objects(MPI_Comm comm) {
  const char* pass = "op/datatype freed after the init";
  counts_t before = read_counts(), want = {{0}, {0}, {0}};
  int size, rank;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  CHECK_MPI(MPI_Comm_rank(comm, &rank));

  MPI_Op op; /* a user op: falls back */
  int u[3], usum[3];
  MPI_Request user_op;
  CHECK_MPI(MPI_Op_create(my_sum, 1, &op));
  CHECK_MPI(MPIX_Allreduce_init(u, usum, 3, MPI_INT, op, comm, MPI_INFO_NULL, &user_op));
  CHECK_MPI(MPI_Op_free(&op));
  want.fallback[ALLREDUCE]++;

  /* A derived receive datatype with gaps (5 ints, a hole after each; 20 bytes a rank, a signature
   * of its own): falls back. */
  MPI_Datatype spread, pair;
  int two[5], *pairs = malloc(10 * (size_t)size * sizeof *pairs);
  MPI_Request derived;
  CHECK_MPI(MPI_Type_vector(5, 1, 2, MPI_INT, &spread));
  CHECK_MPI(MPI_Type_create_resized(spread, 0, 10 * sizeof(int), &pair));
  CHECK_MPI(MPI_Type_commit(&pair));
  CHECK_MPI(MPI_Type_free(&spread));
  CHECK_MPI(MPIX_Allgather_init(two, 5, MPI_INT, pairs, 1, pair, comm, MPI_INFO_NULL, &derived));
  CHECK_MPI(MPI_Type_free(&pair));
  want.fallback[ALLGATHER]++;

  /* A dup of a predefined type: contiguous, so a broadcast moves its bytes through DFCCL; the
   * request holds the datatype. */
  MPI_Datatype int_dup;
  int d[4], droot = size - 1;
  MPI_Request dup;
  CHECK_MPI(MPI_Type_dup(MPI_INT, &int_dup));
  CHECK_MPI(MPIX_Bcast_init(d, 4, int_dup, droot, comm, MPI_INFO_NULL, &dup));
  CHECK_MPI(MPI_Type_free(&int_dup));
  want.routed[BCAST]++;

  MPI_Datatype quad; /* a derived send type, predefined receive type: routed, copied in per start */
  int four[4], *quads = malloc(4 * (size_t)size * sizeof *quads);
  MPI_Request copied;
  CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &quad));
  CHECK_MPI(MPI_Type_commit(&quad));
  CHECK_MPI(MPIX_Allgather_init(four, 1, quad, quads, 4, MPI_INT, comm, MPI_INFO_NULL, &copied));
  CHECK_MPI(MPI_Type_free(&quad));
  want.routed[ALLGATHER]++;
  expect_counts(&before, &want, pass);

  for (int cycle = 0; cycle < CYCLES; cycle++) {
    int bad = 0;
    for (int i = 0; i < 3; i++) u[i] = rank + i + cycle, usum[i] = -1;
    start_wait(&user_op);
    for (int i = 0; i < 3; i++) bad += usum[i] != size * (i + cycle) + size * (size - 1) / 2;
    for (int i = 0; i < 5; i++) two[i] = (rank + cycle) * (i % 2 ? -1 : 1) + i;
    for (int i = 0; i < 10 * size; i++) pairs[i] = -9;
    start_wait(&derived);
    for (int r = 0; r < size; r++)
      for (int i = 0; i < 5; i++)
        bad += pairs[10 * r + 2 * i] != (r + cycle) * (i % 2 ? -1 : 1) + i || pairs[10 * r + 2 * i + 1] != -9;
    for (int i = 0; i < 4; i++) d[i] = rank == droot ? 10 * cycle + i : -1;
    start_wait(&dup);
    for (int i = 0; i < 4; i++) bad += d[i] != 10 * cycle + i;
    for (int i = 0; i < 4; i++) four[i] = 100 * rank + 10 * cycle + i;
    for (int i = 0; i < 4 * size; i++) quads[i] = -1;
    start_wait(&copied);
    for (int r = 0; r < size; r++)
      for (int i = 0; i < 4; i++) bad += quads[4 * r + i] != 100 * r + 10 * cycle + i;
    if (bad) fprintf(stderr, "rank %d: %s, start %d: %d wrong results\n", world_rank, pass, cycle, bad), failures++;
  }
  CHECK_MPI(MPI_Request_free(&user_op)); /* releases the op and datatypes we held */
  CHECK_MPI(MPI_Request_free(&derived));
  CHECK_MPI(MPI_Request_free(&dup));
  CHECK_MPI(MPI_Request_free(&copied));
  if (user_op != MPI_REQUEST_NULL || derived != MPI_REQUEST_NULL || dup != MPI_REQUEST_NULL ||
      copied != MPI_REQUEST_NULL)
    fail(pass, "MPI_Request_free left a handle");
  free(pairs), free(quads);
  expect_counts(&before, &want, pass);
}

/* MPI_Request_free: of a request never started, of a completed one, and refused while active. */
static void request_free(MPI_Comm comm) {
  const char* pass = "MPI_Request_free";
  counts_t before = read_counts(), want = {{0}, {0}, {0}};
  int v[8], w[8];
  MPI_Request never, done, active;
  CHECK_MPI(MPIX_Allreduce_init(v, w, 8, MPI_INT, MPI_MAX, comm, MPI_INFO_NULL, &never));
  CHECK_MPI(MPIX_Bcast_init(v, 8, MPI_INT, 0, comm, MPI_INFO_NULL, &done));
  CHECK_MPI(MPIX_Allreduce_init(v, w, 8, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &active));
  want.routed[ALLREDUCE] += 2, want.routed[BCAST]++;
  CHECK_MPI(MPI_Request_free(&never)); /* inactive: never started */
  if (never != MPI_REQUEST_NULL) fail(pass, "freeing a never-started request left the handle");
  for (int i = 0; i < 8; i++) v[i] = world_rank == 0 ? 7 * i : -1;
  start_wait(&done);
  for (int i = 0; i < 8; i++)
    if (v[i] != 7 * i) fail(pass, "the broadcast before the free is wrong");
  CHECK_MPI(MPI_Request_free(&done)); /* inactive again after MPI_Wait */
  if (done != MPI_REQUEST_NULL) fail(pass, "freeing a completed request left the handle");

  /* MPI_Request_free reports through MPI_COMM_WORLD's error handler */
  for (int i = 0; i < 8; i++) v[i] = world_rank + i;
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Start(&active));
  MPI_Request handle = active;
  int rc = MPI_Request_free(&active);
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
  if (rc == MPI_SUCCESS || active != handle) fail(pass, "an active persistent request was freed");
  CHECK_MPI(MPI_Wait(&active, MPI_STATUS_IGNORE));
  int size;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  for (int i = 0; i < 8; i++)
    if (w[i] != size * i + size * (size - 1) / 2) fail(pass, "the run whose free was refused is wrong");
  CHECK_MPI(MPI_Request_free(&active));
  expect_counts(&before, &want, pass);
}

/* Inits that always fall back, started CYCLES times; then count 0. */
static void fallbacks(MPI_Comm comm) {
  const char* pass = "fallbacks";
  counts_t before = read_counts(), want = {{0}, {0}, {0}};
  int size, rank, last;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  last = size - 1;
  enum { NFB = 7 };
  MPI_Request reqs[NFB];
  int s[6]; /* 3 ints with a hole after each: a datatype with gaps */
  MPI_Datatype gaps;
  CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &gaps));
  CHECK_MPI(MPI_Type_commit(&gaps));
  CHECK_MPI(MPIX_Bcast_init(s, 1, gaps, last, comm, MPI_INFO_NULL, &reqs[0]));
  long double ssum, sval; /* a type DFCCL has not */
  CHECK_MPI(MPIX_Allreduce_init(&sval, &ssum, 1, MPI_LONG_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &reqs[1]));
  struct {
    int v, r;
  } in, out; /* MAXLOC */
  CHECK_MPI(MPIX_Allreduce_init(&in, &out, 1, MPI_2INT, MPI_MAXLOC, comm, MPI_INFO_NULL, &reqs[2]));
  int bits, bor; /* a user op (a bitwise or that DFCCL cannot know to be one) */
  MPI_Op user_bor;
  CHECK_MPI(MPI_Op_create(my_bor, 1, &user_bor));
  CHECK_MPI(MPIX_Reduce_init(&bits, &bor, 1, MPI_INT, user_bor, 0, comm, MPI_INFO_NULL, &reqs[3]));
  int* band_in = malloc((size_t)size * sizeof *band_in);
  float _Complex band; /* complex products: not DFCCL's */
  float _Complex* zin = malloc((size_t)size * sizeof *zin);
  CHECK_MPI(
      MPIX_Reduce_scatter_block_init(zin, &band, 1, MPI_C_FLOAT_COMPLEX, MPI_PROD, comm, MPI_INFO_NULL, &reqs[4]));
  int* counts = malloc((size_t)size * sizeof *counts); /* uneven recvcounts: rank r gets r + 1 */
  int total = 0;
  for (int r = 0; r < size; r++) counts[r] = r + 1, total += r + 1;
  int* vals = malloc((size_t)total * sizeof *vals);
  int* res = malloc((size_t)(rank + 1) * sizeof *res);
  CHECK_MPI(MPIX_Reduce_scatter_init(vals, res, counts, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[5]));
  int* shorts = malloc(6 * (size_t)size * sizeof *shorts); /* received with gaps: 3 ints a rank */
  int mine[3];
  MPI_Datatype spread, spread_block;
  CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &spread));
  CHECK_MPI(MPI_Type_create_resized(spread, 0, 6 * sizeof(int), &spread_block));
  CHECK_MPI(MPI_Type_commit(&spread_block));
  CHECK_MPI(MPIX_Allgather_init(mine, 3, MPI_INT, shorts, 1, spread_block, comm, MPI_INFO_NULL, &reqs[6]));
  CHECK_MPI(MPI_Type_free(&spread));
  CHECK_MPI(MPI_Type_free(&spread_block)); /* the requests hold what they need */
  CHECK_MPI(MPI_Type_free(&gaps));
  CHECK_MPI(MPI_Op_free(&user_bor));
  want.fallback[BCAST]++, want.fallback[ALLREDUCE] += 2, want.fallback[REDUCE]++, want.fallback[RSB]++;
  want.routed[RS]++, want.fallback[ALLGATHER]++; /* uneven reduce-scatter: DFCCL's reduce-scatter-v */
  expect_counts(&before, &want, pass);

  for (int cycle = 0; cycle < CYCLES; cycle++) {
    for (int i = 0; i < 6; i++) s[i] = -1 - i;
    if (rank == last) s[0] = 7 + cycle, s[2] = -8, s[4] = 9 * cycle;
    sval = rank + 1 + cycle;
    in.v = (rank * 10 + cycle) % 7, in.r = rank;
    bits = 1 << ((rank + cycle) % size);
    for (int r = 0; r < size; r++) zin[r] = (float)(rank + r + cycle % 2) + 1.0f * I;
    for (int j = 0; j < total; j++) vals[j] = j + rank + cycle;
    mine[0] = rank + cycle, mine[1] = -rank, mine[2] = cycle;
    for (int i = 0; i < 6 * size; i++) shorts[i] = -9;
    CHECK_MPI(MPI_Startall(NFB, reqs));
    CHECK_MPI(MPI_Waitall(NFB, reqs, MPI_STATUSES_IGNORE));

    int bad = 0, best = -1, at = -1, first = rank * (rank + 1) / 2;
    for (int r = 0; r < size; r++)
      if ((r * 10 + cycle) % 7 > best) best = (r * 10 + cycle) % 7, at = r;
    float _Complex zwant = 1;
    for (int q = 0; q < size; q++) zwant *= (float)(q + rank + cycle % 2) + 1.0f * I;
    bad += s[0] != 7 + cycle || s[2] != -8 || s[4] != 9 * cycle || s[1] != -2 || s[3] != -4 || s[5] != -6;
    bad += ssum != size * (size + 1) / 2 + size * cycle;
    bad += out.v != best || out.r != at;
    bad += rank == 0 && bor != (1 << size) - 1;
    bad += band != zwant;
    for (int i = 0; i <= rank; i++) bad += res[i] != size * (first + i + cycle) + size * (size - 1) / 2;
    for (int r = 0; r < size; r++)
      bad += shorts[6 * r] != r + cycle || shorts[6 * r + 2] != -r || shorts[6 * r + 4] != cycle ||
             shorts[6 * r + 1] != -9;
    if (bad) fprintf(stderr, "rank %d: %s, start %d: %d wrong results\n", world_rank, pass, cycle, bad), failures++;
  }
  for (int i = 0; i < NFB; i++) CHECK_MPI(MPI_Request_free(&reqs[i]));
  free(band_in), free(zin), free(counts), free(vals), free(res), free(shorts);
  expect_counts(&before, &want, pass);

  /* Count 0.  Open MPI 4.1's MPIX_Allreduce_init, MPIX_Reduce_init and MPIX_Reduce_scatter_init
   * (all counts 0) answer with a no-op request themselves; MPIX_Bcast_init, MPIX_Allgather_init and
   * MPIX_Reduce_scatter_block_init reach the component, which hands them to libnbc. */
  before = read_counts();
  want = (counts_t){{0}, {0}, {0}};
  int zero = 42, zeros = 43, *zcounts = calloc((size_t)size, sizeof *zcounts);
  MPI_Request z[6];
  CHECK_MPI(MPIX_Allreduce_init(&zero, &zeros, 0, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &z[0]));
  CHECK_MPI(MPIX_Bcast_init(&zero, 0, MPI_INT, 0, comm, MPI_INFO_NULL, &z[1]));
  CHECK_MPI(MPIX_Reduce_init(&zero, &zeros, 0, MPI_INT, MPI_SUM, 0, comm, MPI_INFO_NULL, &z[2]));
  CHECK_MPI(MPIX_Allgather_init(&zero, 0, MPI_INT, &zeros, 0, MPI_INT, comm, MPI_INFO_NULL, &z[3]));
  CHECK_MPI(MPIX_Reduce_scatter_block_init(&zero, &zeros, 0, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &z[4]));
  CHECK_MPI(MPIX_Reduce_scatter_init(&zero, &zeros, zcounts, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &z[5]));
  want.fallback[BCAST]++, want.fallback[ALLGATHER]++, want.fallback[RSB]++;
  for (int cycle = 0; cycle < 2; cycle++) {
    CHECK_MPI(MPI_Startall(6, z));
    CHECK_MPI(MPI_Waitall(6, z, MPI_STATUSES_IGNORE));
  }
  if (zero != 42 || zeros != 43) fail(pass, "a count-0 collective wrote its buffers");
  for (int i = 0; i < 6; i++) CHECK_MPI(MPI_Request_free(&z[i]));
  free(zcounts);
  expect_counts(&before, &want, "fallbacks: count 0");
}

/* MPI_Comm_free with persistent requests: one running, one inactive. */
static void comm_freed(void) {
  const char* pass = "MPI_Comm_free";
  counts_t before = read_counts(), want = {{0}, {0}, {0}};
  MPI_Comm comm;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)); /* the requests report through it */
  int size, v[1000], w[1000];
  CHECK_MPI(MPI_Comm_size(comm, &size));
  MPI_Request running, idle;
  CHECK_MPI(MPIX_Allreduce_init(v, w, 1000, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &running));
  CHECK_MPI(MPIX_Bcast_init(v, 1000, MPI_INT, 0, comm, MPI_INFO_NULL, &idle));
  want.routed[ALLREDUCE]++, want.routed[BCAST]++;
  for (int i = 0; i < 1000; i++) v[i] = world_rank * i;
  CHECK_MPI(MPI_Start(&running));
  CHECK_MPI(MPI_Comm_free(&comm)); /* the run in flight completes first */
  CHECK_MPI(MPI_Wait(&running, MPI_STATUS_IGNORE));
  for (int i = 0; i < 1000; i++)
    if (w[i] != i * size * (size - 1) / 2) {
      fail(pass, "a run in flight at MPI_Comm_free is wrong");
      break;
    }
  /* Starting it now is erroneous (its communicator is freed): the component says so.  Open MPI
   * reports the error of a freed communicator's request through MPI_COMM_WORLD's handler. */
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rc = MPI_Start(&running);
  if (rc != MPI_ERR_COMM) fail(pass, "MPI_Start after MPI_Comm_free did not return MPI_ERR_COMM");
  rc = MPI_Wait(&running, MPI_STATUS_IGNORE);
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
  if (rc == MPI_SUCCESS) fail(pass, "MPI_Wait of a start after MPI_Comm_free succeeded");
  /* Open MPI frees a request whose MPI_Wait failed; otherwise it is the user's to free. */
  if (running != MPI_REQUEST_NULL) CHECK_MPI(MPI_Request_free(&running));
  CHECK_MPI(MPI_Request_free(&idle)); /* inactive all along: freed after its communicator */
  if (idle != MPI_REQUEST_NULL) fail(pass, "freeing an inactive request after MPI_Comm_free left the handle");
  expect_counts(&before, &want, pass);
}

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  options_none(mpi_options("test_persistent", "usage: test_persistent (no options)", argc, argv, ""));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  entry_counters_open(&counters, coll_names, NCOLLS);

  MPI_Comm dup;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  cycles_and_startall(dup, "MPI_Comm_dup");
  kept_objects(dup);
  request_free(dup);
  fallbacks(dup);

  /* Ranks in reverse world order, in pairs when there are 4 or more. */
  MPI_Comm sub;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, world_size >= 4 ? world_rank / 2 : 0, -world_rank, &sub));
  cycles_and_startall(sub, "MPI_Comm_split");
  CHECK_MPI(MPI_Comm_free(&sub));
  comm_freed();
  CHECK_MPI(MPI_Comm_free(&dup));

  entry_counters_close(&counters);
  int all = 0;
  CHECK_MPI(MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Finalize());
  if (world_rank == 0) puts(all ? "FAIL" : "PASS");
  return all ? 1 : 0;
}
