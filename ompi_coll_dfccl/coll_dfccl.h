/*
 * Open MPI 4.1 coll component `dfccl`: MPI collectives through DFCCL.
 *
 * component (coll_dfccl_component.c)  MCA parameters, MPI_T counters, comm_query
 * module    (coll_dfccl_module.c)     enable (saves the previous functions), the DFCCL context of a
 *                                      communicator: created on first use, destroyed on free/finalize
 * collectives (coll_dfccl_<coll>.c)   one per collective: check -> route -> fall back
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

/* The MPI collectives that coll/dfccl takes over (X(name) per collective): each has an enable
 * parameter coll_dfccl_<name>_enable, counters coll_dfccl_<name>_routed/_fallback, the saved previous
 * function, and mca_coll_dfccl_<name> in coll_dfccl_<name>.c. */
#define DFCCL_COLLS(X) X(allreduce) X(bcast) X(reduce) X(allgather) X(reduce_scatter_block) X(reduce_scatter)

typedef struct {
  mca_coll_base_component_2_0_0_t super;
  int priority;
  int verbose;
  int output;               /* opal_output stream                                         */
  int max_colls;            /* DFCCL collectives registered per communicator at most      */
  bool host_target;         /* test mode: host buffers through DFCCL's host execution target */
#define DFCCL_COMPONENT_FIELDS(name) \
  bool name##_enable;                                                                               \
  unsigned long long name##_routed; /* MPI_T counters (read through the pvar context) */          \
  unsigned long long name##_fallback;
  DFCCL_COLLS(DFCCL_COMPONENT_FIELDS)
} mca_coll_dfccl_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_dfccl_component_t mca_coll_dfccl_component;

/* The DFCCL collectives (MPI_Reduce_scatter and MPI_Reduce_scatter_block share one). */
typedef enum { DFCCL_ALLREDUCE, DFCCL_BROADCAST, DFCCL_REDUCE, DFCCL_ALLGATHER, DFCCL_REDUCE_SCATTER } dfccl_kind_t;

/* One registered DFCCL collective of a communicator: registered on first use, reused after.
 * Key: (kind, count, dtype, op, root); op is dfcclSum and root -1 where the collective has none. */
typedef struct dfccl_coll {
  struct dfccl_coll* next;
  dfccl_kind_t kind;
  int root;
  size_t count;             /* DFCCL's count: per rank for all-gather and reduce-scatter      */
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
#define DFCCL_MODULE_FIELDS(name)                 \
  mca_coll_base_module_##name##_fn_t prev_##name; \
  mca_coll_base_module_t* prev_##name##_module;
  DFCCL_COLLS(DFCCL_MODULE_FIELDS)
  dfccl_comm_t* dc;             /* NULL until the first routed call                         */
  bool unusable;                /* DFCCL could not be set up on this communicator: fall back */
} mca_coll_dfccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_module_t);

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority);

/* The communicator's DFCCL context, created on first use (collective over comm, so call it where
 * every rank makes the same call); NULL when DFCCL cannot be used on it. */
dfccl_comm_t* mca_coll_dfccl_comm_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm);

/* The communicator's collective for (kind, count, dtype, op, root), creating the context and
 * registering the collective on first use (both collective over comm: call it where every rank makes
 * the same call).  NULL, with *why set, when the call must fall back; the decision is the same on
 * every rank. */
dfccl_coll_t* mca_coll_dfccl_coll_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_kind_t kind,
                                      size_t count, dfcclDataType_t dtype, dfcclRedOp_t op, int root,
                                      const char** why);

/* One blocking run of `coll` (dfcclRun* by its kind, then the wait).  OMPI_ERROR (reported) when it
 * fails: not a fallback, since the other ranks are inside DFCCL already. */
int mca_coll_dfccl_run(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_coll_t* coll,
                       const void* send, void* recv);

static inline void mca_coll_dfccl_count(unsigned long long* counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

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
int mca_coll_dfccl_bcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                         struct ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_dfccl_reduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                          struct ompi_op_t* op, int root, struct ompi_communicator_t* comm,
                          mca_coll_base_module_t* module);
int mca_coll_dfccl_allgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf,
                             int rcount, struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                             mca_coll_base_module_t* module);
int mca_coll_dfccl_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_base_module_t* module);
int mca_coll_dfccl_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                  struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                  mca_coll_base_module_t* module);

/* The routed part of MPI_Reduce_scatter_block (shared with MPI_Reduce_scatter, equal counts):
 * OMPI_SUCCESS or OMPI_ERROR when routed, DFCCL_FALL_BACK (with *why) when not. */
#define DFCCL_FALL_BACK 1
int mca_coll_dfccl_reduce_scatter_route(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_dfccl_module_t* m, const char** why);

#define DFCCL_VERBOSE(level, ...) \
  opal_output_verbose((level), mca_coll_dfccl_component.output, "coll:dfccl: " __VA_ARGS__)

END_C_DECLS
#endif
