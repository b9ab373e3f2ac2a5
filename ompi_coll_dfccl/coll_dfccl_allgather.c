/*
 * MPI_Allgather, MPI_Iallgather and MPIX_Allgather_init through DFCCL: check -> route -> fall back.
 *
 * All-gather moves bytes: the signature is the number of bytes each rank contributes, alike on
 * every rank (MPI lets ranks and the two sides describe them with different datatypes of the same
 * type signature); the route is the one decided at the signature's first call
 * (MPI_IN_PLACE, when used, is used on every rank).  A rank whose buffers are not in the route's
 * memory, or whose datatypes have gaps, runs on copies of them.  DFCCL's in place
 * (sendbuff == recvbuff + rank x block) is MPI_IN_PLACE's layout.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

static bool plan(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                 struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m,
                 dfccl_form_t form, dfccl_call_t* call, const char** why) {
  dfccl_sig_t sig = {.kind = dfcclAllGather, .root = -1};
  size_t n = (size_t)ompi_comm_size(comm), position = (size_t)ompi_comm_rank(comm), rsize;
  ompi_datatype_type_size(rdtype, &rsize);
  size_t count = (size_t)(rcount > 0 ? rcount : 0), block = rsize * count; /* block: alike on every rank */
  bool in_place = sbuf == MPI_IN_PLACE;
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, rdtype, n * count);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, sdtype, (size_t)(scount > 0 ? scount : 0));
  *call = (dfccl_call_t){
      .coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, block, mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, n * count, rdtype, out, in_place, true);
  call->send = in_place ? (char*)call->recv + position * block
                        : mca_coll_dfccl_span(call, comm, (void*)sbuf, (size_t)scount, sdtype, in, true, false);
  return true;
}

/* Every form's way in: a local copy on one rank, routed through DFCCL (true, *rc its result), or
 * ready to fall back (false): counted, said, and device buffers staged through host copies in *st. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, int scount,
                  struct ompi_datatype_t* sdtype, void* rbuf, int rcount, struct ompi_datatype_t* rdtype,
                  struct ompi_communicator_t* comm, dfccl_staging_t* st, int* rc) {
  dfccl_call_t call;
  const char* why = "a layout that is not contiguous, on one rank";
  if (ompi_comm_size(comm) == 1) {
    if (mca_coll_dfccl_local(e, comm, sbuf, sdtype, (size_t)scount, rbuf, rdtype, (size_t)rcount, rc)) return true;
  } else if (plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  mca_coll_dfccl_fell_back(e, comm, rcount, -1, why);
  mca_coll_dfccl_stage_in(st, comm, sbuf, sdtype, scount, rbuf, rdtype, (size_t)rcount * ompi_comm_size(comm));
  return false;
}

int mca_coll_dfccl_allgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                             struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(allgather, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st,
      m->prev_allgather(st.send.host, scount, sdtype, st.recv.host, rcount, rdtype, comm, m->prev_allgather_module));
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

int mca_coll_dfccl_allgather_init(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                                  struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                                  struct ompi_info_t* info, ompi_request_t** request, mca_coll_base_module_t* module) {
  /* With MPI_IN_PLACE, sdtype is ignored (and may be anything): not kept. */
  const dfccl_entry_t e =
      DFCCL_ENTRY(allgather_init, DFCCL_PERSISTENT, request, DFCCL_KEEP(sbuf == MPI_IN_PLACE ? NULL : sdtype, rdtype));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_allgather_init(st.send.host, scount, sdtype, st.recv.host, rcount, rdtype,
                                                          comm, info, request, m->prev_allgather_init_module));
}
