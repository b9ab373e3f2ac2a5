/*
 * MPI_Allgather through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on the receive count and datatype (MPI_IN_PLACE, when used, is used on
 * every rank), and on coll_dfccl_host_target.  The send side may be described differently (same
 * type signature): then this rank's block is copied into place first and DFCCL runs in place, whose
 * layout (sendbuff == recvbuff + rank x count) is MPI_IN_PLACE's.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/mpiruntime.h"

int mca_coll_dfccl_allgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf,
                             int rcount, struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfcclDataType_t dfccl_dtype;
  const char* why;

  if (rcount <= 0) { why = "count"; goto fallback; }
  if (!dfccl_move_dtype_of(rdtype, &dfccl_dtype)) { why = "datatype"; goto fallback; }
  dfccl_coll_t* coll = mca_coll_dfccl_coll_get(m, comm, DFCCL_ALLGATHER, (size_t)rcount, dfccl_dtype, dfcclSum, -1, &why);
  if (coll == NULL) goto fallback;

  char* mine = (char*)rbuf + (size_t)ompi_comm_rank(comm) * (size_t)rcount * dfcclTypeSize(dfccl_dtype);
  const void* send = sbuf;
  if (sbuf == MPI_IN_PLACE) send = mine;
  else if (sdtype != rdtype || scount != rcount) { /* same signature, other description */
    if (ompi_datatype_sndrcv(sbuf, scount, sdtype, mine, rcount, rdtype) != OMPI_SUCCESS) {
      opal_output(0, "coll:dfccl: allgather on comm '%s': copying the send block failed", comm->c_name);
      ompi_mpi_abort(comm, 1); /* the other ranks are about to enter DFCCL: no way back */
    }
    send = mine;
  }
  if (mca_coll_dfccl_run(m, comm, coll, send, rbuf) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allgather_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allgather_fallback);
  DFCCL_VERBOSE(10, "allgather on comm '%s' (count %d) falls back: %s", comm->c_name, rcount, why);
  return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->prev_allgather_module);
}
