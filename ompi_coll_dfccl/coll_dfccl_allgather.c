/*
 * MPI_Allgather and MPI_Iallgather through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on the receive count and datatype (MPI_IN_PLACE, when used, is used on
 * every rank), on the calls made on the communicator before, and on coll_dfccl_host_target.  The
 * send side may be described differently (same type signature): then this rank's block is copied
 * into place first (at the call: MPI lets the send buffer be read any time before completion) and
 * DFCCL runs in place, whose layout (sendbuff == recvbuff + rank x count) is MPI_IN_PLACE's.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/mpiruntime.h"

static bool plan(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                 struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m,
                 dfccl_form_t form, dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = DFCCL_ALLGATHER, .root = -1};
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for(m, comm, form, &sig, rcount, rdtype, NULL, why)};
  if (call->coll == NULL) return false;

  char* mine = (char*)rbuf + (size_t)ompi_comm_rank(comm) * (size_t)rcount * dfcclTypeSize(sig.dtype);
  call->send = sbuf;
  call->recv = rbuf;
  if (sbuf == MPI_IN_PLACE) call->send = mine;
  else if (sdtype != rdtype || scount != rcount) { /* same signature, other description */
    if (ompi_datatype_sndrcv(sbuf, scount, sdtype, mine, rcount, rdtype) != OMPI_SUCCESS) {
      opal_output(0, "coll:dfccl: allgather on comm '%s': copying the send block failed", comm->c_name);
      ompi_mpi_abort(comm, 1); /* the other ranks are about to enter DFCCL: no way back */
    }
    call->send = mine;
  }
  return true;
}

int mca_coll_dfccl_allgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf,
                             int rcount, struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm);
  if (!plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, DFCCL_BLOCKING, &call, &why)) goto fallback;
  if (mca_coll_dfccl_run(m, comm, &call) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allgather_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.allgather_fallback);
  DFCCL_VERBOSE(10, "allgather on comm '%s' (count %d) falls back: %s", comm->c_name, rcount, why);
  return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->prev_allgather_module);
}

int mca_coll_dfccl_iallgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                              struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                              ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  if (!plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, DFCCL_NONBLOCKING, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.iallgather_routed);
  return mca_coll_dfccl_start(m, comm, &call, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.iallgather_fallback);
  DFCCL_VERBOSE(10, "iallgather on comm '%s' (count %d) falls back: %s", comm->c_name, rcount, why);
  return m->prev_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m->prev_iallgather_module);
}
