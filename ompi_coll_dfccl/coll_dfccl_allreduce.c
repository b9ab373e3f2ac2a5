/*
 * MPI_Allreduce through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on what every rank passes alike (communicator, count, datatype, op) and on
 * coll_dfccl_host_target, which must be set alike on every rank; so all ranks take the same route.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"

int mca_coll_dfccl_allreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                             struct ompi_op_t* op, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfcclDataType_t dfccl_dtype;
  dfcclRedOp_t dfccl_op;
  const char* why;

  if (count <= 0) { why = "count"; goto fallback; } /* 4.1's MPI layer returns before count 0 */
  if (!dfccl_dtype_of(dtype, &dfccl_dtype)) { why = "datatype"; goto fallback; }
  if (!dfccl_op_of(op, &dfccl_op)) { why = "op"; goto fallback; }
  dfccl_coll_t* coll = mca_coll_dfccl_coll_get(m, comm, DFCCL_ALLREDUCE, (size_t)count, dfccl_dtype, dfccl_op, -1, &why);
  if (coll == NULL) goto fallback;

  /* MPI_IN_PLACE: the input is in rbuf, DFCCL's in place is sendbuff == recvbuff. */
  if (mca_coll_dfccl_run(m, comm, coll, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allreduce_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allreduce_fallback);
  DFCCL_VERBOSE(10, "allreduce on comm '%s' (count %d) falls back: %s", comm->c_name, count, why);
  return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
}
