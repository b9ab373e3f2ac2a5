/*
 * coll/dfccl module: selection, the saved previous functions, and the communicator's registry of
 * signatures, each with its route -- decided at its first call, the same on every rank:
 *   - a blocking call or a persistent init may wait for the other ranks (MPI makes them all make
 *     that call): they agree, from each rank's buffers, on DFCCL where every rank's buffers suit
 *     it, else on the previous component (host memory everywhere stays off the GPU);
 *   - a nonblocking call must not wait: it takes DFCCL on the process's target whatever the
 *     buffers -- every rank alike, since the signature is the same everywhere -- and a rank whose
 *     buffers are elsewhere runs on copies (coll_dfccl_buffers.c).
 * Later calls of a signature, in any form, go where its first call went.  The DFCCL context
 * behind it is in coll_dfccl_context.c.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"
#include "coll_dfccl_dtypes.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

const char* const mca_coll_dfccl_kind_name[] = {[dfcclAllReduce] = "allreduce",
                                                [dfcclAllGather] = "allgather",
                                                [dfcclReduceScatter] = "reduce-scatter",
                                                [dfcclBroadcast] = "broadcast",
                                                [dfcclReduce] = "reduce",
                                                [dfcclAllToAll] = "alltoall",
                                                [dfcclAllGatherV] = "allgatherv",
                                                [dfcclReduceScatterV] = "reduce-scatter-v"};

/* ---- selection ---------------------------------------------------------------------------------- */

static int dfccl_module_enable(mca_coll_base_module_t* module, ompi_communicator_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  /* Lower-priority modules have been enabled: comm->c_coll holds what we fall back to, for each
   * collective this module provides (comm_query set only the enabled ones). */
  /* A slot that no lower-priority module fills stays Open MPI's business: ours is withdrawn (the
   * base copies only the slots a module leaves set after its enable). */
#define DFCCL_SAVE_PREV(name, mpi, fn)                                                         \
  if (m->super.coll_##name != NULL) {                                                          \
    m->prev_##name = comm->c_coll->coll_##name;                                                \
    m->prev_##name##_module = comm->c_coll->coll_##name##_module;                              \
    if (m->prev_##name == NULL || m->prev_##name##_module == NULL) {                           \
      m->prev_##name = NULL;                                                                   \
      m->prev_##name##_module = NULL;                                                          \
      m->super.coll_##name = NULL;                                                             \
      DFCCL_VERBOSE(10, "no previous " #name " on comm '%s': left to Open MPI", comm->c_name); \
    } else {                                                                                   \
      OBJ_RETAIN(m->prev_##name##_module);                                                     \
    }                                                                                          \
  }
  DFCCL_ENTRIES(DFCCL_SAVE_PREV)
  DFCCL_VERBOSE(1, "enabled on comm '%s' (cid %d, size %d)", comm->c_name, ompi_comm_get_cid(comm),
                ompi_comm_size(comm));
  return OMPI_SUCCESS;
}

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority) {
  const mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  if (mca_coll_dfccl_world_rank < 0) mca_coll_dfccl_world_rank = ompi_comm_rank(&ompi_mpi_comm_world.comm);
  const char* no = NULL;
  bool any = false;
#define DFCCL_ANY_ENABLED(name, mpi, fn) any = any || c->name##_enable;
  DFCCL_ENTRIES(DFCCL_ANY_ENABLED)
  /* Communicators of one rank too: the previous component there (coll/self) would copy device
   * buffers with memcpy; coll_dfccl_local.c copies them right.  Intercommunicators too: DFCCL runs
   * nothing on them, but their device buffers must reach coll/inter as host copies. */
  if (!c->host_target && dfcclDeviceCount() == 0) no = "no GPU here (and coll_dfccl_host_target is off)";
  else if (!any) no = "no collective enabled";
  if (no != NULL) {
    DFCCL_VERBOSE(10, "declines comm '%s': %s", comm->c_name, no);
    return NULL;
  }
  mca_coll_dfccl_module_t* m = OBJ_NEW(mca_coll_dfccl_module_t);
  if (m == NULL) return NULL;
  m->super.coll_module_enable = dfccl_module_enable;
#define DFCCL_PROVIDE(name, mpi, fn) \
  if (c->name##_enable) m->super.coll_##name = mca_coll_dfccl_##name;
  DFCCL_ENTRIES(DFCCL_PROVIDE)
  *priority = c->priority;
  return &m->super;
}

/* ---- the registry ------------------------------------------------------------------------------ */

/* Signatures routed to the previous component that a communicator remembers at most; later new
 * ones fall back without an agreement (alike on every rank: the count is). */
#define DFCCL_MAX_PREVIOUS 1024

static bool sig_equal(const dfccl_sig_t* a, const dfccl_sig_t* b) {
  return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->op == b->op && a->root == b->root &&
         a->blocks == b->blocks; /* interned: equal tables, equal pointers */
}

/* An interned all-gather-v table (mca_coll_dfccl_intern_blocks). */
typedef struct dfccl_layout {
  struct dfccl_layout* next;
  int n;
  uint64_t bytes[]; /* [n] */
} dfccl_layout_t;

const uint64_t* mca_coll_dfccl_intern_blocks(mca_coll_dfccl_module_t* m, const uint64_t* bytes, int n) {
  size_t size = (size_t)n * sizeof *bytes;
  for (dfccl_layout_t* l = m->layouts; l != NULL; l = l->next)
    if (l->n == n && memcmp(l->bytes, bytes, size) == 0) return l->bytes;
  if (m->nlayouts >= DFCCL_MAX_LAYOUTS) return NULL; /* alike on every rank: the tables are */
  dfccl_layout_t* l = malloc(sizeof *l + size);
  if (l == NULL) return NULL;
  l->n = n;
  memcpy(l->bytes, bytes, size);
  l->next = m->layouts;
  m->layouts = l;
  m->nlayouts++;
  return l->bytes;
}

static dfccl_coll_t* find_coll(const dfccl_comm_t* dc, const dfccl_sig_t* sig) {
  dfccl_coll_t* c = dc != NULL ? dc->colls : NULL;
  while (c != NULL && !sig_equal(&c->sig, sig)) c = c->next;
  return c;
}

static const dfccl_decided_t* find_previous(const mca_coll_dfccl_module_t* m, const dfccl_sig_t* sig) {
  const dfccl_decided_t* d = m->previous;
  while (d != NULL && !sig_equal(&d->sig, sig)) d = d->next;
  return d;
}

/* The signature goes to the previous component from now on; NULL (the call falls back) with *why. */
static dfccl_coll_t* route_to_previous(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                                       const char* reason, const char** why) {
  dfccl_decided_t* d = mca_coll_dfccl_alloc_or_abort(sizeof *d, comm);
  d->sig = *sig;
  d->why = reason;
  d->next = m->previous;
  m->previous = d;
  m->nprevious++;
  *why = reason;
  return NULL;
}

/* The widest unsigned type (8, 4, 2 or 1 bytes) whose size divides every byte count of a
 * signature that only moves bytes (mca_coll_dfccl_coll_for_bytes: dfcclUint8 -- a reduction of
 * MPI_UINT8_T has that type too, and stays in bytes).  The daemon copies
 * blocks that are not 16-byte aligned alike element by element, so bytes as 4-byte words move 4x
 * faster there -- all-gather-v's uneven blocks through MPI_Allgatherv took 2x the core API's time
 * on floats (docs/performance.md, eighteenth session).  Every rank derives it from the same
 * signature. */
static size_t moved_unit(const dfccl_sig_t* s, int n) {
  bool moves =
      s->kind == dfcclAllGather || s->kind == dfcclAllGatherV || s->kind == dfcclAllToAll || s->kind == dfcclBroadcast;
  if (s->dtype != dfcclUint8 || !moves) return 1;
  uint64_t all = s->count;
  for (int i = 0; s->blocks != NULL && i < n; i++) all |= s->blocks[i];
  return all % 8 == 0 ? 8 : all % 4 == 0 ? 4 : all % 2 == 0 ? 2 : 1;
}

/* What each run of c submits.  The v collectives' blocks go in DFCCL's elements: all-gather-v's
 * table counts bytes (as the count does, moved in units of moved_unit); reduce-scatter-v's counts
 * MPI elements, and its count says how many of DFCCL's make all of them (two per complex number). */
static void describe(dfccl_coll_t* c, int n, ompi_communicator_t* comm) {
  const dfccl_sig_t* s = &c->sig;
  static const dfcclDataType_t unit_type[] = {
      [1] = dfcclUint8, [2] = dfcclUint16, [4] = dfcclUint32, [8] = dfcclUint64};
  size_t unit = moved_unit(s, n);
  c->desc = (dfcclCollDesc_t){.kind = s->kind,
                              .count = s->count / unit,
                              .dtype = unit == 1 ? s->dtype : unit_type[unit],
                              .op = s->op,
                              .root = s->root >= 0 ? s->root : 0};
  if (s->blocks == NULL) return;
  c->counts = mca_coll_dfccl_alloc_or_abort((size_t)n * sizeof *c->counts, comm);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += s->blocks[i];
  size_t per_element = s->kind == dfcclReduceScatterV && total > 0 ? s->count / total : 1;
  for (int i = 0; i < n; i++) c->counts[i] = (size_t)s->blocks[i] * per_element / unit;
  c->desc.counts = c->counts; /* displs NULL: packed (a rank laid out otherwise runs on a packed copy) */
}

static dfccl_coll_t* add_coll(dfccl_comm_t* dc, const dfccl_sig_t* sig, dfccl_route_t route, int device) {
  dfccl_coll_t* c = mca_coll_dfccl_alloc_or_abort(sizeof *c, dc->comm);
  c->sig = *sig;
  c->route = route;
  c->device = device;
  pthread_mutex_init(&c->spare_lock, NULL);
  describe(c, dc->size, dc->comm);
  c->next = dc->colls;
  dc->colls = c;
  dc->ncolls++;
  DFCCL_VERBOSE(10, "comm '%s': %s (count %zu, dtype %d, op %d, root %d) runs on DFCCL", dc->comm->c_name,
                mca_coll_dfccl_kind_name[sig->kind], sig->count, (int)sig->dtype, (int)sig->op, sig->root);
  return c;
}

/* The signature runs on DFCCL by `route` from now on; NULL (the call falls back) where the
 * communicator cannot (alike on every rank). */
static dfccl_coll_t* new_coll(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                              dfccl_route_t route, int device, const char** why) {
  dfccl_comm_t* dc = mca_coll_dfccl_comm_context(m, comm);
  if (dc == NULL) return route_to_previous(m, comm, sig, "no DFCCL context for the communicator", why);
  if (dc->ncolls >= mca_coll_dfccl_component.max_colls)
    return route_to_previous(m, comm, sig, "coll_dfccl_max_colls reached", why);
  return add_coll(dc, sig, route, device);
}

/* The route of a new signature, agreed among the ranks from their wishes: a DFCCL route when every
 * rank wishes for it, else the previous component (where each rank stages its device buffers).
 * One allreduce over the communicator with the previous component's allreduce on host memory:
 * the first call is a blocking collective (or persistent init) that every rank makes, so they all
 * make this one too, in the same order.  Deciding on each rank's own buffers instead would send ranks that pass device
 * memory to DFCCL and ranks that pass host memory to the previous component: each would wait for
 * the others forever. */
static dfccl_route_t agree_route(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_route_t wish) {
  if (!mca_coll_dfccl_component.agree_routes) return wish; /* the twin: see coll_dfccl_agree_routes */
  int mine[2] = {(int)wish, -(int)wish}, all[2];
  mca_coll_base_module_allreduce_fn_t allreduce = m->prev_allreduce;
  mca_coll_base_module_t* module = m->prev_allreduce_module;
  if (allreduce == NULL) { /* our MPI_Allreduce is disabled: the communicator's is another's */
    allreduce = comm->c_coll->coll_allreduce;
    module = comm->c_coll->coll_allreduce_module;
  }
  if (allreduce(mine, all, 2, MPI_INT, MPI_MIN, comm, module) != OMPI_SUCCESS) {
    opal_output(0, "coll:dfccl: comm '%s': agreeing on a collective's route failed", comm->c_name);
    ompi_mpi_abort(comm, 1); /* the ranks could not tell whether they agree: no consistent way on */
  }
  return all[0] == -all[1] ? (dfccl_route_t)all[0] : DFCCL_ROUTE_PREVIOUS;
}

/* Blocking: the signature's route, agreed on first use.  NULL, with *why, for the previous
 * component. */
static dfccl_coll_t* agree_coll(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                                dfccl_memory_t memory, const char** why) {
  /* What every rank knows alike needs no agreement (nor a DFCCL context for the buffers). */
  if (m->dc != NULL && m->dc->ncolls >= mca_coll_dfccl_component.max_colls)
    return route_to_previous(m, comm, sig, "coll_dfccl_max_colls reached", why);
  mca_coll_dfccl_memory_available(&memory);
  dfccl_route_t route = agree_route(m, comm, memory.route);
  if (route == DFCCL_ROUTE_PREVIOUS) {
    const char* reason = memory.route == DFCCL_ROUTE_PREVIOUS
                             ? memory.why
                             : "the ranks' buffers are in different kinds of memory (decided at its first use)";
    return route_to_previous(m, comm, sig, reason, why);
  }
  /* Every rank wished for this route only with a context of its own for it (coll_dfccl_buffers.c). */
  return new_coll(m, comm, sig, route, memory.device, why);
}

/* Nonblocking: a new signature runs on DFCCL on the process's target, decided by what every rank
 * knows alike (the signature, the calls made on the communicator before, the component's
 * parameters), never by the buffers: the ranks cannot wait to compare them here.  A rank whose
 * buffers are not in the target's memory runs on copies.  The process context must exist for it:
 * a rank without one could not take part, and the others would wait for it. */
static dfccl_coll_t* decide_coll(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_sig_t* sig,
                                 dfccl_memory_t memory, const char** why) {
  dfccl_route_t route =
      mca_coll_dfccl_component.host_target != DFCCL_HOST_TARGET_OFF ? DFCCL_ROUTE_HOST : DFCCL_ROUTE_CUDA;
  int device = memory.route == DFCCL_ROUTE_CUDA ? memory.device : -1;
  dfcclTarget_t target = mca_coll_dfccl_route_target(route);
  if (mca_coll_dfccl_process_context(target, &device) == NULL &&
      (device = -1, mca_coll_dfccl_process_context(target, &device) == NULL)) {
    opal_output(0, "coll:dfccl: comm '%s': a nonblocking %s needs DFCCL's %s context, which this rank has not",
                comm->c_name, mca_coll_dfccl_kind_name[sig->kind], target == dfcclTargetCuda ? "GPU" : "host-target");
    ompi_mpi_abort(comm, 1);
  }
  return new_coll(m, comm, sig, route, device, why);
}

/* The communicator's collective for `sig`, decided at its first call: a blocking call or a
 * persistent init (where MPI lets a rank wait for the others) agrees on the route with the other
 * ranks from each one's wish (`memory`, of this call's buffers); a nonblocking call, which must not
 * wait, takes the process's DFCCL target whatever its buffers (memory only says the GPU), which
 * every rank does alike.  NULL, with *why set, when the call goes to the previous component; the
 * decision is the same on every rank. */
static dfccl_coll_t* coll_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                              const dfccl_sig_t* sig, dfccl_memory_t memory, const char** why) {
  dfccl_coll_t* c = find_coll(m->dc, sig);
  if (c != NULL) return c;
  const dfccl_decided_t* d = find_previous(m, sig);
  if (d != NULL) {
    *why = d->why;
    return NULL;
  }
  if (m->nprevious >= DFCCL_MAX_PREVIOUS) {
    *why = "too many signatures on this communicator";
    return NULL;
  }
  if (m->unusable) return route_to_previous(m, comm, sig, "no DFCCL context for the communicator", why);
  return form == DFCCL_NONBLOCKING ? decide_coll(m, comm, sig, memory, why) : agree_coll(m, comm, sig, memory, why);
}

dfccl_coll_t* mca_coll_dfccl_coll_for_reduction(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm,
                                                dfccl_form_t form, dfccl_sig_t* sig, int count,
                                                struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                                dfccl_memory_t memory, const char** why) {
  /* Count 0 reaches us from MPI_Iallgather and some persistent inits (the 4.1 MPI layer answers the
   * others itself): the previous component handles it. */
  if (count <= 0) {
    *why = "count";
    return NULL;
  }
  dfccl_reduction_t red;
  if (!dfccl_reduction_of(dtype, op, &red, why)) return NULL;
  sig->count = (size_t)count * red.per_element;
  sig->dtype = red.dtype;
  sig->op = red.op;
  return coll_get(m, comm, form, sig, memory, why);
}

dfccl_coll_t* mca_coll_dfccl_coll_for_bytes(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                            dfccl_sig_t* sig, size_t bytes, dfccl_memory_t memory, const char** why) {
  if (bytes == 0) {
    *why = "count";
    return NULL;
  }
  sig->count = bytes;
  sig->dtype = dfcclUint8;
  sig->op = dfcclSum; /* unused by data movement; fixed, so that signatures compare equal */
  return coll_get(m, comm, form, sig, memory, why);
}

/* ---- module object ------------------------------------------------------------------------------ */

static void module_construct(mca_coll_dfccl_module_t* m) {
  /* Everything after the base module: the saved previous functions, no DFCCL side yet, nothing
   * decided (OBJ_NEW does not clear memory). */
  memset((char*)m + sizeof m->super, 0, sizeof *m - sizeof m->super);
}

static void module_destruct(mca_coll_dfccl_module_t* m) {
  /* The context went with the attribute callbacks; a communicator destroyed without them (none
   * known in 4.1) would leave its context to process exit. */
  if (m->dc != NULL) {
    m->dc->module = NULL;
    DFCCL_VERBOSE(1, "module destroyed before its context");
  }
  while (m->previous != NULL) {
    dfccl_decided_t* next = m->previous->next;
    free(m->previous);
    m->previous = next;
  }
  while (m->layouts != NULL) {
    dfccl_layout_t* next = m->layouts->next;
    free(m->layouts);
    m->layouts = next;
  }
#define DFCCL_RELEASE_PREV(name, mpi, fn) \
  if (m->prev_##name##_module != NULL) OBJ_RELEASE(m->prev_##name##_module);
  DFCCL_ENTRIES(DFCCL_RELEASE_PREV)
}

OBJ_CLASS_INSTANCE(mca_coll_dfccl_module_t, mca_coll_base_module_t, module_construct, module_destruct);
