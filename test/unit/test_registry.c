/*
 * The registry (registry.c) against a plain reference, under random registrations and
 * deregistrations: ids that collide in the id map (linear probing with backward-shift deletion),
 * far more registrations over the run than a context holds at once, the limit itself, duplicate
 * ids, and the group references the records hold.  A wrong map entry would make a run execute
 * another collective, so every step checks every id the test ever used.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/unit_check.h"
#include "internal.h"

#define MAX_ID 6000 /* ids 0..MAX_ID-1: many collide in the 4096-slot map */
#define STEPS 200000

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_random(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng >> 33);
}

static int index_of[MAX_ID]; /* the reference: id -> index, -1 when not registered */
static int live;
static long refused; /* registrations beyond the limit */

static df_group* group_ref(df_ctx* ctx) {
  df_group* g;
  if (df_group_get(ctx, NULL, 0, &g) != dfcclSuccess) {
    FAIL("df_group_get failed: %s", dfcclGetLastErrorMessage());
    exit(1);
  }
  return g;
}

static void add(df_ctx* ctx, int id) {
  df_group* g = group_ref(ctx);
  int index = -1;
  dfcclResult_t r = df_registry_reserve(ctx, id, g, &index);
  if (index_of[id] >= 0) {
    if (r != dfcclDuplicateId) FAIL("id %d registered twice: got %s", id, dfcclGetErrorString(r));
    df_group_put(ctx, g);
    return;
  }
  if (live == DF_MAX_COLLS) {
    if (r != dfcclOutOfResources) FAIL("registration %d beyond the limit: got %s", live + 1, dfcclGetErrorString(r));
    refused++;
    df_group_put(ctx, g);
    return;
  }
  if (r != dfcclSuccess) {
    FAIL("id %d: %s (%s) with %d live", id, dfcclGetErrorString(r), dfcclGetLastErrorMessage(), live);
    df_group_put(ctx, g);
    return;
  }
  for (int other = 0; other < MAX_ID; other++)
    if (index_of[other] == index) FAIL("index %d handed out for id %d while id %d holds it", index, id, other);
  df_coll_static st;
  df_coll_links links;
  memset(&st, 0, sizeof st);
  memset(&links, 0, sizeof links);
  st.count = (uint64_t)id;
  df_registry_publish(ctx, index, &st, &links);
  index_of[id] = index;
  live++;
}

static void drop(df_ctx* ctx, int id) {
  df_registry_release(ctx, index_of[id]);
  index_of[id] = -1;
  live--;
}

static void check_all(const df_ctx* ctx) {
  for (int id = 0; id < MAX_ID; id++) {
    int got = df_registry_find(ctx, id);
    if (got != index_of[id]) FAIL("id %d maps to %d, expected %d", id, got, index_of[id]);
    else if (got >= 0 && (ctx->colls[got].id != id || ctx->colls[got].stat.count != (uint64_t)id))
      FAIL("id %d: index %d holds collective %d", id, got, ctx->colls[got].id);
  }
}

int main(void) {
  df_ctx* ctx = calloc(1, sizeof *ctx);
  if (!ctx) return 1;
  ctx->rank = 0;
  ctx->nranks = 1;
  if (df_registry_init(ctx) != dfcclSuccess) return 1;
  for (int id = 0; id < MAX_ID; id++) index_of[id] = -1;
  long registrations = 0;
  for (int step = 0; step < STEPS && failures < 10; step++) {
    /* Phases that fill the registry to its limit (and stay there a while: more registrations are
     * refused) and drain it to about a fifth of it.  Registering a registered id is a duplicate. */
    bool filling = (step / 5000) % 2 == 0;
    int id = (int)(next_random() % MAX_ID);
    bool registered = index_of[id] >= 0, at_limit = live == DF_MAX_COLLS;
    if (filling ? registered && at_limit && next_random() % 2 : registered) {
      drop(ctx, id);
    } else if (filling || next_random() % 4 == 0) {
      int before = live;
      add(ctx, id);
      registrations += live > before;
    }
    if (step % 1000 == 0) check_all(ctx);
  }
  check_all(ctx);
  /* Every reference to the one group is a live record's: the last release frees it. */
  int users = ctx->groups ? ctx->groups->users : 0;
  if (users != live) FAIL("the group has %d users for %d live collectives", users, live);
  for (int id = 0; id < MAX_ID; id++)
    if (index_of[id] >= 0) drop(ctx, id);
  if (ctx->groups) FAIL("the group outlived its collectives");
  check_all(ctx);
  if (refused == 0) FAIL("the registry never reached its limit: the test does not test it");
  printf("registry: %ld registrations over %d steps (at most %d at once, %ld refused beyond), %s\n", registrations,
         STEPS, DF_MAX_COLLS, refused, failures ? "FAILED" : "every lookup right");
  df_registry_fini(ctx);
  free(ctx);
  return failures ? 1 : 0;
}
