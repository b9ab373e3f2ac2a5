/*
 * MPI_Bcast through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on count, datatype and root, which every rank passes alike (non-roots
 * cannot know anything about the root's buffer), and on coll_dfccl_host_target.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"

int mca_coll_dfccl_bcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                         struct ompi_communicator_t* comm, mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfcclDataType_t dfccl_dtype;
  const char* why;

  if (count <= 0) { why = "count"; goto fallback; }
  if (!dfccl_move_dtype_of(dtype, &dfccl_dtype)) { why = "datatype"; goto fallback; }
  /* root: the communicator's rank = DFCCL's bootstrap rank */
  dfccl_coll_t* coll = mca_coll_dfccl_coll_get(m, comm, DFCCL_BROADCAST, (size_t)count, dfccl_dtype, dfcclSum, root, &why);
  if (coll == NULL) goto fallback;

  if (mca_coll_dfccl_run(m, comm, coll, buf, buf) != OMPI_SUCCESS) return OMPI_ERROR;
  mca_coll_dfccl_count(&mca_coll_dfccl_component.bcast_routed);
  return OMPI_SUCCESS;

fallback:
  mca_coll_dfccl_count(&mca_coll_dfccl_component.bcast_fallback);
  DFCCL_VERBOSE(10, "bcast on comm '%s' (count %d, root %d) falls back: %s", comm->c_name, count, root, why);
  return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
}
