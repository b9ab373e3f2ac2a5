/*
 * The host execution target's device memory: host memory that DFCCL reports as device memory
 * (dfcclPointerGetKind: dfcclMemoryDevice on DFCCL_HOST_DEVICE).  With it, programs on machines
 * without GPUs (CI) pass "device buffers" on some ranks and ordinary host buffers on others, and
 * glue code that routes calls by their memory (the Open MPI component) takes the same decisions
 * there as on a GPU machine.  The daemon of the host target reads it like any host memory.
 *
 * The allocations are kept in a list searched by address: few and large in the programs that use
 * it (tests, scratch copies), and a search happens only while one exists.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

typedef struct region {
  struct region* next;
  char* base;
  size_t bytes;
} region;

static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static region* regions;
static atomic_int nregions;

dfcclResult_t df_host_memory_alloc(size_t bytes, void** ptr) {
  region* r = malloc(sizeof *r);
  char* base = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64); /* never of size 0 */
  if (!r || !base) {
    free(r);
    free(base);
    return df_error(dfcclOutOfResources, "out of host memory for %zu bytes of the host target's device memory", bytes);
  }
  r->base = base;
  r->bytes = bytes;
  pthread_mutex_lock(&regions_lock);
  r->next = regions;
  regions = r;
  atomic_fetch_add(&nregions, 1);
  pthread_mutex_unlock(&regions_lock);
  *ptr = base;
  return dfcclSuccess;
}

bool df_host_memory_free(void* ptr) {
  region* found = NULL;
  pthread_mutex_lock(&regions_lock);
  for (region** p = &regions; *p != NULL; p = &(*p)->next)
    if ((*p)->base == ptr) {
      found = *p;
      *p = found->next;
      atomic_fetch_sub(&nregions, 1);
      break;
    }
  pthread_mutex_unlock(&regions_lock);
  if (!found) return false;
  free(found->base);
  free(found);
  return true;
}

bool df_host_memory_contains(const void* p) {
  if (atomic_load_explicit(&nregions, memory_order_relaxed) == 0) return false; /* the common case */
  bool inside = false;
  pthread_mutex_lock(&regions_lock);
  for (const region* r = regions; r != NULL && !inside; r = r->next)
    inside = (const char*)p >= r->base && (const char*)p < r->base + (r->bytes ? r->bytes : 1);
  pthread_mutex_unlock(&regions_lock);
  return inside;
}
