/*
 * MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw in their three forms (blocking, MPI_I...,
 * MPIX_..._init), and MPI_Allgatherv where DFCCL does not run it.  MPI_Alltoall runs on DFCCL's
 * all-to-all where it can; the rest is taken over so that device buffers reach the previous
 * component as host copies (coll_dfccl_staging.c).  Every rank sends and receives a block per peer
 * (the remote group of an intercommunicator); with MPI_IN_PLACE the send arguments are ignored, and
 * the receive buffer is the input too (staging copies it in either way).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;

static const char* const not_dfccl = "not a DFCCL collective";

/* ---- allgatherv (its fallback: the routed entry points are in coll_dfccl_allgatherv.c) ---------- */

int mca_coll_dfccl_allgatherv_staged(const dfccl_entry_t* e, mca_coll_base_module_t* module, const char* why,
                                     const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                     const int* displs, dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, why);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region(sbuf, sdtype, scount), rbuf,
                       mca_coll_dfccl_region_v(rbuf, rdtype, mca_coll_dfccl_peers(comm), rcounts, displs));
  return mca_coll_dfccl_staged_end(
      e, comm, &st,
      DFCCL_PREVIOUS(e, m, allgatherv, comm, st.send.host, scount, sdtype, st.recv.host, rcounts, displs, rdtype));
}

/* ---- alltoall ------------------------------------------------------------------------------------ */

/* DFCCL's all-to-all moves bytes: the signature is the bytes each rank sends to each (alike on every
 * rank and both sides by MPI's rules).  It does not run in place (MPI_IN_PLACE is used by all ranks
 * or none, so they all fall back alike). */
static bool alltoall_plan(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                          comm_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                          const char** why) {
  if (sbuf == MPI_IN_PLACE) {
    *why = "MPI_IN_PLACE (DFCCL's all-to-all needs a separate input)";
    return false;
  }
  dfccl_sig_t sig = {.kind = dfcclAllToAll, .root = -1};
  size_t n = (size_t)ompi_comm_size(comm), rsize;
  ompi_datatype_type_size(rdtype, &rsize);
  size_t rn = n * (size_t)(rcount > 0 ? rcount : 0), sn = n * (size_t)(scount > 0 ? scount : 0);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, rdtype, rn);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, sdtype, sn);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, rsize * (rn / n),
                                                               mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, rn, rdtype, out, false, true); /* written whole */
  call->send = mca_coll_dfccl_span(call, comm, (void*)sbuf, sn, sdtype, in, true, false);
  return true;
}

/* Staged for the previous component: every block is written, unless in place (then the buffer is
 * the input too). */
static int alltoall_staged(const dfccl_entry_t* e, mca_coll_base_module_t* module, const char* why, const void* sbuf,
                           int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  size_t peers = (size_t)mca_coll_dfccl_peers(comm);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, why);
  dfccl_region_t recv = sbuf == MPI_IN_PLACE ? mca_coll_dfccl_region(rbuf, rdtype, (size_t)rcount * peers)
                                             : mca_coll_dfccl_region_written(rbuf, rdtype, (size_t)rcount * peers);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region(sbuf, sdtype, (size_t)scount * peers), rbuf, recv);
  return mca_coll_dfccl_staged_end(
      e, comm, &st, DFCCL_PREVIOUS(e, m, alltoall, comm, st.send.host, scount, sdtype, st.recv.host, rcount, rdtype));
}

/* Any form: a local copy on one rank, routed, or staged. */
static int alltoall(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, int scount,
                    dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  const char* why = "a layout that is not contiguous, on one rank";
  dfccl_call_t call;
  int rc;
  if (ompi_comm_size(comm) == 1) { /* the one block (MPI_IN_PLACE: nothing to copy) */
    if (mca_coll_dfccl_local(e, comm, sbuf, sdtype, (size_t)scount, rbuf, rdtype, (size_t)rcount, &rc)) return rc;
  } else if (alltoall_plan(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, e->form, &call, &why)) {
    return mca_coll_dfccl_routed(e, m, comm, &call);
  }
  return alltoall_staged(e, module, why, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int mca_coll_dfccl_alltoall(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                            comm_t* comm, mca_coll_base_module_t* module) {
  return alltoall(&DFCCL_BLOCKING_ENTRY(alltoall), module, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int mca_coll_dfccl_ialltoall(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                             comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return alltoall(&DFCCL_NONBLOCKING_ENTRY(alltoall, request), module, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                  comm);
}

int mca_coll_dfccl_alltoall_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                                 comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                 mca_coll_base_module_t* module) {
  return alltoall(&DFCCL_PERSISTENT_ENTRY(alltoall, request, info, DFCCL_KEEP(sdtype, rdtype)), module, sbuf, scount,
                  sdtype, rbuf, rcount, rdtype, comm);
}

/* On intercommunicators: staged (DFCCL's collectives span one group). */
static const char* const inter = "an intercommunicator";

int mca_coll_dfccl_inter_alltoall(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                  dtype_t* rdtype, comm_t* comm, mca_coll_base_module_t* module) {
  return alltoall_staged(&DFCCL_BLOCKING_ENTRY(alltoall), module, inter, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                         comm);
}

int mca_coll_dfccl_inter_ialltoall(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                   dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                                   mca_coll_base_module_t* module) {
  return alltoall_staged(&DFCCL_NONBLOCKING_ENTRY(alltoall, request), module, inter, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

int mca_coll_dfccl_inter_alltoall_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                       dtype_t* rdtype, comm_t* comm, struct ompi_info_t* info,
                                       ompi_request_t** request, mca_coll_base_module_t* module) {
  return alltoall_staged(&DFCCL_PERSISTENT_ENTRY(alltoall, request, info, DFCCL_KEEP(sdtype, rdtype)), module, inter,
                         sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

/* ---- alltoallv ----------------------------------------------------------------------------------- */

static int alltoallv(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, const int* scounts,
                     const int* sdispls, dtype_t* sdtype, void* rbuf, const int* rcounts, const int* rdispls,
                     dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  int peers = mca_coll_dfccl_peers(comm);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region_v(sbuf, sdtype, peers, scounts, sdispls), rbuf,
                       mca_coll_dfccl_region_v(rbuf, rdtype, peers, rcounts, rdispls));
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, alltoallv, comm, st.send.host, scounts, sdispls, sdtype,
                                                  st.recv.host, rcounts, rdispls, rdtype));
}

int mca_coll_dfccl_alltoallv(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype, void* rbuf,
                             const int* rcounts, const int* rdispls, dtype_t* rdtype, comm_t* comm,
                             mca_coll_base_module_t* module) {
  return alltoallv(&DFCCL_BLOCKING_ENTRY(alltoallv), module, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                   rdtype, comm);
}

int mca_coll_dfccl_ialltoallv(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype, void* rbuf,
                              const int* rcounts, const int* rdispls, dtype_t* rdtype, comm_t* comm,
                              ompi_request_t** request, mca_coll_base_module_t* module) {
  return alltoallv(&DFCCL_NONBLOCKING_ENTRY(alltoallv, request), module, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                   rdispls, rdtype, comm);
}

int mca_coll_dfccl_alltoallv_init(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype, void* rbuf,
                                  const int* rcounts, const int* rdispls, dtype_t* rdtype, comm_t* comm,
                                  struct ompi_info_t* info, ompi_request_t** request, mca_coll_base_module_t* module) {
  return alltoallv(&DFCCL_PERSISTENT_ENTRY(alltoallv, request, info, DFCCL_KEEP(sdtype, rdtype)), module, sbuf, scounts,
                   sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm);
}

/* ---- alltoallw ----------------------------------------------------------------------------------- */

static int alltoallw(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, const int* scounts,
                     const int* sdispls, dtype_t* const* sdtypes, void* rbuf, const int* rcounts, const int* rdispls,
                     dtype_t* const* rdtypes, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  int peers = mca_coll_dfccl_peers(comm);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region_w(sbuf, peers, scounts, sdispls, NULL, sdtypes), rbuf,
                       mca_coll_dfccl_region_w(rbuf, peers, rcounts, rdispls, NULL, rdtypes));
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, alltoallw, comm, st.send.host, scounts, sdispls, sdtypes,
                                                  st.recv.host, rcounts, rdispls, rdtypes));
}

/* The w collectives' persistent requests keep no datatypes: there is one per peer (a user who frees
 * them before the request meets what the previous component does with freed ones). */
int mca_coll_dfccl_alltoallw(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* const* sdtypes,
                             void* rbuf, const int* rcounts, const int* rdispls, dtype_t* const* rdtypes, comm_t* comm,
                             mca_coll_base_module_t* module) {
  return alltoallw(&DFCCL_BLOCKING_ENTRY(alltoallw), module, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                   rdtypes, comm);
}

int mca_coll_dfccl_ialltoallw(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* const* sdtypes,
                              void* rbuf, const int* rcounts, const int* rdispls, dtype_t* const* rdtypes, comm_t* comm,
                              ompi_request_t** request, mca_coll_base_module_t* module) {
  return alltoallw(&DFCCL_NONBLOCKING_ENTRY(alltoallw, request), module, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                   rdispls, rdtypes, comm);
}

int mca_coll_dfccl_alltoallw_init(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* const* sdtypes,
                                  void* rbuf, const int* rcounts, const int* rdispls, dtype_t* const* rdtypes,
                                  comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                  mca_coll_base_module_t* module) {
  return alltoallw(&DFCCL_PERSISTENT_ENTRY(alltoallw, request, info, DFCCL_KEEP_NOTHING), module, sbuf, scounts,
                   sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm);
}
