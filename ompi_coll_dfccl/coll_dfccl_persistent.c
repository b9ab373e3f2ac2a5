/*
 * coll/dfccl persistent collectives (MPIX_<coll>_init, MPI_Start/MPI_Startall): register once, run
 * many.
 *
 * Init.  A persistent init decides a new signature's route like a blocking call: MPI orders inits
 * with the other collectives on the communicator, and lets them wait for the other ranks, so the
 * collective's plan agrees on the route there.  A routed init returns a request of this file; it holds
 * no run until it is started.
 *
 * Start.  Each MPI_Start launches one run exactly as a nonblocking call does (a descriptor
 * submitted to the communicator's DFCCL communicator), so MPI's rule that every rank starts its
 * persistent collectives on a communicator in the same order keeps the runs alike everywhere.
 * MPI_Startall hands consecutive requests of ours to one call.  MPI_Wait/Test complete the run and
 * set the request inactive (the MPI layer does that); completing never releases it.
 *
 * Lifetime.  The request holds its communicator (as libnbc's persistent requests do) and the op and
 * datatypes of its init until MPI_Request_free, which refuses an active request.  MPI_Comm_free
 * completes the runs in flight before the communicator leaves DFCCL (mca_coll_dfccl_drain); an
 * inactive request holds no run, survives the free and can still be freed, but starting it again
 * is erroneous in MPI (only pending operations complete after MPI_Comm_free): it completes at once
 * with MPI_ERR_COMM.
 *
 * Fallback.  An init handed to the previous component (libnbc in 4.1) returns that component's
 * request.  Open MPI 4.1's ompi_coll_base_retain_op/_datatypes return early for a fresh persistent
 * request (it is complete), so stock libnbc crashes when the user frees a user op or a derived
 * datatype after the init and then starts the request.  We do for it what those functions do for
 * nonblocking requests: hold the objects in its ompi_coll_base_nbc_request_t and release them
 * when its req_free runs.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

/* ---- the op and datatypes of an init ----------------------------------------------------------- */

static void retain_kept(const dfccl_kept_t* kept) {
  for (int i = 0; i < 2; i++)
    if (kept->objs[i] != NULL) OBJ_RETAIN(kept->objs[i]);
}

static void release_kept(dfccl_kept_t* kept) {
  for (int i = 0; i < 2; i++) {
    if (kept->objs[i] != NULL) OBJ_RELEASE(kept->objs[i]);
    kept->objs[i] = NULL;
  }
}

/* ---- routed: our persistent request ------------------------------------------------------------ */

/* The communicator's DFCCL side, which the request's signature lives in, is gone: MPI_Comm_free
 * (or finalize) took the communicator out of DFCCL.  It never comes back for that module. */
static bool context_gone(const mca_coll_dfccl_request_t* req) { return req->module->dc != req->dc; }

/* Launches the request's next run; MPI_ERR_COMM when its communicator has left DFCCL. */
/* Activates the request; false (completed with an error) when it cannot run. */
static bool activate(mca_coll_dfccl_request_t* req) {
  ompi_request_t* r = &req->super.super;
  r->req_state = OMPI_REQUEST_ACTIVE;
  r->req_complete = REQUEST_PENDING;
  r->req_status = ompi_status_empty;
  if (!context_gone(req)) return true;
  /* req->call.coll went with the communicator's DFCCL side: nothing of it may be read */
  opal_output(0, "coll:dfccl: MPI_Start of a persistent collective after MPI_Comm_free of comm '%s' (erroneous)",
              r->req_mpi_object.comm->c_name);
  r->req_status.MPI_ERROR = MPI_ERR_COMM;
  ompi_request_complete(r, true); /* MPI_Wait reports it too */
  return false;
}

/* req_start: MPI_Start (n = 1) and MPI_Startall (consecutive requests of ours, in the user's
 * order).  MPI_Startall ignores the return code: a request that cannot start reports through
 * MPI_Wait as well. */
static int persistent_start(size_t n, ompi_request_t** requests) {
  int rc = OMPI_SUCCESS, nready = 0;
  mca_coll_dfccl_request_t *one, **ready = n == 1 ? &one : malloc(sizeof *ready * n);
  if (ready == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  for (size_t i = 0; i < n; i++) {
    mca_coll_dfccl_request_t* req = (mca_coll_dfccl_request_t*)requests[i];
    if (requests[i]->req_state == OMPI_REQUEST_ACTIVE) rc = MPI_ERR_REQUEST; /* started, not completed yet */
    else if (activate(req)) ready[nready++] = req;
    else rc = MPI_ERR_COMM;
  }
  mca_coll_dfccl_launch(ready, nready); /* consecutive runs of one communicator: one batch */
  if (ready != &one) free(ready);
  return rc;
}

/* req_free: MPI_Request_free.  Freeing an active persistent collective request is erroneous in MPI;
 * refusing it keeps a run from completing into freed memory. */
static int persistent_free(ompi_request_t** rptr) {
  ompi_request_t* r = *rptr;
  if (r->req_state == OMPI_REQUEST_ACTIVE) return MPI_ERR_REQUEST;
  mca_coll_dfccl_request_t* req = (mca_coll_dfccl_request_t*)r;
  ompi_communicator_t* comm = r->req_mpi_object.comm;
  release_kept(&req->kept);
  mca_coll_dfccl_scratch_free(&req->call);
  OMPI_REQUEST_FINI(r);
  OBJ_RELEASE(req);
  OBJ_RELEASE(comm); /* the last holder of a communicator the user freed destroys it */
  *rptr = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

int mca_coll_dfccl_persistent_init(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call,
                                   dfccl_kept_t kept, ompi_request_t** request) {
  mca_coll_dfccl_request_t* req = mca_coll_dfccl_request_new(comm, m->dc, call, true);
  ompi_request_t* r = &req->super.super;
  r->req_start = persistent_start;
  r->req_free = persistent_free;
  req->module = m; /* lives as long as the communicator, which the request holds */
  req->kept = kept;
  retain_kept(&req->kept);
  OBJ_RETAIN(comm); /* MPI_Comm_free leaves the object to its persistent requests */
  DFCCL_VERBOSE(10, "persistent %s on comm '%s' (count %zu) ready on DFCCL",
                mca_coll_dfccl_kind_name[call->coll->sig.kind], comm->c_name, call->coll->sig.count);
  *request = r;
  return OMPI_SUCCESS;
}

/* ---- fallback: the previous component's persistent request ------------------------------------- */

static void hold_in(ompi_coll_base_nbc_request_t* nbc, ompi_request_free_fn_t its_free, dfccl_kept_t kept);

/* Its req_free while it holds our objects: gives the request back as its component made it (that
 * component recycles requests, req_free included) before freeing it, then releases them. */
static int fallback_free(ompi_request_t** rptr) {
  ompi_request_t* r = *rptr;
  ompi_coll_base_nbc_request_t* nbc = (ompi_coll_base_nbc_request_t*)r;
  ompi_request_free_fn_t its_free = nbc->cb.req_free;
  dfccl_kept_t kept = DFCCL_KEEP(nbc->data.objs.objs[0], nbc->data.objs.objs[1]);
  r->req_free = its_free;
  nbc->cb.req_free = NULL;
  nbc->data.objs.objs[0] = nbc->data.objs.objs[1] = NULL;
  int rc = its_free(rptr);
  if (rc != OMPI_SUCCESS) { /* refused (still active): it is still the user's, and still holds them */
    hold_in(nbc, its_free, kept);
    return rc;
  }
  release_kept(&kept);
  return OMPI_SUCCESS;
}

/* What ompi_coll_base_retain_op/_datatypes do for a persistent request, with the objects already
 * retained. */
static void hold_in(ompi_coll_base_nbc_request_t* nbc, ompi_request_free_fn_t its_free, dfccl_kept_t kept) {
  nbc->data.objs.objs[0] = kept.objs[0];
  nbc->data.objs.objs[1] = kept.objs[1];
  nbc->cb.req_free = its_free;
  nbc->super.req_free = fallback_free;
}

int mca_coll_dfccl_persistent_fallback(int rc, dfccl_kept_t kept, ompi_request_t** request) {
  if (rc != OMPI_SUCCESS) return rc;
  ompi_request_t* r = *request;
  /* A collective request is an ompi_coll_base_nbc_request_t (the MPI layer's retain functions
   * assume the same); a no-op request (ompi_request_persistent_noop_create) uses no op or datatype. */
  if (r->req_type != OMPI_REQUEST_COLL || !r->req_persistent) return rc;
  retain_kept(&kept);
  hold_in((ompi_coll_base_nbc_request_t*)r, r->req_free, kept);
  return rc;
}
