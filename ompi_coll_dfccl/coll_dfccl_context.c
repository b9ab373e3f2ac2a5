/*
 * coll/dfccl contexts: the process's one DFCCL context, and each communicator's share of it.
 *
 * One DFCCL context (one daemon) per process, over the ranks of MPI_COMM_WORLD, carries the
 * collectives of every communicator: a communicator gets a DFCCL communicator over its members'
 * world ranks.  So collectives of different communicators meet in one daemon, which is what lets
 * DFCCL preempt one for another (with a daemon per communicator, two communicators' collectives
 * would busy-wait side by side, each holding its own daemon).
 *
 * The process context needs no exchange to start (dfcclInit is local).  A communicator's DFCCL
 * communicator of a target is made when its first run on that target is launched, without waiting:
 * dfcclCommCreateStart, its exchanges being point-to-point messages on the communicator (below)
 * that go out as this rank's progress tests the creation (dfcclProgress, from the component's
 * progress callback).  Runs are submitted to it at once: DFCCL holds those that come while it is
 * being made, in call order, and submits them once it exists -- so a nonblocking call is routed from
 * its first call on, and no call ever waits for the other ranks where it starts.
 *
 * Teardown: MPI_Comm_free destroys the DFCCL communicators (an attribute delete callback; runs
 * still going are completed first); at MPI_Finalize an attribute on MPI_COMM_SELF does that for
 * the communicators still alive, in the order of their cids (the same on every rank), and destroys
 * the process context.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/attribute/attribute.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/output.h"

/* The process's DFCCL contexts, one per execution target: [dfcclTargetHost] for the host-target
 * test mode, [dfcclTargetCuda] for device buffers (on the GPU of the first device buffer, or
 * dfcclDefaultDevice's when the first call that needs it has none). */
static struct {
  pthread_mutex_t lock;
  dfcclRankCtx_t ctx[3];
  bool failed[3]; /* dfcclInit failed here once: not tried again */
  int cuda_device;
} proc = {.lock = PTHREAD_MUTEX_INITIALIZER, .cuda_device = -1};

/* The same contexts, for the progress callback to take their completions without a lock: set once
 * made, cleared before they are destroyed. */
static _Atomic(dfcclRankCtx_t) progressed[3];

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static dfccl_comm_t* live_first; /* cid order (link_live) */
static int comm_keyval = -1;     /* on each communicator with a context: its teardown    */
static int self_keyval = -1;     /* an attribute on MPI_COMM_SELF: teardown at finalize  */

static const char* target_name(int t) { return t == dfcclTargetCuda ? "cuda" : "host"; }

/* ---- exchanges ------------------------------------------------------------------------------------
 *
 * A DFCCL communicator's exchanges (making it, destroying it) are point-to-point messages among
 * the communicator's ranks on a tag of coll/dfccl's own, so that they match only each other,
 * whatever else runs on the communicator meanwhile: making it never waits, and its messages go out
 * whenever this rank's progress tests the creation.  Each target's DFCCL communicator has a tag of
 * its own: the two may be made at the same time, and their allgathers must not match each other's.
 * An allgather is n - 1 sends and receives (small cards, once per communicator).  Inside pml/ucx's
 * 24-bit tags they stay negative (internal). */
#define DFCCL_EXCHANGE_TAG(target) (MCA_COLL_BASE_TAG_NEIGHBOR_END - 4096 - (target))

static int exchange_start(void* arg, const void* send, void* recv, size_t bytes, void** request) {
  dfccl_exchange_t* x = arg;
  ompi_communicator_t* comm = x->dc->comm;
  int me = ompi_comm_rank(comm), k = 0, tag = DFCCL_EXCHANGE_TAG(x->target);
  if (bytes > INT_MAX) return 1;
  memcpy((char*)recv + (size_t)me * bytes, send, bytes);
  for (int i = 0; i < x->dc->size; i++) {
    if (i == me) continue;
    int rc =
        MCA_PML_CALL(irecv((char*)recv + (size_t)i * bytes, (int)bytes, MPI_BYTE, i, tag, comm, &x->requests[k++]));
    if (rc == OMPI_SUCCESS)
      rc = MCA_PML_CALL(
          isend((void*)send, (int)bytes, MPI_BYTE, i, tag, MCA_PML_BASE_SEND_STANDARD, comm, &x->requests[k++]));
    if (rc != OMPI_SUCCESS) { /* the others are sending already: no consistent way back */
      opal_output(0, "coll:dfccl: comm '%s': posting DFCCL's set-up messages failed (%d)", comm->c_name, rc);
      ompi_mpi_abort(comm, 1);
    }
  }
  x->nrequests = k;
  *request = x;
  return 0;
}

static int exchange_test(void* arg, void* request, int* done) {
  (void)request;
  dfccl_exchange_t* x = arg;
  if (x->dc->exchange_waits) opal_progress(); /* a blocking caller (destruction): nobody else progresses */
  *done = 0;
  for (int i = 0; i < x->nrequests; i++)
    if (!REQUEST_COMPLETE(x->requests[i])) return 0;
  opal_atomic_rmb(); /* the received cards after their completion (another thread's progress may have seen it) */
  int failed = 0;
  for (int i = 0; i < x->nrequests; i++) {
    failed |= x->requests[i]->req_status.MPI_ERROR != MPI_SUCCESS;
    ompi_request_free(&x->requests[i]);
  }
  x->nrequests = 0;
  *done = 1;
  return failed;
}

/* The process context's bootstrap: coll/dfccl's communicators bring their own exchanges. */
static int no_bootstrap(void* state, const int* ranks, int nranks, const void* sendbuf, void* recvbuf, size_t bytes) {
  (void)state, (void)ranks, (void)nranks, (void)sendbuf, (void)recvbuf, (void)bytes;
  return 1;
}

/* ---- DFCCL communicators ---------------------------------------------------------------------------- */

dfcclComm_t mca_coll_dfccl_dfccl_comm(dfccl_comm_t* dc, dfcclTarget_t t) {
  if (dc->dfccl[t] != NULL) return dc->dfccl[t]; /* the common case */
  dfcclRankCtx_t ctx = mca_coll_dfccl_process_context(t, NULL);
  dfccl_exchange_t* x = &dc->exchange[t];
  x->dc = dc;
  x->target = t;
  x->requests = mca_coll_dfccl_alloc_or_abort(sizeof *x->requests * 2 * (size_t)dc->size, dc->comm);
  dfcclExchange_t exchange = {exchange_start, exchange_test, x};
  /* Keyed by the communicator's cid (alike on every member, unique among the live ones). */
  dfcclResult_t r = ctx == NULL ? dfcclInvalidArgument
                                : dfcclCommCreateStart(ctx, dc->members, dc->size, ompi_comm_get_cid(dc->comm),
                                                       &exchange, &dc->dfccl[t]);
  if (r != dfcclSuccess) { /* this rank cannot take part: the others would wait for it forever */
    opal_output(0, "coll:dfccl: comm '%s': no DFCCL communicator (%s target): %s (%s)", dc->comm->c_name,
                target_name(t), dfcclGetErrorString(r),
                ctx != NULL ? dfcclGetLastErrorMessage() : "no process context");
    ompi_mpi_abort(dc->comm, 1);
  }
  DFCCL_VERBOSE(1, "comm '%s': DFCCL communicator of %d ranks on the %s target being made", dc->comm->c_name, dc->size,
                target_name(t));
  return dc->dfccl[t];
}

/* ---- teardown ----------------------------------------------------------------------------------- */

static void unlink_live(dfccl_comm_t* dc) {
  dfccl_comm_t** p = &live_first;
  while (*p != NULL && *p != dc) p = &(*p)->next_live;
  if (*p != NULL) *p = dc->next_live;
}

static void free_comm_context(dfccl_comm_t* dc) {
  pthread_mutex_destroy(&dc->lock);
  for (int t = 0; t < 3; t++) free(dc->exchange[t].requests);
  free(dc->members);
  free(dc);
}

/* Collective over the communicator: its DFCCL communicators go (dfcclCommDestroy meets the other
 * members, through the communicator's exchange, waiting). */
static void destroy_comm(dfccl_comm_t* dc) {
  /* MPI lets a communicator be freed with nonblocking collectives outstanding: they complete
   * normally (runs held while their DFCCL communicator is made included: progress makes it). */
  mca_coll_dfccl_drain(dc);
  dc->exchange_waits = true;
  for (int t = 0; t < 3; t++) { /* every member started the same ones: the same calls (a failed one meets nobody) */
    if (dc->dfccl[t] == NULL) continue;
    dfcclResult_t r = dfcclCommDestroy(dc->dfccl[t]);
    if (r != dfcclSuccess)
      opal_output(0, "coll:dfccl: destroying the DFCCL communicator of comm '%s': %s (%s)", dc->comm->c_name,
                  dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  }
  int n = dc->ncolls;
  while (dc->colls != NULL) {
    dfccl_coll_t* next = dc->colls->next;
    mca_coll_dfccl_spares_free(dc->colls);
    free(dc->colls->counts);
    free(dc->colls);
    dc->colls = next;
  }
  DFCCL_VERBOSE(1, "comm '%s' left DFCCL (%d signatures ran on it)", dc->comm->c_name, n);
  if (dc->module != NULL) dc->module->dc = NULL;
  free_comm_context(dc);
}

static int comm_freed(MPI_Comm comm, int keyval, void* attr, void* extra) {
  (void)comm, (void)keyval, (void)extra;
  mca_coll_dfccl_module_t* m = attr;
  m->unusable = true; /* never again for this communicator */
  dfccl_comm_t* dc = m->dc;
  if (dc == NULL) return MPI_SUCCESS; /* already gone with the finalize sweep */
  pthread_mutex_lock(&live_lock);
  unlink_live(dc);
  pthread_mutex_unlock(&live_lock);
  destroy_comm(dc);
  return MPI_SUCCESS;
}

static int finalizing(MPI_Comm comm, int keyval, void* attr, void* extra) {
  (void)comm, (void)keyval, (void)attr, (void)extra;
  for (;;) {
    pthread_mutex_lock(&live_lock);
    dfccl_comm_t* dc = live_first;
    pthread_mutex_unlock(&live_lock);
    if (dc == NULL) break;
    /* Deleting the communicator's attribute runs comm_freed, which tears its share down, as
     * MPI_Comm_free would; and no attribute of ours outlives its keyval. */
    ompi_communicator_t* comm = dc->comm;
    if (comm_keyval >= 0 && ompi_attr_delete(COMM_ATTR, comm, comm->c_keyhash, comm_keyval, false) == OMPI_SUCCESS)
      continue;
    pthread_mutex_lock(&live_lock); /* no attribute (attaching it failed): directly */
    unlink_live(dc);
    pthread_mutex_unlock(&live_lock);
    if (dc->module != NULL) dc->module->unusable = true;
    destroy_comm(dc);
  }
  /* Every DFCCL communicator is destroyed: destroying the contexts meets nobody. */
  pthread_mutex_lock(&proc.lock);
  for (int t = 0; t < 3; t++) {
    atomic_store_explicit(&progressed[t], NULL, memory_order_release);
    if (proc.ctx[t] != NULL) {
      dfcclResult_t r = dfcclDestroy(proc.ctx[t]);
      if (r != dfcclSuccess)
        opal_output(0, "coll:dfccl: dfcclDestroy: %s (%s)", dfcclGetErrorString(r), dfcclGetLastErrorMessage());
      DFCCL_VERBOSE(1, "process context (%s target) destroyed", t == dfcclTargetCuda ? "cuda" : "host");
    }
    proc.ctx[t] = NULL;
    proc.failed[t] = true; /* no context after finalize */
  }
  pthread_mutex_unlock(&proc.lock);
  /* The keyvals go once the attributes using them are deleted (Open MPI counts references). */
  pthread_mutex_lock(&live_lock);
  if (comm_keyval >= 0) (void)ompi_attr_free_keyval(COMM_ATTR, &comm_keyval, false);
  if (self_keyval >= 0) (void)ompi_attr_free_keyval(COMM_ATTR, &self_keyval, false);
  comm_keyval = self_keyval = -1;
  pthread_mutex_unlock(&live_lock);
  return MPI_SUCCESS;
}

static int no_copy(MPI_Comm oldcomm, int keyval, void* extra, void* in, void* out, int* flag, MPI_Comm newcomm) {
  (void)oldcomm, (void)keyval, (void)extra, (void)in, (void)out, (void)newcomm;
  *flag = 0; /* a duplicate is set up on its own first use */
  return MPI_SUCCESS;
}

static int create_keyval(MPI_Comm_delete_attr_function* on_delete, int* keyval) {
  ompi_attribute_fn_ptr_union_t copy = {.attr_communicator_copy_fn = no_copy};
  ompi_attribute_fn_ptr_union_t del = {.attr_communicator_delete_fn = on_delete};
  return ompi_attr_create_keyval(COMM_ATTR, copy, del, keyval, NULL, 0, NULL);
}

/* Attaches the teardown hooks; call with live_lock held. */
static int attach_teardown(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  int rc = OMPI_SUCCESS;
  if (self_keyval < 0) {
    rc = create_keyval(finalizing, &self_keyval);
    if (rc == OMPI_SUCCESS)
      rc = ompi_attr_set_c(COMM_ATTR, &ompi_mpi_comm_self.comm, &ompi_mpi_comm_self.comm.c_keyhash, self_keyval, NULL,
                           false);
    if (rc != OMPI_SUCCESS) return rc;
  }
  if (comm_keyval < 0 && (rc = create_keyval(comm_freed, &comm_keyval)) != OMPI_SUCCESS) return rc;
  return ompi_attr_set_c(COMM_ATTR, comm, &comm->c_keyhash, comm_keyval, m, false);
}

/* ---- first use ---------------------------------------------------------------------------------- */

void* mca_coll_dfccl_alloc_or_abort(size_t bytes, ompi_communicator_t* comm) {
  void* p = calloc(1, bytes);
  if (p == NULL) { /* a rank-local failure inside a collective set-up: the job cannot go on consistently */
    opal_output(0, "coll:dfccl: out of memory on comm '%s'", comm->c_name);
    ompi_mpi_abort(comm, 1);
  }
  return p;
}

/* This process's rank among those of its node, as the launcher tells it (mpirun, Slurm); 0 when
 * none does. */
static int node_local_rank(void) {
  static const char* const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char* v = getenv(names[i]);
    char* end;
    long r = v != NULL ? strtol(v, &end, 10) : -1;
    if (v != NULL && *v != '\0' && *end == '\0' && r >= 0 && r <= INT_MAX) return (int)r;
  }
  return 0;
}

dfcclRankCtx_t mca_coll_dfccl_process_context(dfcclTarget_t target, int* device) {
  pthread_mutex_lock(&proc.lock);
  dfcclRankCtx_t ctx = proc.ctx[target];
  if (ctx == NULL && !proc.failed[target]) {
    int wanted = device != NULL ? *device : -1;
    /* No buffer named the GPU (a call on host memory -- Open MPI's own nonblocking all-reduces
     * inside MPI_Comm_split and MPI_Comm_dup come before most programs' cudaSetDevice): the GPU
     * the program has chosen, or the one it will most likely choose, never simply device 0. */
    if (target == dfcclTargetCuda && wanted < 0) wanted = dfcclDefaultDevice(node_local_rank());
    dfcclInitArgs_t args = {.target = target,
                            .device = wanted,
                            .bootstrap = {ompi_comm_rank(&ompi_mpi_comm_world.comm),
                                          ompi_comm_size(&ompi_mpi_comm_world.comm), no_bootstrap, NULL}};
    /* The MCA parameters the core reads from its environment. */
    char number[16];
    snprintf(number, sizeof number, "%d", mca_coll_dfccl_component.concurrent_runs);
    setenv("DFCCL_COMM_SETS", number, 1);
    static const char* const transports[] = {NULL, "auto", "p2p", "ucx"};
    const char* transport = transports[mca_coll_dfccl_component.transport];
    if (transport != NULL) setenv("DFCCL_TRANSPORT", transport, 1);
    if (mca_coll_dfccl_component.verbose >= 1) setenv("DFCCL_SHOW_TRANSPORT", "1", 0);
    char seconds[16];
    if (mca_coll_dfccl_component.hang_report > 0) {
      snprintf(seconds, sizeof seconds, "%d", mca_coll_dfccl_component.hang_report);
      setenv("DFCCL_HANG_REPORT_S", seconds, 1);
    }
    if (mca_coll_dfccl_component.timeout > 0) {
      snprintf(seconds, sizeof seconds, "%d", mca_coll_dfccl_component.timeout);
      setenv("DFCCL_TIMEOUT_S", seconds, 1);
    }
    int chosen = -1;
    dfcclResult_t r = dfcclInit(&ctx, &args);
    if (r == dfcclSuccess) r = dfcclContextDevice(ctx, &chosen); /* -1 asks for the current device */
    if (r != dfcclSuccess) {
      opal_output(0, "coll:dfccl: dfcclInit (%s target, device %d): %s (%s)", target_name(target), args.device,
                  dfcclGetErrorString(r), dfcclGetLastErrorMessage());
      ctx = NULL;
      proc.failed[target] = true;
    } else {
      proc.ctx[target] = ctx;
      atomic_store_explicit(&progressed[target], ctx, memory_order_release);
      if (target == dfcclTargetCuda) proc.cuda_device = chosen;
      DFCCL_VERBOSE(1, "process context (%s target%s %d) ready: world rank %d of %d", target_name(target),
                    target == dfcclTargetCuda ? ", GPU" : "", chosen, args.bootstrap.rank, args.bootstrap.nranks);
    }
  }
  if (device != NULL && ctx != NULL && target == dfcclTargetCuda) {
    /* One GPU per process: a collective on another device's buffers has no context of its own. */
    if (*device >= 0 && *device != proc.cuda_device) ctx = NULL;
    else *device = proc.cuda_device;
  }
  pthread_mutex_unlock(&proc.lock);
  return ctx;
}

void mca_coll_dfccl_contexts_progress(void) {
  for (int t = 0; t < 3; t++) {
    dfcclRankCtx_t ctx = atomic_load_explicit(&progressed[t], memory_order_acquire);
    if (ctx != NULL) (void)dfcclProgress(ctx, NULL); /* cannot fail on a live context */
  }
}

/* The members' world ranks in communicator rank order (DFCCL's participants, in ring order).
 * False if a member is not in MPI_COMM_WORLD (a spawned process), alike on every member. */
static bool map_members(dfccl_comm_t* dc) {
  int n = dc->size;
  int* comm_ranks = malloc(sizeof(int) * (size_t)n);
  dc->members = malloc(sizeof(int) * (size_t)n);
  bool ok = comm_ranks != NULL && dc->members != NULL;
  if (ok) {
    for (int i = 0; i < n; i++) comm_ranks[i] = i;
    ok = ompi_group_translate_ranks(dc->comm->c_local_group, n, comm_ranks, ompi_mpi_comm_world.comm.c_local_group,
                                    dc->members) == OMPI_SUCCESS;
  }
  for (int i = 0; ok && i < n; i++) ok = dc->members[i] != MPI_UNDEFINED;
  free(comm_ranks);
  return ok;
}

/* Inserts dc in the live list, kept in the order of the communicators' cids: the finalize sweep
 * destroys them in that order, which is the same on every rank (a destruction waits for the other
 * members, so two ranks going through their communicators in different orders would wait for each
 * other forever).  Call with live_lock held. */
static void link_live(dfccl_comm_t* dc) {
  uint32_t cid = ompi_comm_get_cid(dc->comm);
  dfccl_comm_t** p = &live_first;
  while (*p != NULL && ompi_comm_get_cid((*p)->comm) < cid) p = &(*p)->next_live;
  dc->next_live = *p;
  *p = dc;
}

dfccl_comm_t* mca_coll_dfccl_comm_context(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  if (m->dc != NULL || m->unusable) return m->dc;
  dfccl_comm_t* dc = mca_coll_dfccl_alloc_or_abort(sizeof *dc, comm);
  dc->comm = comm;
  dc->size = ompi_comm_size(comm);
  /* Alike on every member: a communicator with a member outside MPI_COMM_WORLD falls back. */
  if (!map_members(dc)) {
    DFCCL_VERBOSE(1, "comm '%s' falls back: a member is not in MPI_COMM_WORLD", comm->c_name);
    free(dc->members);
    free(dc);
    m->unusable = true;
    return NULL;
  }
  pthread_mutex_init(&dc->lock, NULL);
  /* Requests complete from the progress callback: without it there is no DFCCL for us, and a rank
   * that falls back alone would leave the others waiting. */
  int rc = mca_coll_dfccl_progress_register();
  if (rc != OMPI_SUCCESS) {
    opal_output(0, "coll:dfccl: comm '%s': registering the progress callback failed (%d)", comm->c_name, rc);
    ompi_mpi_abort(comm, 1);
  }
  atomic_init(&dc->pending, 0);
  dc->module = m;
  pthread_mutex_lock(&live_lock);
  rc = attach_teardown(m, comm);
  link_live(dc);
  pthread_mutex_unlock(&live_lock);
  if (rc != OMPI_SUCCESS) opal_output(0, "coll:dfccl: comm '%s': no teardown hook (%d)", comm->c_name, rc);
  m->dc = dc;
  DFCCL_VERBOSE(1, "comm '%s' (cid %u, rank %d of %d) set up for DFCCL", comm->c_name, ompi_comm_get_cid(comm),
                ompi_comm_rank(comm), dc->size);
  return dc;
}
