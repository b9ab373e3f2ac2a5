/*
 * Registered collectives: user ids map to dense indices (the daemon's collective numbers).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ID_SLOTS (2 * DF_MAX_COLLS) /* open addressing, at most half full */

dfcclResult_t df_registry_init(df_ctx* ctx) {
  ctx->colls = calloc(DF_MAX_COLLS, sizeof *ctx->colls);
  ctx->id_index = malloc(sizeof(int) * ID_SLOTS);
  if (!ctx->colls || !ctx->id_index) return df_error(dfcclOutOfResources, "out of memory");
  for (size_t i = 0; i < ID_SLOTS; i++) ctx->id_index[i] = -1;
  ctx->id_slots = ID_SLOTS;
  return dfcclSuccess;
}

void df_registry_fini(df_ctx* ctx) {
  free(ctx->colls);
  free(ctx->id_index);
  ctx->colls = NULL;
  ctx->id_index = NULL;
}

static size_t hash(int id, size_t slots) { return ((uint32_t)id * 2654435761u) % slots; }

int df_registry_find(const df_ctx* ctx, int id) {
  for (size_t i = hash(id, ctx->id_slots);; i = (i + 1) % ctx->id_slots) {
    int index = ctx->id_index[i];
    if (index < 0) return -1;
    if (ctx->colls[index].id == id) return index;
  }
}

dfcclResult_t df_registry_add(df_ctx* ctx, int id, const df_coll_static* stat, df_group* group,
                              const df_coll_links* links, int* index) {
  if (df_registry_find(ctx, id) >= 0)
    return df_error(dfcclDuplicateId, "collective id %d is already registered", id);
  if (ctx->ncolls >= DF_MAX_COLLS)
    return df_error(dfcclOutOfResources, "at most %d collectives can be registered", DF_MAX_COLLS);
  int i = ctx->ncolls;
  df_coll* c = &ctx->colls[i];
  memset(c, 0, sizeof *c);
  c->id = id;
  c->stat = *stat;
  c->group = group;
  c->links = *links;
  c->registered = true;
  size_t slot = hash(id, ctx->id_slots);
  while (ctx->id_index[slot] >= 0) slot = (slot + 1) % ctx->id_slots;
  ctx->id_index[slot] = i;
  ctx->ncolls++;
  *index = i;
  return dfcclSuccess;
}
