/*
 * The neighborhood collectives (MPI_Neighbor_allgather, _allgatherv, _alltoall, _alltoallv,
 * _alltoallw) in their three forms (blocking, MPI_Ineighbor_..., MPIX_Neighbor_..._init): not run by
 * DFCCL, taken over so that device buffers reach the previous component as host copies
 * (coll_dfccl_staging.c).  A rank sends a block to each of its out-neighbours and receives one from
 * each of its in-neighbours, as the communicator's topology says.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;

static const char* const not_dfccl = "not a DFCCL collective";

/* How many blocks this rank receives (in) and sends (out): a Cartesian topology has two neighbours
 * per dimension, MPI_PROC_NULL ones included; a graph the same number either way.  0 and 0 on a
 * communicator without a topology: nothing is staged, and the previous component reports the
 * error. */
static void degrees(comm_t* comm, int* in, int* out) {
  MPI_Comm c = comm;
  int kind = MPI_UNDEFINED, n = 0, weighted = 0;
  *in = *out = 0;
  if (PMPI_Topo_test(c, &kind) != MPI_SUCCESS) return;
  if (kind == MPI_CART && PMPI_Cartdim_get(c, &n) == MPI_SUCCESS) *in = *out = 2 * n;
  else if (kind == MPI_GRAPH && PMPI_Graph_neighbors_count(c, ompi_comm_rank(comm), &n) == MPI_SUCCESS) *in = *out = n;
  else if (kind == MPI_DIST_GRAPH && PMPI_Dist_graph_neighbors_count(c, in, out, &weighted) != MPI_SUCCESS)
    *in = *out = 0;
}

/* ---- neighbor_allgather and neighbor_alltoall --------------------------------------------------------
 * The same arguments: a rank receives rcount elements from each in-neighbour, and sends its scount
 * elements to every out-neighbour (allgather) or a block of scount to each (alltoall). */

static int neighbor_blocks(const dfccl_entry_t* e, mca_coll_base_module_t* module, bool alltoall, const void* sbuf,
                           int scount, dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  int in, out;
  degrees(comm, &in, &out);
  size_t sent = alltoall ? (size_t)scount * (size_t)out : (size_t)scount;
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region(sbuf, sdtype, sent), rbuf,
                       mca_coll_dfccl_region(rbuf, rdtype, (size_t)rcount * (size_t)in));
  int rc =
      alltoall
          ? DFCCL_PREVIOUS(e, m, neighbor_alltoall, comm, st.send.host, scount, sdtype, st.recv.host, rcount, rdtype)
          : DFCCL_PREVIOUS(e, m, neighbor_allgather, comm, st.send.host, scount, sdtype, st.recv.host, rcount, rdtype);
  return mca_coll_dfccl_staged_end(e, comm, &st, rc);
}

int mca_coll_dfccl_neighbor_allgather(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                      dtype_t* rdtype, comm_t* comm, mca_coll_base_module_t* module) {
  return neighbor_blocks(&DFCCL_BLOCKING_ENTRY(neighbor_allgather), module, false, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

int mca_coll_dfccl_ineighbor_allgather(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                       dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                                       mca_coll_base_module_t* module) {
  return neighbor_blocks(&DFCCL_NONBLOCKING_ENTRY(neighbor_allgather, request), module, false, sbuf, scount, sdtype,
                         rbuf, rcount, rdtype, comm);
}

int mca_coll_dfccl_neighbor_allgather_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                           dtype_t* rdtype, comm_t* comm, struct ompi_info_t* info,
                                           ompi_request_t** request, mca_coll_base_module_t* module) {
  return neighbor_blocks(&DFCCL_PERSISTENT_ENTRY(neighbor_allgather, request, info, DFCCL_KEEP(sdtype, rdtype)), module,
                         false, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

/* ---- neighbor_allgatherv ------------------------------------------------------------------------- */

static int neighbor_allgatherv(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, int scount,
                               dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs, dtype_t* rdtype,
                               comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  int in, out;
  degrees(comm, &in, &out);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region(sbuf, sdtype, (size_t)scount), rbuf,
                       mca_coll_dfccl_region_v(rbuf, rdtype, in, rcounts, displs));
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, neighbor_allgatherv, comm, st.send.host, scount, sdtype,
                                                  st.recv.host, rcounts, displs, rdtype));
}

int mca_coll_dfccl_neighbor_allgatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                       const int* displs, dtype_t* rdtype, comm_t* comm,
                                       mca_coll_base_module_t* module) {
  return neighbor_allgatherv(&DFCCL_BLOCKING_ENTRY(neighbor_allgatherv), module, sbuf, scount, sdtype, rbuf, rcounts,
                             displs, rdtype, comm);
}

int mca_coll_dfccl_ineighbor_allgatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                        const int* displs, dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                                        mca_coll_base_module_t* module) {
  return neighbor_allgatherv(&DFCCL_NONBLOCKING_ENTRY(neighbor_allgatherv, request), module, sbuf, scount, sdtype, rbuf,
                             rcounts, displs, rdtype, comm);
}

int mca_coll_dfccl_neighbor_allgatherv_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf,
                                            const int* rcounts, const int* displs, dtype_t* rdtype, comm_t* comm,
                                            struct ompi_info_t* info, ompi_request_t** request,
                                            mca_coll_base_module_t* module) {
  return neighbor_allgatherv(&DFCCL_PERSISTENT_ENTRY(neighbor_allgatherv, request, info, DFCCL_KEEP(sdtype, rdtype)),
                             module, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm);
}

/* ---- neighbor_alltoall (above) ---------------------------------------------------------------------- */

int mca_coll_dfccl_neighbor_alltoall(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                     dtype_t* rdtype, comm_t* comm, mca_coll_base_module_t* module) {
  return neighbor_blocks(&DFCCL_BLOCKING_ENTRY(neighbor_alltoall), module, true, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

int mca_coll_dfccl_ineighbor_alltoall(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                      dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                                      mca_coll_base_module_t* module) {
  return neighbor_blocks(&DFCCL_NONBLOCKING_ENTRY(neighbor_alltoall, request), module, true, sbuf, scount, sdtype, rbuf,
                         rcount, rdtype, comm);
}

int mca_coll_dfccl_neighbor_alltoall_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                          dtype_t* rdtype, comm_t* comm, struct ompi_info_t* info,
                                          ompi_request_t** request, mca_coll_base_module_t* module) {
  return neighbor_blocks(&DFCCL_PERSISTENT_ENTRY(neighbor_alltoall, request, info, DFCCL_KEEP(sdtype, rdtype)), module,
                         true, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

/* ---- neighbor_alltoallv -------------------------------------------------------------------------- */

static int neighbor_alltoallv(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf,
                              const int* scounts, const int* sdispls, dtype_t* sdtype, void* rbuf, const int* rcounts,
                              const int* rdispls, dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  int in, out;
  degrees(comm, &in, &out);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region_v(sbuf, sdtype, out, scounts, sdispls), rbuf,
                       mca_coll_dfccl_region_v(rbuf, rdtype, in, rcounts, rdispls));
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, neighbor_alltoallv, comm, st.send.host, scounts, sdispls,
                                                  sdtype, st.recv.host, rcounts, rdispls, rdtype));
}

int mca_coll_dfccl_neighbor_alltoallv(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype,
                                      void* rbuf, const int* rcounts, const int* rdispls, dtype_t* rdtype, comm_t* comm,
                                      mca_coll_base_module_t* module) {
  return neighbor_alltoallv(&DFCCL_BLOCKING_ENTRY(neighbor_alltoallv), module, sbuf, scounts, sdispls, sdtype, rbuf,
                            rcounts, rdispls, rdtype, comm);
}

int mca_coll_dfccl_ineighbor_alltoallv(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype,
                                       void* rbuf, const int* rcounts, const int* rdispls, dtype_t* rdtype,
                                       comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return neighbor_alltoallv(&DFCCL_NONBLOCKING_ENTRY(neighbor_alltoallv, request), module, sbuf, scounts, sdispls,
                            sdtype, rbuf, rcounts, rdispls, rdtype, comm);
}

int mca_coll_dfccl_neighbor_alltoallv_init(const void* sbuf, const int* scounts, const int* sdispls, dtype_t* sdtype,
                                           void* rbuf, const int* rcounts, const int* rdispls, dtype_t* rdtype,
                                           comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                           mca_coll_base_module_t* module) {
  return neighbor_alltoallv(&DFCCL_PERSISTENT_ENTRY(neighbor_alltoallv, request, info, DFCCL_KEEP(sdtype, rdtype)),
                            module, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm);
}

/* ---- neighbor_alltoallw (displacements in bytes, as MPI_Aint) ------------------------------------ */

static int neighbor_alltoallw(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf,
                              const int* scounts, const MPI_Aint* sdispls, dtype_t* const* sdtypes, void* rbuf,
                              const int* rcounts, const MPI_Aint* rdispls, dtype_t* const* rdtypes, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  int in, out;
  degrees(comm, &in, &out);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, -1, -1, not_dfccl);
  mca_coll_dfccl_stage(&st, comm, sbuf, mca_coll_dfccl_region_w(sbuf, out, scounts, NULL, sdispls, sdtypes), rbuf,
                       mca_coll_dfccl_region_w(rbuf, in, rcounts, NULL, rdispls, rdtypes));
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, neighbor_alltoallw, comm, st.send.host, scounts, sdispls,
                                                  sdtypes, st.recv.host, rcounts, rdispls, rdtypes));
}

int mca_coll_dfccl_neighbor_alltoallw(const void* sbuf, const int* scounts, const MPI_Aint* sdispls,
                                      dtype_t* const* sdtypes, void* rbuf, const int* rcounts, const MPI_Aint* rdispls,
                                      dtype_t* const* rdtypes, comm_t* comm, mca_coll_base_module_t* module) {
  return neighbor_alltoallw(&DFCCL_BLOCKING_ENTRY(neighbor_alltoallw), module, sbuf, scounts, sdispls, sdtypes, rbuf,
                            rcounts, rdispls, rdtypes, comm);
}

int mca_coll_dfccl_ineighbor_alltoallw(const void* sbuf, const int* scounts, const MPI_Aint* sdispls,
                                       dtype_t* const* sdtypes, void* rbuf, const int* rcounts, const MPI_Aint* rdispls,
                                       dtype_t* const* rdtypes, comm_t* comm, ompi_request_t** request,
                                       mca_coll_base_module_t* module) {
  return neighbor_alltoallw(&DFCCL_NONBLOCKING_ENTRY(neighbor_alltoallw, request), module, sbuf, scounts, sdispls,
                            sdtypes, rbuf, rcounts, rdispls, rdtypes, comm);
}

int mca_coll_dfccl_neighbor_alltoallw_init(const void* sbuf, const int* scounts, const MPI_Aint* sdispls,
                                           dtype_t* const* sdtypes, void* rbuf, const int* rcounts,
                                           const MPI_Aint* rdispls, dtype_t* const* rdtypes, comm_t* comm,
                                           struct ompi_info_t* info, ompi_request_t** request,
                                           mca_coll_base_module_t* module) {
  return neighbor_alltoallw(&DFCCL_PERSISTENT_ENTRY(neighbor_alltoallw, request, info, DFCCL_KEEP_NOTHING), module,
                            sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm);
}
