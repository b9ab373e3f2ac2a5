/*
 * coll/dfccl staging: a call that falls back with device buffers runs on host copies of them.
 *
 * This Open MPI is not CUDA-aware: handing a device pointer to the previous component would crash
 * it.  So a fallback with device buffers copies each buffer's span (the bytes its datatype and
 * count reach, holes included, so that the holes come back unchanged) into host memory, runs the
 * previous component's function on the copies, and copies the receive span back.  The same on
 * every rank that passes device buffers; ranks with host buffers run directly, so the route stays
 * the previous component's everywhere.  The host copies live in pinned blocks kept for reuse
 * (coll_dfccl_host_blocks.c).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/mpiruntime.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/util/output.h"

bool mca_coll_dfccl_is_device(const void* p) {
  if (p == NULL || p == MPI_IN_PLACE) return false;
  dfcclMemoryKind_t kind;
  int device;
  if (dfcclPointerGetKind(p, &kind, &device) != dfcclSuccess) return false; /* treated as host memory */
  return kind != dfcclMemoryHost;
}

/* ---- regions ------------------------------------------------------------------------------------ */

static bool no_buffer(const void* buf) { return buf == NULL || buf == MPI_IN_PLACE; }

/* count elements of dtype. */
static dfccl_region_t elements(struct ompi_datatype_t* dtype, size_t count) {
  dfccl_region_t r = DFCCL_NO_REGION;
  if (dtype != NULL && count > 0) r.bytes = (size_t)opal_datatype_span(&dtype->super, count, &r.gap);
  return r;
}

dfccl_region_t mca_coll_dfccl_region(const void* buf, struct ompi_datatype_t* dtype, size_t count) {
  return no_buffer(buf) ? DFCCL_NO_REGION : elements(dtype, count);
}

dfccl_region_t mca_coll_dfccl_region_written(const void* buf, struct ompi_datatype_t* dtype, size_t count) {
  dfccl_region_t r = mca_coll_dfccl_region(buf, dtype, count);
  r.written = r.bytes > 0 && count <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t)count);
  return r;
}

/* The smallest region holding both. */
static dfccl_region_t region_union(dfccl_region_t a, dfccl_region_t b) {
  if (a.bytes == 0) return b;
  if (b.bytes == 0) return a;
  ptrdiff_t lo = a.gap < b.gap ? a.gap : b.gap;
  ptrdiff_t a_end = a.gap + (ptrdiff_t)a.bytes, b_end = b.gap + (ptrdiff_t)b.bytes;
  ptrdiff_t hi = a_end > b_end ? a_end : b_end;
  return (dfccl_region_t){lo, (size_t)(hi - lo)};
}

/* count elements of dtype starting `offset` bytes from the buffer. */
static dfccl_region_t block_at(struct ompi_datatype_t* dtype, int count, ptrdiff_t offset) {
  dfccl_region_t r = elements(dtype, count > 0 ? (size_t)count : 0);
  r.gap += offset;
  return r;
}

dfccl_region_t mca_coll_dfccl_region_v(const void* buf, struct ompi_datatype_t* dtype, int n, const int* counts,
                                       const int* displs) {
  dfccl_region_t r = DFCCL_NO_REGION;
  if (no_buffer(buf) || dtype == NULL || counts == NULL || displs == NULL) return r;
  ptrdiff_t lb, extent;
  ompi_datatype_get_extent(dtype, &lb, &extent);
  for (int i = 0; i < n; i++) r = region_union(r, block_at(dtype, counts[i], (ptrdiff_t)displs[i] * extent));
  return r;
}

dfccl_region_t mca_coll_dfccl_region_w(const void* buf, int n, const int* counts, const int* int_displs,
                                       const MPI_Aint* aint_displs, struct ompi_datatype_t* const* types) {
  dfccl_region_t r = DFCCL_NO_REGION;
  if (no_buffer(buf) || counts == NULL || types == NULL || (int_displs == NULL && aint_displs == NULL)) return r;
  for (int i = 0; i < n; i++) {
    ptrdiff_t offset = int_displs != NULL ? (ptrdiff_t)int_displs[i] : (ptrdiff_t)aint_displs[i];
    r = region_union(r, block_at(types[i], counts[i], offset));
  }
  return r;
}

int mca_coll_dfccl_peers(ompi_communicator_t* comm) {
  return OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
}

dfccl_roles_t mca_coll_dfccl_roles(ompi_communicator_t* comm, int root) {
  if (OMPI_COMM_IS_INTER(comm))
    return (dfccl_roles_t){.root = root == MPI_ROOT, .leaf = root != MPI_ROOT && root != MPI_PROC_NULL};
  return (dfccl_roles_t){.root = ompi_comm_rank(comm) == root, .leaf = true};
}

/* ---- host copies ---------------------------------------------------------------------------------- */

/* One buffer's host copy of its region: copied in now (it may hold input, or holes to keep), out at
 * the end.  A region that is empty, or not device memory, is used as it is. */
static int stage_one(dfccl_staged_buf_t* b, void* user, dfccl_region_t region) {
  b->user = user;
  b->host = user;
  b->bytes = 0;
  b->block = NULL;
  if (user == NULL || user == MPI_IN_PLACE || region.bytes == 0 || !mca_coll_dfccl_is_device(user)) return OMPI_SUCCESS;
  b->bytes = region.bytes;
  b->gap = region.gap;
  b->copy_in = !region.written;
  b->block = mca_coll_dfccl_host_block_take(b->bytes, &b->capacity);
  if (b->block == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  b->host = (char*)b->block - b->gap;
  if (!b->copy_in) return OMPI_SUCCESS;
  dfcclResult_t r = dfcclCopy(b->block, (char*)user + b->gap, b->bytes);
  if (r != dfcclSuccess) {
    opal_output(0, "coll:dfccl: staging %zu bytes of device memory to the host: %s", b->bytes,
                dfcclGetLastErrorMessage());
    return OMPI_ERROR;
  }
  return OMPI_SUCCESS;
}

void mca_coll_dfccl_stage(dfccl_staging_t* s, ompi_communicator_t* comm, const void* send, dfccl_region_t send_region,
                          void* recv, dfccl_region_t recv_region) {
  memset(s, 0, sizeof *s);
  int rc = stage_one(&s->recv, recv, recv_region);
  if (rc == OMPI_SUCCESS) rc = stage_one(&s->send, (void*)send, send_region);
  if (rc != OMPI_SUCCESS) /* the other ranks are entering the collective: failing alone would hang them */
    ompi_mpi_abort(comm, 1);
}

void mca_coll_dfccl_stage_in(dfccl_staging_t* s, ompi_communicator_t* comm, const void* send,
                             struct ompi_datatype_t* send_type, size_t send_count, void* recv,
                             struct ompi_datatype_t* recv_type, size_t recv_count) {
  mca_coll_dfccl_stage(s, comm, send, mca_coll_dfccl_region(send, send_type, send_count), recv,
                       mca_coll_dfccl_region(recv, recv_type, recv_count));
}

int mca_coll_dfccl_stage_out(dfccl_staging_t* s) {
  int rc = OMPI_SUCCESS;
  if (s->recv.block != NULL) {
    dfcclResult_t r = dfcclCopy((char*)s->recv.user + s->recv.gap, s->recv.block, s->recv.bytes);
    if (r != dfcclSuccess) {
      opal_output(0, "coll:dfccl: copying a staged result back to device memory: %s", dfcclGetLastErrorMessage());
      rc = OMPI_ERROR;
    }
  }
  mca_coll_dfccl_stage_free(s);
  return rc;
}

void mca_coll_dfccl_stage_free(dfccl_staging_t* s) {
  mca_coll_dfccl_host_block_give(s->send.block, s->send.capacity);
  mca_coll_dfccl_host_block_give(s->recv.block, s->recv.capacity);
  s->send.block = s->recv.block = NULL;
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
    mca_coll_dfccl_stage_free(&req->staging);
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

/* A copy of the receive span's and the send span's device contents into their host copies (the
 * input of this start; the receive span for in-place input and datatype holes). */
static int refresh(dfccl_staging_t* s) {
  const dfccl_staged_buf_t* bufs[2] = {&s->send, &s->recv};
  for (int i = 0; i < 2; i++)
    if (bufs[i]->block != NULL && bufs[i]->copy_in &&
        dfcclCopy(bufs[i]->block, (char*)bufs[i]->user + bufs[i]->gap, bufs[i]->bytes) != dfcclSuccess) {
      opal_output(0, "coll:dfccl: staging device memory to the host: %s", dfcclGetLastErrorMessage());
      return OMPI_ERROR;
    }
  return OMPI_SUCCESS;
}

/* MPI_Start of staged persistent requests: fresh host copies of the input, then the previous
 * component's start of each inner request. */
static int staged_start(size_t n, ompi_request_t** requests) {
  for (size_t i = 0; i < n; i++) {
    staged_request_t* req = (staged_request_t*)requests[i];
    ompi_request_t* r = &req->super.super;
    if (r->req_state == OMPI_REQUEST_ACTIVE) return MPI_ERR_REQUEST;
    int rc = refresh(&req->staging);
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

int mca_coll_dfccl_staged_persistent(ompi_communicator_t* comm, dfccl_staging_t* s, ompi_request_t* inner,
                                     ompi_request_t** request) {
  int rc = mca_coll_dfccl_progress_register();
  if (rc != OMPI_SUCCESS) return rc; /* a local failure at init: the request never exists */
  staged_request_t* req = OBJ_NEW(staged_request_t);
  if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  ompi_request_t* r = &req->super.super;
  OMPI_REQUEST_INIT(r, true); /* complete and inactive until started */
  r->req_type = OMPI_REQUEST_COLL;
  r->req_start = staged_start;
  r->req_free = staged_free;
  r->req_mpi_object.comm = comm;
  req->inner = inner;
  req->staging = *s;
  req->persistent = true;
  *request = r;
  return OMPI_SUCCESS;
}

int mca_coll_dfccl_staged_request(ompi_communicator_t* comm, dfccl_staging_t* s, ompi_request_t* inner,
                                  ompi_request_t** request) {
  int rc = mca_coll_dfccl_progress_register(); /* the communicator may never have set DFCCL up */
  if (rc != OMPI_SUCCESS) {
    opal_output(0, "coll:dfccl: registering the progress callback failed (%d)", rc);
    ompi_mpi_abort(comm, 1); /* the request could never complete */
  }
  staged_request_t* req = OBJ_NEW(staged_request_t);
  if (req == NULL) {
    opal_output(0, "coll:dfccl: out of memory for a staged request on comm '%s'", comm->c_name);
    ompi_mpi_abort(comm, 1); /* the previous component's collective is under way */
  }
  ompi_request_t* r = &req->super.super;
  OMPI_REQUEST_INIT(r, false);
  r->req_type = OMPI_REQUEST_COLL;
  r->req_state = OMPI_REQUEST_ACTIVE;
  r->req_free = staged_free;
  r->req_mpi_object.comm = comm;
  r->req_status = ompi_status_empty;
  req->inner = inner;
  req->staging = *s;
  req->persistent = false;
  watch(req);
  *request = r;
  return OMPI_SUCCESS;
}

/* The result back in device memory (unless the previous component's request failed: then there is
 * none); a persistent request keeps its host copies and inner request (made inactive, as MPI_Wait
 * would), a nonblocking one frees them. */
static int finish(staged_request_t* req, bool failed) {
  int rc = OMPI_SUCCESS;
  if (!req->persistent) {
    if (failed) mca_coll_dfccl_stage_free(&req->staging); /* no result to copy back */
    else rc = mca_coll_dfccl_stage_out(&req->staging);
    ompi_request_free(&req->inner);
    return rc;
  }
  const dfccl_staged_buf_t* b = &req->staging.recv;
  if (!failed && b->block != NULL && dfcclCopy((char*)b->user + b->gap, b->block, b->bytes) != dfcclSuccess) {
    opal_output(0, "coll:dfccl: copying a staged result back to device memory: %s", dfcclGetLastErrorMessage());
    rc = OMPI_ERROR;
  }
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

/* ---- what the collective functions call --------------------------------------------------------- */

int mca_coll_dfccl_staged_finish(dfccl_staging_t* s, int rc) {
  if (rc != OMPI_SUCCESS) { /* no result: the host copy may hold what was never copied in */
    mca_coll_dfccl_stage_free(s);
    return rc;
  }
  return mca_coll_dfccl_stage_out(s);
}

int mca_coll_dfccl_staged_begin(ompi_communicator_t* comm, dfccl_staging_t* s, int rc, ompi_request_t** request) {
  if (rc != OMPI_SUCCESS || (s->send.block == NULL && s->recv.block == NULL)) {
    mca_coll_dfccl_stage_free(s); /* failed, or nothing staged: the inner request is the call's */
    return rc;
  }
  return mca_coll_dfccl_staged_request(comm, s, *request, request);
}

int mca_coll_dfccl_staged_init(ompi_communicator_t* comm, dfccl_staging_t* s, int rc, dfccl_kept_t kept,
                               ompi_request_t** request) {
  rc = mca_coll_dfccl_persistent_fallback(rc, kept, request); /* the inner request keeps op and types */
  if (rc != OMPI_SUCCESS || (s->send.block == NULL && s->recv.block == NULL)) {
    mca_coll_dfccl_stage_free(s); /* failed, or nothing staged: the inner request is the call's */
    return rc;
  }
  ompi_request_t* inner = *request;
  rc = mca_coll_dfccl_staged_persistent(comm, s, inner, request);
  if (rc != OMPI_SUCCESS) {
    (void)ompi_request_free(&inner);
    mca_coll_dfccl_stage_free(s);
    *request = MPI_REQUEST_NULL;
  }
  return rc;
}
