/*
 * How a collective's elements are split: over channels (blocks), then per channel into loop
 * iterations of nranks chunks of one FIFO slot each.  Every rank computes the same split, so a
 * sender and its receiver agree on every chunk's size without talking.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_KERNEL_PARTITION_H
#define DFCCL_KERNEL_PARTITION_H

#include "daemon.h"
#include "dtypes.h"

DF_FN uint64_t df_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
DF_FN uint64_t df_round_up(uint64_t a, uint64_t b) { return df_div_up(a, b) * b; }

/* Elements per channel when `count` elements are split over `nchannels`: 16-byte multiples, so
 * that every channel's range starts aligned.  The first channel's share is the largest. */
DF_FN uint64_t df_channel_share(uint64_t count, uint32_t nchannels, uint64_t esize) {
  uint64_t align = 16 / esize;
  return df_round_up(df_div_up(count, nchannels), align);
}

typedef struct {
  uint64_t begin;      /* first element of this channel's range                     */
  uint64_t count;      /* elements in it                                             */
  uint64_t chunk;      /* elements per chunk in full iterations (one FIFO slot)      */
  uint64_t last_chunk; /* elements per chunk in the last, partial iteration          */
  uint64_t iterations;
  uint32_t nranks;
} df_chunking;

/* Channel ranges and chunks start at multiples of 16 bytes of the buffer, so that 16-byte
 * vector accesses stay possible inside every chunk of an aligned buffer. */
DF_FN void df_chunking_init(df_chunking* ch, const df_coll_static* st, uint32_t channel, uint32_t slot_bytes) {
  uint64_t esize = df_dtype_bytes((dfcclDataType_t)st->dtype);
  uint64_t align = 16 / esize;
  uint64_t per_channel = df_channel_share(st->count, st->nchannels, esize);
  uint64_t begin = (uint64_t)channel * per_channel;
  if (begin > st->count) begin = st->count;
  uint64_t end = begin + per_channel < st->count ? begin + per_channel : st->count;
  ch->begin = begin;
  ch->count = end - begin;
  ch->nranks = st->nranks;
  ch->chunk = slot_bytes / esize;
  if (ch->chunk == 0) ch->chunk = align;
  uint64_t per_iteration = ch->chunk * st->nranks;
  uint64_t rest = ch->count % per_iteration;
  ch->iterations = ch->count / per_iteration + (rest ? 1 : 0);
  ch->last_chunk = rest ? df_round_up(df_div_up(rest, st->nranks), align) : ch->chunk;
}

/* A channel's share of `count` elements (a rank's block for all-gather and reduce-scatter, the
 * whole buffer for broadcast and reduce), cut into chunks of one FIFO slot. */
typedef struct {
  uint64_t begin; /* first element of this channel's share */
  uint64_t end;
  uint64_t chunk;      /* elements per chunk                    */
  uint64_t iterations; /* chunks                                */
} df_span;

DF_FN void df_span_init(df_span* sp, uint64_t count, uint32_t nchannels, uint32_t channel, uint64_t esize,
                        uint32_t slot_bytes) {
  uint64_t align = 16 / esize;
  uint64_t per_channel = df_channel_share(count, nchannels, esize);
  sp->begin = (uint64_t)channel * per_channel < count ? (uint64_t)channel * per_channel : count;
  sp->end = sp->begin + per_channel < count ? sp->begin + per_channel : count;
  sp->chunk = slot_bytes / esize ? slot_bytes / esize : align;
  sp->iterations = df_div_up(sp->end - sp->begin, sp->chunk);
}

/* A v collective's block (all-gather-v, reduce-scatter-v): this channel's share of it cut by its
 * own count, and where it lies (the blocks table).  False when `iteration` is past the block's last
 * chunk: its sender and its receiver compute the same and skip it alike. */
DF_FN bool df_variable_block(const df_coll_static* st, uint32_t channel, uint32_t block, uint64_t iteration,
                             df_span* own, uint64_t* displ) {
  df_span_init(own, DF_BLOCK_COUNT(st->blocks, block), st->nchannels, channel,
               df_dtype_bytes((dfcclDataType_t)st->dtype), st->links.slot_bytes);
  *displ = DF_BLOCK_DISPL(st->blocks, block);
  return iteration < own->iterations;
}

/* Chunk `iteration` of the span: its first element and its length. */
DF_FN void df_span_chunk(const df_span* sp, uint64_t iteration, uint64_t* offset, uint64_t* nelem) {
  *offset = sp->begin + iteration * sp->chunk;
  *nelem = sp->end - *offset < sp->chunk ? sp->end - *offset : sp->chunk;
}

/* Chunk `chunk` of loop iteration `iteration`: its first element and its length (may be 0). */
DF_FN void df_chunk_range(const df_chunking* ch, uint64_t iteration, uint32_t chunk, uint64_t* offset,
                          uint64_t* nelem) {
  bool last = iteration + 1 == ch->iterations;
  uint64_t size = last ? ch->last_chunk : ch->chunk;
  uint64_t start = iteration * ch->chunk * ch->nranks + (uint64_t)chunk * size;
  *offset = ch->begin + start;
  *nelem = start >= ch->count ? 0 : (ch->count - start < size ? ch->count - start : size);
}

#endif /* DFCCL_KERNEL_PARTITION_H */
