/*
 * coll/dfccl buffers: where a call's buffers are, and how they reach its route's memory.
 *
 * A rank's buffers decide only its wish for a new signature's route; the route itself is agreed
 * among the ranks (coll_dfccl_module.c) and then fixed.  So a rank may well pass memory that its
 * signature's route cannot run on -- host memory to a signature that runs on the GPU, device memory
 * of another GPU -- or, for broadcast and all-gather, a datatype with gaps (MPI lets ranks describe
 * the same bytes differently), and must still take part: DFCCL then runs on a copy of the buffer in
 * the route's memory (its elements packed), copied in before each run and back after it.  (The
 * other way round, device buffers of a signature that goes to the previous component are staged
 * through host memory by coll_dfccl_staging.c.)
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"
#include "coll_dfccl_dtypes.h"

#include <limits.h>
#include <stdlib.h>

#include "ompi/runtime/mpiruntime.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/util/output.h"

dfcclTarget_t mca_coll_dfccl_route_target(dfccl_route_t route) {
  return route == DFCCL_ROUTE_CUDA ? dfcclTargetCuda : dfcclTargetHost;
}

/* ---- wishes ------------------------------------------------------------------------------------- */

/* One buffer's wish, by the kind of its memory and the test mode. */
static dfccl_memory_t memory_of_one(const void* p) {
  dfcclMemoryKind_t kind;
  int device = -1;
  if (dfcclPointerGetKind(p, &kind, &device) != dfcclSuccess)
    return (dfccl_memory_t){DFCCL_ROUTE_PREVIOUS, -1, "the buffer's memory could not be told"};
  int mode = mca_coll_dfccl_component.host_target;
  if (kind != dfcclMemoryHost && device >= 0) return (dfccl_memory_t){DFCCL_ROUTE_CUDA, device, NULL};
  if (kind != dfcclMemoryHost) /* DFCCL_HOST_DEVICE: the host target's device memory */
    return mode != DFCCL_HOST_TARGET_OFF
               ? (dfccl_memory_t){DFCCL_ROUTE_HOST, -1, NULL}
               : (dfccl_memory_t){DFCCL_ROUTE_PREVIOUS, -1, "host target memory (coll_dfccl_host_target is off)"};
  return mode == DFCCL_HOST_TARGET_HOST ? (dfccl_memory_t){DFCCL_ROUTE_HOST, -1, NULL}
                                        : (dfccl_memory_t){DFCCL_ROUTE_PREVIOUS, -1, "host memory"};
}

/* The wish of no buffer at all, which any other wish overrides. */
static const char no_buffer[] = "no buffer";

dfccl_memory_t mca_coll_dfccl_memory_both(dfccl_memory_t a, dfccl_memory_t b) {
  if (a.why == no_buffer) return b;
  if (b.why == no_buffer || (a.route == b.route && a.device == b.device)) return a;
  if (a.route == DFCCL_ROUTE_PREVIOUS) return a;
  if (b.route == DFCCL_ROUTE_PREVIOUS) return b;
  return (dfccl_memory_t){DFCCL_ROUTE_PREVIOUS, -1,
                          a.route != b.route ? "host and device memory mixed" : "device memory of two GPUs"};
}

dfccl_memory_t mca_coll_dfccl_memory_of_layout(const void* buf, struct ompi_datatype_t* dtype, size_t count) {
  size_t bytes;
  ptrdiff_t start;
  if (buf == NULL || buf == MPI_IN_PLACE) return (dfccl_memory_t){DFCCL_ROUTE_PREVIOUS, -1, no_buffer};
  if (!dfccl_contiguous_bytes(dtype, count, &bytes, &start))
    return (dfccl_memory_t){DFCCL_ROUTE_PREVIOUS, -1, "a datatype with gaps"};
  return memory_of_one((const char*)buf + start);
}

void mca_coll_dfccl_memory_available(dfccl_memory_t* wish) {
  if (wish->route == DFCCL_ROUTE_PREVIOUS) return;
  int device = wish->device;
  if (mca_coll_dfccl_process_context(mca_coll_dfccl_route_target(wish->route), &device) != NULL) return;
  *wish = (dfccl_memory_t){
      DFCCL_ROUTE_PREVIOUS, -1,
      wish->route == DFCCL_ROUTE_CUDA ? "no DFCCL context for the buffers' GPU" : "no DFCCL host-target context"};
}

/* Can c run on buffers of that memory as they are? */
static bool memory_fits(const dfccl_memory_t* memory, const dfccl_coll_t* c) {
  return memory->route == c->route && (c->route != DFCCL_ROUTE_CUDA || memory->device == c->device);
}

/* ---- DFCCL's view of a buffer -------------------------------------------------------------------- */

/* ---- copies a signature keeps between calls ---- */

static void* take_spare(dfccl_coll_t* c, size_t bytes) {
  void* copy = NULL;
  pthread_mutex_lock(&c->spare_lock);
  for (int i = 0; i < c->nspare; i++)
    if (c->spare_bytes[i] == bytes) { /* a signature's copies come in one or two sizes */
      copy = c->spare[i];
      c->nspare--;
      c->spare[i] = c->spare[c->nspare];
      c->spare_bytes[i] = c->spare_bytes[c->nspare];
      break;
    }
  pthread_mutex_unlock(&c->spare_lock);
  return copy;
}

static void give_spare(dfccl_coll_t* c, void* copy, size_t bytes) {
  pthread_mutex_lock(&c->spare_lock);
  bool kept = c->nspare < DFCCL_SPARE_COPIES;
  if (kept) {
    c->spare[c->nspare] = copy;
    c->spare_bytes[c->nspare] = bytes;
    c->nspare++;
  }
  pthread_mutex_unlock(&c->spare_lock);
  if (!kept) (void)dfcclMemFree(copy);
}

void mca_coll_dfccl_spares_free(dfccl_coll_t* c) {
  for (int i = 0; i < c->nspare; i++) (void)dfcclMemFree(c->spare[i]);
  c->nspare = 0;
  pthread_mutex_destroy(&c->spare_lock);
}

void* mca_coll_dfccl_span(dfccl_call_t* call, ompi_communicator_t* comm, void* user, size_t count,
                          struct ompi_datatype_t* dtype, dfccl_memory_t memory, bool in, bool out) {
  const dfccl_coll_t* c = call->coll;
  size_t bytes;
  ptrdiff_t start;
  bool contiguous = dfccl_contiguous_bytes(dtype, count, &bytes, &start);
  if (contiguous && memory_fits(&memory, c)) return (char*)user + start;
  /* A copy in the route's memory, of the elements packed when they have gaps. */
  dfccl_span_t* s = &call->scratch[call->scratch[0].copy != NULL];
  size_t type_size;
  ompi_datatype_type_size(dtype, &type_size);
  *s = (dfccl_span_t){.user = user,
                      .count = count,
                      .dtype = contiguous ? NULL : dtype,
                      .bytes = type_size * count,
                      .in = in,
                      .out = out};
  if (!contiguous) {
    s->span = (size_t)opal_datatype_span(&dtype->super, count, &s->gap);
    if (s->bytes > INT_MAX) { /* the datatype engine counts in int32 */
      opal_output(0, "coll:dfccl: comm '%s': %zu bytes of a datatype with gaps are more than DFCCL can pack",
                  comm->c_name, s->bytes);
      ompi_mpi_abort(comm, 1); /* the other ranks are entering DFCCL: no way back */
    }
  } else {
    user = (char*)user + start;
    s->user = user;
  }
  void* copy = take_spare(call->coll, s->bytes);
  dfcclTarget_t target = mca_coll_dfccl_route_target(c->route);
  if (copy == NULL && dfcclMemAlloc(target, c->device, s->bytes, &copy) != dfcclSuccess) {
    opal_output(0, "coll:dfccl: comm '%s': no memory for a copy of a buffer: %s", comm->c_name,
                dfcclGetLastErrorMessage());
    ompi_mpi_abort(comm, 1);
  }
  s->copy = copy;
  return copy;
}

/* Packs or unpacks a span's elements through host memory (the datatype engine of this Open MPI
 * reads host memory only): the user's span to the host, packed there, copied to the copy; or back. */
static bool repack(const dfccl_span_t* s, bool in) {
  char* block = malloc(s->span > 0 ? s->span : 1);
  char* packed = malloc(s->bytes > 0 ? s->bytes : 1);
  char* user = (char*)s->user + s->gap;
  char* elements = block - s->gap; /* the host copy's element 0, which the datatype is relative to */
  bool ok = block != NULL && packed != NULL;
  /* The whole span to the host first: on the way back its holes must come back unchanged.  Packed
   * by Open MPI's datatype engine directly (MPI_Pack would show calls the program never made to
   * profiling tools, and report errors through MPI_COMM_SELF's handler). */
  ok = ok && dfcclCopy(block, user, s->span) == dfcclSuccess;
  if (in) {
    ok = ok && ompi_datatype_sndrcv(elements, (int32_t)s->count, s->dtype, packed, (int32_t)s->bytes, MPI_PACKED) ==
                   OMPI_SUCCESS;
    ok = ok && dfcclCopy(s->copy, packed, s->bytes) == dfcclSuccess;
  } else {
    ok = ok && dfcclCopy(packed, s->copy, s->bytes) == dfcclSuccess;
    ok = ok && ompi_datatype_sndrcv(packed, (int32_t)s->bytes, MPI_PACKED, elements, (int32_t)s->count, s->dtype) ==
                   OMPI_SUCCESS;
    ok = ok && dfcclCopy(user, block, s->span) == dfcclSuccess;
  }
  free(block);
  free(packed);
  return ok;
}

bool mca_coll_dfccl_scratch_copy(const dfccl_call_t* call, bool in) {
  for (int i = 0; i < 2; i++) {
    const dfccl_span_t* s = &call->scratch[i];
    if (s->copy == NULL || !(in ? s->in : s->out)) continue;
    bool ok = s->dtype != NULL ? repack(s, in)
              : in             ? dfcclCopy(s->copy, s->user, s->bytes) == dfcclSuccess
                               : dfcclCopy(s->user, s->copy, s->bytes) == dfcclSuccess;
    if (!ok) {
      opal_output(0, "coll:dfccl: copying %s a buffer's copy: %s", in ? "into" : "out of", dfcclGetLastErrorMessage());
      return false;
    }
  }
  return true;
}

/* A datatype the call made for a copy (all-gather-v's receive layout) goes with the copy. */
static void release_dtype(dfccl_span_t* s) {
  if (s->owns_dtype && s->dtype != NULL) OBJ_RELEASE(s->dtype);
  s->owns_dtype = false;
}

void mca_coll_dfccl_scratch_release(dfccl_call_t* call) {
  for (int i = 0; i < 2; i++) {
    if (call->scratch[i].copy != NULL) give_spare(call->coll, call->scratch[i].copy, call->scratch[i].bytes);
    call->scratch[i].copy = NULL;
    release_dtype(&call->scratch[i]);
  }
}

void mca_coll_dfccl_scratch_free(dfccl_call_t* call) {
  for (int i = 0; i < 2; i++) {
    if (call->scratch[i].copy != NULL) (void)dfcclMemFree(call->scratch[i].copy);
    call->scratch[i].copy = NULL;
    release_dtype(&call->scratch[i]);
  }
}
