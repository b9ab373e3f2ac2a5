/*
 * MPI_Allgather, MPI_Iallgather and MPIX_Allgather_init through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on the receive count and datatype (MPI_IN_PLACE, when used, is used on
 * every rank), on the calls made on the communicator before, and on coll_dfccl_host_target.  The
 * send side may be described differently (same type signature): then this rank's block is copied
 * into place when each run starts (MPI lets the send buffer be read any time before completion)
 * and DFCCL runs in place, whose layout (sendbuff == recvbuff + rank x count) is MPI_IN_PLACE's.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

static bool plan(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                 struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m,
                 dfccl_form_t form, dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = DFCCL_ALLGATHER, .root = -1};
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for(m, comm, form, &sig, sbuf, rbuf, rcount, rdtype, NULL, why)};
  if (call->coll == NULL) return false;

  char* mine = (char*)rbuf + (size_t)ompi_comm_rank(comm) * (size_t)rcount * dfcclTypeSize(sig.dtype);
  call->send = sbuf;
  call->recv = rbuf;
  if (sbuf == MPI_IN_PLACE) call->send = mine;
  else if (sdtype != rdtype || scount != rcount) { /* same signature, other description */
    call->copy_in.from = sbuf;
    call->copy_in.count = scount;
    call->copy_in.type = sdtype;
    call->copy_in.to = mine;
    call->copy_in.to_count = rcount;
    call->copy_in.to_type = rdtype;
    call->send = mine;
  }
  return true;
}

/* Every form's way in: routed through DFCCL (true, *rc its result), or ready to fall back (false):
 * counted, said, and device buffers staged through host copies in *st. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, int scount,
                  struct ompi_datatype_t* sdtype, void* rbuf, int rcount, struct ompi_datatype_t* rdtype,
                  struct ompi_communicator_t* comm, dfccl_staging_t* st, int* rc) {
  dfccl_call_t call;
  const char* why;
  mca_coll_dfccl_enter(e, m, comm);
  if (plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  mca_coll_dfccl_fell_back(e, comm, rcount, -1, why);
  mca_coll_dfccl_stage_in(st, comm, sbuf, sdtype, scount, rbuf, rdtype, (size_t)rcount * ompi_comm_size(comm));
  return false;
}

int mca_coll_dfccl_allgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf,
                             int rcount, struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(allgather, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_allgather(st.send.host, scount, sdtype, st.recv.host, rcount, rdtype, comm,
                                                     m->prev_allgather_module));
}

int mca_coll_dfccl_iallgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                              struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                              ompi_request_t** request, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(iallgather, DFCCL_NONBLOCKING, request, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_iallgather(st.send.host, scount, sdtype, st.recv.host, rcount, rdtype, comm,
                                                      request, m->prev_iallgather_module));
}

int mca_coll_dfccl_allgather_init(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf,
                                  int rcount, struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                                  struct ompi_info_t* info, ompi_request_t** request, mca_coll_base_module_t* module) {
  /* With MPI_IN_PLACE, sdtype is ignored (and may be anything): not kept. */
  const dfccl_entry_t e = DFCCL_ENTRY(allgather_init, DFCCL_PERSISTENT, request,
                                      DFCCL_KEEP(sbuf == MPI_IN_PLACE ? NULL : sdtype, rdtype));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_allgather_init(st.send.host, scount, sdtype, st.recv.host, rcount, rdtype,
                                                          comm, info, request, m->prev_allgather_init_module));
}
