/*
 * coll/dfccl requests: runs on DFCCL, as MPI requests.
 *
 * Starting.  A run is its signature's descriptor submitted to the communicator's DFCCL
 * communicator (dfcclSubmit), in the user's call order, which is the same on every rank; DFCCL
 * holds it while that communicator is being made, and queues it when its connector set is busy.
 * Nothing here waits for another rank: starting a run never blocks, so nonblocking calls on
 * several communicators may be issued in any order, and DFCCL's daemon sorts out the order in
 * which the ranks' runs meet.  A nonblocking call's request has one run; a persistent request
 * (coll_dfccl_persistent.c) has one per MPI_Start, launched by the same code.
 *
 * Completing.  DFCCL reports a run on its poller thread -- or, when the component's progress
 * callback takes the completions first (dfcclProgress), on the thread in opal_progress -- and the
 * callback must not complete the MPI request itself: without MPI_THREAD_MULTIPLE, Open MPI counts the completions that an MPI_Waitall waits
 * for without atomics (wait_sync_update -> OPAL_THREAD_ADD_FETCH32, a plain decrement unless
 * opal_using_threads()), and the poller threads of several communicators would race on that count;
 * the request's completion callback (the MPI layer's release of retained datatypes) would also run
 * on a foreign thread.  So the DFCCL callback only pushes the run onto a lock-free stack, and the
 * component's opal_progress callback -- run by whichever MPI thread drives progress, as inside
 * MPI_Wait/Test -- completes the request with ompi_request_complete().  It never calls opal_progress itself (no re-entry).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <sched.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* Runs whose DFCCL callback came and whose completion is not handled yet.  Pushed by DFCCL callbacks;
 * the only pop takes the whole stack, so the stack has no ABA problem. */
static _Atomic(mca_coll_dfccl_request_t*) completed;

static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static bool progress_registered;

OBJ_CLASS_INSTANCE(mca_coll_dfccl_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

static ompi_request_t* mpi_request(mca_coll_dfccl_request_t* req) { return &req->super.super; }

/* ---- the request object ------------------------------------------------------------------------- */

static int request_free(ompi_request_t** rptr) {
  ompi_request_t* r = *rptr;
  if (!REQUEST_COMPLETE(r)) return MPI_ERR_REQUEST; /* freeing an active nonblocking collective is erroneous */
  OMPI_REQUEST_FINI(r);
  OBJ_RELEASE(r);
  *rptr = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

mca_coll_dfccl_request_t* mca_coll_dfccl_request_new(ompi_communicator_t* comm, dfccl_comm_t* dc,
                                                     const dfccl_call_t* call, bool persistent) {
  mca_coll_dfccl_request_t* req = OBJ_NEW(mca_coll_dfccl_request_t);
  if (req == NULL) { /* the other ranks are about to enter DFCCL: no way back */
    opal_output(0, "coll:dfccl: out of memory for a request on comm '%s'", comm->c_name);
    ompi_mpi_abort(comm, 1);
  }
  ompi_request_t* r = mpi_request(req);
  OMPI_REQUEST_INIT(r, persistent); /* persistent: complete and inactive until MPI_Start */
  r->req_type = OMPI_REQUEST_COLL;
  if (!persistent) r->req_state = OMPI_REQUEST_ACTIVE;
  r->req_free = request_free;
  r->req_mpi_object.comm = comm;
  r->req_status = ompi_status_empty;
  req->next = NULL;
  req->dc = dc;
  req->run = -1;
  req->call = *call;
  req->status = dfcclSuccess;
  req->blocking = false;
  atomic_init(&req->finished, false);
  req->module = NULL;
  req->kept = DFCCL_KEEP(NULL, NULL);
  return req;
}

static dfcclTarget_t target_of(const mca_coll_dfccl_request_t* req) {
  return mca_coll_dfccl_route_target(req->call.coll->route);
}

/* A failed run's sentence: `why` where the caller knows it (a refused submission: DFCCL's last
 * error message on this thread); a run that failed in the daemon is said by its code, one held
 * while its DFCCL communicator was being made by why making it failed. */
static void report(const mca_coll_dfccl_request_t* req, dfcclResult_t r, const char* why) {
  if (why == NULL && r == dfcclCreationFailed && dfcclCommCreateTest(req->dc->dfccl[target_of(req)]) != dfcclSuccess)
    why = dfcclGetLastErrorMessage();
  if (why == NULL)
    why = r == dfcclTimedOut   ? "no progress within coll_dfccl_timeout (DFCCL_TIMEOUT_S) on some rank; "
                                 "the communicator's collectives on DFCCL fail from now on"
          : r == dfcclMismatch ? "the ranks passed different counts, types, ops or roots (or one skipped "
                                 "a call); the communicator's collectives on DFCCL fail from now on"
                               : "see the lines above";
  opal_output(0, "coll:dfccl: %s (run %d on DFCCL) on comm '%s' failed: %s (%s)",
              mca_coll_dfccl_kind_name[req->call.coll->sig.kind], req->run, req->dc->comm->c_name,
              dfcclGetErrorString(r), why);
}

/* The MPI error class of a DFCCL failure: the collective could not complete (MPI_ERR_OTHER), or
 * something broke inside (MPI_ERR_INTERN). */
static int mpi_error_of(dfcclResult_t r) {
  if (r == dfcclSuccess) return MPI_SUCCESS;
  return r == dfcclTimedOut || r == dfcclMismatch || r == dfcclRevoked ? MPI_ERR_OTHER : MPI_ERR_INTERN;
}

/* ---- DFCCL side --------------------------------------------------------------------------------- */

/* DFCCL's callback, on its poller thread or in progress (or a refused submission, on the caller's). */
static void on_done(int run, dfcclResult_t status, void* arg) {
  mca_coll_dfccl_request_t* req = arg;
  req->run = run;
  req->status = status;
  mca_coll_dfccl_request_t* head = atomic_load_explicit(&completed, memory_order_relaxed);
  do req->next = head; /* the status and the link are published by the release below */
  while (!atomic_compare_exchange_weak_explicit(&completed, &head, req, memory_order_release, memory_order_relaxed));
}

/* The request's run ends with error r without running (said, with why). */
static void fail(mca_coll_dfccl_request_t* req, dfcclResult_t r, const char* why) {
  report(req, r, why);
  req->reported = true;
  on_done(-1, r, req);
}

/* Runs DFCCL refuses end with that error, like failed ones, through the completed stack: their
 * requests report it.  A batch is refused or accepted whole (dfcclSubmitBatch). */
static void submit(mca_coll_dfccl_request_t** reqs, int n, dfcclComm_t dfccl) {
  dfcclSubmission_t one = {0}, *runs = n == 1 ? &one : calloc((size_t)n, sizeof *runs);
  dfcclResult_t r = dfcclOutOfResources;
  if (runs != NULL) {
    for (int i = 0; i < n; i++) {
      const dfccl_call_t* c = &reqs[i]->call;
      runs[i] = (dfcclSubmission_t){&c->coll->desc, c->send, c->recv, on_done, reqs[i]};
    }
    r = dfcclSubmitBatch(dfccl, runs, n);
    if (runs != &one) free(runs);
  }
  if (r == dfcclSuccess) return;
  for (int i = 0; i < n; i++) fail(reqs[i], r, runs != NULL ? dfcclGetLastErrorMessage() : "out of memory");
}

/* ---- MPI side ----------------------------------------------------------------------------------- */

/* A run's completion came: finish the call, complete the request. */
static void complete(mca_coll_dfccl_request_t* req) {
  dfccl_comm_t* dc = req->dc;
  dfccl_call_t* c = &req->call;
  if (req->status != dfcclSuccess && !req->reported) report(req, req->status, NULL);
  else if (c->move_bytes > 0 && dfcclCopy(c->move_to, c->move_from, c->move_bytes) != dfcclSuccess) {
    /* device memory, or host memory: dfcclCopy handles both (no overlap: see the plan) */
    opal_output(0, "coll:dfccl: moving the in-place result: %s", dfcclGetLastErrorMessage());
    req->status = dfcclCudaError;
  }
  if (req->status == dfcclSuccess && !mca_coll_dfccl_scratch_copy(c, false)) req->status = dfcclCudaError;
  if (!mpi_request(req)->req_persistent) mca_coll_dfccl_scratch_release(c); /* a persistent one's stay */
  ompi_request_t* r = mpi_request(req);
  r->req_status.MPI_ERROR = mpi_error_of(req->status);
  DFCCL_VERBOSE(10, "%s on comm '%s' (count %zu) completed as run %d on DFCCL%s",
                mca_coll_dfccl_kind_name[c->coll->sig.kind], dc->comm->c_name, c->coll->sig.count, req->run,
                req->status == dfcclSuccess ? "" : " with an error");
  /* Completing never releases the request: MPI_Wait/Test free a nonblocking one (or set a
   * persistent one inactive), the blocking call frees its own once it sees `finished`. */
  bool blocking = req->blocking;
  ompi_request_complete(r, true); /* req may be freed from here on, unless blocking */
  if (blocking) atomic_store_explicit(&req->finished, true, memory_order_release);
  atomic_fetch_sub_explicit(&dc->pending, 1, memory_order_release); /* dc may be destroyed from here on */
}

/* The opal_progress callback: the number of requests it completed. */
static int progress(void) {
  mca_coll_dfccl_contexts_progress(); /* DFCCL's callbacks, when they come here, push onto `completed` */
  int staged = mca_coll_dfccl_staged_progress();
  if (atomic_load_explicit(&completed, memory_order_relaxed) == NULL) return staged; /* the common case */
  mca_coll_dfccl_request_t* stack = atomic_exchange_explicit(&completed, NULL, memory_order_acquire);
  mca_coll_dfccl_request_t* in_order = NULL; /* the stack holds the latest first */
  while (stack != NULL) {
    mca_coll_dfccl_request_t* next = stack->next;
    stack->next = in_order;
    in_order = stack;
    stack = next;
  }
  int n = staged;
  while (in_order != NULL) {
    mca_coll_dfccl_request_t* next = in_order->next;
    complete(in_order);
    in_order = next;
    n++;
  }
  return n;
}

int mca_coll_dfccl_progress_register(void) {
  int rc = OMPI_SUCCESS;
  pthread_mutex_lock(&progress_lock);
  if (!progress_registered) {
    rc = opal_progress_register(progress);
    progress_registered = rc == OPAL_SUCCESS;
  }
  pthread_mutex_unlock(&progress_lock);
  return rc;
}

void mca_coll_dfccl_progress_unregister(void) {
  pthread_mutex_lock(&progress_lock);
  if (progress_registered) (void)opal_progress_unregister(progress);
  progress_registered = false;
  pthread_mutex_unlock(&progress_lock);
}

/* The run's input where DFCCL reads it, and the request counted as pending. */
static void prepare(mca_coll_dfccl_request_t* req) {
  dfccl_comm_t* dc = req->dc;
  dfccl_coll_t* coll = req->call.coll;
  if (!mca_coll_dfccl_scratch_copy(&req->call, true)) { /* the other ranks are entering DFCCL */
    opal_output(0, "coll:dfccl: %s on comm '%s': copying the input failed", mca_coll_dfccl_kind_name[coll->sig.kind],
                dc->comm->c_name);
    ompi_mpi_abort(dc->comm, 1);
  }
  req->next = NULL; /* a persistent request's link is left over from its previous run */
  req->status = dfcclSuccess;
  req->reported = false;
  atomic_fetch_add_explicit(&dc->pending, 1, memory_order_relaxed);
  DFCCL_VERBOSE(10, "%s on comm '%s' (count %zu) started on DFCCL", mca_coll_dfccl_kind_name[coll->sig.kind],
                dc->comm->c_name, coll->sig.count);
}

void mca_coll_dfccl_launch(mca_coll_dfccl_request_t** reqs, int n) {
  for (int i = 0; i < n; i++) prepare(reqs[i]);
  for (int i = 0, j; i < n; i = j) { /* consecutive runs of one communicator and target: one batch */
    dfccl_comm_t* dc = reqs[i]->dc;
    dfcclTarget_t t = target_of(reqs[i]);
    for (j = i + 1; j < n && reqs[j]->dc == dc && target_of(reqs[j]) == t;) j++;
    pthread_mutex_lock(&dc->lock);
    submit(reqs + i, j - i, mca_coll_dfccl_dfccl_comm(dc, t));
    pthread_mutex_unlock(&dc->lock);
  }
}

int mca_coll_dfccl_start(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call,
                         ompi_request_t** request) {
  mca_coll_dfccl_request_t* req = mca_coll_dfccl_request_new(comm, m->dc, call, false);
  mca_coll_dfccl_launch(&req, 1);
  *request = mpi_request(req);
  return OMPI_SUCCESS;
}

int mca_coll_dfccl_run(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call) {
  mca_coll_dfccl_request_t* req = mca_coll_dfccl_request_new(comm, m->dc, call, false);
  req->blocking = true;
  mca_coll_dfccl_launch(&req, 1);
  /* Another thread's progress may complete it (MPI_THREAD_MULTIPLE): `finished` orders its results
   * and status before what follows here. */
  dfcclTarget_t target = target_of(req);
  for (unsigned poll = 0; !atomic_load_explicit(&req->finished, memory_order_acquire); poll++) {
    opal_progress(); /* completes it, and keeps MPI (other communicators, their queued runs) moving */
    dfcclWaitPause(target, poll);
  }
  ompi_request_t* r = mpi_request(req);
  int rc = r->req_status.MPI_ERROR; /* an MPI error class: the MPI layer hands it to the error handler */
  (void)request_free(&r);
  return rc;
}

void mca_coll_dfccl_init_classes(void) {
  opal_class_t* classes[] = {OBJ_CLASS(mca_coll_dfccl_module_t), OBJ_CLASS(mca_coll_dfccl_request_t),
                             mca_coll_dfccl_local_class(), mca_coll_dfccl_staged_class()};
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) opal_class_initialize(classes[i]);
}

void mca_coll_dfccl_drain(dfccl_comm_t* dc) {
  while (atomic_load_explicit(&dc->pending, memory_order_acquire) > 0) {
    opal_progress();
    sched_yield();
  }
}
