/*
 * MPI_Allreduce, MPI_Iallreduce and MPIX_Allreduce_init through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on what every rank passes alike (communicator, count, datatype, op), on the
 * calls made on the communicator before (for a nonblocking call: whether its signature is set up)
 * and on coll_dfccl_host_target, which must be set alike on every rank; so all ranks take the same
 * route.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

static bool plan(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                 struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                 const char** why) {
  dfccl_sig_t sig = {.kind = DFCCL_ALLREDUCE, .root = -1};
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for(m, comm, form, &sig, sbuf, rbuf, count, dtype, op, why)};
  if (call->coll == NULL) return false;
  /* MPI_IN_PLACE: the input is in rbuf, DFCCL's in place is sendbuff == recvbuff. */
  call->send = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
  call->recv = rbuf;
  return true;
}

int mca_coll_dfccl_allreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                             struct ompi_op_t* op, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm);
  if (!plan(sbuf, rbuf, count, dtype, op, comm, m, DFCCL_BLOCKING, &call, &why)) goto fallback;
  if (mca_coll_dfccl_run(m, comm, &call) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allreduce_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allreduce_fallback);
  DFCCL_VERBOSE(10, "allreduce on comm '%s' (count %d) falls back: %s", comm->c_name, count, why);
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, count, rbuf, dtype, count);
  return mca_coll_dfccl_staged_finish(
      &st, m->prev_allreduce(st.send.host, st.recv.host, count, dtype, op, comm, m->prev_allreduce_module));
}

int mca_coll_dfccl_iallreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                              struct ompi_op_t* op, struct ompi_communicator_t* comm, ompi_request_t** request,
                              mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  if (!plan(sbuf, rbuf, count, dtype, op, comm, m, DFCCL_NONBLOCKING, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.iallreduce_routed);
  return mca_coll_dfccl_start(m, comm, &call, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.iallreduce_fallback);
  DFCCL_VERBOSE(10, "iallreduce on comm '%s' (count %d) falls back: %s", comm->c_name, count, why);
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, count, rbuf, dtype, count);
  return mca_coll_dfccl_staged_begin(
      comm, &st,
      m->prev_iallreduce(st.send.host, st.recv.host, count, dtype, op, comm, request, m->prev_iallreduce_module),
      request);
}

int mca_coll_dfccl_allreduce_init(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                                  struct ompi_op_t* op, struct ompi_communicator_t* comm, struct ompi_info_t* info,
                                  ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_kept_t kept = DFCCL_KEEP(op, dtype);
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm); /* an init is a set-up point */
  if (!plan(sbuf, rbuf, count, dtype, op, comm, m, DFCCL_PERSISTENT, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allreduce_init_routed);
  return mca_coll_dfccl_persistent_init(m, comm, &call, kept, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allreduce_init_fallback);
  DFCCL_VERBOSE(10, "allreduce_init on comm '%s' (count %d) falls back: %s", comm->c_name, count, why);
  dfccl_staging_t st; /* device buffers run on host copies, refreshed at every start */
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, count, rbuf, dtype, count);
  return mca_coll_dfccl_staged_init(comm, &st,
                                    m->prev_allreduce_init(st.send.host, st.recv.host, count, dtype, op, comm, info,
                                                           request, m->prev_allreduce_init_module),
                                    kept, request);
}
