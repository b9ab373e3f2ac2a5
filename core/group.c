/*
 * Groups: the participants a collective runs on, in ring order (sorted world ranks), and where
 * this rank stands among them.  Purely local: connectors belong to collectives (connectors.c).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int compare_ints(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

/* Sorted copy of the participants, checked. */
static dfcclResult_t normalize(const df_ctx* ctx, const int* participants, int n, int** out) {
  if (participants == NULL && n != 0)
    return df_error(dfcclInvalidArgument, "participants is NULL but nparticipants is %d", n);
  if (participants != NULL && n <= 0)
    return df_error(dfcclInvalidArgument, "nparticipants is %d", n);
  int count = participants ? n : ctx->nranks;
  if (count > ctx->nranks)
    return df_error(dfcclInvalidArgument, "%d participants but only %d ranks", count, ctx->nranks);
  int* ranks = malloc(sizeof(int) * (size_t)count);
  if (!ranks) return df_error(dfcclOutOfResources, "out of memory");
  for (int i = 0; i < count; i++) ranks[i] = participants ? participants[i] : i;
  qsort(ranks, (size_t)count, sizeof(int), compare_ints);
  bool member = false;
  for (int i = 0; i < count; i++) {
    if (ranks[i] < 0 || ranks[i] >= ctx->nranks) {
      int bad = ranks[i];
      free(ranks);
      return df_error(dfcclInvalidArgument, "participant %d is not a rank in [0, %d)", bad, ctx->nranks);
    }
    if (i > 0 && ranks[i] == ranks[i - 1]) {
      int bad = ranks[i];
      free(ranks);
      return df_error(dfcclInvalidArgument, "participant %d is listed twice", bad);
    }
    if (ranks[i] == ctx->rank) member = true;
  }
  if (!member) {
    free(ranks);
    return df_error(dfcclInvalidArgument, "rank %d registers a collective it does not participate in",
                    ctx->rank);
  }
  *out = ranks;
  return dfcclSuccess;
}

static df_group* find(df_ctx* ctx, const int* ranks, int n) {
  for (df_group* g = ctx->groups; g; g = g->next)
    if (g->nranks == n && memcmp(g->ranks, ranks, sizeof(int) * (size_t)n) == 0) return g;
  return NULL;
}

static void group_free(df_group* g) {
  free(g->ranks);
  free(g);
}

dfcclResult_t df_group_get(df_ctx* ctx, const int* participants, int n, df_group** out) {
  int* ranks = NULL;
  DF_CHECK(normalize(ctx, participants, n, &ranks));
  int count = participants ? n : ctx->nranks;
  df_group* g = find(ctx, ranks, count);
  if (g) {
    free(ranks);
    *out = g;
    return dfcclSuccess;
  }
  g = calloc(1, sizeof *g);
  if (!g) {
    free(ranks);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  g->ranks = ranks;
  g->nranks = count;
  for (int i = 0; i < count; i++)
    if (ranks[i] == ctx->rank) g->position = i;
  g->next = ctx->groups;
  ctx->groups = g;
  *out = g;
  return dfcclSuccess;
}

void df_group_free_all(df_ctx* ctx) {
  while (ctx->groups) {
    df_group* g = ctx->groups;
    ctx->groups = g->next;
    group_free(g);
  }
}
