/*
 * dfcclGetStats and dfcclGetCollStats: the daemon's counters, copied out of its tables, beside the
 * host's own (launches, completions, waits for a full SQ).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <string.h>

#include "internal.h"

dfcclResult_t dfcclGetStats(dfcclRankCtx_t ctx, dfcclStats_t* stats) {
  DF_CHECK(df_ctx_check(ctx));
  if (!stats) return df_error(dfcclInvalidArgument, "stats is NULL");
  memset(stats, 0, sizeof *stats);
  pthread_mutex_lock(&ctx->tables_lock);
  uint32_t n = ctx->grid_ever; /* a registration on another thread may grow it */
  pthread_mutex_unlock(&ctx->tables_lock);
  for (uint32_t b = 0; b < n; b++) {
    /* The counters only: the rest of a block's state is the running daemon's own. */
    df_block_counters counters;
    DF_CHECK(ctx->target->copy_out(ctx, &counters, &ctx->args.blocks[b].counters, sizeof counters));
    const df_block_counters* c = &counters;
    stats->sqesRead += c->sqes_read;
    stats->preemptions += c->preemptions;
    stats->contextLoads += c->context_loads;
    stats->contextSaves += c->context_saves;
    stats->voluntaryQuits += c->voluntary_quits;
    if (c->max_queue_length > stats->maxTaskQueueLength) stats->maxTaskQueueLength = c->max_queue_length;
    stats->cqFullWaits += c->cq_full_waits;
  }
  stats->launches = atomic_load(&ctx->launches);
  stats->relaunches = stats->launches ? stats->launches - 1 : 0;
  stats->completions = atomic_load(&ctx->completions);
  stats->callerWaits = atomic_load(&ctx->caller_waits);
  stats->streamGates = atomic_load(&ctx->stream_gates);
  pthread_mutex_lock(&ctx->sq.lock);
  stats->sqFullWaits = ctx->sq.full_waits;
  pthread_mutex_unlock(&ctx->sq.lock);
  /* Asked of the target, not taken from the poller's last look: an idle daemon that still held
   * the GPU must show here. */
  bool running = false;
  DF_CHECK(ctx->target->daemon_running(ctx, &running));
  stats->daemonBlocks = running ? atomic_load(&ctx->grid_launched) : 0;
  return dfcclSuccess;
}

dfcclResult_t dfcclGetCollStats(dfcclRankCtx_t ctx, int collId, dfcclCollStats_t* stats) {
  DF_CHECK(df_ctx_check(ctx));
  if (!stats) return df_error(dfcclInvalidArgument, "stats is NULL");
  pthread_mutex_lock(&ctx->lock);
  int index = df_registry_find(ctx, collId);
  uint64_t runs = index >= 0 ? ctx->colls[index].runs : 0;
  pthread_mutex_unlock(&ctx->lock);
  if (index < 0) return df_error(dfcclUnregisteredId, "collective id %d is not registered", collId);
  df_coll_counters c;
  DF_CHECK(ctx->target->copy_out(ctx, &c, &ctx->args.coll_counters[index], sizeof c));
  memset(stats, 0, sizeof *stats);
  stats->runs = runs;
  stats->preemptions = c.preemptions;
  stats->contextLoads = c.context_loads;
  stats->contextSaves = c.context_saves;
  stats->lastTaskQueueLength = c.last_queue_length;
  stats->maxTaskQueueLength = c.max_queue_length;
  return dfcclSuccess;
}
