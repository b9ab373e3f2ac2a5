/*
 * coll/dfccl module: selection, the saved previous functions, the DFCCL context of a communicator,
 * its registry of DFCCL collectives, and the set-up points.
 *
 * Life of a communicator's context: created by its first set-up (a blocking collective that every
 * rank makes, in MPI order), with a private duplicate of the communicator carrying DFCCL's
 * bootstrap allgather; destroyed when the communicator is freed (attribute delete callback) or, for
 * communicators still alive, at the start of MPI_Finalize (an attribute on MPI_COMM_SELF), in
 * creation order so that the collective dfcclDestroy calls meet on every rank.  Runs still going
 * on it are completed first.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"
#include "coll_dfccl_dtypes.h"

#include <limits.h>
#include <stdlib.h>

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/output.h"

const char* const mca_coll_dfccl_kind_name[] = {"allreduce", "broadcast", "reduce", "allgather", "reduce-scatter"};

/* Set while this thread duplicates a communicator for a bootstrap: comm_query declines the
 * duplicate, and nonblocking calls (Open MPI's own, agreeing on the duplicate's id) fall back. */
static _Thread_local bool making_boot_comm;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static dfccl_comm_t* live_first; /* creation order */
static dfccl_comm_t* live_last;
static int comm_keyval = -1;     /* on each communicator with a context: its teardown    */
static bool finalize_hook_set;   /* an attribute on MPI_COMM_SELF: teardown at finalize  */

/* ---- selection ---------------------------------------------------------------------------------- */

static bool any_nonblocking_enabled(void) {
  const mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  return c->iallreduce_enable || c->ibcast_enable || c->ireduce_enable || c->iallgather_enable ||
         c->ireduce_scatter_block_enable || c->ireduce_scatter_enable;
}

static int dfccl_module_enable(mca_coll_base_module_t* module, ompi_communicator_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  /* Lower-priority modules have been enabled: comm->c_coll holds what we fall back to, for each
   * collective this module provides (comm_query set only the enabled ones). */
#define DFCCL_SAVE_PREV(name, mpi)                                                                \
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
  DFCCL_SAVE_PREV(barrier, "MPI_Barrier")
  DFCCL_VERBOSE(1, "enabled on comm '%s' (cid %d, size %d)", comm->c_name, ompi_comm_get_cid(comm),
                ompi_comm_size(comm));
  return OMPI_SUCCESS;
}

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority) {
  const mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  const char* no = NULL;
  bool any = false;
#define DFCCL_ANY_ENABLED(name, mpi) any = any || c->name##_enable;
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
#define DFCCL_PROVIDE(name, mpi) \
  if (c->name##_enable) m->super.coll_##name = mca_coll_dfccl_##name;
  DFCCL_COLLS(DFCCL_PROVIDE)
  /* Only nonblocking calls ask for set-up, and MPI_Barrier is one more place that does it. */
  if (any_nonblocking_enabled()) m->super.coll_barrier = mca_coll_dfccl_barrier;
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
  /* MPI lets a communicator be freed with nonblocking collectives outstanding: they complete
   * normally, and queued runs still need DFCCL. */
  mca_coll_dfccl_drain(dc);
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
  pthread_mutex_destroy(&dc->lock);
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

static void* alloc_or_abort(size_t bytes, ompi_communicator_t* comm) {
  void* p = calloc(1, bytes);
  if (p == NULL) { /* a rank-local failure inside a collective set-up: the job cannot go on consistently */
    opal_output(0, "coll:dfccl: out of memory on comm '%s'", comm->c_name);
    ompi_mpi_abort(comm, 1);
  }
  return p;
}

/* The communicator's DFCCL context, created on first use: collective over comm. */
static dfccl_comm_t* comm_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  if (m->dc != NULL || m->unusable) return m->dc;
  dfccl_comm_t* dc = alloc_or_abort(sizeof *dc, comm);
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

  /* Requests complete from the progress callback: without it there is no DFCCL for us. */
  dfcclResult_t r = dfcclSystemError;
  if ((rc = mca_coll_dfccl_progress_register()) != OMPI_SUCCESS) {
    opal_output(0, "coll:dfccl: comm '%s': registering the progress callback failed (%d)", comm->c_name, rc);
  } else {
    dfcclInitArgs_t args = {.target = dfcclTargetHost,
                            .device = -1,
                            .bootstrap = {ompi_comm_rank(comm), ompi_comm_size(comm), boot_allgather, dc}};
    r = dfcclInit(&dc->ctx, &args);
    if (r != dfcclSuccess)
      opal_output(0, "coll:dfccl: dfcclInit on comm '%s': %s (%s)", comm->c_name, dfcclGetErrorString(r),
                  dfcclGetLastErrorMessage());
  }
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

  pthread_mutex_init(&dc->lock, NULL);
  atomic_init(&dc->pending, 0);
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

static bool sig_equal(const dfccl_sig_t* a, const dfccl_sig_t* b) {
  return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->op == b->op && a->root == b->root;
}

static dfccl_coll_t* find_coll(const dfccl_comm_t* dc, const dfccl_sig_t* sig) {
  dfccl_coll_t* c = dc != NULL ? dc->colls : NULL;
  while (c != NULL && !sig_equal(&c->sig, sig)) c = c->next;
  return c;
}

static dfcclResult_t register_one(dfccl_comm_t* dc, const dfccl_sig_t* s, int id) {
  switch (s->kind) {
    case DFCCL_ALLREDUCE: return dfcclRegisterAllReduce(dc->ctx, s->count, s->dtype, s->op, id, NULL, 0, 0);
    case DFCCL_BROADCAST: return dfcclRegisterBroadcast(dc->ctx, s->count, s->dtype, s->root, id, NULL, 0, 0);
    case DFCCL_REDUCE: return dfcclRegisterReduce(dc->ctx, s->count, s->dtype, s->op, s->root, id, NULL, 0, 0);
    case DFCCL_ALLGATHER: return dfcclRegisterAllGather(dc->ctx, s->count, s->dtype, id, NULL, 0, 0);
    case DFCCL_REDUCE_SCATTER: return dfcclRegisterReduceScatter(dc->ctx, s->count, s->dtype, s->op, id, NULL, 0, 0);
  }
  return dfcclInvalidArgument;
}

static int pool_size(void) {
  int n = mca_coll_dfccl_component.concurrent_runs;
  return n < 1 ? 1 : n > DFCCL_MAX_CONCURRENT_RUNS ? DFCCL_MAX_CONCURRENT_RUNS : n;
}

/* Registers slots [c->nslots, nslots) of c: collective over the communicator.  They are used only
 * if every rank registered them all. */
static bool grow_coll(dfccl_comm_t* dc, dfccl_coll_t* c, int nslots) {
  int first = c->nslots;
  dfcclResult_t r = dfcclSuccess;
  for (int i = first; i < nslots; i++) {
    /* Every slot is registered even after a failure: the other ranks register them all (a failed
     * registration fails on every participant, so none of them waits for us). */
    c->slots[i].coll_id = dc->next_coll_id++;
    dfcclResult_t ri = register_one(dc, &c->sig, c->slots[i].coll_id);
    if (ri == dfcclSuccess) continue;
    opal_output(0, "coll:dfccl: registering %s %d on comm '%s': %s (%s)", mca_coll_dfccl_kind_name[c->sig.kind],
                c->slots[i].coll_id, dc->comm->c_name, dfcclGetErrorString(ri), dfcclGetLastErrorMessage());
    if (r == dfcclSuccess) r = ri;
  }
  bool ok = all_ranks(dc, r == dfcclSuccess);
  if (ok) {
    pthread_mutex_lock(&dc->lock);
    c->nslots = nslots;
    pthread_mutex_unlock(&dc->lock);
  }
  DFCCL_VERBOSE(10, "comm '%s': %s (count %zu, dtype %d, op %d, root %d) registered as %d..%d%s", dc->comm->c_name,
                mca_coll_dfccl_kind_name[c->sig.kind], c->sig.count, (int)c->sig.dtype, (int)c->sig.op, c->sig.root,
                c->slots[first].coll_id, c->slots[nslots - 1].coll_id, ok ? "" : ": failed, not used");
  return ok;
}

/* Registers `sig` with `nslots` slots: collective over the communicator. */
static dfccl_coll_t* register_coll(dfccl_comm_t* dc, const dfccl_sig_t* sig, int nslots) {
  dfccl_coll_t* c = alloc_or_abort(sizeof *c, dc->comm);
  c->sig = *sig;
  c->usable = grow_coll(dc, c, nslots);
  c->next = dc->colls;
  dc->colls = c;
  dc->ncolls++;
  return c;
}

/* Blocking: the context and the signature's collectives (at least `nslots` of them), set up on
 * first use. */
static dfccl_coll_t* set_up_coll(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                                 int nslots, const char** why) {
  dfccl_comm_t* dc = comm_get(m, comm);
  if (dc == NULL) {
    *why = "no DFCCL context";
    return NULL;
  }
  dfccl_coll_t* c = find_coll(dc, sig);
  if (c == NULL) {
    if (dc->ncolls >= mca_coll_dfccl_component.max_colls) { /* alike on every rank */
      *why = "coll_dfccl_max_colls reached";
      return NULL;
    }
    return register_coll(dc, sig, nslots);
  }
  if (c->usable && c->nslots < nslots) (void)grow_coll(dc, c, nslots); /* if it fails, the pool stays */
  return c;
}

static bool is_wanted(const mca_coll_dfccl_module_t* m, const dfccl_sig_t* sig) {
  for (const dfccl_wanted_t* w = m->wanted; w != NULL; w = w->next)
    if (sig_equal(&w->sig, sig)) return true;
  return false;
}

static void want(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig, bool is_new) {
  dfccl_wanted_t* w = alloc_or_abort(sizeof *w, comm);
  w->sig = *sig;
  w->is_new = is_new;
  if (m->wanted_last != NULL) m->wanted_last->next = w;
  else m->wanted = w;
  m->wanted_last = w;
  m->nwanted_new += is_new;
}

/* Nonblocking: what is set up already; asks the next set-up point for the rest (and for a full
 * pool).  Everything here depends on the calls made on the communicator so far, in MPI order, so
 * it is alike on every rank. */
static dfccl_coll_t* ready_coll(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                                const char** why) {
  if (making_boot_comm) { /* Open MPI agreeing on our duplicate's id: nothing of the user's */
    *why = "DFCCL's set-up is running";
    return NULL;
  }
  dfccl_coll_t* c = find_coll(m->dc, sig);
  bool wanted = is_wanted(m, sig);
  if (c != NULL) {
    if (c->usable && c->nslots < pool_size() && !wanted) want(m, comm, sig, false);
    return c;
  }
  if (m->unusable) {
    *why = "no DFCCL context";
  } else if (wanted) {
    *why = "not set up yet (the next blocking collective on the communicator does it)";
  } else if ((m->dc != NULL ? m->dc->ncolls : 0) + m->nwanted_new >= mca_coll_dfccl_component.max_colls) {
    *why = "coll_dfccl_max_colls reached";
  } else {
    want(m, comm, sig, true);
    *why = "not set up yet (asked for: the next blocking collective on the communicator does it)";
  }
  return NULL;
}

dfccl_coll_t* mca_coll_dfccl_coll_for(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                      dfccl_sig_t* sig, int count, struct ompi_datatype_t* dtype,
                                      struct ompi_op_t* op, const char** why) {
  if (count <= 0) { *why = "count"; return NULL; } /* 4.1's MPI layer returns before count 0 */
  sig->count = (size_t)count;
  if (op == NULL) {
    sig->op = dfcclSum; /* unused by data movement; fixed, so that signatures compare equal */
    if (!dfccl_move_dtype_of(dtype, &sig->dtype)) { *why = "datatype"; return NULL; }
  } else {
    if (!dfccl_dtype_of(dtype, &sig->dtype)) { *why = "datatype"; return NULL; }
    if (!dfccl_op_of(op, &sig->op)) { *why = "op"; return NULL; }
  }
  return mca_coll_dfccl_coll_get(m, comm, form, sig, why);
}

dfccl_coll_t* mca_coll_dfccl_coll_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                      const dfccl_sig_t* sig, const char** why) {
  dfccl_coll_t* c = form == DFCCL_BLOCKING ? set_up_coll(m, comm, sig, 1, why) : ready_coll(m, comm, sig, why);
  if (c != NULL && !c->usable) {
    *why = "registration failed";
    return NULL;
  }
  return c;
}

/* ---- set-up points ------------------------------------------------------------------------------ */

void mca_coll_dfccl_set_up_wanted(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  while (m->wanted != NULL) {
    dfccl_wanted_t* w = m->wanted;
    m->wanted = w->next;
    if (m->wanted == NULL) m->wanted_last = NULL;
    m->nwanted_new -= w->is_new;
    const char* why = NULL;
    if (set_up_coll(m, comm, &w->sig, pool_size(), &why) == NULL)
      DFCCL_VERBOSE(10, "comm '%s': %s (count %zu) asked for by a nonblocking call is not set up: %s", comm->c_name,
                    mca_coll_dfccl_kind_name[w->sig.kind], w->sig.count, why);
    free(w);
  }
}

int mca_coll_dfccl_barrier(struct ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  mca_coll_dfccl_set_up_wanted(m, comm);
  return m->prev_barrier(comm, m->prev_barrier_module);
}

/* ---- module object ------------------------------------------------------------------------------ */

static void module_construct(mca_coll_dfccl_module_t* m) {
#define DFCCL_CLEAR_PREV(name, mpi) m->prev_##name = NULL, m->prev_##name##_module = NULL;
  DFCCL_COLLS(DFCCL_CLEAR_PREV)
  DFCCL_CLEAR_PREV(barrier, "MPI_Barrier")
  m->dc = NULL;
  m->unusable = false;
  m->wanted = m->wanted_last = NULL;
  m->nwanted_new = 0;
}

static void module_destruct(mca_coll_dfccl_module_t* m) {
  /* The context went with the attribute callbacks; a communicator destroyed without them (none
   * known in 4.1) would leave its context to process exit. */
  if (m->dc != NULL) {
    m->dc->module = NULL;
    DFCCL_VERBOSE(1, "module destroyed before its context");
  }
  while (m->wanted != NULL) {
    dfccl_wanted_t* next = m->wanted->next;
    free(m->wanted);
    m->wanted = next;
  }
#define DFCCL_RELEASE_PREV(name, mpi) \
  if (m->prev_##name##_module != NULL) OBJ_RELEASE(m->prev_##name##_module);
  DFCCL_COLLS(DFCCL_RELEASE_PREV)
  DFCCL_RELEASE_PREV(barrier, "MPI_Barrier")
}

OBJ_CLASS_INSTANCE(mca_coll_dfccl_module_t, mca_coll_base_module_t, module_construct, module_destruct);
