/*
 * coll/dfccl's collectives: every entry point of the coll framework, in its three forms (blocking,
 * MPI_I..., MPIX_..._init), each made by DFCCL_FORMS from one body per collective.
 *
 * The collectives DFCCL runs (allreduce, bcast, reduce, allgather, allgatherv, reduce_scatter_block,
 * reduce_scatter, alltoall): check -> route -> fall back.  A body takes the call to a local copy on
 * a communicator of one rank (coll_dfccl_local.c), or to DFCCL where its plan finds the
 * communicator's collective for the call's signature (coll_dfccl_module.c decides the signature's
 * route at its first call, alike on every rank), else to the previous component.  Routing depends
 * only on what every rank passes alike (count, datatypes' type signature, op, root) and on the calls
 * made on the communicator before, so all ranks take the same way.  A rank whose buffers are not in
 * the route's memory, or whose datatypes have gaps, runs on copies of them (coll_dfccl_buffers.c).
 * On intercommunicators DFCCL runs nothing: its collectives span one group.
 *
 * The others (alltoallv/w, gather/v, scatter/v, scan, exscan, the neighbourhood collectives,
 * reduce_local) always fall back: coll/dfccl takes them over so that device buffers reach the
 * previous component, which is not CUDA-aware, as host copies.  Each is one line of a table: which
 * bytes of its send and receive buffers MPI makes significant on this rank (its regions).
 *
 * A fallback stages those regions (coll_dfccl_staging.c): device memory is copied to host blocks,
 * the previous component runs on them, and the receive region comes back.  A receive region that
 * the collective writes whole (no in-place input, no holes) is not copied in.  MPI's rules for
 * intercommunicators decide what is significant there: the root's group names the root MPI_ROOT
 * (its buffer) or MPI_PROC_NULL (nothing), the other group gives the remote root; blocks come from
 * every rank of the remote group; MPI_IN_PLACE is not allowed (MPI 3.1 section 5.10).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <limits.h>
#include <stdlib.h>

#include "opal/datatype/opal_datatype.h"
#include "opal/util/output.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;
typedef struct ompi_op_t op_t;

/* ---- the three forms ------------------------------------------------------------------------------ */

#define DFCCL_UNPAREN(...) __VA_ARGS__
#define DFCCL_ENTRY(entry, entry_form, entry_request, entry_info, entry_kept) \
  (&(dfccl_entry_t){.name = #entry,                                           \
                    .form = (entry_form),                                     \
                    .routed = &mca_coll_dfccl_component.entry##_routed,       \
                    .fallback = &mca_coll_dfccl_component.entry##_fallback,   \
                    .local = &mca_coll_dfccl_component.entry##_local,         \
                    .staged = &mca_coll_dfccl_component.entry##_staged,       \
                    .request = (entry_request),                               \
                    .info = (entry_info),                                     \
                    .kept = (entry_kept)})
#define DFCCL_KEEP_NOTHING DFCCL_KEEP(NULL, NULL)

/* Open MPI's three entry points of collective `name`, whose own parameters (before the
 * communicator) are `params` and pass on as `args`: each calls the collective's body,
 * name(entry, module, args..., comm), with its form's entry.  A persistent request holds `kept` until it is freed. */
#define DFCCL_FORMS(name, kept, params, args)                                                                        \
  int mca_coll_dfccl_##name(DFCCL_UNPAREN params, comm_t* comm, mca_coll_base_module_t* module) {                    \
    return name(DFCCL_ENTRY(name, DFCCL_BLOCKING, NULL, NULL, DFCCL_KEEP_NOTHING), (mca_coll_dfccl_module_t*)module, \
                DFCCL_UNPAREN args, comm);                                                                           \
  }                                                                                                                  \
  int mca_coll_dfccl_i##name(DFCCL_UNPAREN params, comm_t* comm, ompi_request_t** request,                           \
                             mca_coll_base_module_t* module) {                                                       \
    return name(DFCCL_ENTRY(i##name, DFCCL_NONBLOCKING, request, NULL, DFCCL_KEEP_NOTHING),                          \
                (mca_coll_dfccl_module_t*)module, DFCCL_UNPAREN args, comm);                                         \
  }                                                                                                                  \
  int mca_coll_dfccl_##name##_init(DFCCL_UNPAREN params, comm_t* comm, struct ompi_info_t* info,                     \
                                   ompi_request_t** request, mca_coll_base_module_t* module) {                       \
    return name(DFCCL_ENTRY(name##_init, DFCCL_PERSISTENT, request, info, kept), (mca_coll_dfccl_module_t*)module,   \
                DFCCL_UNPAREN args, comm);                                                                           \
  }

/* The previous component's function of collective `name` in e's form, on `args` (the collective's
 * own arguments) and what the form adds. */
#define DFCCL_PREVIOUS(name, args)                                                               \
  (e->form == DFCCL_BLOCKING ? m->prev_##name(DFCCL_UNPAREN args, comm, m->prev_##name##_module) \
   : e->form == DFCCL_NONBLOCKING                                                                \
       ? m->prev_i##name(DFCCL_UNPAREN args, comm, e->request, m->prev_i##name##_module)         \
       : m->prev_##name##_init(DFCCL_UNPAREN args, comm, e->info, e->request, m->prev_##name##_init_module))

/* The end of a body that falls back (e, m, comm, sbuf and rbuf are the body's): counted and said
 * (count and root for the message; -1: none), the regions of sbuf and rbuf staged through host
 * copies where they are device memory, and the previous component called on the copies -- sbuf and
 * rbuf name them from here on, so that `args` passes them. */
#define DFCCL_FALL_BACK(name, count, root, why, send_region, recv_region, args)  \
  do {                                                                           \
    dfccl_staging_t st_;                                                         \
    fell_back(e, comm, (count), (root), (why));                                  \
    mca_coll_dfccl_stage(&st_, comm, sbuf, (send_region), rbuf, (recv_region));  \
    sbuf = st_.send.host;                                                        \
    rbuf = st_.recv.host;                                                        \
    return mca_coll_dfccl_staged_end(e, comm, &st_, DFCCL_PREVIOUS(name, args)); \
  } while (0)

/* Counts a call that falls back and says why at verbosity 10. */
static void fell_back(const dfccl_entry_t* e, comm_t* comm, int count, int root, const char* why) {
  mca_coll_dfccl_count(e->fallback);
  if (count < 0) DFCCL_VERBOSE(10, "%s on comm '%s' falls back: %s", e->name, comm->c_name, why);
  else if (root >= 0)
    DFCCL_VERBOSE(10, "%s on comm '%s' (count %d, root %d) falls back: %s", e->name, comm->c_name, count, root, why);
  else DFCCL_VERBOSE(10, "%s on comm '%s' (count %d) falls back: %s", e->name, comm->c_name, count, why);
}

/* A planned call through DFCCL, counted as routed: a blocking call runs it (and is counted once it
 * ran), a nonblocking one starts it, a persistent init returns its request. */
static int routed(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, comm_t* comm, const dfccl_call_t* call) {
  if (e->form == DFCCL_BLOCKING) {
    int rc = mca_coll_dfccl_run(m, comm, call); /* MPI_ERR_OTHER: it could not complete (the handler says so) */
    mca_coll_dfccl_count(e->routed);
    return rc;
  }
  mca_coll_dfccl_count(e->routed);
  if (e->form == DFCCL_NONBLOCKING) return mca_coll_dfccl_start(m, comm, call, e->request);
  return mca_coll_dfccl_persistent_init(m, comm, call, e->kept, e->request);
}

/* ---- regions: the bytes of a buffer that MPI makes significant on this rank ------------------------
 * Each is no region when buf is MPI_IN_PLACE or NULL, without looking at the other arguments (MPI
 * ignores them then: they may be anything). */

static bool no_buffer(const void* buf) { return buf == NULL || buf == MPI_IN_PLACE; }

/* count elements of dtype, `offset` bytes from the buffer. */
static dfccl_region_t elements(dtype_t* dtype, size_t count, ptrdiff_t offset) {
  dfccl_region_t r = DFCCL_NO_REGION;
  if (dtype != NULL && count > 0) r.bytes = (size_t)opal_datatype_span(&dtype->super, count, &r.gap);
  r.gap += offset;
  return r;
}

static dfccl_region_t region(const void* buf, dtype_t* dtype, size_t count) {
  return no_buffer(buf) ? DFCCL_NO_REGION : elements(dtype, count, 0);
}

/* A receive buffer, which the collective writes whole where `written` (every element, no in-place
 * input) and the elements lie contiguously, without holes to keep: then it is not copied in. */
static dfccl_region_t output(const void* buf, dtype_t* dtype, size_t count, bool written) {
  dfccl_region_t r = region(buf, dtype, count);
  r.written =
      written && r.bytes > 0 && count <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t)count);
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

/* n blocks, counts[i] elements of dtype at displs[i] extents (the v collectives). */
static dfccl_region_t region_v(const void* buf, dtype_t* dtype, int n, const int* counts, const int* displs) {
  dfccl_region_t r = DFCCL_NO_REGION;
  if (no_buffer(buf) || dtype == NULL || counts == NULL || displs == NULL) return r;
  ptrdiff_t lb, extent;
  ompi_datatype_get_extent(dtype, &lb, &extent);
  for (int i = 0; i < n; i++)
    r = region_union(r, elements(dtype, counts[i] > 0 ? (size_t)counts[i] : 0, (ptrdiff_t)displs[i] * extent));
  return r;
}

/* n blocks, counts[i] elements of types[i] at a displacement in bytes: int_displs[i] (alltoallw), or
 * aint_displs[i] where int_displs is NULL (neighbor_alltoallw). */
static dfccl_region_t region_w(const void* buf, int n, const int* counts, const int* int_displs,
                               const MPI_Aint* aint_displs, dtype_t* const* types) {
  dfccl_region_t r = DFCCL_NO_REGION;
  if (no_buffer(buf) || counts == NULL || types == NULL || (int_displs == NULL && aint_displs == NULL)) return r;
  for (int i = 0; i < n; i++) {
    ptrdiff_t offset = int_displs != NULL ? (ptrdiff_t)int_displs[i] : (ptrdiff_t)aint_displs[i];
    r = region_union(r, elements(types[i], counts[i] > 0 ? (size_t)counts[i] : 0, offset));
  }
  return r;
}

/* The processes a rank exchanges blocks with: the remote group of an intercommunicator, else the
 * communicator. */
static int peers(comm_t* comm) { return OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm); }

/* The parts of a rooted collective this rank plays.  root: it is the root (MPI_ROOT in the root's
 * group of an intercommunicator), whose buffer gathers or scatters every block.  leaf: it sends
 * (gather, reduce) or receives (scatter, bcast) one block -- every rank of an intracommunicator,
 * the root included (unless MPI_IN_PLACE), and the other group of an intercommunicator.  Neither:
 * MPI_PROC_NULL, the root's group's other ranks, whose buffers MPI ignores. */
static bool is_root(comm_t* comm, int root) {
  return OMPI_COMM_IS_INTER(comm) ? root == MPI_ROOT : ompi_comm_rank(comm) == root;
}
static bool is_leaf(comm_t* comm, int root) {
  return !OMPI_COMM_IS_INTER(comm) || (root != MPI_ROOT && root != MPI_PROC_NULL);
}

/* How many blocks this rank receives (in) or sends (out) in a neighbourhood collective: a Cartesian
 * topology has two neighbours per dimension, MPI_PROC_NULL ones included; a graph the same number
 * either way.  0 on a communicator without a topology: nothing is staged, and the previous
 * component reports the error. */
static int degree(comm_t* comm, bool in) {
  MPI_Comm c = comm;
  int kind = MPI_UNDEFINED, n = 0, indegree = 0, outdegree = 0, weighted = 0;
  if (PMPI_Topo_test(c, &kind) != MPI_SUCCESS) return 0;
  if (kind == MPI_CART && PMPI_Cartdim_get(c, &n) == MPI_SUCCESS) return 2 * n;
  if (kind == MPI_GRAPH && PMPI_Graph_neighbors_count(c, ompi_comm_rank(comm), &n) == MPI_SUCCESS) return n;
  if (kind == MPI_DIST_GRAPH && PMPI_Dist_graph_neighbors_count(c, &indegree, &outdegree, &weighted) == MPI_SUCCESS)
    return in ? indegree : outdegree;
  return 0;
}

/* ---- the collectives DFCCL runs ------------------------------------------------------------------- */

static const char one_rank[] = "a layout that is not contiguous, on one rank";

/* Why a call cannot run on DFCCL whatever its arguments: an intercommunicator; one rank (where it
 * is a local copy, unless a layout is not contiguous).  NULL: its plan decides. */
static const char* declined(comm_t* comm) {
  if (OMPI_COMM_IS_INTER(comm)) return "an intercommunicator";
  return ompi_comm_size(comm) == 1 ? one_rank : NULL;
}

/* Each plan: the call's signature (what every rank passes alike) and this rank's wish from its
 * buffers, the communicator's collective for it (NULL, with *why, when the call falls back), and
 * DFCCL's view of the buffers.  MPI_IN_PLACE is DFCCL's in place (sendbuff == recvbuff, or the
 * rank's block of it) where the layouts agree. */

static bool allreduce_plan(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, comm_t* comm,
                           mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = dfcclAllReduce, .root = -1};
  size_t n = (size_t)(count > 0 ? count : 0);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, n);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, dtype, n);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, count, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, n, dtype, out, sbuf == MPI_IN_PLACE, true);
  call->send =
      sbuf == MPI_IN_PLACE ? call->recv : mca_coll_dfccl_span(call, comm, (void*)sbuf, n, dtype, in, true, false);
  return true;
}

static int allreduce(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf, int count,
                     dtype_t* dtype, op_t* op, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  if (why == one_rank && mca_coll_dfccl_local(e, comm, sbuf, dtype, count, rbuf, dtype, count, &rc)) return rc;
  if (why == NULL && allreduce_plan(sbuf, rbuf, count, dtype, op, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  DFCCL_FALL_BACK(allreduce, count, -1, why, region(sbuf, dtype, count),
                  output(rbuf, dtype, count, OMPI_COMM_IS_INTER(comm)), (sbuf, rbuf, count, dtype, op));
}
DFCCL_FORMS(allreduce, DFCCL_KEEP(op, dtype), (const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op),
            (sbuf, rbuf, count, dtype, op))

/* Broadcast moves bytes: the signature is the number of bytes, which every rank has alike (MPI lets
 * ranks describe them with different datatypes of the same type signature), with the root (the
 * communicator's rank = DFCCL's bootstrap rank). */
static bool bcast_plan(void* buf, int count, dtype_t* dtype, int root, comm_t* comm, mca_coll_dfccl_module_t* m,
                       dfccl_form_t form, dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = dfcclBroadcast, .root = root};
  size_t size;
  ompi_datatype_type_size(dtype, &size);
  dfccl_memory_t memory = mca_coll_dfccl_memory_of_layout(buf, dtype, (size_t)count);
  size_t bytes = size * (size_t)(count > 0 ? count : 0); /* alike on every rank */
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, bytes, memory, why)};
  if (call->coll == NULL) return false;
  bool at_root = ompi_comm_rank(comm) == root;
  call->send = call->recv = mca_coll_dfccl_span(call, comm, buf, (size_t)count, dtype, memory, at_root, !at_root);
  return true;
}

static int bcast(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, void* rbuf, int count, dtype_t* dtype, int root,
                 comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  const void* sbuf = NULL; /* none: the one buffer is DFCCL_FALL_BACK's rbuf */
  int rc;
  if (why == one_rank && mca_coll_dfccl_local(e, comm, NULL, dtype, 0, rbuf, dtype, count, &rc)) return rc;
  if (why == NULL && bcast_plan(rbuf, count, dtype, root, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  /* The buffer is the root's input and the others' output: copied in and back alike, but for the
   * other group of an intercommunicator, whose buffer is written whole. */
  bool inter = OMPI_COMM_IS_INTER(comm);
  DFCCL_FALL_BACK(bcast, count, root, why, DFCCL_NO_REGION,
                  !inter || is_root(comm, root) ? region(rbuf, dtype, count)
                  : is_leaf(comm, root)         ? output(rbuf, dtype, count, true)
                                                : DFCCL_NO_REGION,
                  (rbuf, count, dtype, root));
}
DFCCL_FORMS(bcast, DFCCL_KEEP(dtype, NULL), (void* buf, int count, dtype_t* dtype, int root), (buf, count, dtype, root))

/* Non-roots pass no recvbuff to DFCCL (MPI does not define theirs, and it must not decide). */
static bool reduce_plan(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, int root, comm_t* comm,
                        mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = dfcclReduce, .root = root};
  bool at_root = ompi_comm_rank(comm) == root;
  size_t n = (size_t)(count > 0 ? count : 0);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, n);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(at_root ? rbuf : NULL, dtype, n);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, count, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = at_root ? mca_coll_dfccl_span(call, comm, rbuf, n, dtype, out, sbuf == MPI_IN_PLACE, true) : NULL;
  call->send = sbuf == MPI_IN_PLACE /* valid at the root only */
                   ? call->recv
                   : mca_coll_dfccl_span(call, comm, (void*)sbuf, n, dtype, in, true, false);
  return true;
}

static int reduce(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf, int count,
                  dtype_t* dtype, op_t* op, int root, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  if (why == one_rank && mca_coll_dfccl_local(e, comm, sbuf, dtype, count, rbuf, dtype, count, &rc)) return rc;
  if (why == NULL && reduce_plan(sbuf, rbuf, count, dtype, op, root, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  DFCCL_FALL_BACK(reduce, count, root, why, is_leaf(comm, root) ? region(sbuf, dtype, count) : DFCCL_NO_REGION,
                  is_root(comm, root) ? output(rbuf, dtype, count, OMPI_COMM_IS_INTER(comm)) : DFCCL_NO_REGION,
                  (sbuf, rbuf, count, dtype, op, root));
}
DFCCL_FORMS(reduce, DFCCL_KEEP(op, dtype),
            (const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, int root),
            (sbuf, rbuf, count, dtype, op, root))

/* All-gather moves bytes: the signature is the number of bytes each rank contributes.  DFCCL's in
 * place (sendbuff == recvbuff + rank x block) is MPI_IN_PLACE's layout. */
static bool allgather_plan(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                           comm_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                           const char** why) {
  dfccl_sig_t sig = {.kind = dfcclAllGather, .root = -1};
  size_t n = (size_t)ompi_comm_size(comm), position = (size_t)ompi_comm_rank(comm), rsize;
  ompi_datatype_type_size(rdtype, &rsize);
  size_t count = (size_t)(rcount > 0 ? rcount : 0), block = rsize * count; /* block: alike on every rank */
  bool in_place = sbuf == MPI_IN_PLACE;
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, rdtype, n * count);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, sdtype, (size_t)(scount > 0 ? scount : 0));
  *call = (dfccl_call_t){
      .coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, block, mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, n * count, rdtype, out, in_place, true);
  call->send = in_place ? (char*)call->recv + position * block
                        : mca_coll_dfccl_span(call, comm, (void*)sbuf, (size_t)scount, sdtype, in, true, false);
  return true;
}

static int allgather(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, int scount, dtype_t* sdtype,
                     void* rbuf, int rcount, dtype_t* rdtype, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  if (why == one_rank && mca_coll_dfccl_local(e, comm, sbuf, sdtype, scount, rbuf, rdtype, rcount, &rc)) return rc;
  if (why == NULL && allgather_plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  DFCCL_FALL_BACK(allgather, rcount, -1, why, region(sbuf, sdtype, scount),
                  output(rbuf, rdtype, (size_t)rcount * peers(comm), OMPI_COMM_IS_INTER(comm)),
                  (sbuf, scount, sdtype, rbuf, rcount, rdtype));
}
/* With MPI_IN_PLACE, sdtype is ignored (and may be anything): not kept. */
DFCCL_FORMS(allgather, DFCCL_KEEP(sbuf == MPI_IN_PLACE ? NULL : sdtype, rdtype),
            (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype),
            (sbuf, scount, sdtype, rbuf, rcount, rdtype))

/* All-gather-v moves bytes.  Its signature is every rank's number of bytes (interned); the
 * displacements are not in it, because MPI makes them local to a rank (in units of its own receive
 * extent).  So the DFCCL collective has the packed layout -- block i right after blocks 0..i-1 --
 * and a rank whose receive buffer is laid out so (contiguous type, displacements the running sums)
 * runs on it directly; any other layout (gaps between blocks, another order, holes in the datatype)
 * runs on a packed copy in the route's memory, unpacked through the receive layout as one indexed
 * datatype when the run completes.  MPI_IN_PLACE: the rank's own block is already in the receive
 * buffer, at its place in the packed layout. */
static bool allgatherv_plan(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                            const int* displs, dtype_t* rdtype, comm_t* comm, mca_coll_dfccl_module_t* m,
                            dfccl_form_t form, dfccl_call_t* call, const char** why) {
  int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
  size_t rsize, total = 0, before_me = 0;
  ompi_datatype_type_size(rdtype, &rsize);
  uint64_t* bytes = mca_coll_dfccl_alloc_or_abort((size_t)n * sizeof *bytes, comm);
  for (int i = 0; i < n; i++) {
    bytes[i] = (uint64_t)(rcounts[i] > 0 ? rcounts[i] : 0) * rsize;
    if (i == me) before_me = total;
    total += bytes[i];
  }
  dfccl_sig_t sig = {.kind = dfcclAllGatherV, .root = -1, .blocks = mca_coll_dfccl_intern_blocks(m, bytes, n)};
  free(bytes);
  if (sig.blocks == NULL) {
    *why = "more different all-gather-v layouts on the communicator than it keeps";
    return false;
  }
  bool in_place = sbuf == MPI_IN_PLACE;
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, MPI_BYTE, total);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, sdtype, (size_t)(scount > 0 ? scount : 0));
  *call = (dfccl_call_t){
      .coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, total, mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  /* Blocks of a contiguous type at the running sums of the counts: DFCCL's packed layout already. */
  ptrdiff_t lb, extent;
  ompi_datatype_get_extent(rdtype, &lb, &extent);
  bool packed = lb == 0 && (size_t)extent == rsize && ompi_datatype_is_contiguous_memory_layout(rdtype, 2);
  for (int i = 1, at = displs[0]; packed && i < n; i++) packed = displs[i] == (at += rcounts[i - 1]);
  if (packed) { /* the common layout: no datatype to make */
    call->recv = mca_coll_dfccl_span(call, comm, (char*)rbuf + (ptrdiff_t)displs[0] * (ptrdiff_t)rsize,
                                     total / (rsize ? rsize : 1), rdtype, out, in_place, true);
  } else {
    dtype_t* layout = NULL;
    if (ompi_datatype_create_indexed(n, rcounts, displs, rdtype, &layout) != OMPI_SUCCESS ||
        ompi_datatype_commit(&layout) != OMPI_SUCCESS) {
      opal_output(0, "coll:dfccl: comm '%s': no memory for an all-gather-v receive layout", comm->c_name);
      ompi_mpi_abort(comm, 1); /* the others run DFCCL */
    }
    /* In place, the copy (if any) takes the own block in; the run writes every other block. */
    call->recv = mca_coll_dfccl_span(call, comm, rbuf, 1, layout, out, in_place, true);
    dfccl_span_t* copy = &call->scratch[0];
    if (copy->copy != NULL && copy->dtype == layout) copy->owns_dtype = true; /* unpacked through it */
    else OBJ_RELEASE(layout);
  }
  call->send = in_place ? (char*)call->recv + before_me
                        : mca_coll_dfccl_span(call, comm, (void*)sbuf, (size_t)scount, sdtype, in, true, false);
  return true;
}

static int allgatherv(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, int scount, dtype_t* sdtype,
                      void* rbuf, const int* rcounts, const int* displs, dtype_t* rdtype, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  if (why == one_rank) {
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    if (mca_coll_dfccl_local(e, comm, sbuf, sdtype, scount, (char*)rbuf + (ptrdiff_t)displs[0] * extent, rdtype,
                             rcounts[0], &rc))
      return rc;
  }
  if (why == NULL &&
      allgatherv_plan(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  DFCCL_FALL_BACK(allgatherv, -1, -1, why, region(sbuf, sdtype, scount),
                  region_v(rbuf, rdtype, peers(comm), rcounts, displs),
                  (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype));
}
DFCCL_FORMS(allgatherv, DFCCL_KEEP(sdtype, rdtype),
            (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs,
             dtype_t* rdtype),
            (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype))

/* Reduce-scatter with equal counts.  MPI_IN_PLACE (on every rank when used) takes the input from
 * recvbuf and leaves the result at its start; DFCCL's in place leaves it at recvbuf + rank x
 * recvcount, so it is moved to the start after the run. */
static bool reduce_scatter_block_plan(const void* sbuf, void* rbuf, int rcount, dtype_t* dtype, op_t* op, comm_t* comm,
                                      mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                                      const char** why) {
  dfccl_sig_t sig = {.kind = dfcclReduceScatter, .root = -1};
  bool in_place = sbuf == MPI_IN_PLACE;
  size_t n = (size_t)ompi_comm_size(comm), count = (size_t)(rcount > 0 ? rcount : 0);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, n * count);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, dtype, in_place ? n * count : count);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, rcount, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  size_t bytes = sig.count * dfcclTypeSize(sig.dtype);
  if (!in_place) {
    call->send = mca_coll_dfccl_span(call, comm, (void*)sbuf, n * count, dtype, in, true, false);
    call->recv = mca_coll_dfccl_span(call, comm, rbuf, count, dtype, out, false, true);
    return true;
  }
  char* all = mca_coll_dfccl_span(call, comm, rbuf, n * count, dtype, out, true, true);
  char* mine = all + (size_t)ompi_comm_rank(comm) * bytes;
  call->send = all;  /* the input */
  call->recv = mine; /* DFCCL's in place */
  call->move_to = all;
  call->move_from = mine;
  call->move_bytes = mine != all ? bytes : 0;
  return true;
}

static int reduce_scatter_block(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf,
                                int rcount, dtype_t* dtype, op_t* op, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  if (why == one_rank && mca_coll_dfccl_local(e, comm, sbuf, dtype, rcount, rbuf, dtype, rcount, &rc)) return rc;
  if (why == NULL && reduce_scatter_block_plan(sbuf, rbuf, rcount, dtype, op, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  /* The input is a block per rank; in place, the output is read from the front of it. */
  size_t all = (size_t)rcount * ompi_comm_size(comm);
  DFCCL_FALL_BACK(reduce_scatter_block, rcount, -1, why, region(sbuf, dtype, all),
                  output(rbuf, dtype, sbuf == MPI_IN_PLACE ? all : (size_t)rcount, OMPI_COMM_IS_INTER(comm)),
                  (sbuf, rbuf, rcount, dtype, op));
}
DFCCL_FORMS(reduce_scatter_block, DFCCL_KEEP(op, dtype),
            (const void* sbuf, void* rbuf, int rcount, dtype_t* dtype, op_t* op), (sbuf, rbuf, rcount, dtype, op))

/* Reduce-scatter: as reduce_scatter_block when every recvcount is equal (recvcounts is the same
 * array on every rank, so the decision is too), else DFCCL's reduce-scatter-v.  Its signature is
 * the counts (interned), the datatype and the op; the input holds the blocks packed, as DFCCL's
 * does.  MPI_IN_PLACE leaves the result at the start of recvbuf, DFCCL's in place at the rank's
 * block: moved to the start after the run. */
static bool reduce_scatter_plan(const void* sbuf, void* rbuf, const int* rcounts, dtype_t* dtype, op_t* op,
                                comm_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                                const char** why) {
  int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), i = 1;
  while (i < n && rcounts[i] == rcounts[0]) i++;
  if (i == n) return reduce_scatter_block_plan(sbuf, rbuf, rcounts[0], dtype, op, comm, m, form, call, why);
  uint64_t* counts = mca_coll_dfccl_alloc_or_abort((size_t)n * sizeof *counts, comm);
  size_t total = 0, before_me = 0;
  for (i = 0; i < n; i++) {
    counts[i] = (uint64_t)(rcounts[i] > 0 ? rcounts[i] : 0);
    if (i == me) before_me = total;
    total += counts[i];
  }
  dfccl_sig_t sig = {.kind = dfcclReduceScatterV, .root = -1, .blocks = mca_coll_dfccl_intern_blocks(m, counts, n)};
  free(counts);
  if (sig.blocks == NULL || total > INT_MAX) {
    *why = total > INT_MAX ? "more than INT_MAX elements in all"
                           : "more different recvcounts on the communicator than it keeps";
    return false;
  }
  bool in_place = sbuf == MPI_IN_PLACE;
  size_t mine = (size_t)(rcounts[me] > 0 ? rcounts[me] : 0), size;
  ompi_datatype_type_size(dtype, &size);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, total);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, dtype, in_place ? total : mine);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, (int)total, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  if (!in_place) {
    call->send = mca_coll_dfccl_span(call, comm, (void*)sbuf, total, dtype, in, true, false);
    call->recv = mca_coll_dfccl_span(call, comm, rbuf, mine, dtype, out, false, true);
    return true;
  }
  char* all = mca_coll_dfccl_span(call, comm, rbuf, total, dtype, out, true, true);
  char* at = all + before_me * size;
  call->send = all; /* the input */
  call->recv = at;  /* DFCCL's in place */
  call->move_to = all;
  call->move_from = at;
  call->move_bytes = at != all ? mine * size : 0;
  return true;
}

static int reduce_scatter(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf,
                          const int* rcounts, dtype_t* dtype, op_t* op, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  if (why == one_rank && mca_coll_dfccl_local(e, comm, sbuf, dtype, rcounts[0], rbuf, dtype, rcounts[0], &rc))
    return rc;
  if (why == NULL && reduce_scatter_plan(sbuf, rbuf, rcounts, dtype, op, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  /* The input is the sum of the recvcounts over the (local) group; in place, the output is read
   * from the front of it. */
  size_t all = 0, mine = (size_t)rcounts[ompi_comm_rank(comm)];
  for (int i = 0; i < ompi_comm_size(comm); i++) all += (size_t)rcounts[i];
  DFCCL_FALL_BACK(reduce_scatter, (int)mine, -1, why, region(sbuf, dtype, all),
                  output(rbuf, dtype, sbuf == MPI_IN_PLACE ? all : mine, OMPI_COMM_IS_INTER(comm)),
                  (sbuf, rbuf, rcounts, dtype, op));
}
DFCCL_FORMS(reduce_scatter, DFCCL_KEEP(op, dtype),
            (const void* sbuf, void* rbuf, const int* rcounts, dtype_t* dtype, op_t* op),
            (sbuf, rbuf, rcounts, dtype, op))

/* DFCCL's all-to-all moves bytes: the signature is the bytes each rank sends to each (alike on every
 * rank and both sides by MPI's rules).  It does not run in place (MPI_IN_PLACE is used by all ranks
 * or none, so they all fall back alike). */
static bool alltoall_plan(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                          comm_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                          const char** why) {
  if (sbuf == MPI_IN_PLACE) {
    *why = "MPI_IN_PLACE (DFCCL's all-to-all needs a separate input)";
    return false;
  }
  dfccl_sig_t sig = {.kind = dfcclAllToAll, .root = -1};
  size_t n = (size_t)ompi_comm_size(comm), rsize;
  ompi_datatype_type_size(rdtype, &rsize);
  size_t rn = n * (size_t)(rcount > 0 ? rcount : 0), sn = n * (size_t)(scount > 0 ? scount : 0);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, rdtype, rn);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, sdtype, sn);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, rsize * (rn / n),
                                                               mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, rn, rdtype, out, false, true); /* written whole */
  call->send = mca_coll_dfccl_span(call, comm, (void*)sbuf, sn, sdtype, in, true, false);
  return true;
}

static int alltoall(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, int scount, dtype_t* sdtype,
                    void* rbuf, int rcount, dtype_t* rdtype, comm_t* comm) {
  dfccl_call_t call;
  const char* why = declined(comm);
  int rc;
  /* One rank: the one block (MPI_IN_PLACE: nothing to copy). */
  if (why == one_rank && mca_coll_dfccl_local(e, comm, sbuf, sdtype, scount, rbuf, rdtype, rcount, &rc)) return rc;
  if (why == NULL && alltoall_plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, e->form, &call, &why))
    return routed(e, m, comm, &call);
  /* Every block is written, unless in place (then the buffer is the input too). */
  size_t n = (size_t)peers(comm);
  DFCCL_FALL_BACK(alltoall, -1, -1, why, region(sbuf, sdtype, (size_t)scount * n),
                  output(rbuf, rdtype, (size_t)rcount * n, sbuf != MPI_IN_PLACE),
                  (sbuf, scount, sdtype, rbuf, rcount, rdtype));
}
DFCCL_FORMS(alltoall, DFCCL_KEEP(sdtype, rdtype),
            (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype),
            (sbuf, scount, sdtype, rbuf, rcount, rdtype))

/* ---- the collectives DFCCL does not run: staged for the previous component --------------------------
 * DFCCL_STAGED(name, kept, count, root, send region, receive region, params, args): the body and
 * the three forms of collective `name`, whose fallback is said with count and root (-1: none) and
 * stages those regions. */

#define DFCCL_STAGED(name, kept, count, root, send_region, recv_region, params, args)                       \
  static int name(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, DFCCL_UNPAREN params, comm_t* comm) { \
    DFCCL_FALL_BACK(name, count, root, "not a DFCCL collective", send_region, recv_region, args);           \
  }                                                                                                         \
  DFCCL_FORMS(name, kept, params, args)

/* Parameter lists (and the arguments that pass them on) that several collectives share. */
#define BLOCKS (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype)
#define BLOCKS_ARGS (sbuf, scount, sdtype, rbuf, rcount, rdtype)
#define ROOTED_BLOCKS (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, int root)
#define ROOTED_BLOCKS_ARGS (sbuf, scount, sdtype, rbuf, rcount, rdtype, root)
#define PREFIX (const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op)
#define PREFIX_ARGS (sbuf, rbuf, count, dtype, op)
#define V_BLOCKS                                                                                              \
  (const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype, void* rbuf, const int* rcounts, \
   const int* rdispls, dtype_t* rdtype)
#define V_BLOCKS_ARGS (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype)

/* clang-format off */
DFCCL_STAGED(alltoallv, DFCCL_KEEP(sdtype, rdtype), -1, -1,
             region_v(sbuf, sdtype, peers(comm), scounts, sdispls),
             region_v(rbuf, rdtype, peers(comm), rcounts, rdispls),
             V_BLOCKS, V_BLOCKS_ARGS)
/* The w collectives' persistent requests keep no datatypes: there is one per peer (a user who frees
 * them before the request meets what the previous component does with freed ones). */
DFCCL_STAGED(alltoallw, DFCCL_KEEP_NOTHING, -1, -1,
             region_w(sbuf, peers(comm), scounts, sdispls, NULL, sdtypes),
             region_w(rbuf, peers(comm), rcounts, rdispls, NULL, rdtypes),
             (const void* sbuf, const int* scounts, const int* sdispls, dtype_t* const* sdtypes,
              void* rbuf, const int* rcounts, const int* rdispls, dtype_t* const* rdtypes),
             (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes))
/* A gather's root receives a block from every peer (writing all but its own when in place), each
 * leaf sends one; a scatter's root sends a block to every peer, each leaf receives one. */
DFCCL_STAGED(gather, DFCCL_KEEP(sdtype, rdtype), -1, root,
             is_leaf(comm, root) ? region(sbuf, sdtype, scount) : DFCCL_NO_REGION,
             is_root(comm, root) ? output(rbuf, rdtype, (size_t)rcount * peers(comm),
                                          OMPI_COMM_IS_INTER(comm) || sbuf != MPI_IN_PLACE)
                                 : DFCCL_NO_REGION,
             ROOTED_BLOCKS, ROOTED_BLOCKS_ARGS)
DFCCL_STAGED(gatherv, DFCCL_KEEP(sdtype, rdtype), -1, root,
             is_leaf(comm, root) ? region(sbuf, sdtype, scount) : DFCCL_NO_REGION,
             is_root(comm, root) ? region_v(rbuf, rdtype, peers(comm), rcounts, displs) : DFCCL_NO_REGION,
             (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs,
              dtype_t* rdtype, int root),
             (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root))
DFCCL_STAGED(scatter, DFCCL_KEEP(sdtype, rdtype), -1, root,
             is_root(comm, root) ? region(sbuf, sdtype, (size_t)scount * peers(comm)) : DFCCL_NO_REGION,
             is_leaf(comm, root) ? output(rbuf, rdtype, rcount, true) : DFCCL_NO_REGION,
             ROOTED_BLOCKS, ROOTED_BLOCKS_ARGS)
DFCCL_STAGED(scatterv, DFCCL_KEEP(sdtype, rdtype), -1, root,
             is_root(comm, root) ? region_v(sbuf, sdtype, peers(comm), scounts, displs) : DFCCL_NO_REGION,
             is_leaf(comm, root) ? region(rbuf, rdtype, rcount) : DFCCL_NO_REGION,
             (const void* sbuf, const int* scounts, const int* displs, dtype_t* sdtype, void* rbuf, int rcount,
              dtype_t* rdtype, int root),
             (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root))
/* A scan writes rbuf whole unless in place; exscan leaves rank 0's rbuf as it was. */
DFCCL_STAGED(scan, DFCCL_KEEP(op, dtype), count, -1,
             region(sbuf, dtype, count), output(rbuf, dtype, count, sbuf != MPI_IN_PLACE),
             PREFIX, PREFIX_ARGS)
DFCCL_STAGED(exscan, DFCCL_KEEP(op, dtype), count, -1,
             region(sbuf, dtype, count), region(rbuf, dtype, count),
             PREFIX, PREFIX_ARGS)
/* A rank receives a block from each in-neighbour, and sends its block to every out-neighbour
 * (allgather) or a block to each (alltoall). */
DFCCL_STAGED(neighbor_allgather, DFCCL_KEEP(sdtype, rdtype), -1, -1,
             region(sbuf, sdtype, scount),
             region(rbuf, rdtype, (size_t)rcount * degree(comm, true)),
             BLOCKS, BLOCKS_ARGS)
DFCCL_STAGED(neighbor_allgatherv, DFCCL_KEEP(sdtype, rdtype), -1, -1,
             region(sbuf, sdtype, scount),
             region_v(rbuf, rdtype, degree(comm, true), rcounts, displs),
             (const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs,
              dtype_t* rdtype),
             (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype))
DFCCL_STAGED(neighbor_alltoall, DFCCL_KEEP(sdtype, rdtype), -1, -1,
             region(sbuf, sdtype, (size_t)scount * degree(comm, false)),
             region(rbuf, rdtype, (size_t)rcount * degree(comm, true)),
             BLOCKS, BLOCKS_ARGS)
DFCCL_STAGED(neighbor_alltoallv, DFCCL_KEEP(sdtype, rdtype), -1, -1,
             region_v(sbuf, sdtype, degree(comm, false), scounts, sdispls),
             region_v(rbuf, rdtype, degree(comm, true), rcounts, rdispls),
             V_BLOCKS, V_BLOCKS_ARGS)
DFCCL_STAGED(neighbor_alltoallw, DFCCL_KEEP_NOTHING, -1, -1,
             region_w(sbuf, degree(comm, false), scounts, NULL, sdispls, sdtypes),
             region_w(rbuf, degree(comm, true), rcounts, NULL, rdispls, rdtypes),
             (const void* sbuf, const int* scounts, const MPI_Aint* sdispls, dtype_t* const* sdtypes,
              void* rbuf, const int* rcounts, const MPI_Aint* rdispls, dtype_t* const* rdtypes),
             (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes))
/* clang-format on */

/* MPI_Reduce_local: Open MPI 4.1 calls it through MPI_COMM_SELF's coll_reduce_local, whose default
 * reduces with the CPU: on device memory it would crash.  inoutbuf is input too. */
int mca_coll_dfccl_reduce_local(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op,
                                mca_coll_base_module_t* module) {
  const dfccl_entry_t* e = DFCCL_ENTRY(reduce_local, DFCCL_BLOCKING, NULL, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  comm_t* self = &ompi_mpi_comm_self.comm; /* where Open MPI 4.1 finds this function */
  dfccl_staging_t st;
  fell_back(e, self, count, -1, "not a DFCCL collective");
  mca_coll_dfccl_stage(&st, self, sbuf, region(sbuf, dtype, count), rbuf, region(rbuf, dtype, count));
  return mca_coll_dfccl_staged_end(
      e, self, &st, m->prev_reduce_local(st.send.host, st.recv.host, count, dtype, op, m->prev_reduce_local_module));
}
