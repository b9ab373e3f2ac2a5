/*
 * MPI_Reduce_scatter through DFCCL: check -> route -> fall back.
 *
 * Routed as MPI_Reduce_scatter_block when every recvcount is equal (recvcounts is the same array
 * on every rank, so the decision is too); uneven counts fall back.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"

int mca_coll_dfccl_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                  struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                  mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  const char* why;

  int n = ompi_comm_size(comm);
  for (int i = 1; i < n; i++)
    if (rcounts[i] != rcounts[0]) { why = "uneven recvcounts"; goto fallback; }
  int rc = mca_coll_dfccl_reduce_scatter_route(sbuf, rbuf, rcounts[0], dtype, op, comm, m, &why);
  if (rc == DFCCL_FALL_BACK) goto fallback;
  if (rc != OMPI_SUCCESS) return rc;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_fallback);
  DFCCL_VERBOSE(10, "reduce_scatter on comm '%s' falls back: %s", comm->c_name, why);
  return m->prev_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, m->prev_reduce_scatter_module);
}
