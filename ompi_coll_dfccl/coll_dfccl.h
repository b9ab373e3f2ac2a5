/*
 * Open MPI 4.1 coll component `dfccl`: MPI collectives through DFCCL.
 *
 * component (coll_dfccl_component.c)  MCA parameters, MPI_T counters, comm_query
 * module    (coll_dfccl_module.c)     enable (saves the previous functions), the DFCCL context of a
 *                                      communicator: created on first use, destroyed on free/finalize;
 *                                      its registry of DFCCL collectives; the set-up points
 * requests  (coll_dfccl_request.c)    runs of registered collectives: queued per collective,
 *                                      completed from Open MPI's progress engine
 * collectives (coll_dfccl_<coll>.c)   one per collective, blocking and nonblocking: check -> route ->
 *                                      fall back
 * tables    (coll_dfccl_dtypes.h)     MPI datatypes and ops -> DFCCL
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_COLL_DFCCL_H
#define MCA_COLL_DFCCL_H

#include "ompi_config.h" /* first: sets OMPI_BUILDING before any other Open MPI header */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

#include <dfccl.h>

BEGIN_C_DECLS

/* The MPI collectives that coll/dfccl takes over (X(name, MPI name) per collective): each has an
 * enable parameter coll_dfccl_<name>_enable, counters coll_dfccl_<name>_routed/_fallback, the saved
 * previous function, and mca_coll_dfccl_<name> in coll_dfccl_<coll>.c (the nonblocking form beside
 * the blocking one). */
#define DFCCL_COLLS(X)                                                                             \
  X(allreduce, "MPI_Allreduce") X(bcast, "MPI_Bcast") X(reduce, "MPI_Reduce")                      \
  X(allgather, "MPI_Allgather") X(reduce_scatter_block, "MPI_Reduce_scatter_block")                \
  X(reduce_scatter, "MPI_Reduce_scatter") X(iallreduce, "MPI_Iallreduce") X(ibcast, "MPI_Ibcast")  \
  X(ireduce, "MPI_Ireduce") X(iallgather, "MPI_Iallgather")                                        \
  X(ireduce_scatter_block, "MPI_Ireduce_scatter_block") X(ireduce_scatter, "MPI_Ireduce_scatter")

typedef struct {
  mca_coll_base_component_2_0_0_t super;
  int priority;
  int verbose;
  int output;               /* opal_output stream                                         */
  int max_colls;            /* signatures registered per communicator at most             */
  int concurrent_runs;      /* DFCCL collectives registered per signature (the pool)      */
  bool host_target;         /* test mode: host buffers through DFCCL's host execution target */
#define DFCCL_COMPONENT_FIELDS(name, mpi)                                                         \
  bool name##_enable;                                                                             \
  unsigned long long name##_routed; /* MPI_T counters (read through the pvar context) */          \
  unsigned long long name##_fallback;
  DFCCL_COLLS(DFCCL_COMPONENT_FIELDS)
} mca_coll_dfccl_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_dfccl_component_t mca_coll_dfccl_component;

/* The DFCCL collectives (MPI_Reduce_scatter and MPI_Reduce_scatter_block share one). */
typedef enum { DFCCL_ALLREDUCE, DFCCL_BROADCAST, DFCCL_REDUCE, DFCCL_ALLGATHER, DFCCL_REDUCE_SCATTER } dfccl_kind_t;

/* What a DFCCL collective is registered for: (kind, count, dtype, op, root); op is dfcclSum and
 * root -1 where the collective has none.  Every rank passes the same, so it names the collective
 * alike everywhere. */
typedef struct {
  dfccl_kind_t kind;
  int root;
  size_t count;             /* DFCCL's count: per rank for all-gather and reduce-scatter      */
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
} dfccl_sig_t;

struct mca_coll_dfccl_request_t;

/* One DFCCL collective of a signature's pool, and the runs that wait for it: DFCCL refuses a run of
 * a collective whose previous run is in flight, so later calls queue here. */
typedef struct {
  int coll_id;
  struct mca_coll_dfccl_request_t* running;       /* submitted; its completion not handled yet */
  struct mca_coll_dfccl_request_t* waiting;       /* FIFO, submitted one by one after it       */
  struct mca_coll_dfccl_request_t* waiting_last;
} dfccl_slot_t;

/* The pool of a signature holds at most this many DFCCL collectives. */
#define DFCCL_MAX_CONCURRENT_RUNS 16

/* A signature of a communicator: registered on first use, reused after.  Routed call n of it runs
 * on slots[n % nslots]: the same slot on every rank, because every rank makes the same calls on a
 * communicator in the same order, and nslots changes only at set-up points.  It starts with one
 * slot; once a nonblocking call uses it, the next set-up point grows it to
 * coll_dfccl_concurrent_runs (blocking calls never overlap, and need no more). */
typedef struct dfccl_coll {
  struct dfccl_coll* next;
  dfccl_sig_t sig;
  bool usable;              /* false: registration failed on some rank, always fall back   */
  unsigned long long calls; /* routed calls so far                                         */
  int nslots;
  dfccl_slot_t slots[DFCCL_MAX_CONCURRENT_RUNS]; /* fixed: requests point into it */
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
  int ncolls;                   /* signatures                                                */
  int next_coll_id;
  pthread_mutex_t lock;         /* the slots: callers and the progress callback              */
  atomic_int pending;           /* runs started whose completion is not handled yet          */
} dfccl_comm_t;

/* A signature that a nonblocking call could not use yet, or whose pool it wants grown: set up by
 * the next set-up point. */
typedef struct dfccl_wanted {
  struct dfccl_wanted* next;
  dfccl_sig_t sig;
  bool is_new;                  /* not registered yet (else: its pool is to grow)            */
} dfccl_wanted_t;

typedef struct mca_coll_dfccl_module_t {
  mca_coll_base_module_t super;
#define DFCCL_MODULE_FIELDS(name, mpi)            \
  mca_coll_base_module_##name##_fn_t prev_##name; \
  mca_coll_base_module_t* prev_##name##_module;
  DFCCL_COLLS(DFCCL_MODULE_FIELDS)
  mca_coll_base_module_barrier_fn_t prev_barrier; /* MPI_Barrier is a set-up point only */
  mca_coll_base_module_t* prev_barrier_module;
  dfccl_comm_t* dc;             /* NULL until the first set-up                               */
  bool unusable;                /* DFCCL could not be set up on this communicator: fall back */
  dfccl_wanted_t* wanted;       /* in the order the nonblocking calls asked               */
  dfccl_wanted_t* wanted_last;
  int nwanted_new;              /* of them, signatures not registered yet                    */
} mca_coll_dfccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_module_t);

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority);

/*
 * Set-up (the communicator's DFCCL context, a signature's DFCCL collectives) is an exchange among
 * the communicator's ranks that returns only when all of them have joined: it may happen only where
 * MPI makes every rank wait for the others anyway, i.e. in a blocking collective on the
 * communicator.  A nonblocking call never sets up (nor waits for anything): it is routed when its
 * signature is ready, and otherwise falls back and asks for it (the same on every rank); the next
 * blocking collective of coll/dfccl on the communicator, MPI_Barrier included, sets up what was
 * asked for, in order.  So nonblocking calls may be issued on several communicators in any order.
 */
typedef enum { DFCCL_BLOCKING, DFCCL_NONBLOCKING } dfccl_form_t;

/* The communicator's collective for `sig`.  Blocking: sets up on first use.  Nonblocking: only
 * what is set up already.  NULL, with *why set, when the call must fall back; the decision is the
 * same on every rank. */
dfccl_coll_t* mca_coll_dfccl_coll_get(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                      const dfccl_sig_t* sig, const char** why);

/* What every plan checks first: a positive count, a datatype DFCCL supports -- with an op it
 * supports too for a reduction (op != NULL), or any type that moves as its bytes when op is NULL --
 * then the communicator's collective for *sig (kind and root set by the caller; count, dtype and op
 * filled in here).  NULL, with *why set, when the call must fall back. */
dfccl_coll_t* mca_coll_dfccl_coll_for(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                      dfccl_sig_t* sig, int count, struct ompi_datatype_t* dtype,
                                      struct ompi_op_t* op, const char** why);

/* A set-up point: sets up what nonblocking calls asked for.  Collective over comm: call it where
 * every rank makes the same blocking call. */
void mca_coll_dfccl_set_up_wanted(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm);

/* One run of a DFCCL collective as a collective function plans it. */
typedef struct {
  dfccl_coll_t* coll;
  const void* send;
  void* recv;
  /* After a successful run: memmove(move_to, move_from, move_bytes) (reduce-scatter in place). */
  void* move_to;
  const void* move_from;
  size_t move_bytes;
} dfccl_call_t;

/* A run as an MPI request: a nonblocking call's, or the one a blocking call waits for. */
typedef struct mca_coll_dfccl_request_t {
  ompi_coll_base_nbc_request_t super; /* the MPI layer may retain datatypes through it */
  struct mca_coll_dfccl_request_t* next; /* in its slot's FIFO, or in the completed stack */
  dfccl_comm_t* dc;
  dfccl_slot_t* slot;
  dfccl_call_t call;
  dfcclResult_t status;                  /* written by the DFCCL callback */
} mca_coll_dfccl_request_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_request_t);

/* Starts `call` (submits it, or queues it behind the runs of its slot) and returns its request;
 * never waits.  A run that DFCCL refuses or that fails completes the request with MPI_ERR_INTERN
 * (reported): not a fallback, since the other ranks are inside DFCCL already. */
int mca_coll_dfccl_start(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call,
                         ompi_request_t** request);

/* A blocking call: start, then drive Open MPI's progress engine until the run has completed;
 * OMPI_ERROR when it failed. */
int mca_coll_dfccl_run(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call);

/* Until every run started on dc has completed (before its context is destroyed). */
void mca_coll_dfccl_drain(dfccl_comm_t* dc);

/* The component's progress callback, registered with the first context (idempotent) and
 * unregistered at component close. */
int mca_coll_dfccl_progress_register(void);
void mca_coll_dfccl_progress_unregister(void);

static inline void mca_coll_dfccl_count(unsigned long long* counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

extern const char* const mca_coll_dfccl_kind_name[];

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
int mca_coll_dfccl_barrier(struct ompi_communicator_t* comm, mca_coll_base_module_t* module);

int mca_coll_dfccl_iallreduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                              struct ompi_op_t* op, struct ompi_communicator_t* comm, ompi_request_t** request,
                              mca_coll_base_module_t* module);
int mca_coll_dfccl_ibcast(void* buf, int count, struct ompi_datatype_t* dtype, int root,
                          struct ompi_communicator_t* comm, ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_dfccl_ireduce(const void* sbuf, void* rbuf, int count, struct ompi_datatype_t* dtype,
                           struct ompi_op_t* op, int root, struct ompi_communicator_t* comm, ompi_request_t** request,
                           mca_coll_base_module_t* module);
int mca_coll_dfccl_iallgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype, void* rbuf, int rcount,
                              struct ompi_datatype_t* rdtype, struct ompi_communicator_t* comm,
                              ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_dfccl_ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                         struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                         ompi_request_t** request, mca_coll_base_module_t* module);
int mca_coll_dfccl_ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, struct ompi_datatype_t* dtype,
                                   struct ompi_op_t* op, struct ompi_communicator_t* comm, ompi_request_t** request,
                                   mca_coll_base_module_t* module);

/* The routed part of (I)Reduce_scatter_block, shared with (I)Reduce_scatter (equal counts): true
 * with *call planned, false (with *why) when the call falls back. */
bool mca_coll_dfccl_reduce_scatter_plan(const void* sbuf, void* rbuf, int rcount, struct ompi_datatype_t* dtype,
                                        struct ompi_op_t* op, struct ompi_communicator_t* comm,
                                        mca_coll_dfccl_module_t* m, dfccl_form_t form, dfccl_call_t* call,
                                        const char** why);

#define DFCCL_VERBOSE(level, ...) \
  opal_output_verbose((level), mca_coll_dfccl_component.output, "coll:dfccl: " __VA_ARGS__)

END_C_DECLS
#endif
