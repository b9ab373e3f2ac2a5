/*
 * What every collective entry point (coll_dfccl_<coll>.c) does the same way in its three forms:
 * the routed end (a blocking call runs, a nonblocking one starts, an init makes its persistent
 * request) and the fallen-back end
 * (the previous component's result, on host copies of device buffers).  The entry points keep what
 * differs: the plan, and the call to the previous component.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/util/output.h"

int mca_coll_dfccl_routed(const dfccl_entry_t* e, mca_coll_dfccl_module_t* m, ompi_communicator_t* comm,
                          const dfccl_call_t* call) {
  switch (e->form) {
    case DFCCL_BLOCKING: {
      int rc = mca_coll_dfccl_run(m, comm, call); /* MPI_ERR_OTHER: it could not complete (the handler says so) */
      mca_coll_dfccl_count(e->routed);
      return rc;
    }
    case DFCCL_NONBLOCKING: mca_coll_dfccl_count(e->routed); return mca_coll_dfccl_start(m, comm, call, e->request);
    case DFCCL_PERSISTENT:
      mca_coll_dfccl_count(e->routed);
      return mca_coll_dfccl_persistent_init(m, comm, call, e->kept, e->request);
  }
  return OMPI_ERR_BAD_PARAM;
}

void mca_coll_dfccl_fell_back(const dfccl_entry_t* e, ompi_communicator_t* comm, int count, int root, const char* why) {
  mca_coll_dfccl_count(e->fallback);
  if (count < 0) DFCCL_VERBOSE(10, "%s on comm '%s' falls back: %s", e->name, comm->c_name, why);
  else if (root >= 0)
    DFCCL_VERBOSE(10, "%s on comm '%s' (count %d, root %d) falls back: %s", e->name, comm->c_name, count, root, why);
  else DFCCL_VERBOSE(10, "%s on comm '%s' (count %d) falls back: %s", e->name, comm->c_name, count, why);
}

int mca_coll_dfccl_staged_end(const dfccl_entry_t* e, ompi_communicator_t* comm, dfccl_staging_t* st, int rc) {
  if (st->send.block != NULL || st->recv.block != NULL) mca_coll_dfccl_count(e->staged);
  switch (e->form) {
    case DFCCL_BLOCKING: return mca_coll_dfccl_staged_finish(st, rc);
    case DFCCL_NONBLOCKING: return mca_coll_dfccl_staged_begin(comm, st, rc, e->request);
    case DFCCL_PERSISTENT: return mca_coll_dfccl_staged_init(comm, st, rc, e->kept, e->request);
  }
  return OMPI_ERR_BAD_PARAM;
}
