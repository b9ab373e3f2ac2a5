/*
 * Pinned host blocks kept for reuse (dfcclHostBlockTake / dfcclHostBlockGive / dfcclHostBlocksFree,
 * core/host_blocks.c): a block given back is taken again by a later call of a size it fits, the
 * closest fit first; sizes round up to powers of two from 4 KiB; at most 8 blocks, 512 MiB in all,
 * are kept, a larger block given back freeing smaller kept ones; bad arguments are refused by name.
 * Without a GPU the blocks are plain host memory, and the policy is the same.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <string.h>

#include "../common/unit_check.h"
#include "dfccl.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)

static void* take(size_t bytes, size_t expected_capacity) {
  void* block = NULL;
  size_t capacity = 0;
  dfcclResult_t r = dfcclHostBlockTake(bytes, &block, &capacity);
  if (r != dfcclSuccess || block == NULL) {
    FAIL("take(%zu): %s (%s)", bytes, dfcclGetErrorString(r), dfcclGetLastErrorMessage());
    return NULL;
  }
  if (capacity != expected_capacity) FAIL("take(%zu): capacity %zu, expected %zu", bytes, capacity, expected_capacity);
  memset(block, 0xa5, bytes < MIB ? bytes : MIB); /* ours to write */
  return block;
}

static void give(void* block) {
  dfcclResult_t r = dfcclHostBlockGive(block);
  if (r != dfcclSuccess) FAIL("give(%p): %s (%s)", block, dfcclGetErrorString(r), dfcclGetLastErrorMessage());
}

/* Frees what is kept: how many blocks that was. */
static int kept(void) {
  int n = -1;
  dfcclResult_t r = dfcclHostBlocksFree(&n);
  if (r != dfcclSuccess) FAIL("dfcclHostBlocksFree: %s (%s)", dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  return n;
}

static void reuse(void) {
  void* a = take(1000, 4 * KIB);
  give(a);
  void* b = take(4 * KIB, 4 * KIB); /* fits the kept block */
  if (b != a) FAIL("reuse: a 4 KiB take after giving a 4 KiB block got %p, not it (%p)", b, a);
  void* c = take(5000, 8 * KIB); /* nothing kept fits: a new one */
  give(c);
  give(b);
  void* e = take(10, 4 * KIB); /* both fit: the closest, not the first given back */
  if (e != b) FAIL("reuse: a 10-byte take got %p, not the kept 4 KiB block %p", e, b);
  void* d = take(4097, 8 * KIB); /* the 8 KiB block */
  if (d != c) FAIL("reuse: a 4097-byte take got %p, not the kept 8 KiB block %p", d, c);
  give(d);
  give(e);
  if (kept() != 2) FAIL("reuse: two blocks given back were not the two kept");
}

static void caps(void) {
  void* blocks[9];
  for (int i = 0; i < 9; i++) blocks[i] = take(4 * KIB, 4 * KIB);
  for (int i = 0; i < 9; i++) give(blocks[i]);
  int n = kept();
  if (n != 8) FAIL("caps: %d of 9 blocks kept, expected 8", n);

  for (int i = 0; i < 8; i++) blocks[i] = take(4 * KIB, 4 * KIB);
  void* large = take(100 * KIB, 128 * KIB);
  for (int i = 0; i < 8; i++) give(blocks[i]);
  give(large); /* frees a 4 KiB block to make room */
  void* again = take(100 * KIB, 128 * KIB);
  if (again != large) FAIL("caps: the larger block given back to a full pool was not kept (%p, not %p)", again, large);
  give(again);
  if ((n = kept()) != 8) FAIL("caps: %d blocks kept after a larger one replaced a smaller one, expected 8", n);

  void* huge = take(512 * MIB + 1, 1024 * MIB); /* beyond the bytes kept: freed when given back */
  give(huge);
  if ((n = kept()) != 0) FAIL("caps: %d blocks kept after giving back one beyond 512 MiB", n);
}

static void bad_arguments(void) {
  size_t capacity;
  if (dfcclHostBlockTake(64, NULL, &capacity) != dfcclInvalidArgument ||
      strstr(dfcclGetLastErrorMessage(), "block") == NULL)
    FAIL("a NULL block pointer was not refused by name: '%s'", dfcclGetLastErrorMessage());
  uint64_t not_ours[16] = {0};
  if (dfcclHostBlockGive(&not_ours[8]) != dfcclInvalidArgument ||
      strstr(dfcclGetLastErrorMessage(), "dfcclHostBlockGive") == NULL)
    FAIL("giving back memory not of dfcclHostAlloc was not refused by name: '%s'", dfcclGetLastErrorMessage());
  if (dfcclHostBlockGive(NULL) != dfcclSuccess) FAIL("giving back NULL was refused");
}

int main(void) {
  reuse();
  caps();
  bad_arguments();
  if (failures) fprintf(stderr, "test_host_blocks: %d failures\n", failures);
  else printf("test_host_blocks: ok\n");
  return failures != 0;
}
