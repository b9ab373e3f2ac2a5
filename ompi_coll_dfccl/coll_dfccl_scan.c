/*
 * MPI_Scan and MPI_Exscan in their three forms (blocking, MPI_I..., MPIX_..._init), and
 * MPI_Reduce_local: not run by DFCCL, taken over so that device buffers reach the previous component
 * as host copies (coll_dfccl_staging.c).  Open MPI 4.1 calls MPI_Reduce_local through
 * MPI_COMM_SELF's coll_reduce_local, whose default reduces with the CPU: on device memory it would
 * crash.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;

static const char* const not_dfccl = "not a DFCCL collective";

/* Host copies of a prefix reduction's count elements at sbuf (unless MPI_IN_PLACE) and rbuf, which
 * the reduction `writes` whole (else rbuf holds input, or bytes to keep). */
static void stage_prefix(dfccl_staging_t* st, const dfccl_entry_t* e, comm_t* comm, const void* sbuf, void* rbuf,
                         int count, dtype_t* dtype, bool writes) {
  mca_coll_dfccl_fell_back(e, comm, count, -1, not_dfccl);
  size_t n = (size_t)count;
  mca_coll_dfccl_stage(st, comm, sbuf, mca_coll_dfccl_region(sbuf, dtype, n), rbuf,
                       writes ? mca_coll_dfccl_region_written(rbuf, dtype, n) : mca_coll_dfccl_region(rbuf, dtype, n));
}

/* ---- scan ---------------------------------------------------------------------------------------- */

static int scan(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, void* rbuf, int count,
                dtype_t* dtype, struct ompi_op_t* op, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  stage_prefix(&st, e, comm, sbuf, rbuf, count, dtype, sbuf != MPI_IN_PLACE);
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, scan, comm, st.send.host, st.recv.host, count, dtype, op));
}

int mca_coll_dfccl_scan(const void* sbuf, void* rbuf, int count, dtype_t* dtype, struct ompi_op_t* op, comm_t* comm,
                        mca_coll_base_module_t* module) {
  return scan(&DFCCL_BLOCKING_ENTRY(scan), module, sbuf, rbuf, count, dtype, op, comm);
}

int mca_coll_dfccl_iscan(const void* sbuf, void* rbuf, int count, dtype_t* dtype, struct ompi_op_t* op, comm_t* comm,
                         ompi_request_t** request, mca_coll_base_module_t* module) {
  return scan(&DFCCL_NONBLOCKING_ENTRY(scan, request), module, sbuf, rbuf, count, dtype, op, comm);
}

int mca_coll_dfccl_scan_init(const void* sbuf, void* rbuf, int count, dtype_t* dtype, struct ompi_op_t* op,
                             comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                             mca_coll_base_module_t* module) {
  return scan(&DFCCL_PERSISTENT_ENTRY(scan, request, info, DFCCL_KEEP(op, dtype)), module, sbuf, rbuf, count, dtype, op,
              comm);
}

/* ---- exscan -------------------------------------------------------------------------------------- */

static int exscan(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, void* rbuf, int count,
                  dtype_t* dtype, struct ompi_op_t* op, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  stage_prefix(&st, e, comm, sbuf, rbuf, count, dtype, false); /* rank 0's rbuf comes back as it was */
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, exscan, comm, st.send.host, st.recv.host, count, dtype, op));
}

int mca_coll_dfccl_exscan(const void* sbuf, void* rbuf, int count, dtype_t* dtype, struct ompi_op_t* op, comm_t* comm,
                          mca_coll_base_module_t* module) {
  return exscan(&DFCCL_BLOCKING_ENTRY(exscan), module, sbuf, rbuf, count, dtype, op, comm);
}

int mca_coll_dfccl_iexscan(const void* sbuf, void* rbuf, int count, dtype_t* dtype, struct ompi_op_t* op, comm_t* comm,
                           ompi_request_t** request, mca_coll_base_module_t* module) {
  return exscan(&DFCCL_NONBLOCKING_ENTRY(exscan, request), module, sbuf, rbuf, count, dtype, op, comm);
}

int mca_coll_dfccl_exscan_init(const void* sbuf, void* rbuf, int count, dtype_t* dtype, struct ompi_op_t* op,
                               comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                               mca_coll_base_module_t* module) {
  return exscan(&DFCCL_PERSISTENT_ENTRY(exscan, request, info, DFCCL_KEEP(op, dtype)), module, sbuf, rbuf, count, dtype,
                op, comm);
}

/* ---- reduce_local -------------------------------------------------------------------------------- */

int mca_coll_dfccl_reduce_local(const void* inbuf, void* inoutbuf, int count, dtype_t* dtype, struct ompi_op_t* op,
                                mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_BLOCKING_ENTRY(reduce_local);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  comm_t* self = &ompi_mpi_comm_self.comm; /* where Open MPI 4.1 finds this function */
  dfccl_staging_t st;
  stage_prefix(&st, &e, self, inbuf, inoutbuf, count, dtype, false); /* inoutbuf is input */
  return mca_coll_dfccl_staged_end(
      &e, self, &st, m->prev_reduce_local(st.send.host, st.recv.host, count, dtype, op, m->prev_reduce_local_module));
}
