/*
 * Open MPI 4.1 coll component `dfccl`: MPI collectives through DFCCL.
 *
 * component (coll_dfccl_component.c)  MCA parameters, MPI_T counters, comm_query
 * module    (coll_dfccl_module.c)     enable (saves the previous functions), the DFCCL context of a
 *                                      communicator: created on first use, destroyed on free/finalize
 * collectives (coll_dfccl_allreduce.c) check -> route -> fall back
 * tables    (coll_dfccl_dtypes.h)     MPI datatypes and ops -> DFCCL
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_COLL_DFCCL_H
#define MCA_COLL_DFCCL_H

#include "ompi_config.h" /* first: sets OMPI_BUILDING before any other Open MPI header */

#include <stdbool.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"

#include <dfccl.h>

BEGIN_C_DECLS

typedef struct {
  mca_coll_base_component_2_0_0_t super;
  int priority;
  int verbose;
  int output;               /* opal_output stream                                         */
  int max_colls;            /* DFCCL collectives registered per communicator at most      */
  bool allreduce_enable;
  bool host_target;         /* test mode: host buffers through DFCCL's host execution target */
  unsigned long long allreduce_routed;   /* MPI_T counters (read through the pvar context) */
  unsigned long long allreduce_fallback;
} mca_coll_dfccl_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_dfccl_component_t mca_coll_dfccl_component;

/* One registered DFCCL collective of a communicator: registered on first use, reused after. */
typedef struct dfccl_coll {
  struct dfccl_coll* next;
  size_t count;
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  int coll_id;
  bool usable;              /* false: registration failed on every rank, always fall back  */
} dfccl_coll_t;

struct mca_coll_dfccl_module_t;

/* The DFCCL side of one communicator. */
typedef struct dfccl_comm {
  struct dfccl_comm* next_live; /* creation order: the order of teardown at finalize        */
  struct mca_coll_dfccl_module_t* module;
  ompi_communicator_t* comm;
  ompi_communicator_t* boot;    /* private duplicate: carries DFCCL's bootstrap allgather    */
  dfcclRankCtx_t ctx;
  dfccl_coll_t* colls;
  int next_coll_id;
} dfccl_comm_t;

typedef struct mca_coll_dfccl_module_t {
  mca_coll_base_module_t super;
  mca_coll_base_module_allreduce_fn_t prev_allreduce;
  mca_coll_base_module_t* prev_allreduce_module;
  dfccl_comm_t* dc;             /* NULL until the first routed call                         */
  bool unusable;                /* DFCCL could not be set up on this communicator: fall back */
} mca_coll_dfccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_module_t);

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority);

/* The communicator's DFCCL context, created on first use (collective over comm, so call it where
 * every rank makes the same call); NULL when DFCCL cannot be used on it. */
dfccl_comm_t* mca_coll_dfccl_comm_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm);

/* The collective for (count, dtype, op), registered on first use (collective over comm); NULL
 * past coll_dfccl_max_colls registrations. */
dfccl_coll_t* mca_coll_dfccl_allreduce_get(dfccl_comm_t* dc, size_t count, dfcclDataType_t dtype,
                                           dfcclRedOp_t op);

/* A blocking call's wait for DFCCL's callback (which runs on DFCCL's poller thread). */
typedef struct {
  _Atomic int done;
  dfcclResult_t status;       /* written before done is set */
} dfccl_wait_t;

void mca_coll_dfccl_done(int coll_id, dfcclResult_t status, void* wait);
/* Drives Open MPI's progress engine until the callback came; returns the run's status. */
dfcclResult_t mca_coll_dfccl_wait(dfccl_wait_t* w);

int mca_coll_dfccl_allreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                             struct ompi_op_t* op, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module);

#define DFCCL_VERBOSE(level, ...) \
  opal_output_verbose((level), mca_coll_dfccl_component.output, "coll:dfccl: " __VA_ARGS__)

END_C_DECLS
#endif
