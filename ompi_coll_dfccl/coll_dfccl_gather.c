/*
 * MPI_Gather, MPI_Gatherv, MPI_Scatter and MPI_Scatterv in their three forms (blocking, MPI_I...,
 * MPIX_..._init): not run by DFCCL, taken over so that device buffers reach the previous component
 * as host copies (coll_dfccl_staging.c).  Each collective stages what MPI makes significant on this
 * rank: the root's buffer of every block, a leaf's one block (intracommunicators and
 * intercommunicators alike: mca_coll_dfccl_roles).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;

static const char* const not_dfccl = "not a DFCCL collective";

/* ---- gather and scatter ---------------------------------------------------------------------------
 * The same arguments, mirrored: a gather's root receives a block from every peer into rbuf and each
 * leaf sends one from sbuf; a scatter's root sends a block to every peer from sbuf and each leaf
 * receives one into rbuf. */

static int gather_or_scatter(const dfccl_entry_t* e, mca_coll_base_module_t* module, bool gather, const void* sbuf,
                             int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, int root,
                             comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_roles_t is = mca_coll_dfccl_roles(comm, root);
  size_t peers = (size_t)mca_coll_dfccl_peers(comm);
  bool sends_all = !gather && is.root, sends_one = gather && is.leaf;
  bool receives_all = gather && is.root, receives_one = !gather && is.leaf;
  dfccl_region_t send = sends_all   ? mca_coll_dfccl_region(sbuf, sdtype, (size_t)scount * peers)
                        : sends_one ? mca_coll_dfccl_region(sbuf, sdtype, (size_t)scount)
                                    : DFCCL_NO_REGION;
  /* A gather's root writes every block but its own in place; a scatter's leaf its one block. */
  bool root_writes_all = OMPI_COMM_IS_INTER(comm) || sbuf != MPI_IN_PLACE;
  dfccl_region_t recv = receives_all && root_writes_all
                            ? mca_coll_dfccl_region_written(rbuf, rdtype, (size_t)rcount * peers)
                        : receives_all ? mca_coll_dfccl_region(rbuf, rdtype, (size_t)rcount * peers)
                        : receives_one ? mca_coll_dfccl_region_written(rbuf, rdtype, (size_t)rcount)
                                       : DFCCL_NO_REGION;
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, root, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, send, rbuf, recv);
  int rc = gather
               ? DFCCL_PREVIOUS(e, m, gather, comm, st.send.host, scount, sdtype, st.recv.host, rcount, rdtype, root)
               : DFCCL_PREVIOUS(e, m, scatter, comm, st.send.host, scount, sdtype, st.recv.host, rcount, rdtype, root);
  return mca_coll_dfccl_staged_end(e, comm, &st, rc);
}

int mca_coll_dfccl_gather(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                          int root, comm_t* comm, mca_coll_base_module_t* module) {
  return gather_or_scatter(&DFCCL_BLOCKING_ENTRY(gather), module, true, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                           root, comm);
}

int mca_coll_dfccl_igather(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                           int root, comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return gather_or_scatter(&DFCCL_NONBLOCKING_ENTRY(gather, request), module, true, sbuf, scount, sdtype, rbuf, rcount,
                           rdtype, root, comm);
}

int mca_coll_dfccl_gather_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                               int root, comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                               mca_coll_base_module_t* module) {
  return gather_or_scatter(&DFCCL_PERSISTENT_ENTRY(gather, request, info, DFCCL_KEEP(sdtype, rdtype)), module, true,
                           sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm);
}

/* ---- gatherv ------------------------------------------------------------------------------------- */

static int gatherv(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, int scount,
                   dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs, dtype_t* rdtype, int root,
                   comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_roles_t is = mca_coll_dfccl_roles(comm, root);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, root, not_dfccl);
  mca_coll_dfccl_stage(
      &st, comm, sbuf, is.leaf ? mca_coll_dfccl_region(sbuf, sdtype, scount) : DFCCL_NO_REGION, rbuf,
      is.root ? mca_coll_dfccl_region_v(rbuf, rdtype, mca_coll_dfccl_peers(comm), rcounts, displs) : DFCCL_NO_REGION);
  return mca_coll_dfccl_staged_end(
      e, comm, &st,
      DFCCL_PREVIOUS(e, m, gatherv, comm, st.send.host, scount, sdtype, st.recv.host, rcounts, displs, rdtype, root));
}

int mca_coll_dfccl_gatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                           const int* displs, dtype_t* rdtype, int root, comm_t* comm, mca_coll_base_module_t* module) {
  return gatherv(&DFCCL_BLOCKING_ENTRY(gatherv), module, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                 comm);
}

int mca_coll_dfccl_igatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                            const int* displs, dtype_t* rdtype, int root, comm_t* comm, ompi_request_t** request,
                            mca_coll_base_module_t* module) {
  return gatherv(&DFCCL_NONBLOCKING_ENTRY(gatherv, request), module, sbuf, scount, sdtype, rbuf, rcounts, displs,
                 rdtype, root, comm);
}

int mca_coll_dfccl_gatherv_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                const int* displs, dtype_t* rdtype, int root, comm_t* comm, struct ompi_info_t* info,
                                ompi_request_t** request, mca_coll_base_module_t* module) {
  return gatherv(&DFCCL_PERSISTENT_ENTRY(gatherv, request, info, DFCCL_KEEP(sdtype, rdtype)), module, sbuf, scount,
                 sdtype, rbuf, rcounts, displs, rdtype, root, comm);
}

/* ---- scatter (above) ------------------------------------------------------------------------------ */

int mca_coll_dfccl_scatter(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                           int root, comm_t* comm, mca_coll_base_module_t* module) {
  return gather_or_scatter(&DFCCL_BLOCKING_ENTRY(scatter), module, false, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                           root, comm);
}

int mca_coll_dfccl_iscatter(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                            int root, comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return gather_or_scatter(&DFCCL_NONBLOCKING_ENTRY(scatter, request), module, false, sbuf, scount, sdtype, rbuf,
                           rcount, rdtype, root, comm);
}

int mca_coll_dfccl_scatter_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype,
                                int root, comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                mca_coll_base_module_t* module) {
  return gather_or_scatter(&DFCCL_PERSISTENT_ENTRY(scatter, request, info, DFCCL_KEEP(sdtype, rdtype)), module, false,
                           sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm);
}

/* ---- scatterv ------------------------------------------------------------------------------------ */

static int scatterv(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, const int* scounts,
                    const int* displs, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, int root,
                    comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_roles_t is = mca_coll_dfccl_roles(comm, root);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, root, not_dfccl);
  mca_coll_dfccl_stage(
      &st, comm, sbuf,
      is.root ? mca_coll_dfccl_region_v(sbuf, sdtype, mca_coll_dfccl_peers(comm), scounts, displs) : DFCCL_NO_REGION,
      rbuf, is.leaf ? mca_coll_dfccl_region(rbuf, rdtype, rcount) : DFCCL_NO_REGION);
  return mca_coll_dfccl_staged_end(
      e, comm, &st,
      DFCCL_PREVIOUS(e, m, scatterv, comm, st.send.host, scounts, displs, sdtype, st.recv.host, rcount, rdtype, root));
}

int mca_coll_dfccl_scatterv(const void* sbuf, const int* scounts, const int* displs, dtype_t* sdtype, void* rbuf,
                            int rcount, dtype_t* rdtype, int root, comm_t* comm, mca_coll_base_module_t* module) {
  return scatterv(&DFCCL_BLOCKING_ENTRY(scatterv), module, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                  comm);
}

int mca_coll_dfccl_iscatterv(const void* sbuf, const int* scounts, const int* displs, dtype_t* sdtype, void* rbuf,
                             int rcount, dtype_t* rdtype, int root, comm_t* comm, ompi_request_t** request,
                             mca_coll_base_module_t* module) {
  return scatterv(&DFCCL_NONBLOCKING_ENTRY(scatterv, request), module, sbuf, scounts, displs, sdtype, rbuf, rcount,
                  rdtype, root, comm);
}

int mca_coll_dfccl_scatterv_init(const void* sbuf, const int* scounts, const int* displs, dtype_t* sdtype, void* rbuf,
                                 int rcount, dtype_t* rdtype, int root, comm_t* comm, struct ompi_info_t* info,
                                 ompi_request_t** request, mca_coll_base_module_t* module) {
  return scatterv(&DFCCL_PERSISTENT_ENTRY(scatterv, request, info, DFCCL_KEEP(sdtype, rdtype)), module, sbuf, scounts,
                  displs, sdtype, rbuf, rcount, rdtype, root, comm);
}
