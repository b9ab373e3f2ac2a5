/*
 * The v collectives' blocks tables: built and checked from the caller's counts and displacements,
 * and copied to daemon memory, for a registration (register.c) and for a communicator's runs (comm.c).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  uint64_t displ, end;
  int position;
} extent_t;

static int by_displ(const void* a, const void* b) {
  uint64_t x = ((const extent_t*)a)->displ, y = ((const extent_t*)b)->displ;
  return (x > y) - (x < y);
}

/* Sorted by displacement, the non-empty blocks are disjoint when each begins at or after the end of
 * the one before it (their ends then grow, so no earlier block reaches further). */
static dfcclResult_t check_disjoint(const uint64_t* table, int nranks, const char* name) {
  extent_t* e = malloc((size_t)nranks * sizeof *e);
  if (!e) return df_error(dfcclOutOfResources, "out of memory");
  int n = 0;
  for (int i = 0; i < nranks; i++)
    if (DF_BLOCK_COUNT(table, i) > 0)
      e[n++] = (extent_t){DF_BLOCK_DISPL(table, i), DF_BLOCK_DISPL(table, i) + DF_BLOCK_COUNT(table, i), i};
  qsort(e, (size_t)n, sizeof *e, by_displ);
  dfcclResult_t r = dfcclSuccess;
  for (int k = 1; k < n && r == dfcclSuccess; k++)
    if (e[k].displ < e[k - 1].end)
      r = df_error(dfcclInvalidArgument,
                   "%s: blocks %d and %d overlap (displs[%d] = %llu lies inside block %d, elements %llu..%llu)", name,
                   e[k - 1].position, e[k].position, e[k].position, (unsigned long long)e[k].displ, e[k - 1].position,
                   (unsigned long long)e[k - 1].displ, (unsigned long long)e[k - 1].end - 1);
  free(e);
  return r;
}

dfcclResult_t df_blocks_table(int nranks, int position, df_coll_kind kind, const size_t* counts, const size_t* displs,
                              dfcclDataType_t dtype, df_blocks* b) {
  memset(b, 0, sizeof *b);
  const char* name = kind == DF_COLL_ALL_GATHER ? "all-gather-v" : "reduce-scatter-v";
  if ((unsigned)dtype >= dfcclNumTypes) return df_error(dfcclInvalidArgument, "unknown data type %d", (int)dtype);
  uint64_t limit = ((uint64_t)1 << 56) / dfcclTypeSize(dtype);
  uint64_t* table = malloc(2 * (size_t)nranks * sizeof *table);
  if (!table) return df_error(dfcclOutOfResources, "out of memory");
  b->hash = 14695981039346656037ull; /* FNV-1a */
  uint64_t packed = 0, extent = 0;
  for (int i = 0; i < nranks; i++) {
    uint64_t displ = displs ? displs[i] : packed;
    if (counts[i] > limit || displ > limit - counts[i]) {
      free(table);
      return df_error(dfcclInvalidArgument, "%s: block %d (%zu elements at %llu) overflows", name, i, counts[i],
                      (unsigned long long)displ);
    }
    DF_BLOCK_COUNT(table, i) = counts[i];
    DF_BLOCK_DISPL(table, i) = displ;
    packed += counts[i];
    if (counts[i] > b->largest) b->largest = counts[i];
    if (counts[i] > 0 && displ + counts[i] > extent) extent = displ + counts[i];
    for (int k = 0; k < 2; k++) {
      b->hash ^= table[2 * i + k];
      b->hash *= 1099511628211ull;
    }
  }
  /* Packed blocks cannot overlap; given displacements may, and the ring would then write one
   * block's elements over another's on every rank. */
  dfcclResult_t r = displs ? check_disjoint(table, nranks, name) : dfcclSuccess;
  if (r != dfcclSuccess) {
    free(table);
    return r;
  }
  b->host = table;
  /* All-gather-v reads this rank's block and writes every block; reduce-scatter-v the reverse. */
  b->send_elems = kind == DF_COLL_ALL_GATHER ? counts[position] : extent;
  b->recv_elems = kind == DF_COLL_ALL_GATHER ? extent : counts[position];
  return dfcclSuccess;
}

dfcclResult_t df_blocks_install(df_ctx* ctx, const df_blocks* b, uint32_t nranks, const uint64_t** dev) {
  size_t bytes = 2 * (size_t)nranks * sizeof *b->host;
  void* p = NULL;
  DF_CHECK(ctx->target->alloc(ctx, bytes, &p));
  dfcclResult_t r = ctx->target->copy_in(ctx, p, b->host, bytes);
  if (r != dfcclSuccess) {
    ctx->target->free(ctx, p);
    return r;
  }
  *dev = p;
  return dfcclSuccess;
}

void df_blocks_free(df_ctx* ctx, df_coll* c) {
  if (!c->blocks) return;
  ctx->target->free(ctx, (void*)c->stat.blocks);
  free(c->blocks);
  c->stat.blocks = NULL;
  c->blocks = NULL;
}
