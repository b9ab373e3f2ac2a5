/*
 * MPI_Reduce, MPI_Ireduce and MPIX_Reduce_init through DFCCL: check -> route -> fall back.
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
  /* recvbuf is significant at the root only: elsewhere it may be anything, and must not decide. */
  const void* significant_recv = ompi_comm_rank(comm) == root ? rbuf : NULL;
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for(m, comm, form, &sig, sbuf, significant_recv, count, dtype,
                                                         op, why)};
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
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, count, rbuf, dtype, ompi_comm_rank(comm) == root ? count : 0);
  return mca_coll_dfccl_staged_finish(
      &st, m->prev_reduce(st.send.host, st.recv.host, count, dtype, op, root, comm, m->prev_reduce_module));
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
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, count, rbuf, dtype, ompi_comm_rank(comm) == root ? count : 0);
  return mca_coll_dfccl_staged_begin(
      comm, &st,
      m->prev_ireduce(st.send.host, st.recv.host, count, dtype, op, root, comm, request, m->prev_ireduce_module),
      request);
}

int mca_coll_dfccl_reduce_init(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                               struct ompi_op_t* op, int root, struct ompi_communicator_t* comm,
                               struct ompi_info_t* info, ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_kept_t kept = DFCCL_KEEP(op, dtype);
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm); /* an init is a set-up point */
  if (!plan(sbuf, rbuf, count, dtype, op, root, comm, m, DFCCL_PERSISTENT, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_init_routed);
  return mca_coll_dfccl_persistent_init(m, comm, &call, kept, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_init_fallback);
  DFCCL_VERBOSE(10, "reduce_init on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  dfccl_staging_t st; /* device buffers run on host copies, refreshed at every start */
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, count, rbuf, dtype, ompi_comm_rank(comm) == root ? count : 0);
  return mca_coll_dfccl_staged_init(comm, &st,
                                    m->prev_reduce_init(st.send.host, st.recv.host, count, dtype, op, root, comm, info,
                                                        request, m->prev_reduce_init_module),
                                    kept, request);
}
