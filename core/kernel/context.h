/*
 * Collective contexts: the active slots in the block's working memory are a direct-mapped cache
 * of the contexts in global memory.  Loading brings in the static and the dynamic context; a
 * dynamic context is written back only when it changed since it was loaded (lazy saving) -- when
 * its slot is needed by another collective, and always before the block quits.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_CONTEXT_H
#define DFCCL_KERNEL_CONTEXT_H

#include "block.h"

DF_FN df_coll_dynamic* df_global_dynamic(const df_daemon_args* a, const df_block* blk, uint32_t coll) {
  return &a->dynamic[(size_t)df_bid(blk) * DF_MAX_COLLS + coll];
}

/* The static context of `coll` as the host last wrote it (see df_load_l2): registration writes it
 * while the daemon runs, and an index is reused after a deregistration. */
DF_FN df_coll_static df_static_context(const df_daemon_args* a, uint32_t coll) {
  df_coll_static st;
  df_load_l2(&st, &a->colls[coll], sizeof st);
  return st;
}

DF_FN int32_t df_static_priority(const df_daemon_args* a, uint32_t coll) {
  return (int32_t)df_load_l2_u32((const uint32_t*)&a->colls[coll].priority);
}

DF_FN uint32_t df_static_order(const df_daemon_args* a, uint32_t coll) { return df_load_l2_u32(&a->colls[coll].order); }

DF_FN void df_context_save(const df_daemon_args* a, const df_block* blk, df_context_slot* slot) {
  if (slot->coll < 0 || !slot->dirty) return;
  DF_STORE_SHARED(df_global_dynamic(a, blk, (uint32_t)slot->coll), slot->dyn); /* a hang report may read it */
  slot->dirty = 0;
  df_count(&a->blocks[df_bid(blk)].counters.context_saves);
  df_atomic_add_u32(&a->coll_counters[slot->coll].context_saves, 1);
}

/* What every slot of a run carries: its number (runs of a collective, or of a communicator's
 * connector set, count alike on every participant) and what every participant must agree on.
 * Blocks tables stay out (displacements are each rank's own); their largest block is the count. */
DF_FN uint32_t df_run_tag(const df_coll_static* st, uint32_t epoch) {
  uint64_t h = 0xcbf29ce484222325ull;
  const uint64_t words[] = {st->kind, st->dtype, st->op, st->count, (uint64_t)(int64_t)st->root, st->nchannels, epoch};
  for (unsigned i = 0; i < sizeof words / sizeof words[0]; i++) h = (h ^ words[i]) * 0x100000001b3ull;
  /* The algorithm too: ranks configured differently fail the run (DF_RUN_MISMATCH) rather than mix two. */
  h = (h ^ (st->flags & (DF_COLL_GATHER_REDUCE | DF_COLL_LL))) * 0x100000001b3ull;
  return (uint32_t)(h ^ (h >> 32));
}

DF_FN bool df_context_resident(const df_block_shared* sh, uint32_t coll) {
  return sh->slots[coll % DF_CONTEXT_SLOTS].coll == (int32_t)coll;
}

/* Leader: `coll`'s contexts as global memory holds them.  Nothing waits for the loads before the
 * caller uses what they return (df_context_install): a load the caller sends in between travels
 * with them, in the same trip. */
DF_FN df_context_slot df_context_load(const df_daemon_args* a, const df_block* blk, uint32_t coll) {
  df_context_slot loaded;
  loaded.stat = df_static_context(a, coll);
  loaded.dyn = *df_global_dynamic(a, blk, coll);
  loaded.coll = (int32_t)coll;
  loaded.dirty = 0;
  loaded.tag = 0; /* df_context_install's, once the loads are in */
  return loaded;
}

/* Leader: makes loaded contexts resident in their slot, whose context goes back to global memory
 * first if it changed, and returns the slot. */
DF_FN uint32_t df_context_install(const df_daemon_args* a, const df_block* blk, df_block_shared* sh,
                                  df_context_slot loaded) {
  uint32_t index = (uint32_t)loaded.coll % DF_CONTEXT_SLOTS;
  df_context_slot* slot = &sh->slots[index];
  df_context_save(a, blk, slot);
  loaded.tag = df_run_tag(&loaded.stat, loaded.dyn.epoch);
  *slot = loaded;
  df_count(&a->blocks[df_bid(blk)].counters.context_loads);
  df_atomic_add_u32(&a->coll_counters[loaded.coll].context_loads, 1);
  return index;
}

/* Leader: makes `coll` resident and returns its slot. */
DF_FN uint32_t df_context_acquire(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, uint32_t coll) {
  if (df_context_resident(sh, coll)) return coll % DF_CONTEXT_SLOTS;
  return df_context_install(a, blk, sh, df_context_load(a, blk, coll));
}

/* Leader: a new run taken from the SQ starts from the beginning. */
DF_FN void df_context_start_run(const df_daemon_args* a, const df_block* blk, df_block_shared* sh, const df_sqe* e) {
  df_coll_dynamic d;
  d.sendbuff = e->sendbuff;
  d.recvbuff = e->recvbuff;
  d.epoch = e->epoch;
  d.iteration = 0;
  d.step = 0;
  d.gated = e->gated;
  d.received = 0;
  d.pad[0] = d.pad[1] = 0;
  DF_STORE_SHARED(df_global_dynamic(a, blk, e->coll), d);
  sh->unbegun[e->coll / 32] |= 1u << (e->coll % 32);
  df_context_slot* slot = &sh->slots[e->coll % DF_CONTEXT_SLOTS];
  if (slot->coll == (int32_t)e->coll) slot->coll = -1; /* a finished run's copy: stale now */
}

/* Leader: the block's part of the run is complete. */
DF_FN void df_context_finish_run(const df_daemon_args* a, const df_block* blk, df_context_slot* slot) {
  DF_STORE_SHARED(df_global_dynamic(a, blk, (uint32_t)slot->coll), slot->dyn);
  slot->coll = -1;
  slot->dirty = 0;
}

/* Leader: a (re)launched block picks up its task queue where it left it. */
DF_FN void df_context_block_start(const df_daemon_args* a, const df_block* blk, df_block_shared* sh) {
  const df_block_state* bs = &a->blocks[df_bid(blk)];
  for (uint32_t i = 0; i < DF_CONTEXT_SLOTS; i++) {
    sh->slots[i].coll = -1;
    sh->slots[i].dirty = 0;
  }
  sh->ntasks = bs->ntasks;
  for (uint32_t i = 0; i < DF_MAX_COLLS / 32; i++) sh->unbegun[i] = 0; /* a relaunch sends nothing ahead */
  const uint16_t* saved = &a->saved_tasks[(size_t)df_bid(blk) * DF_MAX_COLLS];
  for (uint32_t i = 0; i < sh->ntasks; i++) sh->tasks[i] = saved[i];
}

/* Leader: the block quits; every context that changed, and the task queue, go to global memory. */
DF_FN void df_context_block_stop(const df_daemon_args* a, const df_block* blk, df_block_shared* sh) {
  for (uint32_t i = 0; i < DF_CONTEXT_SLOTS; i++) df_context_save(a, blk, &sh->slots[i]);
  df_block_state* bs = &a->blocks[df_bid(blk)];
  uint16_t* saved = &a->saved_tasks[(size_t)df_bid(blk) * DF_MAX_COLLS];
  for (uint32_t i = 0; i < sh->ntasks; i++) saved[i] = sh->tasks[i];
  bs->ntasks = sh->ntasks;
  df_fence_system(); /* the host reads this state after the daemon exits */
}

#endif /* DFCCL_KERNEL_CONTEXT_H */
