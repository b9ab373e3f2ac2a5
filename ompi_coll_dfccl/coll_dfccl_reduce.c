/*
 * MPI_Reduce and MPI_Ireduce through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on count, datatype, op and root, which every rank passes alike, on the
 * calls made on the communicator before, and on coll_dfccl_host_target.  MPI_IN_PLACE (at the
 * root) is DFCCL's sendbuff == recvbuff; non-roots pass no recvbuff to DFCCL (MPI does not define
 * theirs).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

static bool plan(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                 int root, struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form,
                 dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = DFCCL_REDUCE, .root = root};
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for(m, comm, form, &sig, count, dtype, op, why)};
  if (call->coll == NULL) return false;
  call->send = sbuf == MPI_IN_PLACE ? rbuf : sbuf; /* MPI_IN_PLACE is valid at the root only */
  call->recv = ompi_comm_rank(comm) == root ? rbuf : NULL;
  return true;
}

int mca_coll_dfccl_reduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                          struct ompi_op_t* op, int root, struct ompi_communicator_t* comm,
                          mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm);
  if (!plan(sbuf, rbuf, count, dtype, op, root, comm, m, DFCCL_BLOCKING, &call, &why)) goto fallback;
  if (mca_coll_dfccl_run(m, comm, &call) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_fallback);
  DFCCL_VERBOSE(10, "reduce on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module);
}

int mca_coll_dfccl_ireduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                           struct ompi_op_t* op, int root, struct ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  if (!plan(sbuf, rbuf, count, dtype, op, root, comm, m, DFCCL_NONBLOCKING, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.ireduce_routed);
  return mca_coll_dfccl_start(m, comm, &call, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.ireduce_fallback);
  DFCCL_VERBOSE(10, "ireduce on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  return m->prev_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request, m->prev_ireduce_module);
}
