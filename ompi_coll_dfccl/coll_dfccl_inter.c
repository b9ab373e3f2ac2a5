/*
 * The collectives DFCCL runs (allreduce, bcast, reduce, allgather, reduce_scatter_block,
 * reduce_scatter) on intercommunicators, in their three forms: DFCCL's collectives span one group,
 * so on an intercommunicator every call goes to the previous component (coll/inter, libnbc), with
 * device buffers staged through host memory (coll_dfccl_staging.c).
 *
 * MPI's rules for intercommunicators decide what is significant: the root's group names the root
 * MPI_ROOT (its buffer) or MPI_PROC_NULL (nothing), the other group gives the remote root; blocks
 * come from every rank of the remote group; a reduce-scatter's input is sum(recvcounts) over the
 * local group (MPI 3.1 section 5.10).  MPI_IN_PLACE is not allowed.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;
typedef struct ompi_op_t op_t;

static const char* const inter = "an intercommunicator";

/* Host copies of a reduction's input (send_count elements at sbuf) and output (recv_count at rbuf,
 * written whole: MPI_IN_PLACE is not allowed on intercommunicators). */
static void stage_reduction(dfccl_staging_t* st, comm_t* comm, const void* sbuf, dtype_t* dtype, size_t send_count,
                            void* rbuf, size_t recv_count) {
  mca_coll_dfccl_stage(st, comm, sbuf, mca_coll_dfccl_region(sbuf, dtype, send_count), rbuf,
                       mca_coll_dfccl_region_written(rbuf, dtype, recv_count));
}

/* ---- allreduce ----------------------------------------------------------------------------------- */

static int allreduce(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, void* rbuf, int count,
                     dtype_t* dtype, op_t* op, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, count, -1, inter);
  stage_reduction(&st, comm, sbuf, dtype, (size_t)count, rbuf, (size_t)count);
  return mca_coll_dfccl_staged_end(e, comm, &st,
                                   DFCCL_PREVIOUS(e, m, allreduce, comm, st.send.host, st.recv.host, count, dtype, op));
}

int mca_coll_dfccl_inter_allreduce(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, comm_t* comm,
                                   mca_coll_base_module_t* module) {
  return allreduce(&DFCCL_BLOCKING_ENTRY(allreduce), module, sbuf, rbuf, count, dtype, op, comm);
}

int mca_coll_dfccl_inter_iallreduce(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, comm_t* comm,
                                    ompi_request_t** request, mca_coll_base_module_t* module) {
  return allreduce(&DFCCL_NONBLOCKING_ENTRY(allreduce, request), module, sbuf, rbuf, count, dtype, op, comm);
}

int mca_coll_dfccl_inter_allreduce_init(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, comm_t* comm,
                                        struct ompi_info_t* info, ompi_request_t** request,
                                        mca_coll_base_module_t* module) {
  return allreduce(&DFCCL_PERSISTENT_ENTRY(allreduce, request, info, DFCCL_KEEP(op, dtype)), module, sbuf, rbuf, count,
                   dtype, op, comm);
}

/* ---- bcast --------------------------------------------------------------------------------------- */

static int bcast(const dfccl_entry_t* e, mca_coll_base_module_t* module, void* buf, int count, dtype_t* dtype, int root,
                 comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_roles_t is = mca_coll_dfccl_roles(comm, root);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, count, -1, inter);
  /* The root's buffer is input, the other group's output: copied in and back alike. */
  mca_coll_dfccl_stage(&st, comm, NULL, DFCCL_NO_REGION, buf,
                       is.root   ? mca_coll_dfccl_region(buf, dtype, (size_t)count)
                       : is.leaf ? mca_coll_dfccl_region_written(buf, dtype, (size_t)count)
                                 : DFCCL_NO_REGION);
  return mca_coll_dfccl_staged_end(e, comm, &st, DFCCL_PREVIOUS(e, m, bcast, comm, st.recv.host, count, dtype, root));
}

int mca_coll_dfccl_inter_bcast(void* buf, int count, dtype_t* dtype, int root, comm_t* comm,
                               mca_coll_base_module_t* module) {
  return bcast(&DFCCL_BLOCKING_ENTRY(bcast), module, buf, count, dtype, root, comm);
}

int mca_coll_dfccl_inter_ibcast(void* buf, int count, dtype_t* dtype, int root, comm_t* comm, ompi_request_t** request,
                                mca_coll_base_module_t* module) {
  return bcast(&DFCCL_NONBLOCKING_ENTRY(bcast, request), module, buf, count, dtype, root, comm);
}

int mca_coll_dfccl_inter_bcast_init(void* buf, int count, dtype_t* dtype, int root, comm_t* comm,
                                    struct ompi_info_t* info, ompi_request_t** request,
                                    mca_coll_base_module_t* module) {
  return bcast(&DFCCL_PERSISTENT_ENTRY(bcast, request, info, DFCCL_KEEP(dtype, NULL)), module, buf, count, dtype, root,
               comm);
}

/* ---- reduce -------------------------------------------------------------------------------------- */

static int reduce(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, void* rbuf, int count,
                  dtype_t* dtype, op_t* op, int root, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_roles_t is = mca_coll_dfccl_roles(comm, root);
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, count, -1, inter);
  mca_coll_dfccl_stage(&st, comm, sbuf, is.leaf ? mca_coll_dfccl_region(sbuf, dtype, (size_t)count) : DFCCL_NO_REGION,
                       rbuf, is.root ? mca_coll_dfccl_region_written(rbuf, dtype, (size_t)count) : DFCCL_NO_REGION);
  return mca_coll_dfccl_staged_end(
      e, comm, &st, DFCCL_PREVIOUS(e, m, reduce, comm, st.send.host, st.recv.host, count, dtype, op, root));
}

int mca_coll_dfccl_inter_reduce(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, int root,
                                comm_t* comm, mca_coll_base_module_t* module) {
  return reduce(&DFCCL_BLOCKING_ENTRY(reduce), module, sbuf, rbuf, count, dtype, op, root, comm);
}

int mca_coll_dfccl_inter_ireduce(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, int root,
                                 comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return reduce(&DFCCL_NONBLOCKING_ENTRY(reduce, request), module, sbuf, rbuf, count, dtype, op, root, comm);
}

int mca_coll_dfccl_inter_reduce_init(const void* sbuf, void* rbuf, int count, dtype_t* dtype, op_t* op, int root,
                                     comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                     mca_coll_base_module_t* module) {
  return reduce(&DFCCL_PERSISTENT_ENTRY(reduce, request, info, DFCCL_KEEP(op, dtype)), module, sbuf, rbuf, count, dtype,
                op, root, comm);
}

/* ---- allgather ----------------------------------------------------------------------------------- */

static int allgather(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, int scount,
                     dtype_t* sdtype, void* rbuf, int rcount, dtype_t* rdtype, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, rcount, -1, inter);
  mca_coll_dfccl_stage(
      &st, comm, sbuf, mca_coll_dfccl_region(sbuf, sdtype, (size_t)scount), rbuf,
      mca_coll_dfccl_region_written(rbuf, rdtype, (size_t)rcount * (size_t)mca_coll_dfccl_peers(comm)));
  return mca_coll_dfccl_staged_end(
      e, comm, &st, DFCCL_PREVIOUS(e, m, allgather, comm, st.send.host, scount, sdtype, st.recv.host, rcount, rdtype));
}

int mca_coll_dfccl_inter_allgather(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                   dtype_t* rdtype, comm_t* comm, mca_coll_base_module_t* module) {
  return allgather(&DFCCL_BLOCKING_ENTRY(allgather), module, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int mca_coll_dfccl_inter_iallgather(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                    dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                                    mca_coll_base_module_t* module) {
  return allgather(&DFCCL_NONBLOCKING_ENTRY(allgather, request), module, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                   comm);
}

int mca_coll_dfccl_inter_allgather_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, int rcount,
                                        dtype_t* rdtype, comm_t* comm, struct ompi_info_t* info,
                                        ompi_request_t** request, mca_coll_base_module_t* module) {
  return allgather(&DFCCL_PERSISTENT_ENTRY(allgather, request, info, DFCCL_KEEP(sdtype, rdtype)), module, sbuf, scount,
                   sdtype, rbuf, rcount, rdtype, comm);
}

/* ---- reduce_scatter_block ------------------------------------------------------------------------ */

static int reduce_scatter_block(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, void* rbuf,
                                int rcount, dtype_t* dtype, op_t* op, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, rcount, -1, inter);
  stage_reduction(&st, comm, sbuf, dtype, (size_t)rcount * (size_t)ompi_comm_size(comm), rbuf, (size_t)rcount);
  return mca_coll_dfccl_staged_end(
      e, comm, &st, DFCCL_PREVIOUS(e, m, reduce_scatter_block, comm, st.send.host, st.recv.host, rcount, dtype, op));
}

int mca_coll_dfccl_inter_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, dtype_t* dtype, op_t* op,
                                              comm_t* comm, mca_coll_base_module_t* module) {
  return reduce_scatter_block(&DFCCL_BLOCKING_ENTRY(reduce_scatter_block), module, sbuf, rbuf, rcount, dtype, op, comm);
}

int mca_coll_dfccl_inter_ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, dtype_t* dtype, op_t* op,
                                               comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return reduce_scatter_block(&DFCCL_NONBLOCKING_ENTRY(reduce_scatter_block, request), module, sbuf, rbuf, rcount,
                              dtype, op, comm);
}

int mca_coll_dfccl_inter_reduce_scatter_block_init(const void* sbuf, void* rbuf, int rcount, dtype_t* dtype, op_t* op,
                                                   comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                                   mca_coll_base_module_t* module) {
  return reduce_scatter_block(&DFCCL_PERSISTENT_ENTRY(reduce_scatter_block, request, info, DFCCL_KEEP(op, dtype)),
                              module, sbuf, rbuf, rcount, dtype, op, comm);
}

/* ---- reduce_scatter ------------------------------------------------------------------------------ */

static int reduce_scatter(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, void* rbuf,
                          const int* rcounts, dtype_t* dtype, op_t* op, comm_t* comm) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  size_t all = 0;
  for (int i = 0; i < ompi_comm_size(comm); i++) all += (size_t)rcounts[i];
  int mine = rcounts[ompi_comm_rank(comm)];
  dfccl_staging_t st;
  mca_coll_dfccl_fell_back(e, comm, mine, -1, inter);
  stage_reduction(&st, comm, sbuf, dtype, all, rbuf, (size_t)mine);
  return mca_coll_dfccl_staged_end(
      e, comm, &st, DFCCL_PREVIOUS(e, m, reduce_scatter, comm, st.send.host, st.recv.host, rcounts, dtype, op));
}

int mca_coll_dfccl_inter_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, dtype_t* dtype, op_t* op,
                                        comm_t* comm, mca_coll_base_module_t* module) {
  return reduce_scatter(&DFCCL_BLOCKING_ENTRY(reduce_scatter), module, sbuf, rbuf, rcounts, dtype, op, comm);
}

int mca_coll_dfccl_inter_ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, dtype_t* dtype, op_t* op,
                                         comm_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  return reduce_scatter(&DFCCL_NONBLOCKING_ENTRY(reduce_scatter, request), module, sbuf, rbuf, rcounts, dtype, op,
                        comm);
}

int mca_coll_dfccl_inter_reduce_scatter_init(const void* sbuf, void* rbuf, const int* rcounts, dtype_t* dtype, op_t* op,
                                             comm_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                                             mca_coll_base_module_t* module) {
  return reduce_scatter(&DFCCL_PERSISTENT_ENTRY(reduce_scatter, request, info, DFCCL_KEEP(op, dtype)), module, sbuf,
                        rbuf, rcounts, dtype, op, comm);
}
