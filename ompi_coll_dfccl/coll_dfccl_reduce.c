/*
 * MPI_Reduce, MPI_Ireduce and MPIX_Reduce_init through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on count, datatype, op and root, which every rank passes alike, on the
 * calls made on the communicator before and on the route its ranks agreed for the signature.
 * MPI_IN_PLACE (at the root) is DFCCL's sendbuff == recvbuff; non-roots pass no recvbuff to DFCCL
 * (MPI does not define theirs).  A rank whose buffers are not in the route's memory runs on copies.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

static bool plan(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype, struct ompi_op_t* op, int root,
                 struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                 const char** why) {
  dfccl_sig_t sig = {.kind = dfcclReduce, .root = root};
  /* recvbuf is significant at the root only: elsewhere it may be anything, and must not decide. */
  bool is_root = ompi_comm_rank(comm) == root;
  size_t n = (size_t)(count > 0 ? count : 0);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, n);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(is_root ? rbuf : NULL, dtype, n);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, count, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = is_root ? mca_coll_dfccl_span(call, comm, rbuf, n, dtype, out, sbuf == MPI_IN_PLACE, true) : NULL;
  call->send = sbuf == MPI_IN_PLACE /* valid at the root only */
                   ? call->recv
                   : mca_coll_dfccl_span(call, comm, (void*)sbuf, n, dtype, in, true, false);
  return true;
}

/* Every form's way in: a local copy on one rank, routed through DFCCL (true, *rc its result), or
 * ready to fall back (false): counted, said, and device buffers staged through host copies in *st. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf, int count,
                  struct ompi_datatype_t* dtype, struct ompi_op_t* op, int root, struct ompi_communicator_t* comm,
                  dfccl_staging_t* st, int* rc) {
  dfccl_call_t call;
  const char* why = "a layout that is not contiguous, on one rank";
  if (ompi_comm_size(comm) == 1) {
    if (mca_coll_dfccl_local(e, comm, sbuf, dtype, (size_t)count, rbuf, dtype, (size_t)count, rc)) return true;
  } else if (plan(sbuf, rbuf, count, dtype, op, root, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  mca_coll_dfccl_fell_back(e, comm, count, root, why);
  mca_coll_dfccl_stage_in(st, comm, sbuf, dtype, count, rbuf, dtype, ompi_comm_rank(comm) == root ? count : 0);
  return false;
}

int mca_coll_dfccl_reduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                          int root, struct ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(reduce, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, count, dtype, op, root, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st, m->prev_reduce(st.send.host, st.recv.host, count, dtype, op, root, comm, m->prev_reduce_module));
}

int mca_coll_dfccl_ireduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                           int root, struct ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(ireduce, DFCCL_NONBLOCKING, request, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, count, dtype, op, root, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st,
      m->prev_ireduce(st.send.host, st.recv.host, count, dtype, op, root, comm, request, m->prev_ireduce_module));
}

int mca_coll_dfccl_reduce_init(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                               struct ompi_op_t* op, int root, struct ompi_communicator_t* comm,
                               struct ompi_info_t* info, ompi_request_t** request, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(reduce_init, DFCCL_PERSISTENT, request, DFCCL_KEEP(op, dtype));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, count, dtype, op, root, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_reduce_init(st.send.host, st.recv.host, count, dtype, op, root, comm, info,
                                                       request, m->prev_reduce_init_module));
}
