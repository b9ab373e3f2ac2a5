/*
 * coll/dfccl contexts: the process's one DFCCL context, and each communicator's share of it.
 *
 * One DFCCL context (one daemon) per process, over the ranks of MPI_COMM_WORLD, carries the
 * collectives of every communicator: a communicator gets a DFCCL communicator over its members'
 * world ranks.  So collectives of different communicators meet in one daemon, which is what lets
 * DFCCL preempt one for another (with a daemon per communicator, two communicators' collectives
 * would busy-wait side by side, each holding its own daemon).
 *
 * The process context needs no exchange to start (dfcclInit is local): it is created by the first
 * set-up of any communicator.  A communicator's DFCCL communicator is made at its first set-up
 * point that routes a signature to DFCCL (dfcclCommCreate: the one exchange among its members);
 * every run after that is a descriptor submitted with no exchange.  DFCCL's bootstrap allgather
 * runs over a private duplicate of the communicator; the thread making or destroying a DFCCL
 * communicator names the communicator (a thread-local), so threads may set up different
 * communicators at once.
 *
 * Teardown: MPI_Comm_free destroys the DFCCL communicators (an attribute delete callback; runs
 * still going are completed first); at MPI_Finalize an attribute on MPI_COMM_SELF does that for
 * the communicators still alive, in creation order (the order of the exchanges is then the same on
 * every rank), and destroys the process context.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/attribute/attribute.h"
#include "ompi/group/group.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/output.h"

/* The process's DFCCL contexts, one per execution target: [dfcclTargetHost] for the host-target
 * test mode, [dfcclTargetCuda] for device buffers (on the GPU of the first device buffer). */
static struct {
  pthread_mutex_t lock;
  dfcclRankCtx_t ctx[3];
  bool failed[3]; /* dfcclInit failed here once: not tried again */
  int cuda_device;
} proc = {.lock = PTHREAD_MUTEX_INITIALIZER, .cuda_device = -1};

/* The communicator whose DFCCL exchange this thread is running (the bootstrap's target). */
static _Thread_local dfccl_comm_t* exchanging;
/* The communicators being duplicated for a bootstrap, by cid.  With MPI_THREAD_MULTIPLE, Open MPI
 * may select the duplicate's components (comm_query) on whichever thread drives its progress, so
 * a thread-local flag cannot tell comm_query that the new communicator is DFCCL's own duplicate:
 * its name can ("MPI COMMUNICATOR <cid> DUP FROM <parent cid>", set before selection), and no
 * other duplicate of that parent can be made meanwhile (the duplication runs inside a blocking
 * collective on the parent, and MPI forbids two at once on one communicator). */
#define MAX_DUPLICATING 64
static pthread_mutex_t duplicating_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t duplicating[MAX_DUPLICATING];
static int nduplicating;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static dfccl_comm_t* live_first; /* creation order */
static dfccl_comm_t* live_last;
static int comm_keyval = -1; /* on each communicator with a context: its teardown    */
static int self_keyval = -1; /* an attribute on MPI_COMM_SELF: teardown at finalize  */

bool mca_coll_dfccl_is_boot_duplicate(const ompi_communicator_t* comm) {
  const char* from = strstr(comm->c_name, " DUP FROM ");
  bool mine = false;
  pthread_mutex_lock(&duplicating_lock);
  for (int i = 0; from != NULL && i < nduplicating && !mine; i++) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, " DUP FROM %u", duplicating[i]);
    mine = strcmp(from, suffix) == 0;
  }
  pthread_mutex_unlock(&duplicating_lock);
  return mine;
}

/* The private duplicate of m's communicator: collective over it. */
static int duplicate_for_bootstrap(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm, ompi_communicator_t** boot) {
  uint32_t cid = ompi_comm_get_cid(comm);
  for (bool listed = false; !listed; sched_yield()) { /* more than 64 threads setting up at once: wait */
    pthread_mutex_lock(&duplicating_lock);
    if ((listed = nduplicating < MAX_DUPLICATING)) duplicating[nduplicating++] = cid;
    pthread_mutex_unlock(&duplicating_lock);
  }
  atomic_store(&m->duplicating, true); /* Open MPI's own nonblocking calls on comm meanwhile fall back */
  int rc = ompi_comm_dup(comm, boot);
  atomic_store(&m->duplicating, false);
  pthread_mutex_lock(&duplicating_lock);
  for (int i = 0; i < nduplicating; i++)
    if (duplicating[i] == cid) duplicating[i] = duplicating[--nduplicating];
  pthread_mutex_unlock(&duplicating_lock);
  return rc;
}

/* ---- bootstrap ---------------------------------------------------------------------------------- */

/* DFCCL's bootstrap allgather: over the private duplicate of the communicator being set up (with
 * the lower-priority allgather).  The communicator's collectives list its members in communicator
 * rank order (DFCCL's ring order, so that blocks land where MPI wants them), which is the order
 * of the duplicate's allgather too. */
static int boot_allgather(void* state, const int* ranks, int nranks, const void* sendbuf, void* recvbuf, size_t bytes) {
  (void)state;
  dfccl_comm_t* dc = exchanging;
  if (dc == NULL || nranks != dc->size || bytes > INT_MAX) return 1;
  for (int i = 0; i < nranks; i++)
    if (ranks[i] != dc->members[i]) return 1; /* not this communicator's collective */
  ompi_communicator_t* boot = dc->boot;
  return boot->c_coll->coll_allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, boot,
                                      boot->c_coll->coll_allgather_module) != OMPI_SUCCESS;
}

bool mca_coll_dfccl_all_ranks(dfccl_comm_t* dc, bool ok) {
  int mine = ok, all = 0;
  ompi_communicator_t* boot = dc->boot;
  if (boot->c_coll->coll_allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, boot, boot->c_coll->coll_allreduce_module) !=
      OMPI_SUCCESS)
    return false;
  return all != 0;
}

dfcclComm_t mca_coll_dfccl_dfccl_comm(dfccl_comm_t* dc, dfcclRankCtx_t ctx, dfcclTarget_t target) {
  if (dc->dfccl[target] != NULL || dc->dfccl_failed[target]) return dc->dfccl[target];
  dfcclComm_t made = NULL;
  dfcclResult_t r = dfcclInvalidArgument; /* no context here: still in the agreement below */
  if (ctx != NULL) {
    /* Keyed by the communicator's cid (alike on every member, unique among the live ones): threads
     * may set up communicators over the same ranks at once, which an agreed serial would not
     * survive.  A cid beyond the keys fails on every member alike. */
    exchanging = dc;
    r = dfcclCommCreateWithKey(ctx, dc->members, dc->size, ompi_comm_get_cid(dc->comm), &made);
    exchanging = NULL;
  }
  if (r != dfcclSuccess)
    opal_output(0, "coll:dfccl: comm '%s': no DFCCL communicator (%s target): %s (%s)", dc->comm->c_name,
                target == dfcclTargetCuda ? "cuda" : "host", dfcclGetErrorString(r),
                ctx != NULL ? dfcclGetLastErrorMessage() : "no process context");
  if (!mca_coll_dfccl_all_ranks(dc, r == dfcclSuccess)) {
    if (r == dfcclSuccess) { /* dfcclCommCreate fails on every member or on none: cannot go on consistently */
      opal_output(0, "coll:dfccl: comm '%s': a DFCCL communicator made here failed elsewhere", dc->comm->c_name);
      ompi_mpi_abort(dc->comm, 1);
    }
    dc->dfccl_failed[target] = true;
    return NULL;
  }
  dc->dfccl[target] = made;
  DFCCL_VERBOSE(1, "comm '%s': DFCCL communicator of %d ranks on the %s target", dc->comm->c_name, dc->size,
                target == dfcclTargetCuda ? "cuda" : "host");
  return made;
}

/* ---- teardown ----------------------------------------------------------------------------------- */

static void unlink_live(dfccl_comm_t* dc) {
  dfccl_comm_t** p = &live_first;
  live_last = NULL;
  for (dfccl_comm_t* it = live_first; it != NULL; it = it->next_live) {
    if (it == dc) *p = it->next_live;
    else live_last = it, p = &it->next_live;
  }
}

/* Collective over the communicator: its DFCCL communicators go (dfcclCommDestroy meets the other
 * members). */
static void destroy_comm(dfccl_comm_t* dc) {
  /* MPI lets a communicator be freed with nonblocking collectives outstanding: they complete
   * normally. */
  mca_coll_dfccl_drain(dc);
  for (int t = 0; t < 3; t++) { /* every member made the same ones: the same calls */
    if (dc->dfccl[t] == NULL) continue;
    exchanging = dc;
    dfcclResult_t r = dfcclCommDestroy(dc->dfccl[t]);
    exchanging = NULL;
    if (r != dfcclSuccess)
      opal_output(0, "coll:dfccl: destroying the DFCCL communicator of comm '%s': %s (%s)", dc->comm->c_name,
                  dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  }
  int n = dc->ncolls;
  while (dc->colls != NULL) {
    dfccl_coll_t* next = dc->colls->next;
    mca_coll_dfccl_spares_free(dc->colls);
    free(dc->colls->counts);
    free(dc->colls);
    dc->colls = next;
  }
  ompi_comm_free(&dc->boot);
  DFCCL_VERBOSE(1, "comm '%s' left DFCCL (%d signatures ran on it)", dc->comm->c_name, n);
  if (dc->module != NULL) dc->module->dc = NULL;
  free(dc->members);
  free(dc);
}

static int comm_freed(MPI_Comm comm, int keyval, void* attr, void* extra) {
  (void)comm, (void)keyval, (void)extra;
  mca_coll_dfccl_module_t* m = attr;
  m->unusable = true; /* never again for this communicator */
  dfccl_comm_t* dc = m->dc;
  if (dc == NULL) return MPI_SUCCESS; /* already gone with the finalize sweep */
  pthread_mutex_lock(&live_lock);
  unlink_live(dc);
  pthread_mutex_unlock(&live_lock);
  destroy_comm(dc);
  return MPI_SUCCESS;
}

static int finalizing(MPI_Comm comm, int keyval, void* attr, void* extra) {
  (void)comm, (void)keyval, (void)attr, (void)extra;
  for (;;) {
    pthread_mutex_lock(&live_lock);
    dfccl_comm_t* dc = live_first;
    pthread_mutex_unlock(&live_lock);
    if (dc == NULL) break;
    /* Deleting the communicator's attribute runs comm_freed, which tears its share down, as
     * MPI_Comm_free would; and no attribute of ours outlives its keyval. */
    ompi_communicator_t* comm = dc->comm;
    if (comm_keyval >= 0 && ompi_attr_delete(COMM_ATTR, comm, comm->c_keyhash, comm_keyval, false) == OMPI_SUCCESS)
      continue;
    pthread_mutex_lock(&live_lock); /* no attribute (attaching it failed): directly */
    unlink_live(dc);
    pthread_mutex_unlock(&live_lock);
    if (dc->module != NULL) dc->module->unusable = true;
    destroy_comm(dc);
  }
  /* Every DFCCL communicator is destroyed: destroying the contexts meets nobody. */
  pthread_mutex_lock(&proc.lock);
  for (int t = 0; t < 3; t++) {
    if (proc.ctx[t] != NULL) {
      dfcclResult_t r = dfcclDestroy(proc.ctx[t]);
      if (r != dfcclSuccess)
        opal_output(0, "coll:dfccl: dfcclDestroy: %s (%s)", dfcclGetErrorString(r), dfcclGetLastErrorMessage());
      DFCCL_VERBOSE(1, "process context (%s target) destroyed", t == dfcclTargetCuda ? "cuda" : "host");
    }
    proc.ctx[t] = NULL;
    proc.failed[t] = true; /* no context after finalize */
  }
  pthread_mutex_unlock(&proc.lock);
  /* The keyvals go once the attributes using them are deleted (Open MPI counts references). */
  pthread_mutex_lock(&live_lock);
  if (comm_keyval >= 0) (void)ompi_attr_free_keyval(COMM_ATTR, &comm_keyval, false);
  if (self_keyval >= 0) (void)ompi_attr_free_keyval(COMM_ATTR, &self_keyval, false);
  comm_keyval = self_keyval = -1;
  pthread_mutex_unlock(&live_lock);
  return MPI_SUCCESS;
}

static int no_copy(MPI_Comm oldcomm, int keyval, void* extra, void* in, void* out, int* flag, MPI_Comm newcomm) {
  (void)oldcomm, (void)keyval, (void)extra, (void)in, (void)out, (void)newcomm;
  *flag = 0; /* a duplicate is set up on its own first use */
  return MPI_SUCCESS;
}

static int create_keyval(MPI_Comm_delete_attr_function* on_delete, int* keyval) {
  ompi_attribute_fn_ptr_union_t copy = {.attr_communicator_copy_fn = no_copy};
  ompi_attribute_fn_ptr_union_t del = {.attr_communicator_delete_fn = on_delete};
  return ompi_attr_create_keyval(COMM_ATTR, copy, del, keyval, NULL, 0, NULL);
}

/* Attaches the teardown hooks; call with live_lock held. */
static int attach_teardown(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  int rc = OMPI_SUCCESS;
  if (self_keyval < 0) {
    rc = create_keyval(finalizing, &self_keyval);
    if (rc == OMPI_SUCCESS)
      rc = ompi_attr_set_c(COMM_ATTR, &ompi_mpi_comm_self.comm, &ompi_mpi_comm_self.comm.c_keyhash, self_keyval, NULL,
                           false);
    if (rc != OMPI_SUCCESS) return rc;
  }
  if (comm_keyval < 0 && (rc = create_keyval(comm_freed, &comm_keyval)) != OMPI_SUCCESS) return rc;
  return ompi_attr_set_c(COMM_ATTR, comm, &comm->c_keyhash, comm_keyval, m, false);
}

/* ---- first use ---------------------------------------------------------------------------------- */

void* mca_coll_dfccl_alloc_or_abort(size_t bytes, ompi_communicator_t* comm) {
  void* p = calloc(1, bytes);
  if (p == NULL) { /* a rank-local failure inside a collective set-up: the job cannot go on consistently */
    opal_output(0, "coll:dfccl: out of memory on comm '%s'", comm->c_name);
    ompi_mpi_abort(comm, 1);
  }
  return p;
}

dfcclRankCtx_t mca_coll_dfccl_process_context(dfcclTarget_t target, int device) {
  pthread_mutex_lock(&proc.lock);
  dfcclRankCtx_t ctx = proc.ctx[target];
  if (ctx == NULL && !proc.failed[target]) {
    dfcclInitArgs_t args = {.target = target,
                            .device = device,
                            .bootstrap = {ompi_comm_rank(&ompi_mpi_comm_world.comm),
                                          ompi_comm_size(&ompi_mpi_comm_world.comm), boot_allgather, NULL}};
    /* The MCA parameters the core reads from its environment. */
    char number[16];
    snprintf(number, sizeof number, "%d", mca_coll_dfccl_component.concurrent_runs);
    setenv("DFCCL_COMM_SETS", number, 1);
    static const char* const transports[] = {NULL, "auto", "p2p", "ucx"};
    const char* transport = transports[mca_coll_dfccl_component.transport];
    if (transport != NULL) setenv("DFCCL_TRANSPORT", transport, 1);
    if (mca_coll_dfccl_component.verbose >= 1) setenv("DFCCL_SHOW_TRANSPORT", "1", 0);
    char seconds[16];
    if (mca_coll_dfccl_component.hang_report > 0) {
      snprintf(seconds, sizeof seconds, "%d", mca_coll_dfccl_component.hang_report);
      setenv("DFCCL_HANG_REPORT_S", seconds, 1);
    }
    if (mca_coll_dfccl_component.timeout > 0) {
      snprintf(seconds, sizeof seconds, "%d", mca_coll_dfccl_component.timeout);
      setenv("DFCCL_TIMEOUT_S", seconds, 1);
    }
    dfcclResult_t r = dfcclInit(&ctx, &args);
    if (r != dfcclSuccess) {
      opal_output(0, "coll:dfccl: dfcclInit (%s target, device %d): %s (%s)",
                  target == dfcclTargetCuda ? "cuda" : "host", device, dfcclGetErrorString(r),
                  dfcclGetLastErrorMessage());
      ctx = NULL;
      proc.failed[target] = true;
    } else {
      proc.ctx[target] = ctx;
      if (target == dfcclTargetCuda) proc.cuda_device = device;
      DFCCL_VERBOSE(1, "process context (%s target%s) ready: world rank %d of %d",
                    target == dfcclTargetCuda ? "cuda" : "host", target == dfcclTargetCuda ? ", GPU" : "",
                    args.bootstrap.rank, args.bootstrap.nranks);
    }
  }
  /* One GPU per process: a collective on another device's buffers has no context. */
  if (ctx != NULL && target == dfcclTargetCuda && device != proc.cuda_device) ctx = NULL;
  pthread_mutex_unlock(&proc.lock);
  return ctx;
}

/* The members' world ranks in communicator rank order (DFCCL's participants, in ring order).
 * False if a member is not in MPI_COMM_WORLD (a spawned process), alike on every member. */
static bool map_members(dfccl_comm_t* dc) {
  int n = dc->size;
  int* comm_ranks = malloc(sizeof(int) * (size_t)n);
  dc->members = malloc(sizeof(int) * (size_t)n);
  bool ok = comm_ranks != NULL && dc->members != NULL;
  if (ok) {
    for (int i = 0; i < n; i++) comm_ranks[i] = i;
    ok = ompi_group_translate_ranks(dc->comm->c_local_group, n, comm_ranks, ompi_mpi_comm_world.comm.c_local_group,
                                    dc->members) == OMPI_SUCCESS;
  }
  for (int i = 0; ok && i < n; i++) ok = dc->members[i] != MPI_UNDEFINED;
  free(comm_ranks);
  return ok;
}

static void free_comm_context(dfccl_comm_t* dc) {
  if (dc->boot != NULL) ompi_comm_free(&dc->boot);
  free(dc->members);
  free(dc);
}

dfccl_comm_t* mca_coll_dfccl_comm_context(mca_coll_dfccl_module_t* m, ompi_communicator_t* comm) {
  if (m->dc != NULL || m->unusable) return m->dc;
  dfccl_comm_t* dc = mca_coll_dfccl_alloc_or_abort(sizeof *dc, comm);
  dc->comm = comm;
  dc->size = ompi_comm_size(comm);
  const char* no = NULL;
  /* Everything decided before the duplicate is alike on every member. */
  if (!map_members(dc)) no = "a member is not in MPI_COMM_WORLD";
  if (no == NULL) {
    int rc = duplicate_for_bootstrap(m, comm, &dc->boot);
    if (rc != OMPI_SUCCESS) no = "duplicating it for the bootstrap failed"; /* collective: alike everywhere */
  }
  if (no != NULL) {
    DFCCL_VERBOSE(1, "comm '%s' falls back: %s", comm->c_name, no);
    free_comm_context(dc);
    m->unusable = true;
    return NULL;
  }

  /* Requests complete from the progress callback: without it there is no DFCCL for us. */
  int rc = mca_coll_dfccl_progress_register();
  if (rc != OMPI_SUCCESS)
    opal_output(0, "coll:dfccl: comm '%s': registering the progress callback failed (%d)", comm->c_name, rc);
  if (!mca_coll_dfccl_all_ranks(dc, rc == OMPI_SUCCESS)) {
    opal_output(0, "coll:dfccl: comm '%s': no progress callback on every member: falling back", comm->c_name);
    free_comm_context(dc);
    m->unusable = true;
    return NULL;
  }
  atomic_init(&dc->pending, 0);
  dc->module = m;
  pthread_mutex_lock(&live_lock);
  rc = attach_teardown(m, comm);
  if (live_last != NULL) live_last->next_live = dc;
  else live_first = dc;
  live_last = dc;
  pthread_mutex_unlock(&live_lock);
  if (rc != OMPI_SUCCESS) opal_output(0, "coll:dfccl: comm '%s': no teardown hook (%d)", comm->c_name, rc);
  m->dc = dc;
  DFCCL_VERBOSE(1, "comm '%s' (cid %u, rank %d of %d) set up for DFCCL", comm->c_name, ompi_comm_get_cid(comm),
                ompi_comm_rank(comm), dc->size);
  return dc;
}
