/*
 * MPI_Reduce through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on count, datatype, op and root, which every rank passes alike, and on
 * coll_dfccl_host_target.  MPI_IN_PLACE (at the root) is DFCCL's sendbuff == recvbuff; non-roots
 * pass no recvbuff to DFCCL (MPI does not define theirs).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"

int mca_coll_dfccl_reduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                          struct ompi_op_t* op, int root, struct ompi_communicator_t* comm,
                          mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfcclDataType_t dfccl_dtype;
  dfcclRedOp_t dfccl_op;
  const char* why;

  if (count <= 0) { why = "count"; goto fallback; }
  if (!dfccl_dtype_of(dtype, &dfccl_dtype)) { why = "datatype"; goto fallback; }
  if (!dfccl_op_of(op, &dfccl_op)) { why = "op"; goto fallback; }
  dfccl_coll_t* coll = mca_coll_dfccl_coll_get(m, comm, DFCCL_REDUCE, (size_t)count, dfccl_dtype, dfccl_op, root, &why);
  if (coll == NULL) goto fallback;

  bool is_root = ompi_comm_rank(comm) == root;
  const void* send = sbuf == MPI_IN_PLACE ? rbuf : sbuf; /* MPI_IN_PLACE is valid at the root only */
  if (mca_coll_dfccl_run(m, comm, coll, send, is_root ? rbuf : NULL) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_fallback);
  DFCCL_VERBOSE(10, "reduce on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module);
}
