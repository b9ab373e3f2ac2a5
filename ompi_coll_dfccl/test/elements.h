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

#endif /* COLL_DFCCL_TEST_ELEMENTS_H */
