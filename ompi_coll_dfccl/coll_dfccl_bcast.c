/*
 * MPI_Bcast, MPI_Ibcast and MPIX_Bcast_init through DFCCL: check -> route -> fall back.
 *
 * Broadcast moves bytes: the signature is the number of bytes, which every rank has alike (MPI
 * lets ranks describe them with different datatypes of the same type signature), with the root;
 * the route is the one decided at the signature's first call.  A rank whose
 * buffer is not in the route's memory, or whose datatype has gaps, runs on a copy of it.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

static bool plan(void* buf, int count, struct ompi_datatype_t* dtype, int root, struct ompi_communicator_t* comm,
                 mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call, const char** why) {
  /* root: the communicator's rank = DFCCL's bootstrap rank */
  dfccl_sig_t sig = {.kind = dfcclBroadcast, .root = root};
  size_t size;
  ompi_datatype_type_size(dtype, &size);
  dfccl_memory_t memory = mca_coll_dfccl_memory_of_layout(buf, dtype, (size_t)count);
  size_t bytes = size * (size_t)(count > 0 ? count : 0); /* alike on every rank */
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for_bytes(m, comm, form, &sig, bytes, memory, why)};
  if (call->coll == NULL) return false;
  bool is_root = ompi_comm_rank(comm) == root;
  call->send = call->recv = mca_coll_dfccl_span(call, comm, buf, (size_t)count, dtype, memory, is_root, !is_root);
  return true;
}

/* Every form's way in: a local copy on one rank, routed through DFCCL (true, *rc its result), or
 * ready to fall back (false): counted, said, and device buffers staged through host copies in *st. */
static bool route(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, void* buf, int count,
                  struct ompi_datatype_t* dtype, int root, struct ompi_communicator_t* comm, dfccl_staging_t* st,
                  int* rc) {
  dfccl_call_t call;
  const char* why = "a layout that is not contiguous, on one rank";
  if (ompi_comm_size(comm) == 1) {
    if (mca_coll_dfccl_local(e, comm, NULL, dtype, 0, buf, dtype, (size_t)count, rc)) return true;
  } else if (plan(buf, count, dtype, root, comm, m, e->form, &call, &why)) {
    *rc = mca_coll_dfccl_routed(e, m, comm, &call);
    return true;
  }
  mca_coll_dfccl_fell_back(e, comm, count, root, why);
  mca_coll_dfccl_stage_in(st, comm, NULL, dtype, 0, buf, dtype, count);
  return false;
}

int mca_coll_dfccl_bcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                         struct ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(bcast, DFCCL_BLOCKING, NULL, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, buf, count, dtype, root, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(&e, comm, &st,
                                   m->prev_bcast(st.recv.host, count, dtype, root, comm, m->prev_bcast_module));
}

int mca_coll_dfccl_ibcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                          struct ompi_communicator_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(ibcast, DFCCL_NONBLOCKING, request, DFCCL_KEEP_NOTHING);
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, buf, count, dtype, root, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st, m->prev_ibcast(st.recv.host, count, dtype, root, comm, request, m->prev_ibcast_module));
}

int mca_coll_dfccl_bcast_init(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                              struct ompi_communicator_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                              mca_coll_base_module_t* module) {
  const dfccl_entry_t e = DFCCL_ENTRY(bcast_init, DFCCL_PERSISTENT, request, DFCCL_KEEP(dtype, NULL));
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_staging_t st;
  int rc;
  if (route(&e, m, buf, count, dtype, root, comm, &st, &rc)) return rc;
  return mca_coll_dfccl_staged_end(
      &e, comm, &st,
      m->prev_bcast_init(st.recv.host, count, dtype, root, comm, info, request, m->prev_bcast_init_module));
}
