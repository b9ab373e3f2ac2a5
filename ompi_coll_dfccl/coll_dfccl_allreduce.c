/*
 * MPI_Allreduce, MPI_Iallreduce and MPIX_Allreduce_init through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on what every rank passes alike (communicator, count, datatype, op), on the
 * calls made on the communicator before and on the route decided at the signature's first call
 * (coll_dfccl_module.c); so all ranks take the same route.  A rank whose buffers are not in the
 * route's memory runs on copies of them.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

static bool plan(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                 struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                 const char** why) {
  dfccl_sig_t sig = {.kind = dfcclAllReduce, .root = -1};
  size_t n = (size_t)(count > 0 ? count : 0);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, n);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, dtype, n);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, count, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  /* MPI_IN_PLACE: the input is in rbuf, DFCCL's in place is sendbuff == recvbuff. */
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, n, dtype, out, sbuf == MPI_IN_PLACE, true);
  call->send =
      sbuf == MPI_IN_PLACE ? call->recv : mca_coll_dfccl_span(call, comm, (void*)sbuf, n, dtype, in, true, false);
  return true;
}

/* Every form's way in: a local copy on one rank, routed through DFCCL (true, *rc its result), or
 * ready to fall back (false): counted, said, and device buffers staged through host copies in *st. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf, int count,
                  struct ompi_datatype_t* dtype, struct ompi_op_t* op, struct ompi_communicator_t* comm,
                  dfccl_staging_t* st, int* rc) {
  dfccl_call_t call;
  const char* why = "a layout that is not contiguous, on one rank";
  if (ompi_comm_size(comm) == 1) {
    if (mca_coll_dfccl_local(e, comm, sbuf, dtype, (size_t)count, rbuf, dtype, (size_t)count, rc)) return true;
  } else if (plan(sbuf, rbuf, count, dtype, op, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  mca_coll_dfccl_fell_back(e, comm, count, -1, why);
  mca_coll_dfccl_stage_in(st, comm, sbuf, dtype, count, rbuf, dtype, count);
  return false;
}

int mca_coll_dfccl_allreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                             struct ompi_op_t* op, struct ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(allreduce, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, count, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st, m->prev_allreduce(st.send.host, st.recv.host, count, dtype, op, comm, m->prev_allreduce_module));
}

int mca_coll_dfccl_iallreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                              struct ompi_op_t* op, struct ompi_communicator_t* comm, ompi_request_t** request,
                              mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(iallreduce, DFCCL_NONBLOCKING, request, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, count, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st,
      m->prev_iallreduce(st.send.host, st.recv.host, count, dtype, op, comm, request, m->prev_iallreduce_module));
}

int mca_coll_dfccl_allreduce_init(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                                  struct ompi_op_t* op, struct ompi_communicator_t* comm, struct ompi_info_t* info,
                                  ompi_request_t** request, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(allreduce_init, DFCCL_PERSISTENT, request, DFCCL_KEEP(op, dtype));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, count, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_allreduce_init(st.send.host, st.recv.host, count, dtype, op, comm, info,
                                                          request, m->prev_allreduce_init_module));
}
