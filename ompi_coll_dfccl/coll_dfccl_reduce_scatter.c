/*
 * MPI_Reduce_scatter, MPI_Ireduce_scatter and MPIX_Reduce_scatter_init through DFCCL: check ->
 * route -> fall back.
 *
 * Routed as (I)Reduce_scatter_block (and its _init) when every recvcount is equal (recvcounts is
 * the same array on every rank, so the decision is too); uneven counts fall back.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

/* Elements of the whole input: the sum of the recvcounts. */
static size_t total_count(const int* rcounts, ompi_communicator_t* comm) {
  size_t all = 0;
  for (int i = 0; i < ompi_comm_size(comm); i++) all += (size_t)rcounts[i];
  return all;
}

static bool plan(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                 struct ompi_op_t* op, struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m,
                 dfccl_form_t form, dfccl_call_t* call, const char** why) {
  int n = ompi_comm_size(comm);
  for (int i = 1; i < n; i++)
    if (rcounts[i] != rcounts[0]) { *why = "uneven recvcounts"; return false; }
  return mca_coll_dfccl_reduce_scatter_plan(sbuf, rbuf, rcounts[0], dtype, op, comm, m, form, call, why);
}

int mca_coll_dfccl_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                  struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                  mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm);
  if (!plan(sbuf, rbuf, rcounts, dtype, op, comm, m, DFCCL_BLOCKING, &call, &why)) goto fallback;
  if (mca_coll_dfccl_run(m, comm, &call) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_fallback);
  DFCCL_VERBOSE(10, "reduce_scatter on comm '%s' falls back: %s", comm->c_name, why);
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  size_t all = total_count(rcounts, comm);
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, all, rbuf, dtype,
                          sbuf == MPI_IN_PLACE ? all : (size_t)rcounts[ompi_comm_rank(comm)]);
  return mca_coll_dfccl_staged_finish(
      &st, m->prev_reduce_scatter(st.send.host, st.recv.host, rcounts, dtype, op, comm, m->prev_reduce_scatter_module));
}

int mca_coll_dfccl_ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                   struct ompi_op_t* op, struct ompi_communicator_t* comm, ompi_request_t** request,
                                   mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  if (!plan(sbuf, rbuf, rcounts, dtype, op, comm, m, DFCCL_NONBLOCKING, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.ireduce_scatter_routed);
  return mca_coll_dfccl_start(m, comm, &call, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.ireduce_scatter_fallback);
  DFCCL_VERBOSE(10, "ireduce_scatter on comm '%s' falls back: %s", comm->c_name, why);
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  size_t all = total_count(rcounts, comm);
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, all, rbuf, dtype,
                          sbuf == MPI_IN_PLACE ? all : (size_t)rcounts[ompi_comm_rank(comm)]);
  return mca_coll_dfccl_staged_begin(comm, &st,
                                     m->prev_ireduce_scatter(st.send.host, st.recv.host, rcounts, dtype, op, comm,
                                                             request, m->prev_ireduce_scatter_module),
                                     request);
}

int mca_coll_dfccl_reduce_scatter_init(const void* sbuf, void* rbuf, const int* rcounts,
                                       struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                       struct ompi_communicator_t* comm, struct ompi_info_t* info,
                                       ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_kept_t kept = DFCCL_KEEP(op, dtype);
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm); /* an init is a set-up point */
  if (!plan(sbuf, rbuf, rcounts, dtype, op, comm, m, DFCCL_PERSISTENT, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_init_routed);
  return mca_coll_dfccl_persistent_init(m, comm, &call, kept, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_init_fallback);
  DFCCL_VERBOSE(10, "reduce_scatter_init on comm '%s' falls back: %s", comm->c_name, why);
  dfccl_staging_t st; /* device buffers run on host copies, refreshed at every start */
  size_t all = total_count(rcounts, comm);
  mca_coll_dfccl_stage_in(&st, comm, sbuf, dtype, all, rbuf, dtype,
                          sbuf == MPI_IN_PLACE ? all : (size_t)rcounts[ompi_comm_rank(comm)]);
  return mca_coll_dfccl_staged_init(comm, &st,
                                    m->prev_reduce_scatter_init(st.send.host, st.recv.host, rcounts, dtype, op, comm,
                                                                info, request, m->prev_reduce_scatter_init_module),
                                    kept, request);
}
