/*
 * Deregistration, collective over a group as registration is: the closing exchange with the
 * peers, then the collectives' connectors freed, their daemon entries reset and their ids and
 * indices released.  dfcclDestroy deregisters every group still registered, in an order every rank
 * agrees on.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Caller holds ctx->lock.  Why this rank cannot release collId now (dfcclSuccess if it can); sets
 * *index when collId is registered. */
static dfcclResult_t check_leaving(const df_ctx* ctx, const int* ids, int i, int* index) {
  int id = ids[i];
  *index = -1;
  for (int j = 0; j < i; j++)
    if (ids[j] == id) return df_error(dfcclInvalidArgument, "collective id %d is listed twice", id);
  *index = df_registry_find(ctx, id);
  if (*index < 0) return df_error(dfcclUnregisteredId, "collective id %d is not registered", id);
  const df_coll* c = &ctx->colls[*index];
  if (c->state == DF_COLL_LEAVING)
    return df_error(dfcclInFlight, "collective id %d is being deregistered by another thread", id);
  if (c->in_flight || c->queued) /* queued: a communicator's run waits for this connector set */
    return df_error(dfcclInFlight, "collective id %d has a run in flight (run %u); wait for its callback first", id,
                    c->epoch);
  return dfcclSuccess;
}

/* Caller holds ctx->lock.  Finds the collectives and their common group (with a reference for the
 * caller).  Returns an error for what cannot be told to the peers: collectives of different groups,
 * or no registered collective at all (nobody to tell).  *prior is why this rank cannot release
 * them, told to the peers; when there is none, they are marked LEAVING, so that no run starts
 * during the exchange. */
static dfcclResult_t begin_leaving(df_ctx* ctx, const int* ids, int n, int* indices, df_group** group,
                                   dfcclResult_t* prior) {
  df_group* g = NULL;
  int g_id = -1;
  char message[512] = "";
  *prior = dfcclSuccess;
  for (int i = 0; i < n; i++) {
    dfcclResult_t r = check_leaving(ctx, ids, i, &indices[i]);
    if (r != dfcclSuccess && *prior == dfcclSuccess) {
      *prior = r;
      snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
    }
    if (indices[i] < 0) continue;
    df_group* mine = ctx->colls[indices[i]].group;
    if (g && mine != g)
      return df_error(dfcclInvalidArgument,
                      "collectives %d and %d have different participants: deregister them in separate calls", g_id,
                      ids[i]);
    g = mine;
    g_id = ids[i];
  }
  if (!g) return df_error(*prior, "%s (nobody to tell: no collective of the list is registered here)", message);
  g->users++; /* the group outlives the exchange even if another thread releases its collectives */
  *group = g;
  if (*prior != dfcclSuccess) {
    df_error(*prior, "%s", message);
    return dfcclSuccess;
  }
  for (int i = 0; i < n; i++) ctx->colls[indices[i]].state = DF_COLL_LEAVING;
  return dfcclSuccess;
}

/* A released index must look unused to its next collective.  The daemon does not touch it (no run
 * is in flight), so the host resets its per-index state: every block's dynamic context (blocks
 * that never ran have none), the blocks-done count, the timed-out epoch and the gate block 0 last
 * passed (the next collective's runs count from 1 again) and the counters of dfcclGetCollStats. */
static dfcclResult_t reset_daemon_entry(df_ctx* ctx, int index) {
  const df_target_ops* t = ctx->target;
  df_daemon_args* a = &ctx->args;
  df_coll_dynamic idle;
  df_coll_counters none;
  uint32_t no_blocks = 0;
  memset(&idle, 0, sizeof idle);
  memset(&none, 0, sizeof none);
  pthread_mutex_lock(&ctx->tables_lock);
  dfcclResult_t r = dfcclSuccess;
  for (uint32_t b = 0; r == dfcclSuccess && b < ctx->grid_ever; b++)
    r = t->copy_in(ctx, &a->dynamic[(size_t)b * DF_MAX_COLLS + (size_t)index], &idle, sizeof idle);
  if (r == dfcclSuccess) r = t->copy_in(ctx, &a->done_blocks[index], &no_blocks, sizeof no_blocks);
  if (r == dfcclSuccess) r = t->copy_in(ctx, (void*)&a->timed_out[index], &no_blocks, sizeof no_blocks);
  uint64_t shut = 0;
  if (r == dfcclSuccess) r = t->copy_in(ctx, &a->gates_passed[index], &shut, sizeof shut);
  if (r == dfcclSuccess) r = t->copy_in(ctx, &a->coll_counters[index], &none, sizeof none);
  pthread_mutex_unlock(&ctx->tables_lock);
  return r;
}

/* Collective over the group of `ids`: the closing exchange, then the collectives' connectors are
 * freed and their ids and indices released.  Like registration, the exchange runs with no lock
 * held.  `destroying`: the daemon has exited for good, so the indices need no reset, and the
 * collectives leave even if the exchange failed (the context goes away; the ids come from the
 * registry, so they are registered, of one group and not in flight). */
static dfcclResult_t deregister(df_ctx* ctx, const int* ids, int n, bool destroying) {
  int* indices = malloc(sizeof(int) * (size_t)n);
  if (!indices) return df_error(dfcclOutOfResources, "out of memory");
  df_group* g = NULL;
  dfcclResult_t prior;
  pthread_mutex_lock(&ctx->lock);
  dfcclResult_t r = begin_leaving(ctx, ids, n, indices, &g, &prior);
  pthread_mutex_unlock(&ctx->lock);
  if (r != dfcclSuccess) {
    free(indices);
    return r;
  }
  r = df_links_close(ctx, g, ids, n, prior);
  bool leave = r == dfcclSuccess || destroying;
  /* Every participant closes its mappings of the others' connectors before anyone frees its own:
   * a peer that freed a region and allocated the next collective's at the same address would
   * otherwise hand out an IPC handle that a slower rank still has open ("already mapped", seen
   * with two threads registering and deregistering at once on 2x H200). */
  for (int i = 0; leave && i < n; i++)
    if (indices[i] >= 0) df_links_unmap_peers(ctx, &ctx->colls[indices[i]].links);
  if (r == dfcclSuccess) r = df_links_barrier(ctx, g);
  char message[512];
  snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
  dfcclResult_t reset = dfcclSuccess;
  for (int i = 0; leave && i < n; i++) {
    if (indices[i] < 0) continue;
    df_links_free(ctx, &ctx->colls[indices[i]].links); /* LEAVING: nobody else touches them */
    df_blocks_free(ctx, &ctx->colls[indices[i]]);
    if (!destroying && reset == dfcclSuccess) reset = reset_daemon_entry(ctx, indices[i]);
  }
  int nranks = g->nranks;
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < n; i++) {
    if (indices[i] < 0) continue;
    if (leave) df_registry_release(ctx, indices[i]);
    else if (prior == dfcclSuccess) ctx->colls[indices[i]].state = DF_COLL_READY; /* a peer could not */
  }
  df_group_put(ctx, g);
  pthread_mutex_unlock(&ctx->lock);
  free(indices);
  if (r == dfcclSuccess) df_debug(ctx, "deregistered %d collectives of a group of %d ranks", n, nranks);
  if (r != dfcclSuccess) return df_error(r, "%s", message);
  return reset;
}

dfcclResult_t dfcclDeregister(dfcclRankCtx_t ctx, const int* collIds, int n) {
  DF_CHECK(df_ctx_check(ctx));
  if (n < 0) return df_error(dfcclInvalidArgument, "dfcclDeregister: n is %d", n);
  if (n == 0) return dfcclSuccess;
  if (!collIds) return df_error(dfcclInvalidArgument, "dfcclDeregister: collIds is NULL but n is %d", n);
  return deregister(ctx, collIds, n, false);
}

static int compare_ids(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

/* Caller holds ctx->lock.  The first group, in the order of df_group_compare, that registered
 * collectives still use, and their ids, ascending (NULL when none is left). */
static df_group* next_group_to_close(const df_ctx* ctx, int* ids, int* n) {
  const df_group* first = NULL;
  for (int i = 0; i < ctx->ncolls; i++) {
    const df_coll* c = &ctx->colls[i];
    if (c->state == DF_COLL_READY && (!first || df_group_compare(c->group, first) < 0)) first = c->group;
  }
  *n = 0;
  for (int i = 0; first && i < ctx->ncolls; i++)
    if (ctx->colls[i].state == DF_COLL_READY && ctx->colls[i].group == first) ids[(*n)++] = ctx->colls[i].id;
  qsort(ids, (size_t)*n, sizeof(int), compare_ids);
  return (df_group*)first;
}

/* Every collective still registered leaves, a group at a time, each group with one closing
 * exchange over its participants.  Groups go in the order of their rank lists, the same on every
 * rank whatever order (or threads) they were registered in, so these exchanges cannot wait for
 * each other in a cycle: the least group that any rank waits in has every member there. */
dfcclResult_t df_deregister_all(df_ctx* ctx) {
  int* ids = malloc(sizeof(int) * DF_MAX_COLLS);
  if (!ids) return df_error(dfcclOutOfResources, "out of memory");
  dfcclResult_t result = dfcclSuccess;
  for (;;) {
    int n;
    pthread_mutex_lock(&ctx->lock);
    df_group* g = next_group_to_close(ctx, ids, &n);
    pthread_mutex_unlock(&ctx->lock);
    if (!g) break;
    dfcclResult_t r = deregister(ctx, ids, n, true);
    if (r != dfcclSuccess && result == dfcclSuccess) {
      result = r;
      fprintf(stderr, "dfccl: rank %d: dfcclDestroy: %s\n", ctx->rank, dfcclGetLastErrorMessage());
    }
  }
  free(ids);
  return result;
}
