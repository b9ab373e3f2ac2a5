/*
 * MPI_Reduce_scatter, MPI_Ireduce_scatter and MPIX_Reduce_scatter_init through DFCCL: check ->
 * route -> fall back.
 *
 * Routed as (I)Reduce_scatter_block (and its _init) when every recvcount is equal (recvcounts is
 * the same array on every rank, so the decision is too), else as DFCCL's reduce-scatter-v.  On one
 * rank, a local copy.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <limits.h>
#include <stdlib.h>

/* Uneven recvcounts: DFCCL's reduce-scatter-v.  Its signature is the counts (interned; alike on
 * every rank by MPI's rules), the datatype and the op; the input holds the blocks packed, as DFCCL's
 * does.  MPI_IN_PLACE takes the input from recvbuf and leaves the result at its start: DFCCL's in
 * place leaves it at the rank's block, so it is moved to the start after the run. */
static bool plan_v(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                   struct ompi_op_t* op, struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m,
                   dfccl_form_t form, dfccl_call_t* call, const char** why) {
  int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
  uint64_t* counts = mca_coll_dfccl_alloc_or_abort((size_t)n * sizeof *counts, comm);
  size_t total = 0, before_me = 0;
  for (int i = 0; i < n; i++) {
    counts[i] = (uint64_t)(rcounts[i] > 0 ? rcounts[i] : 0);
    if (i == me) before_me = total;
    total += counts[i];
  }
  dfccl_sig_t sig = {.kind = dfcclReduceScatterV, .root = -1, .blocks = mca_coll_dfccl_intern_blocks(m, counts, n)};
  free(counts);
  if (sig.blocks == NULL || total > INT_MAX) {
    *why = total > INT_MAX ? "more than INT_MAX elements in all"
                           : "more different recvcounts on the communicator than it keeps";
    return false;
  }
  bool in_place = sbuf == MPI_IN_PLACE;
  size_t mine = (size_t)(rcounts[me] > 0 ? rcounts[me] : 0), size;
  ompi_datatype_type_size(dtype, &size);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, dtype, total);
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, dtype, in_place ? total : mine);
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_reduction(m, comm, form, &sig, (int)total, dtype, op,
                                                                   mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  if (!in_place) {
    call->send = mca_coll_dfccl_span(call, comm, (void*)sbuf, total, dtype, in, true, false);
    call->recv = mca_coll_dfccl_span(call, comm, rbuf, mine, dtype, out, false, true);
    return true;
  }
  char* all = mca_coll_dfccl_span(call, comm, rbuf, total, dtype, out, true, true);
  char* at = all + before_me * size;
  call->send = all; /* the input */
  call->recv = at;  /* DFCCL's in place */
  call->move_to = all;
  call->move_from = at;
  call->move_bytes = at != all ? mine * size : 0;
  return true;
}

static bool plan(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                 struct ompi_communicator_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                 const char** why) {
  int n = ompi_comm_size(comm);
  for (int i = 1; i < n; i++)
    if (rcounts[i] != rcounts[0]) return plan_v(sbuf, rbuf, rcounts, dtype, op, comm, m, form, call, why);
  return mca_coll_dfccl_reduce_scatter_plan(sbuf, rbuf, rcounts[0], dtype, op, comm, m, form, call, why);
}

/* Every form's way in: a local copy on one rank, routed through DFCCL (true, *rc its result), or
 * ready to fall back (false): counted, said, and device buffers staged through host copies in *st.
 * The fallback's input is the sum of the recvcounts; its output this rank's recvcount (all of the
 * input in place, where the result is read from the front of it). */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, void* rbuf, const int* rcounts,
                  struct ompi_datatype_t* dtype, struct ompi_op_t* op, struct ompi_communicator_t* comm,
                  dfccl_staging_t* st, int* rc) {
  dfccl_call_t call;
  const char* why = "a layout that is not contiguous, on one rank";
  if (ompi_comm_size(comm) == 1) {
    size_t count = (size_t)rcounts[0];
    if (mca_coll_dfccl_local(e, comm, sbuf, dtype, count, rbuf, dtype, count, rc)) return true;
  } else if (plan(sbuf, rbuf, rcounts, dtype, op, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  int mine = rcounts[ompi_comm_rank(comm)];
  mca_coll_dfccl_fell_back(e, comm, mine, -1, why);
  size_t all = 0;
  for (int i = 0; i < ompi_comm_size(comm); i++) all += (size_t)rcounts[i];
  mca_coll_dfccl_stage_in(st, comm, sbuf, dtype, all, rbuf, dtype, sbuf == MPI_IN_PLACE ? all : (size_t)mine);
  return false;
}

int mca_coll_dfccl_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                  struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                  mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(reduce_scatter, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, rcounts, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st,
      m->prev_reduce_scatter(st.send.host, st.recv.host, rcounts, dtype, op, comm, m->prev_reduce_scatter_module));
}

int mca_coll_dfccl_ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                   struct ompi_op_t* op, struct ompi_communicator_t* comm, ompi_request_t** request,
                                   mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(ireduce_scatter, DFCCL_NONBLOCKING, request, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, rcounts, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_ireduce_scatter(st.send.host, st.recv.host, rcounts, dtype, op, comm,
                                                           request, m->prev_ireduce_scatter_module));
}

int mca_coll_dfccl_reduce_scatter_init(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                       struct ompi_op_t* op, struct ompi_communicator_t* comm, struct ompi_info_t* info,
                                       ompi_request_t** request, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(reduce_scatter_init, DFCCL_PERSISTENT, request, DFCCL_KEEP(op, dtype));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, sbuf, rbuf, rcounts, dtype, op, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_reduce_scatter_init(st.send.host, st.recv.host, rcounts, dtype, op, comm,
                                                               info, request, m->prev_reduce_scatter_init_module));
}
