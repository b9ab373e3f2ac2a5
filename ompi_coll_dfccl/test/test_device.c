/*
 * coll/dfccl with CUDA device buffers, on GPUs (no host-target test mode).
 *
 * CUDA is loaded at run time (dlopen of libcudart), so this builds without CUDA headers; where it
 * cannot be loaded or there is no GPU, every rank prints "SKIP: no GPU" and exits 0.  Each rank
 * uses GPU local_rank % device_count, chosen before any collective on device buffers.
 *
 *   test_device [-m suite] [-i iterations] [-w watchdog_s] [-q]
 *     On a duplicate of MPI_COMM_WORLD and on a split of it with the ranks in reverse order, the
 *     six collectives with device buffers: datatypes from int8 to double, SUM/MAX/MIN/PROD, counts
 *     1, 7, 1000 and 1<<20, MPI_IN_PLACE wherever MPI allows it, roots 0 and last.  Blocking first
 *     (every call sets up its signature), then an MPI_Barrier and the nonblocking forms of the same
 *     calls in one batch of some 220 in flight, twice (the second after one more barrier, which
 *     grows the signatures' pools).  Results are copied back and checked exactly.  Then calls that
 *     fall back with device buffers, which the component stages through host memory (MAXLOC, a
 *     derived datatype with a user op, a vector datatype with holes), uneven reduce_scatter counts
 *     (DFCCL's reduce-scatter-v), bitwise ops and a contiguous derived datatype that DFCCL runs, and host buffers of signatures
 *     set up on device memory, which run through DFCCL on copies.  The component's MPI_T counters
 *     must show exactly the calls issued, routed or fallen back.
 *
 *   test_device -m persistent [-i iterations] [-w watchdog_s] [-q]
 *     On the same two communicators, the persistent collectives (MPIX_..._init, Open MPI's pcollreq
 *     extension) with device buffers: each of the six with two shapes (datatypes, ops, counts up
 *     to 1<<20), MPI_IN_PLACE wherever MPI allows it, roots 0 and last, plus more requests of one
 *     signature than its pool (coll_dfccl_concurrent_runs, default 2).  Every init is routed (it
 *     decides the route like a blocking call).  Each request is started 3 times with MPI_Start + MPI_Wait, then all of
 *     them 3 times with one MPI_Startall (completed by MPI_Waitall or MPI_Testall); the device
 *     input is rewritten before every start and the result checked exactly after it; then
 *     MPI_Request_free.  An init that falls back with device buffers (a user op) runs the previous
 *     component's persistent request on host copies, refreshed at every start (counted as fallen
 *     back; its three starts are checked too).
 *
 *   test_device -m cross [-i iterations] [-w watchdog_s] [-q]
 *     Three communicators (two MPI_Comm_dup of MPI_COMM_WORLD, one MPI_Comm_split with the ranks
 *     in reverse order) with six nonblocking collectives each on device buffers (all-reduce,
 *     broadcast, all-gather, reduce-scatter, all-to-all, all-gather-v with uneven counts), and no
 *     blocking call before them: the communicators' DFCCL communicators are made by the first
 *     iteration's calls, in a different order on every rank.  Every iteration each rank issues the
 *     eighteen calls in its own random interleaving
 *     of the communicators (each communicator's calls in the same order everywhere, as MPI
 *     requires), then one MPI_Waitall; every result is checked, and every call must be routed.
 *
 *   test_device -m sync [-i iterations] [-w watchdog_s] [-q]
 *     The cross pattern with a cudaDeviceSynchronize at a random point among the calls on every
 *     rank (every 10th iteration a cudaFree first, of a small buffer allocated for it): it finishes
 *     only if the GPU daemon quits voluntarily while it cannot progress.
 *
 * A watchdog (alarm), reset whenever a step completes, prints "WATCHDOG" and exits with 42.  The
 * last line on rank 0 is "PASS ..." or "FAIL ..."; the exit status is nonzero on failure.
 * Run with: mpirun --mca coll_dfccl_priority 90 ... test_device  (see device.sh).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <dlfcn.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudart.h"
#include "elements.h"
#include "mpi_options.h" /* test/common */

#if !defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) || !OMPI_HAVE_MPI_EXT_PCOLLREQ
#error "test_device needs Open MPI's pcollreq extension (MPIX_..._init)"
#endif

#define BIG (1u << 20) /* elements: the suite's large count                 */
#define MAX_SIGS 128   /* coll_dfccl_max_colls' default: signatures per communicator */

static int world_rank, world_size, failures, reported;
static unsigned watchdog_s = 60;
static bool quiet;

/* At most this many mismatch lines per rank: a broken run of 1000 iterations stays readable. */
#define REPORT(...)                                    \
  do {                                                 \
    if (reported++ < 30) fprintf(stderr, __VA_ARGS__); \
  } while (0)

/* ---- MPI_T counters of coll/dfccl --------------------------------------------------------------- */

/* Counter k < NKINDS is the blocking collective k, NKINDS + k its nonblocking form, 2 * NKINDS + k
 * its persistent init. */
enum { ALLREDUCE, BCAST, REDUCE, ALLGATHER, RSB, RS, ALLTOALL, ALLGATHERV, NKINDS };
#define NCOUNTERS (3 * NKINDS)
/* clang-format off */
static const char* const kind_names[NKINDS] = {"allreduce", "bcast", "reduce", "allgather", "reduce_scatter_block",
                                               "reduce_scatter", "alltoall", "allgatherv"};
/* clang-format on */

static entry_counters_t counters;
/* What this program issued since the last counters_mark(): the counters must say the same. */
static unsigned long long want_routed[NCOUNTERS], want_fallback[NCOUNTERS];
static counts_t baseline;
static char counter_labels[NCOUNTERS][64]; /* "allreduce", "iallreduce", "allreduce_init", ... */

static void counters_start(void) {
  const char* names[NCOUNTERS];
  for (int k = 0; k < NCOUNTERS; k++) {
    int form = k / NKINDS; /* blocking, nonblocking (MPI_I...), persistent (MPIX_..._init) */
    snprintf(counter_labels[k], sizeof counter_labels[k], "%s%s%s", form == 1 ? "i" : "", kind_names[k % NKINDS],
             form == 2 ? "_init" : "");
    names[k] = counter_labels[k];
  }
  entry_counters_open(&counters, names, NCOUNTERS);
}

static counts_t counters_read(void) { return entry_counters_read(&counters); }

/* From here on, the counters must follow want_routed and want_fallback.  Called once the
 * communicators have their DFCCL contexts: setting one up duplicates the communicator, and Open
 * MPI's MPI_Iallreduce calls that agree on the duplicate's id fall back, a number of times that is
 * Open MPI's business (so do the MPI_Allgather calls inside MPI_Comm_split, on host memory). */
static void counters_mark(void) {
  baseline = counters_read();
  memset(want_routed, 0, sizeof want_routed);
  memset(want_fallback, 0, sizeof want_fallback);
}

/* Every counter's increase since counters_mark() against what was issued; returns the routed and
 * fallen-back calls (all collectives). */
static void counters_check(const char* pass, bool table, unsigned long long* routed, unsigned long long* fallen) {
  counts_t now = counters_read();
  *routed = *fallen = 0;
  for (int k = 0; k < NCOUNTERS; k++) {
    const char* label = counter_labels[k];
    unsigned long long r = now.routed[k] - baseline.routed[k], f = now.fallback[k] - baseline.fallback[k];
    *routed += r, *fallen += f;
    if (r != want_routed[k] || f != want_fallback[k]) {
      REPORT("rank %d: %s: %s routed %llu (expected %llu), fell back %llu (expected %llu)\n", world_rank, pass, label,
             r, want_routed[k], f, want_fallback[k]);
      failures++;
    }
    if (table && world_rank == 0 && (r || f))
      printf("coll/dfccl: %-25s %6llu routed through DFCCL, %4llu fell back\n", label, r, f);
  }
}

static void counters_stop(void) { entry_counters_close(&counters); }

/* ---- values ------------------------------------------------------------------------------------- */

static const type_t T_I8 = {MPI_INT8_T, "MPI_INT8_T", 1, SIGNED};
static const type_t T_I32 = {MPI_INT32_T, "MPI_INT32_T", 4, SIGNED};
static const type_t T_I64 = {MPI_INT64_T, "MPI_INT64_T", 8, SIGNED};
static const type_t T_U32 = {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), UNSIGNED};
static const type_t T_U64 = {MPI_UINT64_T, "MPI_UINT64_T", 8, UNSIGNED};
static const type_t T_FLOAT = {MPI_FLOAT, "MPI_FLOAT", 4, FLOATING};
static const type_t T_DOUBLE = {MPI_DOUBLE, "MPI_DOUBLE", 8, FLOATING};
static const type_t T_BYTE = {MPI_BYTE, "MPI_BYTE", 1, UNSIGNED};
static const type_t T_CHAR = {MPI_CHAR, "MPI_CHAR", 1, UNSIGNED};

static const char* op_name(MPI_Op op) {
  return op == MPI_SUM ? "SUM" : op == MPI_PROD ? "PROD" : op == MPI_MAX ? "MAX" : "MIN";
}

/* ---- one call on device buffers ----------------------------------------------------------------- */

typedef struct {
  int kind;
  const type_t* t;
  MPI_Op op;    /* MPI_SUM for broadcast and all-gather (the values only) */
  size_t count; /* per rank for all-gather and reduce-scatter, per pair for all-to-all; all-gather-v:
                 * rank r contributes count + r */
  int root;
  int in_place;
  /* set by call_alloc */
  MPI_Comm comm;
  int rank, size, salt;
  void *send_h, *recv_h; /* host images */
  void *send_d, *recv_d; /* device buffers */
  int* rcounts;
  int* displs; /* all-gather-v: packed */
} call_t;

static const long long UNTOUCHED = -1;

static size_t recv_elems(const call_t* c) {
  if (c->kind == ALLGATHERV) return (size_t)c->displs[c->size - 1] + (size_t)c->rcounts[c->size - 1];
  bool whole = c->kind == ALLGATHER || c->kind == ALLTOALL || ((c->kind == RSB || c->kind == RS) && c->in_place);
  return whole ? c->count * (size_t)c->size : c->count;
}

static size_t send_elems(const call_t* c) {
  if (c->kind == ALLGATHERV) return c->count + (size_t)c->rank;
  return c->kind == RSB || c->kind == RS || c->kind == ALLTOALL ? c->count * (size_t)c->size : c->count;
}

static void* host_alloc(size_t bytes) {
  void* p = malloc(bytes > 0 ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "rank %d: out of host memory (%zu bytes)\n", world_rank, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

static void call_alloc(call_t* c, MPI_Comm comm) {
  c->comm = comm;
  CHECK_MPI(MPI_Comm_rank(comm, &c->rank));
  CHECK_MPI(MPI_Comm_size(comm, &c->size));
  c->rcounts = host_alloc((size_t)c->size * sizeof *c->rcounts);
  c->displs = host_alloc((size_t)c->size * sizeof *c->displs);
  for (int r = 0, at = 0; r < c->size; at += c->rcounts[r++]) {
    c->rcounts[r] = (int)c->count + (c->kind == ALLGATHERV ? r : 0);
    c->displs[r] = at;
  }
  size_t sbytes = send_elems(c) * c->t->size, rbytes = recv_elems(c) * c->t->size;
  c->send_h = host_alloc(sbytes);
  c->recv_h = host_alloc(rbytes);
  c->send_d = dev_alloc(sbytes);
  c->recv_d = dev_alloc(rbytes);
}

static void call_free(call_t* c) {
  free(c->send_h), free(c->recv_h), free(c->rcounts), free(c->displs);
  dev_free(c->send_d), dev_free(c->recv_d);
}

/* This rank's inputs (and UNTOUCHED where the result goes), uploaded; uploads_done() before use. */
static void call_fill(call_t* c, int salt) {
  const type_t* t = c->t;
  c->salt = salt;
  for (size_t j = 0; j < recv_elems(c); j++) put(t, c->recv_h, j, UNTOUCHED);
  if (c->kind == BCAST) {
    for (size_t i = 0; i < c->count; i++)
      put(t, c->recv_h, i, c->rank == c->root ? value(t, c->op, c->root, i, salt) : 3);
  } else {
    bool at_root = c->kind != REDUCE || c->rank == c->root; /* reduce: MPI_IN_PLACE at the root only */
    void* in = c->in_place && at_root ? c->recv_h : c->send_h;
    size_t at = c->in_place && c->kind == ALLGATHER ? (size_t)c->rank * c->count : 0;
    for (size_t i = 0; i < send_elems(c); i++) put(t, in, at + i, value(t, c->op, c->rank, i, salt));
  }
  upload(c->recv_d, c->recv_h, recv_elems(c) * t->size);
  if (c->kind != BCAST) upload(c->send_d, c->send_h, send_elems(c) * t->size);
}

/* The send buffer as MPI takes it: MPI_IN_PLACE where the call is in place (reduce: at the root). */
static const void* call_sbuf(const call_t* c) {
  return c->in_place && (c->kind != REDUCE || c->rank == c->root) ? MPI_IN_PLACE : c->send_d;
}

/* Issues the call, blocking (req NULL) or not, and counts it as routed. */
static void call_issue(call_t* c, MPI_Request* req) {
  const void* sbuf = call_sbuf(c);
  int n = (int)c->count;
  MPI_Datatype dt = c->t->dt;
  MPI_Comm comm = c->comm;
  if (req == NULL) {
    switch (c->kind) {
      case ALLREDUCE: CHECK_MPI(MPI_Allreduce(sbuf, c->recv_d, n, dt, c->op, comm)); break;
      case BCAST: CHECK_MPI(MPI_Bcast(c->recv_d, n, dt, c->root, comm)); break;
      case REDUCE: CHECK_MPI(MPI_Reduce(sbuf, c->recv_d, n, dt, c->op, c->root, comm)); break;
      case ALLGATHER: CHECK_MPI(MPI_Allgather(sbuf, n, dt, c->recv_d, n, dt, comm)); break;
      case RSB: CHECK_MPI(MPI_Reduce_scatter_block(sbuf, c->recv_d, n, dt, c->op, comm)); break;
      case RS: CHECK_MPI(MPI_Reduce_scatter(sbuf, c->recv_d, c->rcounts, dt, c->op, comm)); break;
      case ALLTOALL: CHECK_MPI(MPI_Alltoall(sbuf, n, dt, c->recv_d, n, dt, comm)); break;
      case ALLGATHERV:
        CHECK_MPI(MPI_Allgatherv(sbuf, c->rcounts[c->rank], dt, c->recv_d, c->rcounts, c->displs, dt, comm));
        break;
    }
    want_routed[c->kind]++;
    return;
  }
  switch (c->kind) {
    case ALLREDUCE: CHECK_MPI(MPI_Iallreduce(sbuf, c->recv_d, n, dt, c->op, comm, req)); break;
    case BCAST: CHECK_MPI(MPI_Ibcast(c->recv_d, n, dt, c->root, comm, req)); break;
    case REDUCE: CHECK_MPI(MPI_Ireduce(sbuf, c->recv_d, n, dt, c->op, c->root, comm, req)); break;
    case ALLGATHER: CHECK_MPI(MPI_Iallgather(sbuf, n, dt, c->recv_d, n, dt, comm, req)); break;
    case RSB: CHECK_MPI(MPI_Ireduce_scatter_block(sbuf, c->recv_d, n, dt, c->op, comm, req)); break;
    case RS: CHECK_MPI(MPI_Ireduce_scatter(sbuf, c->recv_d, c->rcounts, dt, c->op, comm, req)); break;
    case ALLTOALL: CHECK_MPI(MPI_Ialltoall(sbuf, n, dt, c->recv_d, n, dt, comm, req)); break;
    case ALLGATHERV:
      CHECK_MPI(MPI_Iallgatherv(sbuf, c->rcounts[c->rank], dt, c->recv_d, c->rcounts, c->displs, dt, comm, req));
      break;
  }
  want_routed[NKINDS + c->kind]++;
}

/* The call's persistent request (its buffers are fixed from here on), counted as routed. */
static void call_init(call_t* c, MPI_Request* req) {
  const void* sbuf = call_sbuf(c);
  int n = (int)c->count;
  MPI_Datatype dt = c->t->dt;
  MPI_Comm comm = c->comm;
  MPI_Info info = MPI_INFO_NULL;
  switch (c->kind) {
    case ALLREDUCE: CHECK_MPI(MPIX_Allreduce_init(sbuf, c->recv_d, n, dt, c->op, comm, info, req)); break;
    case BCAST: CHECK_MPI(MPIX_Bcast_init(c->recv_d, n, dt, c->root, comm, info, req)); break;
    case REDUCE: CHECK_MPI(MPIX_Reduce_init(sbuf, c->recv_d, n, dt, c->op, c->root, comm, info, req)); break;
    case ALLGATHER: CHECK_MPI(MPIX_Allgather_init(sbuf, n, dt, c->recv_d, n, dt, comm, info, req)); break;
    case RSB: CHECK_MPI(MPIX_Reduce_scatter_block_init(sbuf, c->recv_d, n, dt, c->op, comm, info, req)); break;
    case RS: CHECK_MPI(MPIX_Reduce_scatter_init(sbuf, c->recv_d, c->rcounts, dt, c->op, comm, info, req)); break;
    case ALLTOALL: CHECK_MPI(MPIX_Alltoall_init(sbuf, n, dt, c->recv_d, n, dt, comm, info, req)); break;
    case ALLGATHERV:
      CHECK_MPI(
          MPIX_Allgatherv_init(sbuf, c->rcounts[c->rank], dt, c->recv_d, c->rcounts, c->displs, dt, comm, info, req));
      break;
  }
  want_routed[2 * NKINDS + c->kind]++;
}

static long long wanted(const call_t* c, size_t i) {
  const type_t* t = c->t;
  switch (c->kind) {
    case ALLREDUCE: return expect(t, c->op, c->size, i, c->salt);
    case BCAST: return value(t, c->op, c->root, i, c->salt);
    case REDUCE: {
      if (c->rank == c->root) return expect(t, c->op, c->size, i, c->salt);
      char cell[8]; /* a non-root's receive buffer stays as it was */
      put(t, cell, 0, UNTOUCHED);
      return get(t, cell, 0);
    }
    case ALLGATHER: return value(t, c->op, (int)(i / c->count), i % c->count, c->salt);
    case ALLTOALL: /* block r came from rank r, which sent its block for this rank */
      return value(t, c->op, (int)(i / c->count), (size_t)c->rank * c->count + i % c->count, c->salt);
    case ALLGATHERV: {
      int r = c->size - 1;
      while (r > 0 && i < (size_t)c->displs[r]) r--;
      return value(t, c->op, r, i - (size_t)c->displs[r], c->salt);
    }
    default: return expect(t, c->op, c->size, (size_t)c->rank * c->count + i, c->salt); /* reduce-scatter */
  }
}

/* Copies the result back and checks it exactly. */
static void call_check(call_t* c, const char* pass) {
  download(c->recv_h, c->recv_d, recv_elems(c) * c->t->size);
  size_t n = c->kind == ALLGATHER || c->kind == ALLTOALL || c->kind == ALLGATHERV ? recv_elems(c) : c->count;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    long long got = get(c->t, c->recv_h, i), want = wanted(c, i);
    if (got != want && bad++ < 3)
      REPORT("rank %d: %s: %s %s %s count %zu root %d%s: [%zu] = %lld, expected %lld\n", world_rank, pass,
             kind_names[c->kind], c->t->name, op_name(c->op), c->count, c->root, c->in_place ? " in place" : "", i, got,
             want);
  }
  if (bad) failures++;
}

/* ---- suite -------------------------------------------------------------------------------------- */

#define MAX_SUITE 256

static call_t shape(int kind, const type_t* t, MPI_Op op, size_t count, int root, int in_place) {
  return (call_t){.kind = kind, .t = t, .op = op, .count = count, .root = root, .in_place = in_place};
}

/* The routed calls: every collective, several datatypes, ops and counts, both buffer layouts where
 * MPI allows MPI_IN_PLACE, roots 0 and last.  Reduce_scatter uses reduce_scatter_block's shapes
 * (DFCCL's same signatures). */
static int suite_calls(call_t* calls, int size) {
  static const type_t* const reduced[] = {&T_I8, &T_I32, &T_I64, &T_FLOAT, &T_DOUBLE, &T_U32, &T_U64};
  static const type_t* const moved[] = {&T_I8, &T_I32, &T_I64, &T_FLOAT, &T_DOUBLE, &T_BYTE, &T_CHAR};
  static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  static const size_t counts[] = {1, 7, 1000};
  int last = size - 1, n = 0;
  for (int t = 0; t < 7; t++)
    for (int o = 0; o < 4; o++) {
      size_t count = counts[(t + o) % 3];
      for (int in_place = 0; in_place < 2; in_place++) {
        calls[n++] = shape(ALLREDUCE, reduced[t], ops[o], count, -1, in_place);
        if (t >= 5) continue; /* reduce and reduce-scatter: five of the types */
        calls[n++] = shape(REDUCE, reduced[t], ops[o], count, (t + o) % 2 ? last : 0, in_place);
        calls[n++] = shape(RSB, reduced[t], ops[o], count, -1, in_place);
        calls[n++] = shape(RS, reduced[t], ops[o], count, -1, in_place);
      }
    }
  for (int in_place = 0; in_place < 2; in_place++) {
    /* int32 SUM at every count (7 came above), both roots of one reduce signature, and 1<<20. */
    calls[n++] = shape(ALLREDUCE, &T_I32, MPI_SUM, 1, -1, in_place);
    calls[n++] = shape(ALLREDUCE, &T_I32, MPI_SUM, 1000, -1, in_place);
    calls[n++] = shape(ALLREDUCE, &T_I32, MPI_SUM, BIG, -1, in_place);
    calls[n++] = shape(REDUCE, &T_I32, MPI_SUM, 7, 0, in_place);
    calls[n++] = shape(REDUCE, &T_I32, MPI_SUM, BIG, last, in_place);
    calls[n++] = shape(RSB, &T_I32, MPI_SUM, BIG, -1, in_place);
    calls[n++] = shape(RS, &T_I32, MPI_SUM, BIG, -1, in_place);
    calls[n++] = shape(ALLGATHER, &T_I32, MPI_SUM, BIG, -1, in_place);
    for (int t = 0; t < 7; t++) calls[n++] = shape(ALLGATHER, moved[t], MPI_SUM, counts[t % 3], -1, in_place);
  }
  for (int t = 0; t < 7; t++)
    for (int root = 0; root < 2; root++)
      calls[n++] = shape(BCAST, moved[t], MPI_SUM, counts[(t + root) % 3], root ? last : 0, 0);
  calls[n++] = shape(BCAST, &T_I32, MPI_SUM, BIG, last, 0);
  return n;
}

/* DFCCL signatures the calls register, counted as the component tells them apart at most
 * (MPI_IN_PLACE and reduce_scatter share theirs): beyond coll_dfccl_max_colls, calls fall back. */
static int signatures(const call_t* calls, int n) {
  int distinct = 0;
  for (int i = 0; i < n; i++) {
    const call_t* a = &calls[i];
    int ka = a->kind == RS ? RSB : a->kind, seen = 0;
    for (int j = 0; j < i && !seen; j++) {
      const call_t* b = &calls[j];
      int kb = b->kind == RS ? RSB : b->kind;
      seen = ka == kb && a->t->dt == b->t->dt && a->op == b->op && a->count == b->count && a->root == b->root;
    }
    distinct += !seen;
  }
  return distinct;
}

static void say(const char* fmt, const char* name, int n) {
  if (world_rank == 0 && !quiet) printf(fmt, name, n), fflush(stdout);
}

static void progress(const char* mode, int it, int iterations) {
  if (world_rank == 0 && (!quiet || (it + 1) % 100 == 0))
    printf("%s: iteration %d of %d done\n", mode, it + 1, iterations), fflush(stdout);
}

/* Blocking, each call on its own: sets up every signature. */
static void blocking_pass(MPI_Comm comm, const char* name, int salt) {
  call_t calls[MAX_SUITE];
  int size;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  int n = suite_calls(calls, size);
  char pass[96];
  snprintf(pass, sizeof pass, "%s, blocking", name);
  for (int i = 0; i < n; i++) {
    call_alloc(&calls[i], comm);
    call_fill(&calls[i], salt + i);
    uploads_done();
    call_issue(&calls[i], NULL);
    call_check(&calls[i], pass);
    watchdog_reset();
  }
  for (int i = 0; i < n; i++) call_free(&calls[i]);
  say("%s: %d blocking calls on device buffers\n", name, n);
}

typedef enum { WAIT_ALL, TEST_ALL } completion_t;

static void complete_all(int n, MPI_Request* reqs, completion_t how) {
  if (how == WAIT_ALL) {
    CHECK_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
  } else {
    for (int done = 0; !done;) CHECK_MPI(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
  }
}

/* Nonblocking, all in flight at once: the same signatures, set up by the blocking pass. */
static void nonblocking_pass(MPI_Comm comm, const char* name, int salt, completion_t how) {
  call_t calls[MAX_SUITE + 3];
  MPI_Request reqs[MAX_SUITE + 3];
  int size;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  int n = suite_calls(calls, size);
  for (int k = 0; k < 3; k++) /* one signature, several runs outstanding: they queue */
    calls[n++] = shape(ALLREDUCE, &T_I32, MPI_SUM, 1000, -1, k % 2);
  for (int i = 0; i < n; i++) call_alloc(&calls[i], comm), call_fill(&calls[i], salt + i);
  uploads_done();
  for (int i = 0; i < n; i++) call_issue(&calls[i], &reqs[i]);
  complete_all(n, reqs, how);
  char pass[96];
  snprintf(pass, sizeof pass, "%s, nonblocking (%s)", name, how == WAIT_ALL ? "MPI_Waitall" : "MPI_Testall");
  for (int i = 0; i < n; i++) call_check(&calls[i], pass), call_free(&calls[i]);
  watchdog_reset();
  say(how == WAIT_ALL ? "%s: %d nonblocking calls in flight, MPI_Waitall\n"
                      : "%s: %d nonblocking calls in flight, MPI_Testall\n",
      name, n);
}

/* ---- fallbacks with device buffers (staged through host memory) -------------------------------- */

static const char* where; /* the communicator's name, for the messages */

static void check_ints(const int* got, const int* want, int n, const char* what) {
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (got[i] != want[i] && bad++ < 3)
      REPORT("rank %d: %s: %s: [%d] = %d, expected %d\n", world_rank, where, what, i, got[i], want[i]);
  if (bad) failures++;
}

static void pair_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt; /* pairs of ints */
  for (int i = 0; i < 2 * *len; i++) ((int*)inout)[i] += ((int*)in)[i];
}

static int band_input(int r, int i) { return 0xF ^ (1 << ((r + i) % 4)); }

/* Returns the number of calls. */
static int fallbacks(MPI_Comm comm) {
  int rank, size, last;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  last = size - 1;
  enum { N = 1000 };
  int* in = host_alloc(N * sizeof(int) * (size_t)size * 2);
  int* out = host_alloc(N * sizeof(int) * (size_t)size * 2);
  int* want = host_alloc(N * sizeof(int) * (size_t)size * 2);

  /* MPI_BAND: DFCCL's bitwise and.  Out of place and in place. */
  for (int in_place = 0; in_place < 2; in_place++) {
    for (int i = 0; i < N; i++) {
      in[i] = band_input(rank, i), out[i] = -1, want[i] = 0xF;
      for (int r = 0; r < size; r++) want[i] &= band_input(r, i);
    }
    int* send_d = dev_copy_of(in, N * sizeof(int));
    int* recv_d = dev_copy_of(in_place ? in : out, N * sizeof(int));
    uploads_done();
    CHECK_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : send_d, recv_d, N, MPI_INT, MPI_BAND, comm));
    download(out, recv_d, N * sizeof(int));
    check_ints(out, want, N, in_place ? "MPI_Allreduce MPI_BAND in place" : "MPI_Allreduce MPI_BAND");
    dev_free(send_d), dev_free(recv_d);
    want_routed[ALLREDUCE]++;
  }

  /* A derived datatype (pairs of ints): Open MPI allows only user ops on it. */
  MPI_Datatype pair;
  MPI_Op op;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
  CHECK_MPI(MPI_Type_commit(&pair));
  CHECK_MPI(MPI_Op_create(pair_sum, 1, &op));
  for (int i = 0; i < 2 * N; i++) {
    in[i] = (i % 2 ? -1 : 1) * (rank + i % 5), out[i] = -7, want[i] = 0;
    for (int r = 0; r < size; r++) want[i] += (i % 2 ? -1 : 1) * (r + i % 5);
  }
  {
    int* send_d = dev_copy_of(in, 2 * N * sizeof(int));
    int* recv_d = dev_copy_of(out, 2 * N * sizeof(int));
    uploads_done();
    CHECK_MPI(MPI_Allreduce(send_d, recv_d, N, pair, op, comm));
    download(out, recv_d, 2 * N * sizeof(int));
    check_ints(out, want, 2 * N, "MPI_Allreduce of a contiguous derived datatype, user op");
    dev_free(send_d), dev_free(recv_d);
    want_fallback[ALLREDUCE]++;
  }
  CHECK_MPI(MPI_Op_free(&op));

  /* MAXLOC on MPI_2INT. */
  {
    struct {
      int v, r;
    } loc = {rank * 10 % 7, rank}, res = {-1, -1};
    int best = -1, at = -1;
    for (int r = 0; r < size; r++)
      if (r * 10 % 7 > best) best = r * 10 % 7, at = r;
    void* send_d = dev_copy_of(&loc, sizeof loc);
    void* recv_d = dev_copy_of(&res, sizeof res);
    uploads_done();
    CHECK_MPI(MPI_Allreduce(send_d, recv_d, 1, MPI_2INT, MPI_MAXLOC, comm));
    download(&res, recv_d, sizeof res);
    int got[2] = {res.v, res.r}, exp[2] = {best, at};
    check_ints(got, exp, 2, "MPI_Allreduce MPI_MAXLOC");
    dev_free(send_d), dev_free(recv_d);
    want_fallback[ALLREDUCE]++;
  }

  /* A vector datatype with holes, new on every rank: staged (the holes, this rank's marks, come back
   * unchanged). */
  {
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    for (int i = 0; i < N; i++) {
      bool hole = i % 2 || i >= N - 1;
      in[i] = hole ? -(rank + 1) : rank == last ? 1000 + i : -1;
      want[i] = hole ? -(rank + 1) : 1000 + i;
    }
    int* buf_d = dev_copy_of(in, N * sizeof(int));
    uploads_done();
    CHECK_MPI(MPI_Bcast(buf_d, 1, vec, last, comm));
    download(out, buf_d, N * sizeof(int));
    check_ints(out, want, N, "MPI_Bcast of a vector datatype");
    dev_free(buf_d);
    CHECK_MPI(MPI_Type_free(&vec));
    want_fallback[BCAST]++;
  }

  /* MPI_BOR: DFCCL's bitwise or.  Out of place, then in place at the root. */
  for (int in_place = 0; in_place < 2; in_place++) {
    int root = in_place ? 0 : last, n = 7;
    for (int i = 0; i < n; i++) {
      in[i] = (1 << ((rank + i) % 30)), out[i] = in[i], want[i] = 0;
      for (int r = 0; r < size; r++) want[i] |= 1 << ((r + i) % 30);
    }
    int* send_d = dev_copy_of(in, n * sizeof(int));
    int* recv_d = dev_copy_of(out, n * sizeof(int));
    uploads_done();
    const void* sbuf = in_place && rank == root ? MPI_IN_PLACE : send_d;
    CHECK_MPI(MPI_Reduce(sbuf, recv_d, n, MPI_INT, MPI_BOR, root, comm));
    download(out, recv_d, n * sizeof(int));
    if (rank == root) check_ints(out, want, n, in_place ? "MPI_Reduce MPI_BOR in place" : "MPI_Reduce MPI_BOR");
    dev_free(send_d), dev_free(recv_d);
    want_routed[REDUCE]++;
  }

  /* A contiguous derived receive datatype: all-gather moves bytes, routed. */
  {
    int mine[2] = {rank, -rank};
    for (int r = 0; r < size; r++) want[2 * r] = r, want[2 * r + 1] = -r, out[2 * r] = out[2 * r + 1] = 99;
    int* send_d = dev_copy_of(mine, sizeof mine);
    int* recv_d = dev_copy_of(out, 2 * (size_t)size * sizeof(int));
    uploads_done();
    CHECK_MPI(MPI_Allgather(send_d, 2, MPI_INT, recv_d, 1, pair, comm));
    download(out, recv_d, 2 * (size_t)size * sizeof(int));
    check_ints(out, want, 2 * size, "MPI_Allgather into a derived datatype");
    dev_free(send_d), dev_free(recv_d);
    want_routed[ALLGATHER]++;
  }
  CHECK_MPI(MPI_Type_free(&pair));

  /* MPI_BAND in reduce_scatter_block: routed. */
  {
    int n = 3;
    for (int j = 0; j < n * size; j++) in[j] = band_input(rank, j);
    for (int i = 0; i < n; i++) {
      out[i] = -1, want[i] = 0xF;
      for (int r = 0; r < size; r++) want[i] &= band_input(r, rank * n + i);
    }
    int* send_d = dev_copy_of(in, (size_t)(n * size) * sizeof(int));
    int* recv_d = dev_copy_of(out, n * sizeof(int));
    uploads_done();
    CHECK_MPI(MPI_Reduce_scatter_block(send_d, recv_d, n, MPI_INT, MPI_BAND, comm));
    download(out, recv_d, n * sizeof(int));
    check_ints(out, want, n, "MPI_Reduce_scatter_block MPI_BAND");
    dev_free(send_d), dev_free(recv_d);
    want_routed[RSB]++;
  }

  /* Uneven recvcounts (rank r gets r + 1 elements), DFCCL's reduce-scatter-v: out of place and in place. */
  for (int in_place = 0; in_place < 2; in_place++) {
    int* counts = host_alloc((size_t)size * sizeof *counts);
    int total = 0, first = 0;
    for (int r = 0; r < size; r++) counts[r] = r + 1, total += r + 1, first += r < rank ? r + 1 : 0;
    for (int j = 0; j < total; j++) in[j] = j + rank, out[j] = -1;
    for (int i = 0; i <= rank; i++) want[i] = size * (first + i) + size * (size - 1) / 2;
    int* send_d = dev_copy_of(in, (size_t)total * sizeof(int));
    int* recv_d = dev_copy_of(in_place ? in : out, (size_t)total * sizeof(int));
    uploads_done();
    CHECK_MPI(MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : send_d, recv_d, counts, MPI_INT, MPI_SUM, comm));
    download(out, recv_d, (size_t)(rank + 1) * sizeof(int));
    check_ints(out, want, rank + 1, in_place ? "MPI_Reduce_scatter uneven in place" : "MPI_Reduce_scatter uneven");
    dev_free(send_d), dev_free(recv_d);
    free(counts);
    want_routed[RS]++; /* DFCCL's reduce-scatter-v */
  }
  free(in), free(out), free(want);
  watchdog_reset();
  return 6;
}

/* Host buffers.  Of a signature the suite set up on device memory (MPI_INT sums of 1000
 * elements): a route is decided once per signature, by what every rank passes at its first call, so
 * these run through DFCCL too, on copies in device memory.  Of a new signature (a broadcast of 4000
 * bytes from rank 0), host memory on every rank: the previous component's. */
static void host_buffers(MPI_Comm comm) {
  int rank, size;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  enum { N = 1000 };
  int *in = host_alloc(N * sizeof(int)), *out = host_alloc(N * sizeof(int)), *want = host_alloc(N * sizeof(int));
  for (int i = 0; i < N; i++) in[i] = rank + i, out[i] = -1, want[i] = size * i + size * (size - 1) / 2;
  CHECK_MPI(MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, comm));
  check_ints(out, want, N, "MPI_Allreduce on host buffers");
  want_routed[ALLREDUCE]++;
  MPI_Request req;
  for (int i = 0; i < N; i++) out[i] = -1;
  CHECK_MPI(MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, comm, &req));
  CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  check_ints(out, want, N, "MPI_Iallreduce on host buffers");
  want_routed[NKINDS + ALLREDUCE]++;
  for (int i = 0; i < N; i++) out[i] = rank == 0 ? 5 * i : -1, want[i] = 5 * i;
  CHECK_MPI(MPI_Bcast(out, N, MPI_INT, 0, comm));
  check_ints(out, want, N, "MPI_Bcast on host buffers");
  want_fallback[BCAST]++;
  free(in), free(out), free(want);
}

/* One routed call on device buffers: gives comm its DFCCL context before counting starts. */
static void set_up_context(MPI_Comm comm) {
  call_t c = shape(ALLREDUCE, &T_I32, MPI_SUM, 1, -1, 0);
  call_alloc(&c, comm);
  call_fill(&c, 0);
  uploads_done();
  call_issue(&c, NULL);
  call_check(&c, "first call on the communicator");
  call_free(&c);
}

/* The suite's and the persistent mode's communicators: a duplicate of MPI_COMM_WORLD and a split
 * of it with the ranks in reverse order, each with its DFCCL context. */
static const char* const comm_names[2] = {"MPI_Comm_dup", "MPI_Comm_split (reverse order)"};

static void open_comms(MPI_Comm comms[2]) {
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comms[1]));
  for (int c = 0; c < 2; c++) set_up_context(comms[c]);
}

static void suite(int iterations) {
  MPI_Comm comms[2];
  call_t probe[MAX_SUITE];
  int nsigs = signatures(probe, suite_calls(probe, world_size));
  if (nsigs > MAX_SIGS) { /* a program error: the later nonblocking calls would fall back, an error */
    if (world_rank == 0) fprintf(stderr, "the suite has %d signatures, more than coll_dfccl_max_colls\n", nsigs);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  open_comms(comms);
  counters_mark();
  for (int it = 0; it < iterations; it++) {
    for (int c = 0; c < 2; c++) {
      int salt = it * 1000 + c * 500;
      blocking_pass(comms[c], comm_names[c], salt);
      CHECK_MPI(MPI_Barrier(comms[c])); /* the nonblocking calls of the blocking pass's signatures */
      nonblocking_pass(comms[c], comm_names[c], salt + 1, WAIT_ALL);
      nonblocking_pass(comms[c], comm_names[c], salt + 2, TEST_ALL);
      where = comm_names[c];
      say("%s: %d calls that fall back with device buffers (staged through host memory), 6 bitwise and derived\n",
          comm_names[c], fallbacks(comms[c]));
    }
    where = comm_names[0];
    host_buffers(comms[0]);
    progress("suite", it, iterations);
    watchdog_reset();
  }
  unsigned long long routed, fallen;
  counters_check("suite", true, &routed, &fallen);
  for (int c = 0; c < 2; c++) CHECK_MPI(MPI_Comm_free(&comms[c]));
  if (world_rank == 0)
    printf("suite: %d iteration(s) on 2 communicators, %d DFCCL signatures each, %llu calls routed, %llu fell back\n",
           iterations, nsigs, routed, fallen);
}

/* ---- persistent collectives (MPIX_..._init, MPI_Start) ------------------------------------------ */

#define CYCLES 3   /* starts of each request alone, then of all of them with MPI_Startall */
#define SAME_SIG 3 /* more requests of all-reduce int32 SUM 1000, which has two in the set already */
#define MAX_PERSISTENT 64

/* Every collective in two shapes (one of them 1<<20 elements), both buffer layouts where MPI allows
 * MPI_IN_PLACE, roots 0 and last; then SAME_SIG more requests of one signature: 5 of it, more than
 * its pool of coll_dfccl_concurrent_runs (default 2), so that MPI_Startall's runs of it queue. */
static int persistent_calls(call_t* calls, int size) {
  int last = size - 1, n = 0;
  for (int in_place = 0; in_place < 2; in_place++) {
    calls[n++] = shape(ALLREDUCE, &T_I32, MPI_SUM, 1000, -1, in_place);
    calls[n++] = shape(ALLREDUCE, &T_DOUBLE, MPI_MAX, BIG, -1, in_place);
    calls[n++] = shape(REDUCE, &T_I64, MPI_MIN, 1000, in_place ? 0 : last, in_place);
    calls[n++] = shape(REDUCE, &T_U32, MPI_PROD, 7, in_place ? last : 0, in_place);
    calls[n++] = shape(ALLGATHER, &T_FLOAT, MPI_SUM, 1000, -1, in_place);
    calls[n++] = shape(ALLGATHER, &T_CHAR, MPI_SUM, 7, -1, in_place);
    calls[n++] = shape(RSB, &T_I32, MPI_SUM, 1000, -1, in_place);
    calls[n++] = shape(RSB, &T_FLOAT, MPI_MAX, 7, -1, in_place);
    calls[n++] = shape(RS, &T_I64, MPI_SUM, 1000, -1, in_place);
    calls[n++] = shape(RS, &T_I8, MPI_MIN, 1, -1, in_place);
  }
  for (int root = 0; root < 2; root++) {
    calls[n++] = shape(BCAST, &T_DOUBLE, MPI_SUM, 1000, root ? last : 0, 0);
    calls[n++] = shape(BCAST, &T_I8, MPI_SUM, 7, root ? 0 : last, 0);
  }
  for (int k = 0; k < SAME_SIG; k++) calls[n++] = shape(ALLREDUCE, &T_I32, MPI_SUM, 1000, -1, k % 2);
  return n;
}

/* The result of one start, and its request still there (inactive: completion never frees it). */
static void start_check(call_t* c, MPI_Request req, const char* pass) {
  call_check(c, pass);
  if (req == MPI_REQUEST_NULL) {
    REPORT("rank %d: %s: a persistent request was freed by its completion\n", world_rank, pass);
    failures++;
  }
}

/* A user op: a bitwise and that DFCCL cannot know to be one. */
static void user_band(void* in, void* inout, int* len, MPI_Datatype* dt) {
  (void)dt;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] &= ((int*)in)[i];
}

/* An init that falls back with device buffers (a user op: no DFCCL op): the previous component's
 * persistent request runs on host copies that the component refreshes at every start and copies
 * back at every completion.  Started 3 times with new input, checked each time; counts as fallen
 * back. */
static void staged_init(MPI_Comm comm, const char* name) {
  enum { N = 1000, STARTS = 3 };
  int rank, size, in[N], out[N], want[N];
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  void *send_d = dev_alloc(N * sizeof(int)), *recv_d = dev_alloc(N * sizeof(int));
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Op op;
  CHECK_MPI(MPI_Op_create(user_band, 1, &op));
  CHECK_MPI(MPIX_Allreduce_init(send_d, recv_d, N, MPI_INT, op, comm, MPI_INFO_NULL, &req));
  CHECK_MPI(MPI_Op_free(&op)); /* the request keeps it */
  want_fallback[2 * NKINDS + ALLREDUCE]++;
  for (int start = 0; start < STARTS; start++) {
    for (int i = 0; i < N; i++) {
      in[i] = ~(1 << ((i + rank + start) % 31));
      want[i] = ~0;
      for (int r = 0; r < size; r++) want[i] &= ~(1 << ((i + r + start) % 31));
    }
    upload(send_d, in, sizeof in);
    uploads_done();
    CHECK_MPI(MPI_Start(&req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    download(out, recv_d, sizeof out);
    for (int i = 0, bad = 0; i < N; i++)
      if (out[i] != want[i] && bad++ == 0) {
        REPORT("rank %d: %s: staged persistent user op start %d: [%d] = %d, expected %d\n", world_rank, name, start, i,
               out[i], want[i]);
        failures++;
      }
  }
  CHECK_MPI(MPI_Request_free(&req));
  dev_free(send_d), dev_free(recv_d);
}

/* Inits (all routed but one, staged), then CYCLES rounds of MPI_Start + MPI_Wait of each request and
 * CYCLES of MPI_Startall of all of them, new input before every start; then MPI_Request_free. */
static void persistent_pass(MPI_Comm comm, const char* name, int salt) {
  call_t calls[MAX_PERSISTENT];
  MPI_Request reqs[MAX_PERSISTENT];
  int size;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  int n = persistent_calls(calls, size);
  for (int i = 0; i < n; i++) call_alloc(&calls[i], comm), call_init(&calls[i], &reqs[i]);
  staged_init(comm, name); /* an init that falls back among the others: the requests run after it */
  char pass[128];
  unsigned long long routed, fallen;
  snprintf(pass, sizeof pass, "%s, persistent inits", name);
  counters_check(pass, false, &routed, &fallen); /* the inits count, the starts do not */
  watchdog_reset();

  snprintf(pass, sizeof pass, "%s, persistent (MPI_Start + MPI_Wait)", name);
  for (int cycle = 0; cycle < CYCLES; cycle++)
    for (int i = 0; i < n; i++) {
      call_fill(&calls[i], salt + cycle * n + i);
      uploads_done();
      CHECK_MPI(MPI_Start(&reqs[i]));
      CHECK_MPI(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
      start_check(&calls[i], reqs[i], pass);
      watchdog_reset();
    }
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    completion_t how = cycle % 2 ? TEST_ALL : WAIT_ALL;
    for (int i = 0; i < n; i++) call_fill(&calls[i], salt + (CYCLES + cycle) * n + i);
    uploads_done();
    CHECK_MPI(MPI_Startall(n, reqs));
    complete_all(n, reqs, how);
    snprintf(pass, sizeof pass, "%s, persistent (MPI_Startall + %s)", name,
             how == WAIT_ALL ? "MPI_Waitall" : "MPI_Testall");
    for (int i = 0; i < n; i++) start_check(&calls[i], reqs[i], pass);
    watchdog_reset();
  }
  for (int i = 0; i < n; i++) {
    CHECK_MPI(MPI_Request_free(&reqs[i]));
    if (reqs[i] != MPI_REQUEST_NULL) {
      REPORT("rank %d: %s: MPI_Request_free left the handle\n", world_rank, name);
      failures++;
    }
    call_free(&calls[i]);
  }
  say("%s: %d persistent requests on device buffers, started alone and with MPI_Startall\n", name, n);
}

static void persistent(int iterations) {
  MPI_Comm comms[2];
  call_t probe[MAX_PERSISTENT];
  int n = persistent_calls(probe, world_size);
  open_comms(comms);
  counters_mark();
  for (int it = 0; it < iterations; it++) {
    for (int c = 0; c < 2; c++) persistent_pass(comms[c], comm_names[c], it * 1000 + c * 500);
    progress("persistent", it, iterations);
    watchdog_reset();
  }
  unsigned long long routed, fallen;
  counters_check("persistent", true, &routed, &fallen);
  for (int c = 0; c < 2; c++) CHECK_MPI(MPI_Comm_free(&comms[c]));
  if (world_rank == 0)
    printf("persistent: %d iteration(s) on 2 communicators, %d requests each started %d times alone and %d times "
           "with MPI_Startall, %llu inits routed, %llu staged through host memory\n",
           iterations, n, CYCLES, CYCLES, routed, fallen);
}

/* ---- the cross and sync patterns ---------------------------------------------------------------- */

#define NCOMMS 3
#define CALLS_PER_COMM 6
#define NCALLS (NCOMMS * CALLS_PER_COMM)

static unsigned long long rng_state;
static unsigned next_random(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (unsigned)((z ^ (z >> 31)) >> 32);
}

static double longest_sync_s;

/* One iteration: this rank's own interleaving of the communicators (and, for sync, its own point
 * for the device synchronization). */
static void pattern_iteration(call_t* calls, int it, bool sync) {
  rng_state = ((unsigned long long)(world_rank + 1) << 32) ^ (unsigned long long)it ^ (sync ? 0x5eedull << 48 : 0);
  int order[NCALLS], next[NCOMMS] = {0};
  for (int k = 0; k < NCALLS; k++) order[k] = k / CALLS_PER_COMM;
  for (int k = NCALLS - 1; k > 0; k--) { /* Fisher-Yates */
    int j = (int)(next_random() % (unsigned)(k + 1)), t = order[k];
    order[k] = order[j], order[j] = t;
  }
  int sync_after = sync ? 1 + (int)(next_random() % NCALLS) : -1; /* after this many calls */
  void* small = NULL;
  if (sync && it % 10 == 0) {
    small = dev_alloc(4096);
    CHECK_CUDA(cuda.memset(small, it & 0xFF, 4096));
  }
  for (int k = 0; k < NCALLS; k++) call_fill(&calls[k], it * NCALLS + k);
  uploads_done();
  MPI_Request reqs[NCALLS];
  for (int k = 0; k < NCALLS; k++) {
    int c = order[k], j = next[c]++; /* communicator c's j-th call: the same order on every rank */
    call_issue(&calls[c * CALLS_PER_COMM + j], &reqs[k]);
    if (k + 1 == sync_after) {
      double t0 = MPI_Wtime();
      if (small != NULL) CHECK_CUDA(cuda.dev_free(small)); /* synchronizes the device, too */
      CHECK_CUDA(cuda.device_synchronize());
      double dt = MPI_Wtime() - t0;
      if (dt > longest_sync_s) longest_sync_s = dt;
    }
  }
  CHECK_MPI(MPI_Waitall(NCALLS, reqs, MPI_STATUSES_IGNORE));
  char pass[64];
  snprintf(pass, sizeof pass, "%s iteration %d", sync ? "sync" : "cross", it);
  for (int k = 0; k < NCALLS; k++) call_check(&calls[k], pass);
}

static void pattern(int iterations, bool sync) {
  const char* mode = sync ? "sync" : "cross";
  MPI_Comm comms[NCOMMS];
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comms[2]));
  static const int kinds[CALLS_PER_COMM] = {ALLREDUCE, BCAST, ALLGATHER, RSB, ALLTOALL, ALLGATHERV};
  const type_t* const types[NCOMMS] = {&T_I32, &T_FLOAT, &T_I64};
  const MPI_Op ops[NCOMMS] = {MPI_SUM, MPI_MAX, MPI_SUM};
  static const size_t counts[NCOMMS] = {1000, 65536, 4099};
  call_t calls[NCALLS];
  for (int c = 0; c < NCOMMS; c++) {
    int size;
    CHECK_MPI(MPI_Comm_size(comms[c], &size));
    for (int j = 0; j < CALLS_PER_COMM; j++) {
      call_t* call = &calls[c * CALLS_PER_COMM + j];
      bool reduces = kinds[j] == ALLREDUCE || kinds[j] == RSB;
      *call = shape(kinds[j], types[c], reduces ? ops[c] : MPI_SUM, counts[c], kinds[j] == BCAST ? size - 1 : -1, 0);
      call_alloc(call, comms[c]);
    }
  }
  watchdog_reset();

  counters_mark();
  double t0 = MPI_Wtime();
  for (int it = 0; it < iterations; it++) {
    pattern_iteration(calls, it, sync);
    watchdog_reset();
    progress(mode, it, iterations);
  }
  double elapsed = MPI_Wtime() - t0;
  unsigned long long routed, fallen;
  counters_check(mode, !quiet, &routed, &fallen);
  for (int k = 0; k < NCALLS; k++) call_free(&calls[k]);
  for (int c = 0; c < NCOMMS; c++) CHECK_MPI(MPI_Comm_free(&comms[c]));
  if (world_rank == 0) {
    printf("%s pattern: %d iterations x %d nonblocking calls on %d communicators in %.1f s, %llu routed through "
           "DFCCL, %llu fell back\n",
           mode, iterations, NCALLS, NCOMMS, elapsed, routed, fallen);
  }
}

/* ---- main --------------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  static const char* const modes[] = {"suite", "persistent", "cross", "sync", NULL};
  const char* mode = modes[0];
  int iterations = 0; /* 0: the mode's default */
  options o = mpi_options("test_device",
                          "usage (2 or more ranks): test_device [-m suite|persistent|cross|sync] [-i iterations] "
                          "[-w seconds] [-q]",
                          argc, argv, "m:i:w:q");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'm') mode = modes[option_choice(&o, modes)];
    else if (opt == 'i') iterations = option_int(&o, 1, 1000000);
    else if (opt == 'w') watchdog_s = (unsigned)option_int(&o, 1, 86400);
    else if (opt == 'q') quiet = true;
  }
  if (world_size < 2) options_fail(&o, "needs 2 or more ranks");
  bool is_suite = strcmp(mode, "suite") == 0, is_sync = strcmp(mode, "sync") == 0;
  bool is_persistent = strcmp(mode, "persistent") == 0;
  if (iterations == 0) iterations = is_suite || is_persistent ? 1 : 1000;

  char why[200];
  int devices = 0, have = cuda_load(&devices, why, sizeof why);
  if (!cuda_on_every_rank(have, why)) return 0;
  int local_size = select_node_gpu(devices);
  if (world_rank == 0)
    printf("%s: %d ranks, %d per node on %d GPU(s) of that node\n", mode, world_size, local_size,
           local_size < devices ? local_size : devices),
        fflush(stdout);

  counters_start();
  watchdog_start(watchdog_s);
  if (is_suite) suite(iterations);
  else if (is_persistent) persistent(iterations);
  else pattern(iterations, is_sync);
  alarm(0);
  counters_stop();

  int all = 0;
  double longest = 0;
  CHECK_MPI(MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(&longest_sync_s, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  if (world_rank == 0) {
    char extra[96] = "";
    if (is_sync) snprintf(extra, sizeof extra, ", longest device synchronization %.1f ms", longest * 1e3);
    printf("%s %s: %d ranks%s\n", all ? "FAIL" : "PASS", mode, world_size, extra);
  }
  CHECK_MPI(MPI_Finalize());
  return all ? 1 : 0;
}
