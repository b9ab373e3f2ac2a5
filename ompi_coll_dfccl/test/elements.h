/*
 * What the component's tests share: MPI return-code checks and typed access to buffer elements
 * (small integers, exact in every type the tests use).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef COLL_DFCCL_TEST_ELEMENTS_H
#define COLL_DFCCL_TEST_ELEMENTS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mpi_pvar.h" /* test/common: find_pvar */

#define CHECK_MPI(call)                                                                             \
  do {                                                                                              \
    int rc_ = (call);                                                                               \
    if (rc_ != MPI_SUCCESS) {                                                                       \
      int rank_ = -1;                                                                               \
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);                                                        \
      fprintf(stderr, "rank %d: %s failed (%d) at %s:%d\n", rank_, #call, rc_, __FILE__, __LINE__); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                 \
    }                                                                                               \
  } while (0)

typedef enum { SIGNED, UNSIGNED, FLOATING } kind_t;
typedef struct {
  MPI_Datatype dt;
  const char* name;
  size_t size;
  kind_t kind;
} type_t;

static inline void put(const type_t* t, void* buf, size_t i, long long v) {
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

static inline long long get(const type_t* t, const void* buf, size_t i) {
  const char* p = (const char*)buf + i * t->size;
  if (t->kind == FLOATING) return t->size == 4 ? (long long)*(const float*)p : (long long)*(const double*)p;
  switch (t->size) {
    case 1: return t->kind == SIGNED ? *(const int8_t*)p : *(const uint8_t*)p;
    case 4: return t->kind == SIGNED ? (long long)*(const int32_t*)p : (long long)*(const uint32_t*)p;
    default: return *(const int64_t*)p;
  }
}

/* The six collectives, in the order of the tests' tables whatever the form (blocking, MPI_I...,
 * MPIX_..._init), and one call of one of them. */
enum { COLL_ALLREDUCE, COLL_BCAST, COLL_REDUCE, COLL_ALLGATHER, COLL_RSB, COLL_RS };
typedef struct {
  int coll;
  const type_t* t;
  MPI_Op op;
  size_t count; /* per rank for all-gather and reduce-scatter */
  int root;     /* -1 where the collective has none */
  int in_place;
} coll_case_t;

enum { ROUTED_CASES = 48 };

/* The routed set of the nonblocking and persistent tests on `size` ranks: every collective in
 * both buffer layouts for four (type, op, count) shapes, roots at the ends and in the middle. */
static inline int routed_cases(coll_case_t* cs, int size) {
  static const type_t t_int = {MPI_INT, "MPI_INT", sizeof(int), SIGNED};
  static const type_t t_u8 = {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, UNSIGNED};
  static const type_t t_i64 = {MPI_INT64_T, "MPI_INT64_T", 8, SIGNED};
  static const type_t t_double = {MPI_DOUBLE, "MPI_DOUBLE", 8, FLOATING};
  const struct {
    const type_t* t;
    MPI_Op op;
    size_t count;
  } shapes[] = {{&t_int, MPI_SUM, 1000}, {&t_i64, MPI_MAX, 1}, {&t_double, MPI_MIN, 4099}, {&t_u8, MPI_PROD, 33}};
  int last = size - 1, mid = size > 2 ? 2 : 1, n = 0;
  for (int s = 0; s < 4; s++)
    for (int in_place = 0; in_place < 2; in_place++) {
      const type_t* t = shapes[s].t;
      MPI_Op op = shapes[s].op;
      size_t count = shapes[s].count;
      cs[n++] = (coll_case_t){COLL_ALLREDUCE, t, op, count, -1, in_place};
      cs[n++] = (coll_case_t){COLL_REDUCE, t, op, count, s % 2 ? last : mid % size, in_place};
      cs[n++] = (coll_case_t){COLL_ALLGATHER, t, MPI_SUM, count, -1, in_place};
      cs[n++] = (coll_case_t){COLL_RSB, t, op, count, -1, in_place};
      cs[n++] = (coll_case_t){COLL_RS, t, op, count, -1, in_place};
      cs[n++] = (coll_case_t){COLL_BCAST, t, MPI_SUM, count, in_place ? 0 : last, 0};
    }
  return n;
}

/* Small integers, exact in every type; products stay within int8 on 4 ranks.  `salt` makes the
 * calls of one batch differ. */
static inline long long value(const type_t* t, MPI_Op op, int r, size_t i, int salt) {
  if (op == MPI_PROD) return ((i + (size_t)r + (size_t)salt) % 3 == 0) ? 2 : 1;
  long long v = (long long)((i * 31 + (size_t)r * 17 + (size_t)salt * 7) % 11);
  return t->kind == UNSIGNED ? v : v - 5;
}

static inline long long expect(const type_t* t, MPI_Op op, int nranks, size_t i, int salt) {
  long long acc = value(t, op, 0, i, salt);
  for (int r = 1; r < nranks; r++) {
    long long v = value(t, op, r, i, salt);
    if (op == MPI_SUM) acc += v;
    else if (op == MPI_PROD) acc *= v;
    else if (op == MPI_MAX) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  return acc;
}

/* The hang tests' watchdog: SIGALRM when `seconds` pass without watchdog_reset() prints WATCHDOG
 * and ends the process with WATCHDOG_EXIT (the preemption-off twins expect exactly that). */
#define WATCHDOG_EXIT 42
static unsigned watchdog_seconds __attribute__((unused));

static inline void watchdog_fired(int sig) {
  (void)sig;
  static const char msg[] = "WATCHDOG: no progress in time: hang detected\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1); /* async-signal-safe */
  (void)ignored;
  _exit(WATCHDOG_EXIT);
}

static inline void watchdog_start(unsigned seconds) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = watchdog_fired;
  if (sigaction(SIGALRM, &sa, NULL) != 0) {
    perror("sigaction");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  watchdog_seconds = seconds;
  alarm(seconds);
}

static inline void watchdog_reset(void) { alarm(watchdog_seconds); }

/* A handle of the component's counter `name` in session (aborts if there is none: the component
 * was not loaded). */
static inline MPI_T_pvar_handle counter_open(MPI_T_pvar_session session, const char* name) {
  MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
  int index = find_pvar(name), count, rank = -1;
  if (index < 0) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "rank %d: MPI_T counter %s not found: was coll/dfccl loaded?\n", rank, name);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &h, &count));
  return h;
}

/* The routed, fallen-back and local (one-rank communicator) counters of up to ENTRY_POINTS_MAX of
 * the component's entry points (names as in coll_dfccl_<name>_routed: "allreduce", "iallreduce",
 * "allreduce_init", ...), in one pvar session; read them together, each k < n as
 * counts.routed[k], counts.fallback[k] and counts.local[k]. */
#define ENTRY_POINTS_MAX 32
typedef struct {
  unsigned long long routed[ENTRY_POINTS_MAX], fallback[ENTRY_POINTS_MAX], local[ENTRY_POINTS_MAX];
} counts_t;

typedef struct {
  MPI_T_pvar_session session;
  MPI_T_pvar_handle routed[ENTRY_POINTS_MAX], fallback[ENTRY_POINTS_MAX], local[ENTRY_POINTS_MAX];
  int n;
} entry_counters_t;

static inline void entry_counters_open(entry_counters_t* c, const char* const* names, int n) {
  int provided;
  if (n > ENTRY_POINTS_MAX) {
    fprintf(stderr, "entry_counters_open: %d entry points, ENTRY_POINTS_MAX is %d\n", n, ENTRY_POINTS_MAX);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
  CHECK_MPI(MPI_T_pvar_session_create(&c->session));
  c->n = n;
  for (int k = 0; k < n; k++) { /* counters report the increase since their handle was allocated */
    char name[96];
    snprintf(name, sizeof name, "coll_dfccl_%s_routed", names[k]);
    c->routed[k] = counter_open(c->session, name);
    snprintf(name, sizeof name, "coll_dfccl_%s_fallback", names[k]);
    c->fallback[k] = counter_open(c->session, name);
    snprintf(name, sizeof name, "coll_dfccl_%s_local", names[k]);
    c->local[k] = counter_open(c->session, name);
  }
}

static inline counts_t entry_counters_read(entry_counters_t* c) {
  counts_t now = {{0}, {0}, {0}};
  for (int k = 0; k < c->n; k++) {
    CHECK_MPI(MPI_T_pvar_read(c->session, c->routed[k], &now.routed[k]));
    CHECK_MPI(MPI_T_pvar_read(c->session, c->fallback[k], &now.fallback[k]));
    CHECK_MPI(MPI_T_pvar_read(c->session, c->local[k], &now.local[k]));
  }
  return now;
}

/* Calls routed through DFCCL so far, over the entry points of c. */
static inline unsigned long long entry_counters_routed(entry_counters_t* c) {
  counts_t now = entry_counters_read(c);
  unsigned long long total = 0;
  for (int k = 0; k < c->n; k++) total += now.routed[k];
  return total;
}

/* Before MPI_Finalize: the reverse order crashes Open MPI 4.1.4. */
static inline void entry_counters_close(entry_counters_t* c) {
  CHECK_MPI(MPI_T_pvar_session_free(&c->session));
  CHECK_MPI(MPI_T_finalize());
}

#endif /* COLL_DFCCL_TEST_ELEMENTS_H */
