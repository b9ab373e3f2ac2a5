/*
 * MPI_Bcast, MPI_Ibcast and MPIX_Bcast_init through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on count, datatype and root, which every rank passes alike (non-roots
 * cannot know anything about the root's buffer), on the calls made on the communicator before, and
 * on coll_dfccl_host_target.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

static bool plan(void* buf, int count, struct ompi_datatype_t* dtype, int root, struct ompi_communicator_t* comm,
                 mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call, const char** why) {
  /* root: the communicator's rank = DFCCL's bootstrap rank */
  dfccl_sig_t sig = {.kind = DFCCL_BROADCAST, .root = root};
  *call = (dfccl_call_t){.coll = mca_coll_dfccl_coll_for(m, comm, form, &sig, buf, NULL, count, dtype, NULL, why)};
  if (call->coll == NULL) return false;
  call->send = buf;
  call->recv = buf;
  return true;
}

int mca_coll_dfccl_bcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                         struct ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm);
  if (!plan(buf, count, dtype, root, comm, m, DFCCL_BLOCKING, &call, &why)) goto fallback;
  if (mca_coll_dfccl_run(m, comm, &call) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.bcast_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.bcast_fallback);
  DFCCL_VERBOSE(10, "bcast on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  mca_coll_dfccl_stage_in(&st, comm, NULL, dtype, 0, buf, dtype, count);
  return mca_coll_dfccl_staged_finish(&st, m->prev_bcast(st.recv.host, count, dtype, root, comm, m->prev_bcast_module));
}

int mca_coll_dfccl_ibcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                          struct ompi_communicator_t* comm, ompi_request_t** request, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_call_t call;
  const char* why;

  if (!plan(buf, count, dtype, root, comm, m, DFCCL_NONBLOCKING, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.ibcast_routed);
  return mca_coll_dfccl_start(m, comm, &call, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.ibcast_fallback);
  DFCCL_VERBOSE(10, "ibcast on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  dfccl_staging_t st; /* device buffers run on host copies (nothing is copied for host buffers) */
  mca_coll_dfccl_stage_in(&st, comm, NULL, dtype, 0, buf, dtype, count);
  return mca_coll_dfccl_staged_begin(
      comm, &st, m->prev_ibcast(st.recv.host, count, dtype, root, comm, request, m->prev_ibcast_module), request);
}

int mca_coll_dfccl_bcast_init(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                              struct ompi_communicator_t* comm, struct ompi_info_t* info, ompi_request_t** request,
                              mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfccl_kept_t kept = DFCCL_KEEP(dtype, NULL);
  dfccl_call_t call;
  const char* why;

  mca_coll_dfccl_set_up_wanted(m, comm); /* an init is a set-up point */
  if (!plan(buf, count, dtype, root, comm, m, DFCCL_PERSISTENT, &call, &why)) goto fallback;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.bcast_init_routed);
  return mca_coll_dfccl_persistent_init(m, comm, &call, kept, request);

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.bcast_init_fallback);
  DFCCL_VERBOSE(10, "bcast_init on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  dfccl_staging_t st; /* device buffers run on host copies, refreshed at every start */
  mca_coll_dfccl_stage_in(&st, comm, NULL, dtype, 0, buf, dtype, count);
  return mca_coll_dfccl_staged_init(
      comm, &st, m->prev_bcast_init(st.recv.host, count, dtype, root, comm, info, request, m->prev_bcast_init_module),
      kept, request);
}
