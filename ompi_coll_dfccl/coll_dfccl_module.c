/*
 * coll/dfccl module: selection, the saved previous functions, and the DFCCL context of a
 * communicator.
 *
 * Life of a communicator's context: created by its first routed collective (every rank makes that
 * call, in MPI order), with a private duplicate of the communicator carrying DFCCL's bootstrap
 * allgather; destroyed when the communicator is freed (attribute delete callback) or, for
 * communicators still alive, at the start of MPI_Finalize (an attribute on MPI_COMM_SELF), in
 * creation order so that the collective dfcclDestroy calls meet on every rank.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* Set while this thread duplicates a communicator for a bootstrap: comm_query declines it. */
static _Thread_local bool making_boot_comm;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static dfccl_comm_t* live_first; /* creation order */
static dfccl_comm_t* live_last;
static int comm_keyval = -1;     /* on each communicator with a context: its teardown    */
static bool finalize_hook_set;   /* an attribute on MPI_COMM_SELF: teardown at finalize  */

/* ---- selection ---------------------------------------------------------------------------------- */

static int dfccl_module_enable(mca_coll_base_module_t* module, ompi_communicator_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  /* Lower-priority modules have been enabled: comm->c_coll holds what we fall back to, for each
   * collective this module provides (comm_query set only the enabled ones). */
#define DFCCL_SAVE_PREV(name)                                                                     \
  if (m->super.coll_##name != NULL) {                                                             \
    m->prev_##name = comm->c_coll->coll_##name;                                                   \
    m->prev_##name##_module = comm->c_coll->coll_##name##_module;                                 \
    if (m->prev_##name == NULL || m->prev_##name##_module == NULL) {                              \
      m->prev_##name##_module = NULL;                                                             \
      DFCCL_VERBOSE(1, "no previous " #name " on comm '%s': not enabled", comm->c_name);          \
      return OMPI_ERROR;                                                                          \
    }                                                                                             \
    OBJ_RETAIN(m->prev_##name##_module);                                                          \
  }
  DFCCL_COLLS(DFCCL_SAVE_PREV)
  DFCCL_VERBOSE(1, "enabled on comm '%s' (cid %d, size %d)", comm->c_name, ompi_comm_get_cid(comm),
                ompi_comm_size(comm));
  return OMPI_SUCCESS;
}

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority) {
  const mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  const char* no = NULL;
  bool any = false;
#define DFCCL_ANY_ENABLED(name) any = any || c->name##_enable;
  DFCCL_COLLS(DFCCL_ANY_ENABLED)
  if (OMPI_COMM_IS_INTER(comm)) no = "an intercommunicator";
  else if (ompi_comm_size(comm) < 2) no = "a single rank";
  else if (making_boot_comm) no = "DFCCL's own bootstrap duplicate";
  else if (!c->host_target) no = "host buffers only (coll_dfccl_host_target is off; no GPU path yet)";
  else if (!any) no = "no collective enabled";
  if (no != NULL) {
    DFCCL_VERBOSE(10, "declines comm '%s': %s", comm->c_name, no);
    return NULL;
  }
  mca_coll_dfccl_module_t* m = OBJ_NEW(mca_coll_dfccl_module_t);
  if (m == NULL) return NULL;
  m->super.coll_module_enable = dfccl_module_enable;
#define DFCCL_PROVIDE(name) \
  if (c->name##_enable) m->super.coll_##name = mca_coll_dfccl_##name;
  DFCCL_COLLS(DFCCL_PROVIDE)
  *priority = c->priority;
  return &m->super;
}

/* ---- bootstrap ---------------------------------------------------------------------------------- */

/* DFCCL's bootstrap allgather, over the private duplicate (with the lower-priority allgather). */
static int boot_allgather(void* state, const int* ranks, int nranks, const void* sendbuf, void* recvbuf,
                          size_t bytes) {
  ompi_communicator_t* boot = ((dfccl_comm_t*)state)->boot;
  (void)ranks; /* DFCCL collectives of a communicator always span all of it */
  if (nranks != ompi_comm_size(boot) || bytes > INT_MAX) return 1;
  return boot->c_coll->coll_allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, boot,
                                      boot->c_coll->coll_allgather_module) != OMPI_SUCCESS;
}

/* True when `ok` holds on every rank (an allreduce over the bootstrap duplicate). */
static bool all_ranks(dfccl_comm_t* dc, bool ok) {
  int mine = ok, all = 0;
  ompi_communicator_t* boot = dc->boot;
  if (boot->c_coll->coll_allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, boot,
                                   boot->c_coll->coll_allreduce_module) != OMPI_SUCCESS)
    return false;
  return all != 0;
}

/* ---- teardown ----------------------------------------------------------------------------------- */

static void unlink_live(dfccl_comm_t* dc) {
  dfccl_comm_t** p = &live_first;
  live_last = NULL;
  for (dfccl_comm_t* it = live_first; it != NULL; it = it->next_live) {
    if (it == dc) *p = it->next_live;
    else live_last = it, p = &it->next_live;
  }
}

/* Collective over the communicator (dfcclDestroy meets the other ranks). */
static void destroy_comm(dfccl_comm_t* dc) {
  if (dc->ctx != NULL) {
    dfcclResult_t r = dfcclDestroy(dc->ctx);
    if (r != dfcclSuccess)
      opal_output(0, "coll:dfccl: dfcclDestroy on comm '%s': %s (%s)", dc->comm->c_name,
                  dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  }
  while (dc->colls != NULL) {
    dfccl_coll_t* next = dc->colls->next;
    free(dc->colls);
    dc->colls = next;
  }
  if (dc->boot != NULL) ompi_comm_free(&dc->boot);
  DFCCL_VERBOSE(1, "context of comm '%s' destroyed", dc->comm->c_name);
  if (dc->module != NULL) dc->module->dc = NULL;
  free(dc);
}

static int comm_freed(MPI_Comm comm, int keyval, void* attr, void* extra) {
  (void)comm, (void)keyval, (void)extra;
  mca_coll_dfccl_module_t* m = attr;
  m->unusable = true; /* no context again for this communicator */
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
    if (dc != NULL) unlink_live(dc);
    pthread_mutex_unlock(&live_lock);
    if (dc == NULL) return MPI_SUCCESS;
    if (dc->module != NULL) dc->module->unusable = true;
    destroy_comm(dc);
  }
}

static int no_copy(MPI_Comm oldcomm, int keyval, void* extra, void* in, void* out, int* flag,
                   MPI_Comm newcomm) {
  (void)oldcomm, (void)keyval, (void)extra, (void)in, (void)out, (void)newcomm;
  *flag = 0; /* a duplicate gets a context of its own on its first use */
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
  if (!finalize_hook_set) {
    int self_keyval = -1;
    rc = create_keyval(finalizing, &self_keyval);
    if (rc == OMPI_SUCCESS)
      rc = ompi_attr_set_c(COMM_ATTR, &ompi_mpi_comm_self.comm, &ompi_mpi_comm_self.comm.c_keyhash,
                           self_keyval, NULL, false);
    if (rc != OMPI_SUCCESS) return rc;
    finalize_hook_set = true;
  }
  if (comm_keyval < 0 && (rc = create_keyval(comm_freed, &comm_keyval)) != OMPI_SUCCESS) return rc;
  return ompi_attr_set_c(COMM_ATTR, comm, &comm->c_keyhash, comm_keyval, m, false);
}

/* ---- first use ---------------------------------------------------------------------------------- */

dfccl_comm_t* mca_coll_dfccl_comm_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  if (m->dc != NULL || m->unusable) return m->dc;
  dfccl_comm_t* dc = calloc(1, sizeof *dc);
  if (dc == NULL) { /* a rank-local failure before any exchange: the job cannot go on consistently */
    opal_output(0, "coll:dfccl: out of memory on comm '%s'", comm->c_name);
    ompi_mpi_abort(comm, 1);
  }
  dc->comm = comm;
  making_boot_comm = true;
  int rc = ompi_comm_dup(comm, &dc->boot);
  making_boot_comm = false;
  if (rc != OMPI_SUCCESS) { /* collective: fails alike on every rank */
    DFCCL_VERBOSE(1, "comm '%s': duplicating it for the bootstrap failed (%d): falling back", comm->c_name, rc);
    free(dc);
    m->unusable = true;
    return NULL;
  }

  dfcclInitArgs_t args = {.target = dfcclTargetHost,
                          .device = -1,
                          .bootstrap = {ompi_comm_rank(comm), ompi_comm_size(comm), boot_allgather, dc}};
  dfcclResult_t r = dfcclInit(&dc->ctx, &args);
  if (r != dfcclSuccess)
    opal_output(0, "coll:dfccl: dfcclInit on comm '%s': %s (%s)", comm->c_name, dfcclGetErrorString(r),
                dfcclGetLastErrorMessage());
  if (!all_ranks(dc, r == dfcclSuccess)) {
    /* dfcclDestroy is collective over all ranks and a rank without a context cannot take part:
     * the contexts that did start are left to process exit (a leak, not a hang). */
    opal_output(0, "coll:dfccl: comm '%s': DFCCL did not start on every rank: falling back", comm->c_name);
    m->unusable = true;
    if (r != dfcclSuccess) {
      ompi_comm_free(&dc->boot);
      free(dc);
    }
    return NULL;
  }

  dc->module = m;
  pthread_mutex_lock(&live_lock);
  rc = attach_teardown(m, comm);
  if (live_last != NULL) live_last->next_live = dc;
  else live_first = dc;
  live_last = dc;
  pthread_mutex_unlock(&live_lock);
  if (rc != OMPI_SUCCESS) opal_output(0, "coll:dfccl: comm '%s': no teardown hook (%d)", comm->c_name, rc);
  m->dc = dc;
  DFCCL_VERBOSE(1, "DFCCL context (host target) ready on comm '%s', rank %d of %d", comm->c_name,
                ompi_comm_rank(comm), ompi_comm_size(comm));
  return dc;
}

static const char* const kind_name[] = {"allreduce", "broadcast", "reduce", "allgather", "reduce-scatter"};

/* Registers (kind, count, dtype, op, root) as the next id: collective over the communicator. */
static dfccl_coll_t* register_coll(dfccl_comm_t* dc, dfccl_kind_t kind, size_t count, dfcclDataType_t dtype,
                                   dfcclRedOp_t op, int root) {
  dfccl_coll_t* c = calloc(1, sizeof *c);
  if (c == NULL) {
    opal_output(0, "coll:dfccl: out of memory on comm '%s'", dc->comm->c_name);
    ompi_mpi_abort(dc->comm, 1);
  }
  *c = (dfccl_coll_t){.next = dc->colls, .kind = kind, .root = root, .count = count, .dtype = dtype,
                      .op = op, .coll_id = dc->next_coll_id++};
  dfcclResult_t r = dfcclInvalidArgument;
  switch (kind) {
    case DFCCL_ALLREDUCE: r = dfcclRegisterAllReduce(dc->ctx, count, dtype, op, c->coll_id, NULL, 0, 0); break;
    case DFCCL_BROADCAST: r = dfcclRegisterBroadcast(dc->ctx, count, dtype, root, c->coll_id, NULL, 0, 0); break;
    case DFCCL_REDUCE: r = dfcclRegisterReduce(dc->ctx, count, dtype, op, root, c->coll_id, NULL, 0, 0); break;
    case DFCCL_ALLGATHER: r = dfcclRegisterAllGather(dc->ctx, count, dtype, c->coll_id, NULL, 0, 0); break;
    case DFCCL_REDUCE_SCATTER:
      r = dfcclRegisterReduceScatter(dc->ctx, count, dtype, op, c->coll_id, NULL, 0, 0);
      break;
  }
  if (r != dfcclSuccess)
    opal_output(0, "coll:dfccl: registering %s %d on comm '%s': %s (%s)", kind_name[kind], c->coll_id,
                dc->comm->c_name, dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  c->usable = all_ranks(dc, r == dfcclSuccess);
  dc->colls = c;
  DFCCL_VERBOSE(10, "comm '%s': %s %d registered (count %zu, dtype %d, op %d, root %d)%s", dc->comm->c_name,
                kind_name[kind], c->coll_id, count, (int)dtype, (int)op, root,
                c->usable ? "" : ": unusable, falling back");
  return c;
}

dfccl_coll_t* mca_coll_dfccl_coll_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_kind_t kind,
                                      size_t count, dfcclDataType_t dtype, dfcclRedOp_t op, int root,
                                      const char** why) {
  dfccl_comm_t* dc = mca_coll_dfccl_comm_get(m, comm);
  if (dc == NULL) {
    *why = "no DFCCL context";
    return NULL;
  }
  dfccl_coll_t* c = dc->colls;
  while (c != NULL && !(c->kind == kind && c->count == count && c->dtype == dtype && c->op == op && c->root == root))
    c = c->next;
  if (c == NULL) {
    if (dc->next_coll_id >= mca_coll_dfccl_component.max_colls) { /* alike on every rank */
      *why = "coll_dfccl_max_colls reached";
      return NULL;
    }
    c = register_coll(dc, kind, count, dtype, op, root);
  }
  if (!c->usable) {
    *why = "registration failed";
    return NULL;
  }
  return c;
}

int mca_coll_dfccl_run(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_coll_t* coll,
                       const void* send, void* recv) {
  dfcclRankCtx_t ctx = m->dc->ctx;
  dfccl_wait_t wait = {.done = 0, .status = dfcclSuccess};
  dfcclResult_t r = dfcclInvalidArgument;
  switch (coll->kind) {
    case DFCCL_ALLREDUCE: r = dfcclRunAllReduce(ctx, send, recv, coll->coll_id, mca_coll_dfccl_done, &wait); break;
    case DFCCL_BROADCAST: r = dfcclRunBroadcast(ctx, send, recv, coll->coll_id, mca_coll_dfccl_done, &wait); break;
    case DFCCL_REDUCE: r = dfcclRunReduce(ctx, send, recv, coll->coll_id, mca_coll_dfccl_done, &wait); break;
    case DFCCL_ALLGATHER: r = dfcclRunAllGather(ctx, send, recv, coll->coll_id, mca_coll_dfccl_done, &wait); break;
    case DFCCL_REDUCE_SCATTER:
      r = dfcclRunReduceScatter(ctx, send, recv, coll->coll_id, mca_coll_dfccl_done, &wait);
      break;
  }
  if (r == dfcclSuccess) r = mca_coll_dfccl_wait(&wait);
  if (r != dfcclSuccess) {
    opal_output(0, "coll:dfccl: %s %d on comm '%s' failed: %s (%s)", kind_name[coll->kind], coll->coll_id,
                comm->c_name, dfcclGetErrorString(r), dfcclGetLastErrorMessage());
    return OMPI_ERROR;
  }
  DFCCL_VERBOSE(10, "%s on comm '%s' (count %zu) ran as DFCCL collective %d", kind_name[coll->kind], comm->c_name,
                coll->count, coll->coll_id);
  return OMPI_SUCCESS;
}

/* ---- blocking wait ------------------------------------------------------------------------------ */

void mca_coll_dfccl_done(int coll_id, dfcclResult_t status, void* arg) {
  dfccl_wait_t* w = arg;
  (void)coll_id;
  w->status = status;
  atomic_store_explicit(&w->done, 1, memory_order_release);
}

dfcclResult_t mca_coll_dfccl_wait(dfccl_wait_t* w) {
  while (!atomic_load_explicit(&w->done, memory_order_acquire)) {
    opal_progress(); /* keeps MPI (other communicators, the bootstrap of others) moving */
    sched_yield();   /* DFCCL's daemon and poller threads share the cores */
  }
  return w->status;
}

/* ---- module object ------------------------------------------------------------------------------ */

static void module_construct(mca_coll_dfccl_module_t* m) {
#define DFCCL_CLEAR_PREV(name) m->prev_##name = NULL, m->prev_##name##_module = NULL;
  DFCCL_COLLS(DFCCL_CLEAR_PREV)
  m->dc = NULL;
  m->unusable = false;
}

static void module_destruct(mca_coll_dfccl_module_t* m) {
  /* The context went with the attribute callbacks; a communicator destroyed without them (none
   * known in 4.1) would leave its context to process exit. */
  if (m->dc != NULL) {
    m->dc->module = NULL;
    DFCCL_VERBOSE(1, "module destroyed before its context");
  }
#define DFCCL_RELEASE_PREV(name) \
  if (m->prev_##name##_module != NULL) OBJ_RELEASE(m->prev_##name##_module);
  DFCCL_COLLS(DFCCL_RELEASE_PREV)
}

OBJ_CLASS_INSTANCE(mca_coll_dfccl_module_t, mca_coll_base_module_t, module_construct, module_destruct);
