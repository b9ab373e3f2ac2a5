/*
 * coll/dfccl staging: a call that falls back with device buffers runs on host copies of them.
 *
 * This Open MPI is not CUDA-aware: handing a device pointer to the previous component would crash
 * it.  So a fallback with device buffers copies each buffer's span (the bytes its datatype and
 * count reach, holes included, so that the holes come back unchanged) into host memory, runs the
 * previous component's function on the copies, and copies the receive span back.  The same on
 * every rank that passes device buffers; ranks with host buffers run directly, so the route stays
 * the previous component's everywhere.  The host copies live in pinned blocks that DFCCL keeps
 * for reuse (dfcclHostBlockTake).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/mpiruntime.h"
#include "opal/util/output.h"

/* Device or managed memory (never MPI_IN_PLACE or NULL). */
static bool is_device(const void* p) {
  if (p == NULL || p == MPI_IN_PLACE) return false;
  dfcclMemoryKind_t kind;
  int device;
  if (dfcclPointerGetKind(p, &kind, &device) != dfcclSuccess) return false; /* treated as host memory */
  return kind != dfcclMemoryHost;
}

/* ---- host copies ---------------------------------------------------------------------------------- */

/* A staged buffer's device bytes into its host copy (where they may hold input, or holes to keep),
 * or the host copy's back. */
static int copy_in(const dfccl_staged_buf_t* b) {
  if (b->block == NULL || !b->copy_in || dfcclCopy(b->block, (char*)b->user + b->gap, b->bytes) == dfcclSuccess)
    return OMPI_SUCCESS;
  opal_output(0, "coll:dfccl: staging %zu bytes of device memory to the host: %s", b->bytes,
              dfcclGetLastErrorMessage());
  return OMPI_ERROR;
}

static int copy_out(const dfccl_staged_buf_t* b) {
  if (b->block == NULL || dfcclCopy((char*)b->user + b->gap, b->block, b->bytes) == dfcclSuccess) return OMPI_SUCCESS;
  opal_output(0, "coll:dfccl: copying a staged result back to device memory: %s", dfcclGetLastErrorMessage());
  return OMPI_ERROR;
}

/* One buffer's host copy of its region, copied in now.  A region that is empty, or not device
 * memory, is used as it is. */
static int stage_one(dfccl_staged_buf_t* b, void* user, dfccl_region_t region) {
  b->user = user;
  b->host = user;
  b->bytes = 0;
  b->block = NULL;
  if (user == NULL || user == MPI_IN_PLACE || region.bytes == 0 || !is_device(user)) return OMPI_SUCCESS;
  b->bytes = region.bytes;
  b->gap = region.gap;
  b->copy_in = !region.written;
  if (dfcclHostBlockTake(b->bytes, &b->block, NULL) != dfcclSuccess) {
    opal_output(0, "coll:dfccl: staging %zu bytes of device memory: %s", b->bytes, dfcclGetLastErrorMessage());
    return OMPI_ERR_OUT_OF_RESOURCE;
  }
  b->host = (char*)b->block - b->gap;
  return copy_in(b);
}

void mca_coll_dfccl_stage(dfccl_staging_t* s, ompi_communicator_t* comm, const void* send, dfccl_region_t send_region,
                          void* recv, dfccl_region_t recv_region) {
  memset(s, 0, sizeof *s);
  int rc = stage_one(&s->recv, recv, recv_region);
  if (rc == OMPI_SUCCESS) rc = stage_one(&s->send, (void*)send, send_region);
  if (rc != OMPI_SUCCESS) /* the other ranks are entering the collective: failing alone would hang them */
    ompi_mpi_abort(comm, 1);
}

static void give_back(void* block) {
  if (dfcclHostBlockGive(block) != dfcclSuccess)
    opal_output(0, "coll:dfccl: freeing a staging block: %s", dfcclGetLastErrorMessage());
}

static void stage_free(dfccl_staging_t* s) {
  give_back(s->send.block);
  give_back(s->recv.block);
  s->send.block = s->recv.block = NULL;
}

/* The result back, and the host copies freed. */
static int stage_out(dfccl_staging_t* s) {
  int rc = copy_out(&s->recv);
  stage_free(s);
  return rc;
}

/* ---- nonblocking fallbacks ---------------------------------------------------------------------- */

/* A nonblocking fallback on staged buffers: the previous component's request runs on the host
 * copies, and ours completes once it has and the result is back in device memory.  Checked from
 * the component's progress callback (a short list: only staged fallbacks are on it). */
typedef struct staged_request {
  ompi_coll_base_nbc_request_t super;
  struct staged_request* next;
  ompi_request_t* inner;
  dfccl_staging_t staging;
  bool persistent; /* the inner request and the host copies stay for the next MPI_Start */
} staged_request_t;

static OBJ_CLASS_INSTANCE(staged_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

opal_class_t* mca_coll_dfccl_staged_class(void) { return OBJ_CLASS(staged_request_t); }

static pthread_mutex_t staged_lock = PTHREAD_MUTEX_INITIALIZER;
static staged_request_t* staged_first;
static atomic_int staged_count;

static int staged_free(ompi_request_t** rptr) {
  ompi_request_t* r = *rptr;
  if (!REQUEST_COMPLETE(r)) return MPI_ERR_REQUEST;
  staged_request_t* req = (staged_request_t*)r;
  if (req->persistent) { /* its inner request and copies were kept for the next start */
    if (req->inner != NULL) (void)ompi_request_free(&req->inner);
    stage_free(&req->staging);
  }
  OMPI_REQUEST_FINI(r);
  OBJ_RELEASE(r);
  *rptr = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

/* Puts a started request on the list the progress callback checks. */
static void watch(staged_request_t* req) {
  pthread_mutex_lock(&staged_lock);
  req->next = staged_first;
  staged_first = req;
  pthread_mutex_unlock(&staged_lock);
  atomic_fetch_add(&staged_count, 1);
}

/* MPI_Start of staged persistent requests: fresh host copies of the input (and of the receive
 * span, for in-place input and datatype holes), then the previous
 * component's start of each inner request. */
static int staged_start(size_t n, ompi_request_t** requests) {
  for (size_t i = 0; i < n; i++) {
    staged_request_t* req = (staged_request_t*)requests[i];
    ompi_request_t* r = &req->super.super;
    if (r->req_state == OMPI_REQUEST_ACTIVE) return MPI_ERR_REQUEST;
    int rc = copy_in(&req->staging.send);
    if (rc == OMPI_SUCCESS) rc = copy_in(&req->staging.recv);
    ompi_request_t* inner = req->inner;
    /* A no-op request (libnbc's for a collective with nothing to do at its starts, e.g. in place on
     * one rank) has no start function: MPI_Start makes it active, and it is complete already. */
    if (rc == OMPI_SUCCESS && inner->req_type == OMPI_REQUEST_NOOP) inner->req_state = OMPI_REQUEST_ACTIVE;
    else if (rc == OMPI_SUCCESS) rc = inner->req_start(1, &inner);
    if (rc != OMPI_SUCCESS) return rc;
    r->req_state = OMPI_REQUEST_ACTIVE;
    r->req_complete = REQUEST_PENDING;
    r->req_status = ompi_status_empty;
    watch(req);
  }
  return OMPI_SUCCESS;
}

/* A staged request around `inner`, which owns s: a nonblocking one, active and watched, or a
 * persistent one, complete and inactive until started. */
static int staged_request(ompi_communicator_t* comm, dfccl_staging_t* s, ompi_request_t* inner, bool persistent,
                          ompi_request_t** request) {
  int rc = mca_coll_dfccl_progress_register(); /* the communicator may never have set DFCCL up */
  staged_request_t* req = rc == OMPI_SUCCESS ? OBJ_NEW(staged_request_t) : NULL;
  if (req == NULL && persistent) /* a local failure at init: the request never exists */
    return rc == OMPI_SUCCESS ? OMPI_ERR_OUT_OF_RESOURCE : rc;
  if (req == NULL) { /* the previous component's collective is under way, and could never complete */
    opal_output(0, "coll:dfccl: comm '%s': no staged request (%d)", comm->c_name, rc);
    ompi_mpi_abort(comm, 1);
  }
  ompi_request_t* r = &req->super.super;
  OMPI_REQUEST_INIT(r, persistent);
  r->req_type = OMPI_REQUEST_COLL;
  r->req_free = staged_free;
  r->req_mpi_object.comm = comm;
  r->req_status = ompi_status_empty;
  req->inner = inner;
  req->staging = *s;
  req->persistent = persistent;
  if (persistent) {
    r->req_start = staged_start;
  } else {
    r->req_state = OMPI_REQUEST_ACTIVE;
    watch(req);
  }
  *request = r;
  return OMPI_SUCCESS;
}

/* The result back in device memory (unless the previous component's request failed: then there is
 * none); a persistent request keeps its host copies and inner request (made inactive, as MPI_Wait
 * would), a nonblocking one frees them. */
static int finish(staged_request_t* req, bool failed) {
  int rc = OMPI_SUCCESS;
  if (!req->persistent) {
    if (failed) stage_free(&req->staging); /* no result to copy back */
    else rc = stage_out(&req->staging);
    ompi_request_free(&req->inner);
    return rc;
  }
  if (!failed) rc = copy_out(&req->staging.recv);
  req->inner->req_state = OMPI_REQUEST_INACTIVE;
  return rc;
}

int mca_coll_dfccl_staged_progress(void) {
  if (atomic_load_explicit(&staged_count, memory_order_relaxed) == 0) return 0; /* the common case */
  staged_request_t* done = NULL;
  pthread_mutex_lock(&staged_lock);
  for (staged_request_t** p = &staged_first; *p != NULL;) {
    staged_request_t* req = *p;
    if (REQUEST_COMPLETE(req->inner)) { /* not ompi_request_test: no progress from inside progress */
      *p = req->next;
      req->next = done;
      done = req;
    } else {
      p = &req->next;
    }
  }
  pthread_mutex_unlock(&staged_lock);
  int n = 0;
  while (done != NULL) {
    staged_request_t* req = done;
    done = req->next;
    int error = req->inner->req_status.MPI_ERROR;
    int rc = finish(req, error != MPI_SUCCESS);
    ompi_request_t* r = &req->super.super;
    r->req_status.MPI_ERROR = error != MPI_SUCCESS ? error : rc == OMPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_INTERN;
    atomic_fetch_sub(&staged_count, 1);
    ompi_request_complete(r, true);
    n++;
  }
  return n;
}

/* ---- the end of a fallback --------------------------------------------------------------------- */

int mca_coll_dfccl_staged_end(const dfccl_entry_t* e, ompi_communicator_t* comm, dfccl_staging_t* st, int rc) {
  bool staged = st->send.block != NULL || st->recv.block != NULL;
  if (staged) mca_coll_dfccl_count(e->staged);
  if (e->form == DFCCL_PERSISTENT) /* the previous component's request keeps op and types */
    rc = mca_coll_dfccl_persistent_fallback(rc, e->kept, e->request);
  /* Failed (no result: a host copy may hold what was never copied in), or nothing staged: the
   * previous component's result or request is the call's. */
  if (rc != OMPI_SUCCESS || !staged) {
    stage_free(st);
    return rc;
  }
  if (e->form == DFCCL_BLOCKING) return stage_out(st);
  ompi_request_t* inner = *e->request;
  rc = staged_request(comm, st, inner, e->form == DFCCL_PERSISTENT, e->request);
  if (rc != OMPI_SUCCESS) { /* persistent only */
    (void)ompi_request_free(&inner);
    stage_free(st);
    *e->request = MPI_REQUEST_NULL;
  }
  return rc;
}
