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
#include <string.h>

#define CHECK_MPI(call)                                                                      \
  do {                                                                                       \
    int rc_ = (call);                                                                        \
    if (rc_ != MPI_SUCCESS) {                                                                \
      int rank_ = -1;                                                                        \
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);                                                 \
      fprintf(stderr, "rank %d: %s failed (%d) at %s:%d\n", rank_, #call, rc_, __FILE__, __LINE__); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
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

/* The index of the MPI_T performance variable `name` (the component's counters), or -1. */
static inline int find_pvar(const char* name) {
  int n = 0;
  if (MPI_T_pvar_get_num(&n) != MPI_SUCCESS) return -1;
  for (int i = 0; i < n; i++) {
    char pname[256], desc[256];
    int nlen = sizeof pname, dlen = sizeof desc, verb, cls, bind, ro, cont, atom;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_pvar_get_info(i, pname, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro, &cont, &atom) ==
            MPI_SUCCESS &&
        strcmp(pname, name) == 0)
      return i;
  }
  return -1;
}

/* Some of the component's MPI_T counters, summed, through one pvar session (counters report the
 * increase since the session started them).  Close before MPI_Finalize: the reverse order crashes
 * Open MPI 4.1.4. */
#define COUNTERS_MAX 16
typedef struct {
  MPI_T_pvar_session session;
  MPI_T_pvar_handle handles[COUNTERS_MAX];
  int n;
} counters_t;

static inline void counters_open(counters_t* c, const char* const* names, int n) {
  int provided, rank = -1, index, count;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (n > COUNTERS_MAX) MPI_Abort(MPI_COMM_WORLD, 2);
  CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
  CHECK_MPI(MPI_T_pvar_session_create(&c->session));
  c->n = n;
  for (int k = 0; k < n; k++) {
    if ((index = find_pvar(names[k])) < 0) {
      fprintf(stderr, "rank %d: MPI_T counter %s not found: was coll/dfccl loaded?\n", rank, names[k]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_MPI(MPI_T_pvar_handle_alloc(c->session, index, NULL, &c->handles[k], &count));
  }
}

static inline unsigned long long counters_sum(counters_t* c) {
  unsigned long long total = 0;
  for (int k = 0; k < c->n; k++) {
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(c->session, c->handles[k], &v));
    total += v;
  }
  return total;
}

static inline void counters_close(counters_t* c) {
  CHECK_MPI(MPI_T_pvar_session_free(&c->session));
  CHECK_MPI(MPI_T_finalize());
}

#endif /* COLL_DFCCL_TEST_ELEMENTS_H */
