/*
 * MPI implementation of DFCCL's bootstrap callback (see mpi_bootstrap.h).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_bootstrap.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A sub-communicator over a proper subset of the ranks, built on first use. */
typedef struct bs_subcomm {
  struct bs_subcomm* next;
  int nranks;
  int* ranks; /* ranks of the parent communicator, in the order they were listed (its ranks' order) */
  MPI_Comm comm;
} bs_subcomm;

typedef struct {
  MPI_Comm comm;   /* private duplicate of the caller's communicator */
  MPI_Group group; /* its group, to build sub-communicators          */
  int rank;
  int nranks;
  bs_subcomm* subcomms;
} bs_state;

/* Prints what failed with MPI's own words for `rc`; returns 1 so callers can `return mpi_failed()`. */
static int mpi_failed(const char* what, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof(text), "MPI error %d", rc);
  fprintf(stderr, "dfccl_mpi_bootstrap: %s failed: %s\n", what, text);
  return 1;
}

#define BS_MPI(call)                                             \
  do {                                                           \
    int bs_rc_ = (call);                                         \
    if (bs_rc_ != MPI_SUCCESS) return mpi_failed(#call, bs_rc_); \
  } while (0)

static int bs_error(const char* what) {
  fprintf(stderr, "dfccl_mpi_bootstrap: %s\n", what);
  return 1;
}

/* ---- sub-communicator cache ---- */

static bs_subcomm* find_subcomm(const bs_state* st, const int* ranks, int nranks) {
  for (bs_subcomm* s = st->subcomms; s != NULL; s = s->next)
    if (s->nranks == nranks && memcmp(s->ranks, ranks, (size_t)nranks * sizeof(int)) == 0) return s;
  return NULL;
}

/* A tag for MPI_Comm_create_group that every listed rank computes alike; MPI guarantees tags up to
 * 32767. */
static int rank_list_tag(const int* ranks, int nranks) {
  unsigned h = 2166136261u;
  for (int i = 0; i < nranks; i++) h = (h ^ (unsigned)ranks[i]) * 16777619u;
  return (int)(h % 32768u);
}

/* Collective over `ranks` only. */
static int create_subcomm(bs_state* st, const int* ranks, int nranks, bs_subcomm** out) {
  bs_subcomm* s = calloc(1, sizeof(*s));
  if (s != NULL) s->ranks = malloc((size_t)nranks * sizeof(int));
  if (s == NULL || s->ranks == NULL) {
    free(s);
    return bs_error("out of memory for a sub-communicator");
  }
  memcpy(s->ranks, ranks, (size_t)nranks * sizeof(int));
  s->nranks = nranks;
  s->comm = MPI_COMM_NULL;

  MPI_Group group = MPI_GROUP_NULL;
  int rc = MPI_Group_incl(st->group, nranks, s->ranks, &group);
  const char* what = "MPI_Group_incl";
  if (rc == MPI_SUCCESS) {
    what = "MPI_Comm_create_group";
    rc = MPI_Comm_create_group(st->comm, group, rank_list_tag(ranks, nranks), &s->comm);
  }
  if (rc == MPI_SUCCESS) {
    what = "MPI_Comm_set_errhandler";
    rc = MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  }
  if (group != MPI_GROUP_NULL) {
    int frc = MPI_Group_free(&group);
    if (rc == MPI_SUCCESS && frc != MPI_SUCCESS) {
      rc = frc;
      what = "MPI_Group_free";
    }
  }
  if (rc != MPI_SUCCESS) {
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    free(s->ranks);
    free(s);
    return mpi_failed(what, rc);
  }
  s->next = st->subcomms;
  st->subcomms = s;
  *out = s;
  return 0;
}

/* ---- the allgather callback ---- */

/* Checks the rank list (distinct ranks of the communicator, in any order: DFCCL lists them in ring
 * order); sets *index to the caller's position in it and *identity to whether it is 0, 1, ..., n-1. */
static int check_rank_list(const bs_state* st, const int* ranks, int nranks, int* index, bool* identity) {
  if (ranks == NULL || nranks < 1 || nranks > st->nranks) return bs_error("allgather: bad rank list");
  *index = -1;
  *identity = nranks == st->nranks;
  for (int i = 0; i < nranks; i++) {
    if (ranks[i] < 0 || ranks[i] >= st->nranks) return bs_error("allgather: a rank outside the communicator");
    for (int j = 0; j < i; j++)
      if (ranks[j] == ranks[i]) return bs_error("allgather: a rank listed twice");
    if (ranks[i] != i) *identity = false;
    if (ranks[i] == st->rank) *index = i;
  }
  if (*index < 0) return bs_error("allgather: the calling rank is not in the rank list");
  return 0;
}

static int mpi_allgather(void* state, const int* ranks, int nranks, const void* sendbuf, void* recvbuf, size_t bytes) {
  bs_state* st = state;
  int me;
  bool identity;
  if (st == NULL) return bs_error("allgather: null state");
  if (check_rank_list(st, ranks, nranks, &me, &identity) != 0) return 1;
  if (bytes == 0) return 0;
  if (sendbuf == NULL || recvbuf == NULL) return bs_error("allgather: null buffer");
  if (bytes > (size_t)INT_MAX) return bs_error("allgather: more than INT_MAX bytes per rank");

  char* mine = (char*)recvbuf + (size_t)me * bytes;
  if (nranks == 1) {
    if (sendbuf != mine) memmove(mine, sendbuf, bytes);
    return 0;
  }

  MPI_Comm comm = st->comm;
  if (!identity) { /* a sub-communicator whose ranks follow the list, so results land in its order */
    bs_subcomm* s = find_subcomm(st, ranks, nranks);
    if (s == NULL && create_subcomm(st, ranks, nranks, &s) != 0) return 1;
    comm = s->comm;
  }
  const void* src = sendbuf == mine ? MPI_IN_PLACE : sendbuf;
  BS_MPI(MPI_Allgather(src, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, comm));
  return 0;
}

/* ---- public functions ---- */

static void free_state(bs_state* st) {
  int finalized = 0;
  if (MPI_Finalized(&finalized) != MPI_SUCCESS) finalized = 1;
  if (finalized && (st->comm != MPI_COMM_NULL || st->subcomms != NULL))
    fprintf(stderr, "dfccl_mpi_bootstrap: fini after MPI_Finalize; communicators not freed\n");
  while (st->subcomms != NULL) {
    bs_subcomm* s = st->subcomms;
    st->subcomms = s->next;
    if (!finalized && s->comm != MPI_COMM_NULL) {
      int rc = MPI_Comm_free(&s->comm);
      if (rc != MPI_SUCCESS) mpi_failed("MPI_Comm_free (sub-communicator)", rc);
    }
    free(s->ranks);
    free(s);
  }
  if (!finalized && st->group != MPI_GROUP_NULL) {
    int rc = MPI_Group_free(&st->group);
    if (rc != MPI_SUCCESS) mpi_failed("MPI_Group_free", rc);
  }
  if (!finalized && st->comm != MPI_COMM_NULL) {
    int rc = MPI_Comm_free(&st->comm);
    if (rc != MPI_SUCCESS) mpi_failed("MPI_Comm_free", rc);
  }
  free(st);
}

static int init_state(bs_state* st, MPI_Comm comm) {
  int initialized = 0;
  BS_MPI(MPI_Initialized(&initialized));
  if (!initialized) return bs_error("init: MPI is not initialized");
  BS_MPI(MPI_Comm_dup(comm, &st->comm));
  BS_MPI(MPI_Comm_set_errhandler(st->comm, MPI_ERRORS_RETURN));
  BS_MPI(MPI_Comm_rank(st->comm, &st->rank));
  BS_MPI(MPI_Comm_size(st->comm, &st->nranks));
  BS_MPI(MPI_Comm_group(st->comm, &st->group));
  return 0;
}

int dfccl_mpi_bootstrap_init(MPI_Comm comm, dfcclBootstrap_t* bs) {
  if (bs == NULL) return bs_error("init: null bootstrap");
  memset(bs, 0, sizeof(*bs));
  if (comm == MPI_COMM_NULL) return bs_error("init: MPI_COMM_NULL");
  bs_state* st = calloc(1, sizeof(*st));
  if (st == NULL) return bs_error("init: out of memory");
  st->comm = MPI_COMM_NULL;
  st->group = MPI_GROUP_NULL;
  if (init_state(st, comm) != 0) {
    free_state(st);
    return 1;
  }
  bs->rank = st->rank;
  bs->nranks = st->nranks;
  bs->allgather = mpi_allgather;
  bs->state = st;
  return 0;
}

void dfccl_mpi_bootstrap_fini(dfcclBootstrap_t* bs) {
  if (bs == NULL) return;
  if (bs->state != NULL) free_state(bs->state);
  memset(bs, 0, sizeof(*bs));
}

int dfccl_mpi_local_rank(MPI_Comm comm) {
  MPI_Comm local = MPI_COMM_NULL;
  int rank = -1;
  int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  if (rc != MPI_SUCCESS) {
    mpi_failed("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)", rc);
    return -1;
  }
  rc = MPI_Comm_rank(local, &rank);
  if (rc != MPI_SUCCESS) {
    mpi_failed("MPI_Comm_rank (node-local communicator)", rc);
    rank = -1;
  }
  rc = MPI_Comm_free(&local);
  if (rc != MPI_SUCCESS) mpi_failed("MPI_Comm_free (node-local communicator)", rc);
  return rank;
}
