/*
 * MPI_Reduce_scatter_block through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on recvcount, datatype and op, which every rank passes alike, and on
 * coll_dfccl_host_target.  MPI_IN_PLACE (on every rank when used) takes the input from recvbuf and
 * leaves the result at its start; DFCCL's in place leaves it at recvbuf + rank x recvcount, so it is
 * moved to the start afterwards.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"
#include <string.h>

int mca_coll_dfccl_reduce_scatter_route(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_dfccl_module_t* m, const char** why) {
  dfcclDataType_t dfccl_dtype;
  dfcclRedOp_t dfccl_op;

  if (rcount <= 0) { *why = "count"; return DFCCL_FALL_BACK; }
  if (!dfccl_dtype_of(dtype, &dfccl_dtype)) { *why = "datatype"; return DFCCL_FALL_BACK; }
  if (!dfccl_op_of(op, &dfccl_op)) { *why = "op"; return DFCCL_FALL_BACK; }
  dfccl_coll_t* coll =
      mca_coll_dfccl_coll_get(m, comm, DFCCL_REDUCE_SCATTER, (size_t)rcount, dfccl_dtype, dfccl_op, -1, why);
  if (coll == NULL) return DFCCL_FALL_BACK;

  if (sbuf != MPI_IN_PLACE) return mca_coll_dfccl_run(m, comm, coll, sbuf, rbuf);
  size_t bytes = (size_t)rcount * dfcclTypeSize(dfccl_dtype);
  char* mine = (char*)rbuf + (size_t)ompi_comm_rank(comm) * bytes;
  int rc = mca_coll_dfccl_run(m, comm, coll, rbuf, mine);
  if (rc == OMPI_SUCCESS && mine != rbuf) memmove(rbuf, mine, bytes);
  return rc;
}

int mca_coll_dfccl_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  const char* why;

  int rc = mca_coll_dfccl_reduce_scatter_route(sbuf, rbuf, rcount, dtype, op, comm, m, &why);
  if (rc == DFCCL_FALL_BACK) goto fallback;
  if (rc != OMPI_SUCCESS) return rc;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_block_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.reduce_scatter_block_fallback);
  DFCCL_VERBOSE(10, "reduce_scatter_block on comm '%s' (count %d) falls back: %s", comm->c_name, rcount, why);
  return m->prev_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, m->prev_reduce_scatter_block_module);
}
