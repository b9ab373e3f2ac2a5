/*
 * Unit test of the low-latency lines (core/kernel/low_latency.h, core/platform/platform.h) on the
 * host execution target: what a sender writes and a receiver reads, one thread at a time in the
 * roles of a block's threads.
 *
 *   - Every size from 1 to 300 bytes and a few larger, the source at every offset modulo 8, blocks
 *     of 1, 3 and 32 threads: each data line holds its 8 bytes of the source (zeros past the end)
 *     beside the flag in both words; the reader gives back the source to the byte and writes
 *     nothing past the last whole line (guard bytes); the source is not changed.
 *   - Lines of an earlier lap (flag - 1), and lines torn between two laps (one word new, one old),
 *     are not taken: with preemption the read gives up ("late"); DFCCL_LL_CHECK=0's reader takes
 *     them as they are.
 *   - The header: the tag word comes back whole with its flag; the flags of consecutive steps
 *     differ, and no step's flag is 0 (memory never written).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
/* platform.h uses clock_gettime and nanosleep, which strict C11 hides without a POSIX feature macro. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "low_latency.h"

#include "unit_check.h"

static char g_context[256]; /* the case under test, named in each failure */

#define GUARD 0xa5
#define MAX_BYTES 4096
#define SLOT_ROOM (DF_LL_SLOT_BYTES(MAX_BYTES) + 64)

/* 16-byte aligned: the lines' stores are whole words. */
static _Alignas(16) char g_slot[SLOT_ROOM];
static _Alignas(16) char g_dst[MAX_BYTES + 64];
static _Alignas(16) char g_src[MAX_BYTES + 16];
static char g_copy[MAX_BYTES + 16];

static const int g_threads[] = {1, 3, 32};

static size_t lines_of(size_t bytes) { return (bytes + DF_LL_LINE_DATA - 1) / DF_LL_LINE_DATA; }

/* The block's threads, one after the other. */
static void write_lines(int nthreads, const char* src, size_t bytes, uint32_t flag) {
  for (int t = 0; t < nthreads; t++) {
    df_block b = {.tid = t, .nthreads = nthreads, .bid = 0, .nblocks = 1};
    df_ll_write_lines(&b, src, bytes, g_slot, flag);
  }
}

/* How many of the block's threads found a line late. */
static int read_lines(int nthreads, size_t bytes, uint32_t flag, bool unchecked) {
  int late = 0;
  for (int t = 0; t < nthreads; t++) {
    df_block b = {.tid = t, .nthreads = nthreads, .bid = 0, .nblocks = 1};
    late += df_ll_read_lines(&b, g_slot, flag, g_dst, bytes, unchecked, false);
  }
  return late;
}

static void check_line_words(size_t bytes, const char* src, uint32_t flag) {
  for (size_t i = 0; i < lines_of(bytes); i++) {
    const uint64_t* word = (const uint64_t*)(const void*)(g_slot + (1 + i) * DF_LL_LINE_BYTES);
    uint64_t want = 0;
    for (size_t k = 0; k < DF_LL_LINE_DATA && i * DF_LL_LINE_DATA + k < bytes; k++)
      want |= (uint64_t)(uint8_t)src[i * DF_LL_LINE_DATA + k] << (8 * k);
    if ((uint32_t)(word[0] >> 32) != flag || (uint32_t)(word[1] >> 32) != flag) {
      FAIL("test_low_latency: %s: line %zu: flags %08x %08x, expected %08x", g_context, i, (unsigned)(word[0] >> 32),
           (unsigned)(word[1] >> 32), (unsigned)flag);
      return;
    }
    uint64_t data = (word[0] & 0xffffffffu) | (word[1] << 32);
    if (data != want) {
      FAIL("test_low_latency: %s: line %zu: data %016llx, expected %016llx", g_context, i, (unsigned long long)data,
           (unsigned long long)want);
      return;
    }
  }
}

static void round_trip(size_t bytes, size_t offset, int nthreads) {
  snprintf(g_context, sizeof g_context, "%zu bytes, source offset %zu, %d threads", bytes, offset, nthreads);
  char* src = g_src + offset;
  for (size_t i = 0; i < bytes; i++) src[i] = (char)(rand() & 0xff);
  memcpy(g_copy, src, bytes);
  memset(g_slot, 0, sizeof g_slot);
  memset(g_dst, GUARD, sizeof g_dst);
  uint32_t flag = df_ll_flag((uint64_t)rand());
  write_lines(nthreads, src, bytes, flag);
  if (memcmp(g_copy, src, bytes) != 0) {
    FAIL("test_low_latency: %s: the source changed", g_context);
    return;
  }
  check_line_words(bytes, src, flag);
  for (size_t i = lines_of(bytes) + 1; i * DF_LL_LINE_BYTES < sizeof g_slot; i++)
    for (size_t k = 0; k < DF_LL_LINE_BYTES; k++)
      if (g_slot[i * DF_LL_LINE_BYTES + k] != 0) {
        FAIL("test_low_latency: %s: line %zu past the data was written", g_context, i);
        return;
      }
  if (read_lines(nthreads, bytes, flag, false) != 0) {
    FAIL("test_low_latency: %s: lines of this step were found late", g_context);
    return;
  }
  if (memcmp(g_dst, src, bytes) != 0) {
    FAIL("test_low_latency: %s: the lines read back differ from the source", g_context);
    return;
  }
  for (size_t i = lines_of(bytes) * DF_LL_LINE_DATA; i < sizeof g_dst; i++)
    if ((uint8_t)g_dst[i] != GUARD) {
      FAIL("test_low_latency: %s: byte %zu past the last line was written", g_context, i);
      return;
    }
}

/* Lines of the lap before, or torn between the two, are not taken. */
static void stale_lines(void) {
  const size_t bytes = 100;
  snprintf(g_context, sizeof g_context, "stale lines, %zu bytes", bytes);
  for (size_t i = 0; i < bytes; i++) g_src[i] = (char)i;
  uint32_t old = df_ll_flag(41), now = df_ll_flag(42);
  write_lines(1, g_src, bytes, old);
  if (read_lines(1, bytes, now, false) != 1) {
    FAIL("test_low_latency: %s: lines of the lap before were taken", g_context);
    return;
  }
  if (read_lines(3, bytes, now, false) != 3) {
    FAIL("test_low_latency: %s: a thread took a line of the lap before", g_context);
    return;
  }
  /* One line torn: its second word still the lap before's. */
  write_lines(1, g_src, bytes, now);
  uint64_t* word = (uint64_t*)(void*)(g_slot + 5 * DF_LL_LINE_BYTES);
  word[1] = (uint64_t)old << 32 | (word[1] & 0xffffffffu);
  if (read_lines(1, bytes, now, false) != 1) {
    FAIL("test_low_latency: %s: a torn line was taken", g_context);
    return;
  }
  /* DFCCL_LL_CHECK=0 (the twin's reader) takes them as they are. */
  if (read_lines(1, bytes, now, true) != 0) {
    FAIL("test_low_latency: %s: the unchecked reader waited for a flag", g_context);
    return;
  }
}

static void header_and_flags(void) {
  snprintf(g_context, sizeof g_context, "header and flags");
  uint64_t data;
  df_ll_store_line(g_slot, 0xdeadbeefu, df_ll_flag(7));
  if (!df_ll_load_line(g_slot, df_ll_flag(7), &data) || (uint32_t)data != 0xdeadbeefu) {
    FAIL("test_low_latency: %s: the header's tag word did not come back with its flag", g_context);
    return;
  }
  if (df_ll_load_line(g_slot, df_ll_flag(8), &data)) {
    FAIL("test_low_latency: %s: the header passed for the next step's", g_context);
    return;
  }
  if (df_ll_flag(0) == 0) {
    FAIL("test_low_latency: %s: step 0's flag is 0, the value of memory never written", g_context);
    return;
  }
  for (uint64_t step = 0; step < 1000; step++)
    if (df_ll_flag(step) == df_ll_flag(step + DF_FIFO_STEPS)) {
      FAIL("test_low_latency: %s: a slot's flag repeats a lap later", g_context);
      return;
    }
}

int main(void) {
  srand(1);
  size_t sizes[] = {1024, 2047, 4096};
  for (size_t bytes = 1; bytes <= 300; bytes++)
    for (size_t offset = 0; offset < 8; offset++)
      for (size_t t = 0; t < sizeof g_threads / sizeof g_threads[0]; t++) round_trip(bytes, offset, g_threads[t]);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t offset = 0; offset < 8; offset += 3)
      for (size_t t = 0; t < sizeof g_threads / sizeof g_threads[0]; t++) round_trip(sizes[s], offset, g_threads[t]);
  stale_lines();
  header_and_flags();
  if (failures) {
    fprintf(stderr, "test_low_latency: %d failures\n", failures);
    return 1;
  }
  printf(
      "test_low_latency: OK (lines round-trip at every size to 300 bytes and offset; stale and torn lines refused)\n");
  return 0;
}
