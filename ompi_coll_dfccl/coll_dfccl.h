/*
 * Open MPI 4.1 coll component `dfccl`: MPI collectives through DFCCL.
 *
 * component (coll_dfccl_component.c)  MCA parameters, MPI_T counters, comm_query
 * module    (coll_dfccl_module.c)     enable (saves the previous functions); the communicator's
 *                                      signatures, each with the route decided for it
 * context   (coll_dfccl_context.c)    the process's DFCCL contexts; a communicator's share of one:
 *                                      its DFCCL communicators, made without waiting at its first
 *                                      routed call (DFCCL holds the runs submitted meanwhile);
 *                                      gone on free/finalize
 * buffers   (coll_dfccl_buffers.c)    where a call's buffers are, and scratch copies in the route's
 *                                      memory for a rank whose buffers are elsewhere
 * requests  (coll_dfccl_request.c)    runs on DFCCL (descriptors submitted to the communicator's
 *                                      DFCCL communicator), completed from Open MPI's progress engine
 * persistent (coll_dfccl_persistent.c) persistent requests (MPIX_..._init, MPI_Start), and the
 *                                      op/datatype retention of fallen-back ones
 * local     (coll_dfccl_local.c)      communicators of one rank: local copies, every form
 * collectives (coll_dfccl_colls.c)    every entry point, three forms from one body each: check ->
 *                                      route -> fall back for those DFCCL runs; a table of what
 *                                      MPI makes significant for those it does not (staged)
 * staging   (coll_dfccl_staging.c)    fallbacks with device buffers run on host copies
 *                                      (pinned blocks kept for reuse: dfcclHostBlockTake)
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

/* Every entry point of the component, X(name, MPI name, fn) for each of a collective's three forms
 * (blocking, MPI_I..., MPIX_..._init); fn names Open MPI's function type,
 * mca_coll_base_module_<fn>_fn_t.  Each has an enable parameter coll_dfccl_<name>_enable, counters
 * coll_dfccl_<name>_routed/_fallback/_local/_staged, the saved previous function, and
 * mca_coll_dfccl_<name> (coll_dfccl_colls.c).  A persistent entry counts inits, not starts. */
#define DFCCL_FORMS_OF(X, name, mpi, fn) \
  X(name, "MPI_" mpi, fn) X(i##name, "MPI_I" #name, i##fn) X(name##_init, "MPIX_" mpi "_init", fn##_init)
/* clang-format off */
/* The collectives that coll/dfccl can run through DFCCL. */
#define DFCCL_COLLS(X)                                                                   \
  DFCCL_FORMS_OF(X, allreduce, "Allreduce", allreduce)                                   \
  DFCCL_FORMS_OF(X, bcast, "Bcast", bcast)                                               \
  DFCCL_FORMS_OF(X, reduce, "Reduce", reduce)                                            \
  DFCCL_FORMS_OF(X, allgather, "Allgather", allgather)                                   \
  DFCCL_FORMS_OF(X, reduce_scatter_block, "Reduce_scatter_block", reduce_scatter_block)  \
  DFCCL_FORMS_OF(X, reduce_scatter, "Reduce_scatter", reduce_scatter)                    \
  DFCCL_FORMS_OF(X, allgatherv, "Allgatherv", allgatherv)                                \
  DFCCL_FORMS_OF(X, alltoall, "Alltoall", alltoall)

/* The other collectives of Open MPI's coll framework.  coll/dfccl takes them over so that device
 * buffers reach the previous component -- which is not CUDA-aware -- only as host copies
 * (coll_dfccl_staging.c); host buffers go to it as they are. */
#define DFCCL_STAGED_COLLS(X)                                                            \
  DFCCL_FORMS_OF(X, alltoallv, "alltoallv", alltoallv)                                   \
  DFCCL_FORMS_OF(X, alltoallw, "alltoallw", alltoallw)                                   \
  DFCCL_FORMS_OF(X, gather, "gather", gather)                                            \
  DFCCL_FORMS_OF(X, gatherv, "gatherv", gatherv)                                         \
  DFCCL_FORMS_OF(X, scatter, "scatter", scatter)                                         \
  DFCCL_FORMS_OF(X, scatterv, "scatterv", scatterv)                                      \
  DFCCL_FORMS_OF(X, scan, "scan", scan)                                                  \
  DFCCL_FORMS_OF(X, exscan, "exscan", exscan)                                            \
  DFCCL_FORMS_OF(X, neighbor_allgather, "neighbor_allgather", allgather)                 \
  DFCCL_FORMS_OF(X, neighbor_allgatherv, "neighbor_allgatherv", allgatherv)              \
  DFCCL_FORMS_OF(X, neighbor_alltoall, "neighbor_alltoall", alltoall)                    \
  DFCCL_FORMS_OF(X, neighbor_alltoallv, "neighbor_alltoallv", alltoallv)                 \
  DFCCL_FORMS_OF(X, neighbor_alltoallw, "neighbor_alltoallw", neighbor_alltoallw)        \
  X(reduce_local, "MPI_Reduce_local", reduce_local)
/* clang-format on */

/* Every entry point of the component. */
#define DFCCL_ENTRIES(X) DFCCL_COLLS(X) DFCCL_STAGED_COLLS(X)

/* coll_dfccl_host_target: the test modes, where host memory runs on DFCCL's host execution target. */
typedef enum {
  DFCCL_HOST_TARGET_OFF = 0,      /* host buffers go to the previous component                   */
  DFCCL_HOST_TARGET_HOST = 1,     /* all host buffers run on the host target                      */
  DFCCL_HOST_TARGET_SIMULATED = 2 /* only the host target's device memory (dfcclMemAlloc): a GPU machine's decisions */
} dfccl_host_target_t;

/* coll_dfccl_transport: DFCCL_TRANSPORT's twin. */
typedef enum {
  DFCCL_TRANSPORT_ENV = 0, /* DFCCL_TRANSPORT decides (unset: auto) */
  DFCCL_TRANSPORT_AUTO,
  DFCCL_TRANSPORT_P2P,
  DFCCL_TRANSPORT_UCX
} dfccl_transport_t;

typedef struct {
  mca_coll_base_component_2_0_0_t super;
  int priority;
  int verbose;
  int transport;       /* dfccl_transport_t: coll_dfccl_transport */
  int hang_report;     /* coll_dfccl_hang_report: seconds, 0 = DFCCL_HANG_REPORT_S decides */
  int timeout;         /* coll_dfccl_timeout: seconds, 0 = DFCCL_TIMEOUT_S decides        */
  int output;          /* opal_output stream                                         */
  int max_colls;       /* signatures routed through DFCCL per communicator at most   */
  int concurrent_runs; /* connector sets per DFCCL communicator (DFCCL_COMM_SETS)    */
  int host_target;     /* dfccl_host_target_t; != 0: a test mode is on               */
  bool agree_routes;   /* false: each rank routes by its own buffers (a test's twin)   */
#define DFCCL_COMPONENT_FIELDS(name, mpi, fn)                                            \
  bool name##_enable;                                                                    \
  unsigned long long name##_routed; /* MPI_T counters (read through the pvar context) */ \
  unsigned long long name##_fallback;                                                    \
  unsigned long long name##_local;  /* on a communicator of one rank: a local copy */    \
  unsigned long long name##_staged; /* fallbacks that copied device buffers through host memory */
  DFCCL_ENTRIES(DFCCL_COMPONENT_FIELDS)
} mca_coll_dfccl_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_dfccl_component_t mca_coll_dfccl_component;
/* This process's rank in MPI_COMM_WORLD (known from the first communicator query on). */
extern int mca_coll_dfccl_world_rank;

/* Where the calls of a signature run.  Decided once per signature, at its first call, the same on
 * every rank (coll_dfccl_module.c says how). */
typedef enum {
  DFCCL_ROUTE_PREVIOUS = 0, /* the previous component; device buffers staged through host memory */
  DFCCL_ROUTE_HOST,         /* DFCCL's host execution target (test modes)                          */
  DFCCL_ROUTE_CUDA          /* DFCCL's GPU daemon                                                 */
} dfccl_route_t;

/* What a call runs on DFCCL: (kind, count, dtype, op, root); op is dfcclSum and root -1 where the
 * collective has none; broadcast, all-gather and all-to-all count bytes (dfcclUint8).  Every rank
 * passes the same (MPI_Reduce_scatter and MPI_Reduce_scatter_block share reduce-scatter), so it
 * names the collective alike everywhere. */
typedef struct {
  dfcclCollKind_t kind;
  int root;
  size_t count; /* DFCCL's count: per rank for all-gather and reduce-scatter      */
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  const uint64_t* blocks; /* all-gather-v: each rank's bytes; reduce-scatter-v: each rank's MPI
                           * elements; interned by the communicator's module (equal tables, one
                           * pointer); else NULL.  Displacements are not in it: MPI makes them
                           * local to a rank */
} dfccl_sig_t;

/* Where this rank's buffers of a call would run without a copy (coll_dfccl_buffers.c): its wish
 * in the agreement on a new signature's route. */
typedef struct {
  dfccl_route_t route;
  int device;      /* DFCCL_ROUTE_CUDA: the buffers' GPU                              */
  const char* why; /* DFCCL_ROUTE_PREVIOUS: why                                        */
} dfccl_memory_t;

/* coll_dfccl_concurrent_runs (DFCCL_COMM_SETS) at most. */
#define DFCCL_MAX_CONCURRENT_RUNS 16
#define DFCCL_SPARE_COPIES 4 /* per signature: two buffers of two calls in flight */

/* A signature of a communicator, with the route decided at its first call.
 * Its runs are descriptors submitted to the communicator's DFCCL communicator of the route's
 * target: routed call n of the communicator runs on connector set n mod coll_dfccl_concurrent_runs
 * (the same set on every rank, since every rank makes the same calls on a communicator in the same
 * order), and DFCCL itself queues a run whose set is busy. */
typedef struct dfccl_coll {
  struct dfccl_coll* next;
  dfccl_sig_t sig;
  dfccl_route_t route; /* DFCCL_ROUTE_HOST or DFCCL_ROUTE_CUDA                        */
  int device;          /* the GPU of the context (cuda route)                        */
  dfcclCollDesc_t desc;
  size_t* counts; /* desc.counts of a v collective (its blocks in DFCCL's elements) */
  /* Copies in the route's memory that finished calls left for the next ones (a rank whose buffers
   * do not fit the route: coll_dfccl_buffers.c).  Allocating and freeing one per call would cost a
   * cudaFree per call, which waits for the whole device -- the daemon too. */
  pthread_mutex_t spare_lock;
  int nspare;
  void* spare[DFCCL_SPARE_COPIES];
  size_t spare_bytes[DFCCL_SPARE_COPIES];
} dfccl_coll_t;

struct mca_coll_dfccl_module_t;

struct mca_coll_dfccl_request_t;

struct dfccl_comm;

/* The exchanges that make (and destroy) one target's DFCCL communicator: point-to-point messages on
 * the communicator (coll_dfccl_context.c). */
typedef struct {
  struct dfccl_comm* dc;
  int target;
  ompi_request_t** requests; /* 2 (size - 1) */
  int nrequests;             /* posted, not yet completed */
} dfccl_exchange_t;

/* The DFCCL side of one communicator: its share of the process's DFCCL context
 * (coll_dfccl_context.c). */
typedef struct dfccl_comm {
  struct dfccl_comm* next_live; /* in cid order: the order of teardown at finalize          */
  struct mca_coll_dfccl_module_t* module;
  ompi_communicator_t* comm;
  int size;
  int* members; /* [comm rank]: world rank (DFCCL's participants, ring order) */
  dfccl_coll_t* colls;
  int ncolls; /* signatures                                                */
  /* The DFCCL communicators, started when the first run on each target is launched (under lock):
   * DFCCL holds the runs submitted while one is being made. */
  pthread_mutex_t lock;
  dfcclComm_t dfccl[3];         /* [target]                                                 */
  dfccl_exchange_t exchange[3]; /* [target]: its exchanges                                  */
  bool exchange_waits;          /* a blocking caller tests the exchanges: they progress     */
  atomic_int pending;           /* runs started whose completion is not handled yet         */
} dfccl_comm_t;

/* A signature whose calls go to the previous component: decided, and remembered so that its
 * later calls need no agreement. */
typedef struct dfccl_decided {
  struct dfccl_decided* next;
  dfccl_sig_t sig;
  const char* why;
} dfccl_decided_t;

typedef struct mca_coll_dfccl_module_t {
  mca_coll_base_module_t super;
#define DFCCL_MODULE_FIELDS(name, mpi, fn)      \
  mca_coll_base_module_##fn##_fn_t prev_##name; \
  mca_coll_base_module_t* prev_##name##_module;
  DFCCL_ENTRIES(DFCCL_MODULE_FIELDS)
  dfccl_comm_t* dc;          /* NULL until the first call routed through DFCCL             */
  bool unusable;             /* DFCCL cannot run on this communicator: fall back           */
  dfccl_decided_t* previous; /* signatures routed to the previous component             */
  int nprevious;
  struct dfccl_layout* layouts; /* all-gather-v byte counts met on the communicator (interned) */
  int nlayouts;
} mca_coll_dfccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_module_t);

mca_coll_base_module_t* mca_coll_dfccl_comm_query(ompi_communicator_t* comm, int* priority);

/* ---- contexts (coll_dfccl_context.c) ---- */

/* The communicator's share of the process's DFCCL context, made on first use (local).  NULL when
 * the communicator falls back (then m->unusable is set, alike on every rank). */
dfccl_comm_t* mca_coll_dfccl_comm_context(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm);
/* The process's DFCCL context for `target`, created on first use (local: dfcclInit exchanges
 * nothing).  For the cuda target, *device names the GPU (-1: the current one; NULL: any): the
 * context is made there, and *device is set to the context's GPU.  NULL when there is none:
 * dfcclInit failed, or the process's GPU context is on another device than *device asks for (one
 * GPU per process). */
dfcclRankCtx_t mca_coll_dfccl_process_context(dfcclTarget_t target, int* device);
/* dc's DFCCL communicator on target t (caller holds dc->lock).  Its first use starts making it
 * (dfcclCommCreateStart), never waiting for the other ranks: runs may be submitted to it at once. */
dfcclComm_t mca_coll_dfccl_dfccl_comm(dfccl_comm_t* dc, dfcclTarget_t t);
/* Part of the component's progress callback: the runs the daemons have completed reach their
 * requests now, on this thread, rather than when DFCCL's poller threads look; and the DFCCL
 * communicators being made are tested, their exchanges going out (dfcclProgress). */
void mca_coll_dfccl_contexts_progress(void);
/* calloc, or abort the job: for rank-local failures inside collective set-up. */
void* mca_coll_dfccl_alloc_or_abort(size_t bytes, ompi_communicator_t* comm);

typedef enum { DFCCL_BLOCKING, DFCCL_NONBLOCKING, DFCCL_PERSISTENT } dfccl_form_t;

/* What every plan checks first: for a reduction, a positive count and a datatype and op DFCCL
 * reduces; for data movement, a positive number of bytes -- then the communicator's collective for
 * *sig (kind and root set by the caller; count, dtype and op filled in here), `memory` being this
 * rank's wish from its buffers (used when the signature is new).  NULL, with *why set, when the
 * call falls back. */
dfccl_coll_t* mca_coll_dfccl_coll_for_reduction(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm,
                                                dfccl_form_t form, dfccl_sig_t* sig, int count,
                                                struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                                dfccl_memory_t memory, const char** why);
dfccl_coll_t* mca_coll_dfccl_coll_for_bytes(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, dfccl_form_t form,
                                            dfccl_sig_t* sig, size_t bytes, dfccl_memory_t memory, const char** why);
/* The wish of `count` elements of dtype at buf (NULL and MPI_IN_PLACE: no wish, which any other
 * overrides): a datatype with gaps wishes for the previous component (it would need packing).
 * Each plan asks once per buffer, and hands the answer to mca_coll_dfccl_span too.  memory_both:
 * the wish of two buffers. */
dfccl_memory_t mca_coll_dfccl_memory_of_layout(const void* buf, struct ompi_datatype_t* dtype, size_t count);
dfccl_memory_t mca_coll_dfccl_memory_both(dfccl_memory_t a, dfccl_memory_t b);

/* All-gather-v's n byte counts, interned in m: the same pointer for equal tables, alive as long as
 * the module.  NULL (the call falls back) past DFCCL_MAX_LAYOUTS tables, or without memory. */
#define DFCCL_MAX_LAYOUTS 256
const uint64_t* mca_coll_dfccl_intern_blocks(mca_coll_dfccl_module_t* m, const uint64_t* bytes, int n);

/* A buffer of the caller's that DFCCL uses through a copy in the route's memory
 * (coll_dfccl_buffers.c): copied in before each run (in), back after it (out). */
typedef struct {
  void* user;                    /* its elements (dtype != NULL: element 0 of the datatype)   */
  char* copy;                    /* NULL: no copy                                             */
  size_t bytes;                  /* of the copy: the elements, packed                         */
  struct ompi_datatype_t* dtype; /* a datatype with gaps: count of them are packed; else NULL */
  size_t count;
  size_t span;   /* dtype: the bytes the elements reach, holes included ...   */
  ptrdiff_t gap; /* ... from user + gap                                       */
  bool in, out;
  bool owns_dtype; /* dtype was made for this call: released with the copy      */
} dfccl_span_t;

/* One run of a DFCCL collective as a collective function plans it. */
typedef struct {
  dfccl_coll_t* coll;
  const void* send;
  void* recv;
  /* After a successful run: memmove(move_to, move_from, move_bytes) (reduce-scatter in place). */
  void* move_to;
  const void* move_from;
  size_t move_bytes;
  /* Buffers DFCCL runs on through copies (mca_coll_dfccl_span): copied in when each run starts, so
   * that every MPI_Start of a persistent request takes what the user put there, and back when it
   * completes. */
  dfccl_span_t scratch[2];
} dfccl_call_t;

/* ---- buffers (coll_dfccl_buffers.c) ---- */

/* The execution target of a DFCCL route. */
dfcclTarget_t mca_coll_dfccl_route_target(dfccl_route_t route);
/* A DFCCL wish becomes the previous component where this process has no context for it. */
void mca_coll_dfccl_memory_available(dfccl_memory_t* wish);
/* DFCCL's view of `count` elements of dtype at `user`, whose memory is `memory`
 * (mca_coll_dfccl_memory_of_layout): the user's memory where the elements lie contiguously in
 * memory of call->coll's route, else a copy in that memory (packed, for a datatype with gaps),
 * copied in before each run (in) and back after it (out).  Aborts the job if there is no memory for
 * a copy (the other ranks are entering DFCCL). */
void* mca_coll_dfccl_span(dfccl_call_t* call, ompi_communicator_t* comm, void* user, size_t count,
                          struct ompi_datatype_t* dtype, dfccl_memory_t memory, bool in, bool out);
/* Copies the caller's input into the copies (in) or the result back (out); false on a CUDA error. */
bool mca_coll_dfccl_scratch_copy(const dfccl_call_t* call, bool in);
/* A finished call's copies: kept by its signature for the next calls (call->coll must be alive:
 * before the run's completion is counted), or freed (a persistent request's, which may outlive its
 * communicator's collectives). */
void mca_coll_dfccl_scratch_release(dfccl_call_t* call);
void mca_coll_dfccl_scratch_free(dfccl_call_t* call);
/* The copies a signature kept (its communicator leaves DFCCL). */
void mca_coll_dfccl_spares_free(dfccl_coll_t* c);

/* The op and datatypes that a persistent request holds until it is freed: MPI lets the user free
 * them right after the init, and Open MPI 4.1's ompi_coll_base_retain_op/_datatypes skip persistent
 * requests (a fresh one is complete).  At most two: a reduction's op and datatype, all-gather's
 * send and receive datatypes, broadcast's datatype; NULL for none. */
typedef struct {
  opal_object_t* objs[2];
} dfccl_kept_t;
#define DFCCL_KEEP(a, b) ((dfccl_kept_t){{(opal_object_t*)(a), (opal_object_t*)(b)}})

/* A run as an MPI request: a nonblocking call's, the one a blocking call waits for, or a
 * persistent request's (one run per MPI_Start). */
typedef struct mca_coll_dfccl_request_t {
  ompi_coll_base_nbc_request_t super;    /* the MPI layer may retain datatypes through it */
  struct mca_coll_dfccl_request_t* next; /* in the completed stack */
  dfccl_comm_t* dc;
  int run; /* its number on the DFCCL communicator (DFCCL's callback id) */
  dfccl_call_t call;
  dfcclResult_t status; /* written by the DFCCL callback */
  bool reported;        /* its failure was said when DFCCL refused it */
  /* A blocking call's request, which only its caller frees: `finished` is stored (release) once
   * its completion is handled, by whichever thread's progress handled it.  The caller waits for it
   * (acquire) rather than for REQUEST_COMPLETE: Open MPI completes a request with an acquire-only
   * compare-and-swap and reads req_complete with plain loads, which order nothing in C11 -- the
   * caller could see the request complete before the results and the status. */
  bool blocking;
  atomic_bool finished;
  /* persistent requests only */
  mca_coll_dfccl_module_t* module; /* dc is alive while module->dc is still dc */
  dfccl_kept_t kept;
} mca_coll_dfccl_request_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_request_t);

/* A request for `call` on comm: a nonblocking call's (active) or a persistent one's (complete and
 * inactive until its first MPI_Start).  The caller sets req_free (and req_start). */
mca_coll_dfccl_request_t* mca_coll_dfccl_request_new(ompi_communicator_t* comm, dfccl_comm_t* dc,
                                                     const dfccl_call_t* call, bool persistent);

/* Starts the requests' runs (MPI_Startall: several): their input copied where DFCCL reads it, their
 * descriptors submitted in call order, consecutive ones of one DFCCL communicator as one batch
 * (DFCCL holds a run while its communicator is being made, and queues it behind the run of its
 * connector set, if that one is busy).  Never waits. */
void mca_coll_dfccl_launch(mca_coll_dfccl_request_t** reqs, int n);

/* Starts `call` and returns its request; never waits.  A run that DFCCL refuses or that fails completes the request with MPI_ERR_INTERN
 * (reported): not a fallback, since the other ranks are inside DFCCL already. */
int mca_coll_dfccl_start(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call,
                         ompi_request_t** request);

/* A blocking call: start, then drive Open MPI's progress engine until the run has completed;
 * OMPI_ERROR when it failed. */
int mca_coll_dfccl_run(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call);

/* Until every run started on dc has completed (before its context is destroyed). */
void mca_coll_dfccl_drain(dfccl_comm_t* dc);

/* Persistent collectives (coll_dfccl_persistent.c).  An init agrees on a new signature's route
 * like a blocking call.  A routed init returns a persistent request that runs `call`
 * at each MPI_Start and holds `kept` and the communicator until it is freed. */
int mca_coll_dfccl_persistent_init(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, const dfccl_call_t* call,
                                   dfccl_kept_t kept, ompi_request_t** request);

/* An init handed to the previous component returned `rc` and *request: makes that request hold
 * `kept` until it is freed (stock libnbc crashes at MPI_Start after MPI_Op_free otherwise). */
int mca_coll_dfccl_persistent_fallback(int rc, dfccl_kept_t kept, ompi_request_t** request);

/* Open MPI initializes an object class at its first OBJ_NEW, after a plain check of
 * cls_initialized (opal_obj_new): two threads making the first requests of a class at once race
 * on the class's arrays.  The component's classes are initialized at init_query instead, inside
 * MPI_Init, before any other thread can make one. */
void mca_coll_dfccl_init_classes(void);
opal_class_t* mca_coll_dfccl_local_class(void);  /* coll_dfccl_local.c's requests */
opal_class_t* mca_coll_dfccl_staged_class(void); /* coll_dfccl_staging.c's requests */

/* The component's progress callback, registered with the first context (idempotent) and
 * unregistered at component close. */
int mca_coll_dfccl_progress_register(void);
void mca_coll_dfccl_progress_unregister(void);

static inline void mca_coll_dfccl_count(unsigned long long* counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

extern const char* const mca_coll_dfccl_kind_name[];

/* Every entry point, declared with Open MPI's own function type, so that the compiler checks each
 * definition against the slot it fills. */
#define DFCCL_DECLARE_ENTRY(name, mpi, fn) \
  extern __typeof__(*(mca_coll_base_module_##fn##_fn_t)NULL) mca_coll_dfccl_##name;
DFCCL_ENTRIES(DFCCL_DECLARE_ENTRY)

/* ---- staging (coll_dfccl_staging.c): fallbacks with device buffers run on host copies ---- */

typedef struct {
  void* user;    /* the caller's buffer                                        */
  void* host;    /* what the previous component gets: user, or its host copy   */
  void* block;   /* the host copy of the span (NULL: not staged): dfcclHostBlockTake's */
  bool copy_in;  /* the span holds input or bytes to keep (not only output)    */
  size_t bytes;  /* the span                                                   */
  ptrdiff_t gap; /* where the span starts, from user                           */
} dfccl_staged_buf_t;

typedef struct {
  dfccl_staged_buf_t send, recv;
} dfccl_staging_t;

/* The bytes a buffer argument reaches: [buf + gap, buf + gap + bytes), holes included (bytes 0:
 * none).  What MPI makes significant on this rank decides which region a collective passes
 * (coll_dfccl_colls.c). */
typedef struct {
  ptrdiff_t gap;
  size_t bytes;
  bool written; /* the collective writes every byte of it: a receive region need not be copied in */
} dfccl_region_t;
#define DFCCL_NO_REGION ((dfccl_region_t){0, 0, false})

/* Host copies of the regions that are device memory (the receive region is copied in too, for
 * in-place input and datatype holes, unless the collective writes it whole).  Use s->send.host and
 * s->recv.host in the call.  Aborts the job if it cannot (the other ranks are already in the
 * collective). */
void mca_coll_dfccl_stage(dfccl_staging_t* s, ompi_communicator_t* comm, const void* send, dfccl_region_t send_region,
                          void* recv, dfccl_region_t recv_region);
/* Part of the component's progress callback: completes staged fallbacks whose inner request is done. */
int mca_coll_dfccl_staged_progress(void);

/* A call of one of the component's entry points: its name (the prefix of its parameter and
 * counters), its form, its counters, and what the form needs: the request to return (nonblocking,
 * persistent), the init's info (for the previous component) and what a persistent request holds
 * until it is freed. */
typedef struct {
  const char* name;
  dfccl_form_t form;
  unsigned long long *routed, *fallback, *local, *staged;
  ompi_request_t** request;
  struct ompi_info_t* info;
  dfccl_kept_t kept;
} dfccl_entry_t;

/* The end of a fallback on st, whose previous component returned rc, in e's form: a blocking call
 * copies the result back; a nonblocking or persistent one returns a request that does (when
 * anything was staged: counted as staged). */
int mca_coll_dfccl_staged_end(const dfccl_entry_t* e, ompi_communicator_t* comm, dfccl_staging_t* st, int rc);

/* A call on a communicator of one rank (coll_dfccl_local.c): `from_count` elements of from_type at
 * `from` (NULL or MPI_IN_PLACE: nothing) copied to `to` (to_count of to_type), counted as local;
 * *rc is the blocking call's result, or the request's (nonblocking: complete at once; persistent:
 * each MPI_Start copies).  False, having done nothing, when a layout is not contiguous: the call
 * then falls back. */
bool mca_coll_dfccl_local(const dfccl_entry_t* e, ompi_communicator_t* comm, const void* from,
                          struct ompi_datatype_t* from_type, size_t from_count, void* to,
                          struct ompi_datatype_t* to_type, size_t to_count, int* rc);

#define DFCCL_VERBOSE(level, ...) \
  opal_output_verbose((level), mca_coll_dfccl_component.output, "coll:dfccl: " __VA_ARGS__)

END_C_DECLS
#endif
