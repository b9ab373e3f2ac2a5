/*
 * Groups: the participants a collective runs on, in ring order (the order the caller lists them:
 * all-gather and reduce-scatter blocks follow it), and where this rank stands among them.  Purely
 * local: connectors belong to collectives (connectors.c).
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

/* A copy of the participants in ring order, checked (a sorted copy finds duplicates). */
static dfcclResult_t normalize(const df_ctx* ctx, const int* participants, int n, int** out) {
  if (participants == NULL && n != 0)
    return df_error(dfcclInvalidArgument, "participants is NULL but nparticipants is %d", n);
  if (participants != NULL && n <= 0) return df_error(dfcclInvalidArgument, "nparticipants is %d", n);
  int count = participants ? n : ctx->nranks;
  if (count > ctx->nranks)
    return df_error(dfcclInvalidArgument, "%d participants but only %d ranks", count, ctx->nranks);
  int* ranks = malloc(sizeof(int) * (size_t)count);
  int* sorted = malloc(sizeof(int) * (size_t)count);
  if (!ranks || !sorted) {
    free(ranks);
    free(sorted);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  for (int i = 0; i < count; i++) ranks[i] = sorted[i] = participants ? participants[i] : i;
  qsort(sorted, (size_t)count, sizeof(int), compare_ints);
  dfcclResult_t r = dfcclSuccess;
  bool member = false;
  for (int i = 0; i < count && r == dfcclSuccess; i++) {
    if (sorted[i] < 0 || sorted[i] >= ctx->nranks)
      r = df_error(dfcclInvalidArgument, "participant %d is not a rank in [0, %d)", sorted[i], ctx->nranks);
    else if (i > 0 && sorted[i] == sorted[i - 1])
      r = df_error(dfcclInvalidArgument, "participant %d is listed twice", sorted[i]);
    if (sorted[i] == ctx->rank) member = true;
  }
  if (r == dfcclSuccess && !member)
    r = df_error(dfcclInvalidArgument, "rank %d registers a collective it does not participate in", ctx->rank);
  free(sorted);
  if (r != dfcclSuccess) {
    free(ranks);
    return r;
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
    g->users++;
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
  g->users = 1;
  g->next = ctx->groups;
  ctx->groups = g;
  *out = g;
  return dfcclSuccess;
}

/* Groups come and go with the communicators of a process-wide context: one that no collective
 * uses any more is forgotten. */
void df_group_put(df_ctx* ctx, df_group* g) {
  if (--g->users > 0) return;
  for (df_group** p = &ctx->groups; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      break;
    }
  group_free(g);
}

int df_group_compare(const df_group* a, const df_group* b) {
  if (a->nranks != b->nranks) return a->nranks < b->nranks ? -1 : 1;
  for (int i = 0; i < a->nranks; i++)
    if (a->ranks[i] != b->ranks[i]) return a->ranks[i] < b->ranks[i] ? -1 : 1;
  return 0;
}

void df_group_free_all(df_ctx* ctx) {
  while (ctx->groups) {
    df_group* g = ctx->groups;
    ctx->groups = g->next;
    group_free(g);
  }
}
