/*
 * MPI_Allreduce through DFCCL: check -> route -> fall back.
 *
 * Routing depends only on what every rank passes alike (communicator, count, datatype, op) and on
 * coll_dfccl_host_target, which must be set alike on every rank; so all ranks take the same route.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "coll_dfccl_dtypes.h"
#include "opal/util/output.h"

static void count_call(unsigned long long* counter) { __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

int mca_coll_dfccl_allreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                             struct ompi_op_t* op, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module) {
  mca_coll_dfccl_module_t* m = (mca_coll_dfccl_module_t*)module;
  dfcclDataType_t dfccl_dtype;
  dfcclRedOp_t dfccl_op;
  const char* why;

  if (count <= 0) { why = "count"; goto fallback; } /* 4.1's MPI layer returns before count 0 */
  if (!dfccl_dtype_of(dtype, &dfccl_dtype)) { why = "datatype"; goto fallback; }
  if (!dfccl_op_of(op, &dfccl_op)) { why = "op"; goto fallback; }
  dfccl_comm_t* dc = mca_coll_dfccl_comm_get(m, comm);
  if (dc == NULL) { why = "no DFCCL context"; goto fallback; }
  dfccl_coll_t* coll = mca_coll_dfccl_allreduce_get(dc, (size_t)count, dfccl_dtype, dfccl_op);
  if (coll == NULL) { why = "coll_dfccl_max_colls reached"; goto fallback; }
  if (!coll->usable) { why = "registration failed"; goto fallback; }

  const void* send = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
  dfccl_wait_t wait = {.done = 0, .status = dfcclSuccess};
  dfcclResult_t r = dfcclRunAllReduce(dc->ctx, send, rbuf, coll->coll_id, mca_coll_dfccl_done, &wait);
  if (r == dfcclSuccess) r = mca_coll_dfccl_wait(&wait);
  if (r != dfcclSuccess) {
    /* Not a fallback: the other ranks are inside DFCCL already. */
    opal_output(0, "coll:dfccl: allreduce %d on comm '%s' failed: %s (%s)", coll->coll_id, comm->c_name,
                dfcclGetErrorString(r), dfcclGetLastErrorMessage());
    return OMPI_ERROR;
  }
  count_call(&mca_coll_dfccl_component.allreduce_routed);
  DFCCL_VERBOSE(10, "allreduce on comm '%s' (count %d) ran as DFCCL collective %d", comm->c_name, count,
                coll->coll_id);
  return OMPI_SUCCESS;

fallback:
  count_call(&mca_coll_dfccl_component.allreduce_fallback);
  DFCCL_VERBOSE(10, "allreduce on comm '%s' (count %d) falls back: %s", comm->c_name, count, why);
  return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
}
