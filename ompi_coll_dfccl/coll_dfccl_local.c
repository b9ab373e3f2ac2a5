/*
 * coll/dfccl on communicators of one rank (MPI_COMM_SELF, a split that leaves a rank alone): every
 * collective's result is a copy of its input, or nothing at all in place.  The previous component
 * there (coll/self) copies with memcpy, which crashes on device memory; here the copy is a
 * dfcclCopy, right for host and device memory alike, complete when it returns.  Blocking,
 * nonblocking (a request complete at once) and persistent (each MPI_Start copies) forms.  Layouts
 * that are not contiguous fall back, staged through host memory like any fallback.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"
#include "coll_dfccl_dtypes.h"

#include "opal/util/output.h"

/* The copy of one call (or of every start of a persistent request). */
typedef struct {
  void* to;
  const void* from;
  size_t bytes;
} local_copy_t;

typedef struct {
  ompi_coll_base_nbc_request_t super;
  local_copy_t copy;
} local_request_t;

static OBJ_CLASS_INSTANCE(local_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

opal_class_t* mca_coll_dfccl_local_class(void) { return OBJ_CLASS(local_request_t); }

static int do_copy(const local_copy_t* c) {
  if (c->bytes == 0 || c->to == c->from) return OMPI_SUCCESS;
  if (dfcclCopy(c->to, c->from, c->bytes) == dfcclSuccess) return OMPI_SUCCESS;
  opal_output(0, "coll:dfccl: a collective on a communicator of one rank: %s", dfcclGetLastErrorMessage());
  return OMPI_ERROR;
}

static void complete_with(ompi_request_t* r, int rc) {
  r->req_status.MPI_ERROR = rc == OMPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_INTERN;
  ompi_request_complete(r, true);
}

static int local_start(size_t n, ompi_request_t** requests) {
  for (size_t i = 0; i < n; i++) {
    ompi_request_t* r = requests[i];
    if (r->req_state == OMPI_REQUEST_ACTIVE) return MPI_ERR_REQUEST;
    r->req_state = OMPI_REQUEST_ACTIVE;
    r->req_complete = REQUEST_PENDING;
    r->req_status = ompi_status_empty;
    complete_with(r, do_copy(&((local_request_t*)r)->copy));
  }
  return OMPI_SUCCESS;
}

static int local_free(ompi_request_t** rptr) {
  ompi_request_t* r = *rptr;
  if (r->req_persistent ? r->req_state == OMPI_REQUEST_ACTIVE : !REQUEST_COMPLETE(r)) return MPI_ERR_REQUEST;
  ompi_communicator_t* comm = r->req_persistent ? r->req_mpi_object.comm : NULL;
  OMPI_REQUEST_FINI(r);
  OBJ_RELEASE(r);
  if (comm != NULL) OBJ_RELEASE(comm); /* a persistent request holds its communicator */
  *rptr = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

static int local_request(ompi_communicator_t* comm, const local_copy_t* copy, bool persistent,
                         ompi_request_t** request) {
  local_request_t* req = OBJ_NEW(local_request_t);
  if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  ompi_request_t* r = &req->super.super;
  OMPI_REQUEST_INIT(r, persistent); /* persistent: complete and inactive until MPI_Start */
  r->req_type = OMPI_REQUEST_COLL;
  r->req_free = local_free;
  r->req_mpi_object.comm = comm;
  r->req_status = ompi_status_empty;
  req->copy = *copy;
  if (persistent) {
    r->req_start = local_start;
    OBJ_RETAIN(comm);
  } else {
    r->req_state = OMPI_REQUEST_ACTIVE;
    complete_with(r, do_copy(copy)); /* a nonblocking call may complete before it returns */
  }
  *request = r;
  return OMPI_SUCCESS;
}

bool mca_coll_dfccl_local(const dfccl_entry_t* e, ompi_communicator_t* comm, const void* from,
                          struct ompi_datatype_t* from_type, size_t from_count, void* to,
                          struct ompi_datatype_t* to_type, size_t to_count, int* rc) {
  local_copy_t copy = {NULL, NULL, 0};
  if (from != NULL && from != MPI_IN_PLACE && from_count > 0) {
    size_t to_bytes;
    ptrdiff_t from_gap, to_gap;
    if (!dfccl_contiguous_bytes(from_type, from_count, &copy.bytes, &from_gap) ||
        !dfccl_contiguous_bytes(to_type, to_count, &to_bytes, &to_gap) || to_bytes != copy.bytes)
      return false;
    copy.from = (const char*)from + from_gap;
    copy.to = (char*)to + to_gap;
  }
  mca_coll_dfccl_count(e->local);
  DFCCL_VERBOSE(10, "%s on comm '%s' (one rank): %s", e->name, comm->c_name,
                copy.bytes ? "a local copy" : "nothing to copy");
  if (e->form == DFCCL_BLOCKING) *rc = do_copy(&copy);
  else *rc = local_request(comm, &copy, e->form == DFCCL_PERSISTENT, e->request);
  return true;
}
