/*
 * Registered collectives: user ids map to dense indices (the daemon's collective numbers).
 * Indices of deregistered collectives go on a free list and are handed out again, so a
 * context outlives any number of registrations as long as at most DF_MAX_COLLS are live at once.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ID_SLOTS (2 * DF_MAX_COLLS) /* open addressing, at most half full */
#define EMPTY (-1)

dfcclResult_t df_registry_init(df_ctx* ctx) {
  ctx->colls = calloc(DF_MAX_COLLS, sizeof *ctx->colls);
  ctx->free_indices = malloc(sizeof(int) * DF_MAX_COLLS);
  ctx->id_index = malloc(sizeof(int) * ID_SLOTS);
  if (!ctx->colls || !ctx->free_indices || !ctx->id_index) return df_error(dfcclOutOfResources, "out of memory");
  for (size_t i = 0; i < ID_SLOTS; i++) ctx->id_index[i] = EMPTY;
  ctx->id_slots = ID_SLOTS;
  ctx->nfree = 0;
  return dfcclSuccess;
}

void df_registry_fini(df_ctx* ctx) {
  free(ctx->colls);
  free(ctx->free_indices);
  free(ctx->id_index);
  ctx->colls = NULL;
  ctx->free_indices = NULL;
  ctx->id_index = NULL;
}

static size_t hash(int id, size_t slots) { return ((uint32_t)id * 2654435761u) % slots; }

static size_t next_slot(const df_ctx* ctx, size_t slot) { return (slot + 1) % ctx->id_slots; }

/* The map slot that holds id, or the empty slot where the probe for it ends. */
static size_t probe(const df_ctx* ctx, int id) {
  size_t slot = hash(id, ctx->id_slots);
  while (ctx->id_index[slot] != EMPTY && ctx->colls[ctx->id_index[slot]].id != id) slot = next_slot(ctx, slot);
  return slot;
}

int df_registry_lookup(const df_ctx* ctx, int id) { return ctx->id_index[probe(ctx, id)]; }

int df_registry_find(const df_ctx* ctx, int id) {
  int index = df_registry_lookup(ctx, id);
  if (index < 0) return -1;
  df_coll_state state = ctx->colls[index].state;
  return state == DF_COLL_READY || state == DF_COLL_LEAVING ? index : -1;
}

/* Is `home` cyclically within (empty, slot]?  Then the entry at `slot` is still reachable from its
 * home slot with `empty` emptied, and must stay where it is. */
static bool reachable_without(size_t empty, size_t slot, size_t home) {
  return empty <= slot ? (empty < home && home <= slot) : (empty < home || home <= slot);
}

/* Backward-shift deletion: entries after the emptied slot move back when their probe would
 * otherwise stop at the hole, so no tombstones accumulate over many deregistrations. */
static void unmap_id(df_ctx* ctx, int id) {
  size_t empty = probe(ctx, id);
  if (ctx->id_index[empty] == EMPTY) return;
  for (size_t slot = next_slot(ctx, empty); ctx->id_index[slot] != EMPTY; slot = next_slot(ctx, slot)) {
    size_t home = hash(ctx->colls[ctx->id_index[slot]].id, ctx->id_slots);
    if (reachable_without(empty, slot, home)) continue;
    ctx->id_index[empty] = ctx->id_index[slot];
    empty = slot;
  }
  ctx->id_index[empty] = EMPTY;
}

static int take_free_index(df_ctx* ctx) {
  if (ctx->nfree > 0) return ctx->free_indices[--ctx->nfree];
  if (ctx->ncolls < DF_MAX_COLLS) return ctx->ncolls++;
  return -1;
}

dfcclResult_t df_registry_reserve(df_ctx* ctx, int id, df_group* g, int* index) {
  size_t slot = probe(ctx, id);
  if (ctx->id_index[slot] != EMPTY) {
    bool joining = ctx->colls[ctx->id_index[slot]].state == DF_COLL_JOINING;
    return df_error(dfcclDuplicateId, "collective id %d is already registered%s", id,
                    joining ? " (its registration is in progress on another thread)" : "");
  }
  int i = take_free_index(ctx);
  if (i < 0) return df_error(dfcclOutOfResources, "at most %d collectives can be registered at once", DF_MAX_COLLS);
  df_coll* c = &ctx->colls[i];
  memset(c, 0, sizeof *c); /* a reused index starts over: epoch, runs and callback too */
  c->id = id;
  c->state = DF_COLL_JOINING;
  c->group = g;
  ctx->id_index[slot] = i;
  *index = i;
  return dfcclSuccess;
}

void df_registry_publish(df_ctx* ctx, int index, const df_coll_static* stat, const df_coll_links* links) {
  df_coll* c = &ctx->colls[index];
  c->stat = *stat;
  c->links = *links;
  c->state = DF_COLL_READY;
}

void df_registry_release(df_ctx* ctx, int index) {
  df_coll* c = &ctx->colls[index];
  unmap_id(ctx, c->id);
  if (c->group) df_group_put(ctx, c->group);
  memset(c, 0, sizeof *c);
  ctx->free_indices[ctx->nfree++] = index;
}
