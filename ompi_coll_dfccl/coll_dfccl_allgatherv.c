/*
 * MPI_Allgatherv, MPI_Iallgatherv and MPIX_Allgatherv_init through DFCCL's all-gather-v: check ->
 * route -> fall back.
 *
 * All-gather-v moves bytes.  Its signature is every rank's number of bytes (alike on every rank by
 * MPI's rules); the displacements are not in it, because MPI makes them local to a rank (in units
 * of its own receive extent).  So the DFCCL collective is registered with the packed layout --
 * block i right after blocks 0..i-1 -- and a rank whose receive buffer is laid out so (contiguous
 * type, displacements the running sums) runs on it directly; any other layout (gaps between
 * blocks, another order, holes in the datatype) runs on a packed copy in the route's memory, whose
 * blocks go to their places when the run completes (the receive layout as one indexed datatype,
 * through the same copy path as a datatype with gaps).  MPI_IN_PLACE: the rank's own block is
 * already in the receive buffer, at its place in the packed layout.  Intercommunicators and calls
 * DFCCL cannot take are staged for the previous component (coll_dfccl_alltoall.c).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <stdlib.h>

#include "opal/util/output.h"

typedef struct ompi_datatype_t dtype_t;
typedef struct ompi_communicator_t comm_t;

/* The receive buffer's blocks as one datatype (blocks of rdtype at displs, in rank order): what its
 * packed copy is unpacked through.  Aborts the job if it cannot be made (the others run DFCCL). */
static dtype_t* receive_layout(const int* rcounts, const int* displs, dtype_t* rdtype, comm_t* comm) {
  dtype_t* layout = NULL;
  if (ompi_datatype_create_indexed(ompi_comm_size(comm), rcounts, displs, rdtype, &layout) != OMPI_SUCCESS ||
      ompi_datatype_commit(&layout) != OMPI_SUCCESS) {
    opal_output(0, "coll:dfccl: comm '%s': no memory for an all-gather-v receive layout", comm->c_name);
    ompi_mpi_abort(comm, 1);
  }
  return layout;
}

/* Blocks of a contiguous type at the running sums of the counts: DFCCL's packed layout already. */
static bool packed(const int* rcounts, const int* displs, dtype_t* rdtype, int n) {
  ptrdiff_t lb, extent;
  size_t size;
  ompi_datatype_get_extent(rdtype, &lb, &extent);
  ompi_datatype_type_size(rdtype, &size);
  if (lb != 0 || (size_t)extent != size || !ompi_datatype_is_contiguous_memory_layout(rdtype, 2)) return false;
  for (int i = 1, at = displs[0]; i < n; i++)
    if (displs[i] != (at += rcounts[i - 1])) return false;
  return true;
}

static bool plan(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs,
                 dtype_t* rdtype, comm_t* comm, mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                 const char** why) {
  int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
  size_t rsize, total = 0, before_me = 0;
  ompi_datatype_type_size(rdtype, &rsize);
  uint64_t* bytes = mca_coll_dfccl_alloc_or_abort((size_t)n * sizeof *bytes, comm);
  for (int i = 0; i < n; i++) {
    bytes[i] = (uint64_t)(rcounts[i] > 0 ? rcounts[i] : 0) * rsize;
    if (i == me) before_me = total;
    total += bytes[i];
  }
  dfccl_sig_t sig = {.kind = dfcclAllGatherV, .root = -1, .blocks = mca_coll_dfccl_intern_blocks(m, bytes, n)};
  free(bytes);
  if (sig.blocks == NULL) {
    *why = "more different all-gather-v layouts on the communicator than it keeps";
    return false;
  }
  bool in_place = sbuf == MPI_IN_PLACE;
  dfccl_memory_t out = mca_coll_dfccl_memory_of_layout(rbuf, MPI_BYTE, total);
  dfccl_memory_t in = mca_coll_dfccl_memory_of_layout(sbuf, sdtype, (size_t)(scount > 0 ? scount : 0));
  *call = (dfccl_call_t){
      .coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, total, mca_coll_dfccl_memory_both(in, out), why)};
  if (call->coll == NULL) return false;
  if (packed(rcounts, displs, rdtype, n)) { /* the common layout: no datatype to make */
    call->recv = mca_coll_dfccl_span(call, comm, (char*)rbuf + (ptrdiff_t)displs[0] * (ptrdiff_t)rsize,
                                     total / (rsize ? rsize : 1), rdtype, out, in_place, true);
    call->send = in_place ? (char*)call->recv + before_me
                          : mca_coll_dfccl_span(call, comm, (void*)sbuf, (size_t)scount, sdtype, in, true, false);
    return true;
  }
  dtype_t* layout = receive_layout(rcounts, displs, rdtype, comm);
  /* In place, the copy (if any) takes the own block in; the run writes every other block. */
  call->recv = mca_coll_dfccl_span(call, comm, rbuf, 1, layout, out, in_place, true);
  dfccl_span_t* copy = &call->scratch[0];
  if (copy->copy != NULL && copy->dtype == layout) copy->owns_dtype = true; /* unpacked through it */
  else OBJ_RELEASE(layout);
  call->send = in_place ? (char*)call->recv + before_me
                        : mca_coll_dfccl_span(call, comm, (void*)sbuf, (size_t)scount, sdtype, in, true, false);
  return true;
}

/* Every form's way in: a local copy on one rank, or routed through DFCCL (true, *rc its result);
 * false (with *why) when the call falls back. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, const void* sbuf, int scount, dtype_t* sdtype,
                  void* rbuf, const int* rcounts, const int* displs, dtype_t* rdtype, comm_t* comm, int* rc,
                  const char** why) {
  if (ompi_comm_size(comm) == 1) {
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    *why = "a layout that is not contiguous, on one rank";
    return mca_coll_dfccl_local(e, comm, sbuf, sdtype, (size_t)scount, (char*)rbuf + (ptrdiff_t)displs[0] * extent,
                                rdtype, (size_t)rcounts[0], rc);
  }
  dfccl_call_t call;
  if (!plan(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, m, e->form, &call, why)) return false;
  *rc = mca_coll_dfccl_routed(e, m, comm, &call);
  return true;
}

/* Any form: routed, a local copy, or staged for the previous component. */
static int allgatherv(const dfccl_entry_t* e, mca_coll_base_module_t* module, const void* sbuf, int scount,
                      dtype_t* sdtype, void* rbuf, const int* rcounts, const int* displs, dtype_t* rdtype,
                      comm_t* comm) {
  int rc;
  const char* why = NULL;
  if (route(e, (mca_coll_dfccl_module_t*)module, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, &rc, &why))
    return rc;
  return mca_coll_dfccl_allgatherv_staged(e, module, why, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm);
}

int mca_coll_dfccl_allgatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                              const int* displs, dtype_t* rdtype, comm_t* comm, mca_coll_base_module_t* module) {
  return allgatherv(&DFCCL_BLOCKING_ENTRY(allgatherv), module, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                    comm);
}

int mca_coll_dfccl_iallgatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                               const int* displs, dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                               mca_coll_base_module_t* module) {
  return allgatherv(&DFCCL_NONBLOCKING_ENTRY(allgatherv, request), module, sbuf, scount, sdtype, rbuf, rcounts, displs,
                    rdtype, comm);
}

int mca_coll_dfccl_allgatherv_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                   const int* displs, dtype_t* rdtype, comm_t* comm, struct ompi_info_t* info,
                                   ompi_request_t** request, mca_coll_base_module_t* module) {
  return allgatherv(&DFCCL_PERSISTENT_ENTRY(allgatherv, request, info, DFCCL_KEEP(sdtype, rdtype)), module, sbuf,
                    scount, sdtype, rbuf, rcounts, displs, rdtype, comm);
}

/* ---- on intercommunicators: staged ------------------------------------------------------------- */

static const char* const inter = "an intercommunicator";

int mca_coll_dfccl_inter_allgatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                    const int* displs, dtype_t* rdtype, comm_t* comm, mca_coll_base_module_t* module) {
  return mca_coll_dfccl_allgatherv_staged(&DFCCL_BLOCKING_ENTRY(allgatherv), module, inter, sbuf, scount, sdtype, rbuf,
                                          rcounts, displs, rdtype, comm);
}

int mca_coll_dfccl_inter_iallgatherv(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                     const int* displs, dtype_t* rdtype, comm_t* comm, ompi_request_t** request,
                                     mca_coll_base_module_t* module) {
  return mca_coll_dfccl_allgatherv_staged(&DFCCL_NONBLOCKING_ENTRY(allgatherv, request), module, inter, sbuf, scount,
                                          sdtype, rbuf, rcounts, displs, rdtype, comm);
}

int mca_coll_dfccl_inter_allgatherv_init(const void* sbuf, int scount, dtype_t* sdtype, void* rbuf, const int* rcounts,
                                         const int* displs, dtype_t* rdtype, comm_t* comm, struct ompi_info_t* info,
                                         ompi_request_t** request, mca_coll_base_module_t* module) {
  return mca_coll_dfccl_allgatherv_staged(
      &DFCCL_PERSISTENT_ENTRY(allgatherv, request, info, DFCCL_KEEP(sdtype, rdtype)), module, inter, sbuf, scount,
      sdtype, rbuf, rcounts, displs, rdtype, comm);
}
