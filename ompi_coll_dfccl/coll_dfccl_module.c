/*
 * coll/dfccl module: selection, the saved previous functions, the communicator's registry of DFCCL
 * collectives (signatures and their pools), and the set-up points.  The DFCCL context behind it is
 * in coll_dfccl_context.c.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"
#include "coll_dfccl_dtypes.h"

#include <stdlib.h>

#include "opal/util/output.h"

const char* const mca_coll_dfccl_kind_name[] = {"allreduce", "broadcast", "reduce", "allgather", "reduce-scatter"};

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
  else if (mca_coll_dfccl_is_boot_duplicate(comm)) no = "DFCCL's own bootstrap duplicate";
  else if (!c->host_target && dfcclDeviceCount() == 0) no = "no GPU here (and coll_dfccl_host_target is off)";
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

/* ---- the registry ------------------------------------------------------------------------------ */

static bool sig_equal(const dfccl_sig_t* a, const dfccl_sig_t* b) {
  return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->op == b->op &&
         a->root == b->root && a->target == b->target;
}

static dfccl_coll_t* find_coll(const dfccl_comm_t* dc, const dfccl_sig_t* sig) {
  dfccl_coll_t* c = dc != NULL ? dc->colls : NULL;
  while (c != NULL && !sig_equal(&c->sig, sig)) c = c->next;
  return c;
}

/* 1..DFCCL_MAX_CONCURRENT_RUNS: the component refuses any other coll_dfccl_concurrent_runs. */
static int pool_size(void) { return mca_coll_dfccl_component.concurrent_runs; }

/* Registers slots [c->nslots, nslots) of c: collective over the communicator.  They are used only
 * if every rank registered them all. */
static bool grow_coll(dfccl_comm_t* dc, dfccl_coll_t* c, int nslots) {
  int first = c->nslots;
  dfcclResult_t r = dfcclSuccess;
  for (int i = first; i < nslots; i++) {
    /* Every slot is registered even after a failure: the other ranks register them all (a failed
     * registration fails on every participant, so none of them waits for us). */
    /* At most max_colls signatures of at most DFCCL_MAX_CONCURRENT_RUNS: within the communicator's ids. */
    c->slots[i].coll_id = dc->next_coll_id++;
    dfcclResult_t ri = mca_coll_dfccl_register(c->ctx, dc, &c->sig, c->slots[i].coll_id);
    c->slots[i].registered = ri == dfcclSuccess;
    if (ri == dfcclSuccess) continue;
    opal_output(0, "coll:dfccl: registering %s %d on comm '%s': %s (%s)", mca_coll_dfccl_kind_name[c->sig.kind],
                c->slots[i].coll_id, dc->comm->c_name, dfcclGetErrorString(ri), dfcclGetLastErrorMessage());
    if (r == dfcclSuccess) r = ri;
  }
  bool ok = mca_coll_dfccl_all_ranks(dc, r == dfcclSuccess);
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
  dfccl_coll_t* c = mca_coll_dfccl_alloc_or_abort(sizeof *c, dc->comm);
  c->sig = *sig;
  /* Its target's context may be missing on some member (dfcclInit failed, another GPU): then
   * nobody registers it, and it falls back everywhere. */
  c->ctx = mca_coll_dfccl_process_context(sig->target, sig->device);
  c->usable = mca_coll_dfccl_all_ranks(dc, c->ctx != NULL) && grow_coll(dc, c, nslots);
  c->next = dc->colls;
  dc->colls = c;
  dc->ncolls++;
  return c;
}

/* Blocking: the context and the signature's collectives (at least `nslots` of them), set up on
 * first use. */
static dfccl_coll_t* set_up_coll(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                                 int nslots, const char** why) {
  dfccl_comm_t* dc = mca_coll_dfccl_comm_context(m, comm);
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
  dfccl_wanted_t* w = mca_coll_dfccl_alloc_or_abort(sizeof *w, comm);
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
  if (atomic_load(&m->duplicating)) { /* Open MPI agreeing on our duplicate's id: nothing of the user's */
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

/* Where a call's buffers are (NULL and MPI_IN_PLACE aside): the cuda target when they are all
 * device (or managed) memory of one GPU, the host target in the test mode when they are all host
 * memory; otherwise the call falls back.  MPI lets each rank pass its own kind of memory: the rule
 * that every rank passes the same kind (all device, or all host) is the user's to keep, as with
 * every CUDA-aware MPI collective (README). */
static bool buffers_target(const void* a, const void* b, dfccl_sig_t* sig, const char** why) {
  const void* bufs[2] = {a, b};
  int device = -1, ndevice = 0, nhost = 0;
  for (int i = 0; i < 2; i++) {
    if (bufs[i] == NULL || bufs[i] == MPI_IN_PLACE) continue;
    dfcclMemoryKind_t kind;
    int dev = -1;
    if (dfcclPointerGetKind(bufs[i], &kind, &dev) != dfcclSuccess) {
      *why = "the buffer's memory could not be told";
      return false;
    }
    if (kind == dfcclMemoryHost) { nhost++; continue; }
    if (ndevice++ > 0 && dev != device) { *why = "buffers on two GPUs"; return false; }
    device = dev;
  }
  if (ndevice > 0 && nhost > 0) { *why = "host and device buffers mixed"; return false; }
  if (ndevice > 0) {
    sig->target = dfcclTargetCuda;
    sig->device = device;
    return true;
  }
  if (!mca_coll_dfccl_component.host_target) {
    *why = "host buffers (coll_dfccl_host_target is off)";
    return false;
  }
  sig->target = dfcclTargetHost;
  sig->device = -1;
  return true;
}

dfccl_coll_t* mca_coll_dfccl_coll_for(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                      dfccl_sig_t* sig, const void* send, const void* recv, int count,
                                      struct ompi_datatype_t* dtype, struct ompi_op_t* op, const char** why) {
  /* Count 0 reaches us from MPI_Iallgather and some persistent inits (the 4.1 MPI layer answers the
   * others itself): the previous component handles it. */
  if (count <= 0) { *why = "count"; return NULL; }
  sig->count = (size_t)count;
  if (op == NULL) {
    sig->op = dfcclSum; /* unused by data movement; fixed, so that signatures compare equal */
    if (!dfccl_move_dtype_of(dtype, &sig->dtype)) { *why = "datatype"; return NULL; }
  } else {
    if (!dfccl_dtype_of(dtype, &sig->dtype)) { *why = "datatype"; return NULL; }
    if (!dfccl_op_of(op, &sig->op)) { *why = "op"; return NULL; }
  }
  if (!buffers_target(send, recv, sig, why)) return NULL;
  return mca_coll_dfccl_coll_get(m, comm, form, sig, why);
}

dfccl_coll_t* mca_coll_dfccl_coll_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                      const dfccl_sig_t* sig, const char** why) {
  int nslots = form == DFCCL_PERSISTENT ? pool_size() : 1;
  dfccl_coll_t* c = form == DFCCL_NONBLOCKING ? ready_coll(m, comm, sig, why) : set_up_coll(m, comm, sig, nslots, why);
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
  atomic_init(&m->duplicating, false);
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
