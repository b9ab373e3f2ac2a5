/*
 * MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block and MPIX_Reduce_scatter_block_init through
 * DFCCL: check -> route -> fall back.
 *
 * Routing depends only on recvcount, datatype and op, which every rank passes alike, on the calls
 * made on the communicator before and on the route its ranks agreed for the signature.  A rank
 * whose buffers are not in the route's memory runs on copies.  MPI_IN_PLACE (on every rank when
 * used) takes the input from recvbuf and leaves the result at its start; DFCCL's in place leaves
 * it at recvbuf + rank x recvcount, so it is moved to the start after the run.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

bool mca_coll_dfccl_reduce_scatter_plan(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                                        const char** why) {
  dfccl_sig_t sig = {.kind = dfcclReduceScatter, .root = -1};
  bool in_place = sbuf == MPI_IN_PLACE;
  size_t n = (size_t)ompi_comm_size(comm), count = (size_t)(rcount > 0 ? rcount : 0);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, n * count);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, dtype, in_place ? n * count : count);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, rcount, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  size_t bytes = sig.count * dfcclTypeSize(sig.dtype);
  if (!in_place) {
    call->send = mca_coll_dfccl_span(call, comm, (void*)sbuf, n * count, dtype, in, true, false);
    call->recv = mca_coll_dfccl_span(call, comm, rbuf, count, dtype, out, false, true);
    return true;
  }
  char* all = mca_coll_dfccl_span(call, comm, rbuf, n * count, dtype, out, true, true);
  char* mine = all + (size_t)ompi_comm_rank(comm) * bytes;
  call->send = all;  /* the input */
  call->recv = mine; /* DFCCL's in place */
  call->move_to = all;
  call->move_from = mine;
  call->move_bytes = mine != all ? bytes : 0;
  return true;
}

/* Every form's way in: a local copy on one rank, routed through DFCCL (true, *rc its result), or
 * ready to fall back (false): counted, said, and device buffers staged through host copies in *st. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf, int rcount,
                  struct ompi_datatype_t* dtype, struct ompi_op_t* op, struct ompi_communicator_t* comm,
                  dfccl_staging_t* st, int* rc) {
  dfccl_call_t call;
  const char* why = "a layout that is not contiguous, on one rank";
  if (ompi_comm_size(comm) == 1) {
    if (mca_coll_dfccl_local(e, comm, sbuf, dtype, (size_t)rcount, rbuf, dtype, (size_t)rcount, rc)) return true;
  } else if (mca_coll_dfccl_reduce_scatter_plan(sbuf, rbuf, rcount, dtype, op, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  mca_coll_dfccl_fell_back(e, comm, rcount, -1, why);
  size_t all = (size_t)rcount * ompi_comm_size(comm);
  mca_coll_dfccl_stage_in(st, comm, sbuf, dtype, all, rbuf, dtype, sbuf == MPI_IN_PLACE ? all : (size_t)rcount);
  return false;
}

int mca_coll_dfccl_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(reduce_scatter_block, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, rcount, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_reduce_scatter_block(st.send.host, st.recv.host, rcount, dtype, op, comm,
                                                                m->prev_reduce_scatter_block_module));
}

int mca_coll_dfccl_ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                         struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                         ompi_request_t** request, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(ireduce_scatter_block, DFCCL_NONBLOCKING, request, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, rcount, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_ireduce_scatter_block(st.send.host, st.recv.host, rcount, dtype, op, comm,
                                                                 request, m->prev_ireduce_scatter_block_module));
}

int mca_coll_dfccl_reduce_scatter_block_init(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                             struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                             struct ompi_info_t* info, ompi_request_t** request,
                                             mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(reduce_scatter_block_init, DFCCL_PERSISTENT, request, DFCCL_KEEP(op, dtype));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, rcount, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st,
      m->prev_reduce_scatter_block_init(st.send.host, st.recv.host, rcount, dtype, op, comm, info, request,
                                        m->prev_reduce_scatter_block_init_module));
}
