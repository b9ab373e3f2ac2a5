/*
 * The poller thread: takes completions from the CQ and runs their callbacks, and keeps the daemon
 * alive -- it (re)launches the daemon when new SQEs wait for it, and, with a growing delay, when
 * runs are outstanding after a voluntary quit (so that a device synchronization that the quit
 * released gets its chance to return first).
 *
 * A thread that waits for a run may take the completions itself (dfcclProgress): it sees its run
 * end as soon as the daemon publishes it, instead of when the poller next looks and then hands it
 * over.  One thread at a time takes them (ctx->taking: the CQ's heads and the set-aside ring are
 * that thread's); the other just goes on.  Managing the daemon stays the poller's alone.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "internal.h"

static void on_completion(void* arg, uint64_t cqe) {
  df_ctx* ctx = arg;
  uint32_t index = df_cqe_coll(cqe), epoch = df_cqe_epoch(cqe);
  df_host_stamp(ctx, index, epoch, DF_HOST_STAMP_COMPLETION);
  pthread_mutex_lock(&ctx->lock);
  df_coll* c = index < (uint32_t)ctx->ncolls ? &ctx->colls[index] : NULL;
  if (!c || !c->in_flight || c->epoch != epoch) {
    pthread_mutex_unlock(&ctx->lock);
    /* Never silently dropped: this would be a bug in DFCCL, and the user must hear of it.  The
     * poller then fails every outstanding run (the daemon's bookkeeping cannot be trusted). */
    df_error(dfcclInternalError, "unexpected completion (collective index %u, run %u)", index, epoch);
    fprintf(stderr, "dfccl: rank %d: %s\n", ctx->rank, dfcclGetLastErrorMessage());
    atomic_store(&ctx->fatal, dfcclInternalError);
    return;
  }
  c->in_flight = false; /* before the callback, which may well submit the next run */
  dfcclResult_t outcome = df_run_outcome(ctx, (int)index, df_cqe_error(cqe));
  df_comm_run_ended(c);
  c->runs++;
  dfcclCallback_t callback = c->callback;
  void* callback_arg = c->callback_arg;
  int id = c->callback_id;
  bool queued = c->queued != NULL;
  pthread_mutex_unlock(&ctx->lock);
  /* A communicator's run that waited for this connector set starts first (it keeps the daemon
   * busy while the callback runs), and before this run stops counting as outstanding: dfcclDestroy
   * never sees none outstanding while one is queued. */
  if (queued) df_comm_start_queued(ctx, (int)index);
  atomic_fetch_add(&ctx->completions, 1);
  atomic_fetch_sub(&ctx->outstanding, 1);
  if (callback) callback(id, outcome, callback_arg);
  df_host_stamp(ctx, index, epoch, DF_HOST_STAMP_CALLBACK_DONE);
}

/* ---- completions set aside ----
 * The thread taking completions runs callbacks, and starts the communicator runs that waited for
 * a connector set: it submits.  When the SQ is full it must not simply wait: daemon block 0, which
 * forwards the SQ, takes no new entry while it waits to store a completion in its full CQ ring,
 * which only the thread taking completions empties.  So that thread, while it waits, takes
 * completions aside (df_set_aside_completions) and completes them once its submission is done --
 * never from inside a reap, whose ring heads are not stored yet.  The poller also keeps the daemon
 * running meanwhile: one that quit would never take the entry, and only the poller launches it
 * (when another thread waits so, the poller's loop goes on doing that). */

static _Thread_local const df_ctx* taking_here; /* whose completions this thread is taking now */

bool df_taking_completions(const df_ctx* ctx) { return taking_here == ctx; }

/* The turn to take ctx's completions, if no other thread has it; *previous keeps the context this
 * thread was taking (a callback may progress another context). */
static bool take_turn(df_ctx* ctx, const df_ctx** previous) {
  bool free_turn = false;
  if (!atomic_compare_exchange_strong_explicit(&ctx->taking, &free_turn, true, memory_order_acquire,
                                               memory_order_relaxed))
    return false;
  *previous = taking_here;
  taking_here = ctx;
  return true;
}

static void end_turn(df_ctx* ctx, const df_ctx* previous) {
  taking_here = previous;
  atomic_store_explicit(&ctx->taking, false, memory_order_release);
}

static void put_aside(void* arg, uint64_t cqe) {
  df_ctx* ctx = arg;
  if (ctx->set_aside_tail - ctx->set_aside_head == DF_MAX_COLLS) { /* more completions than runs */
    df_error(dfcclInternalError, "more than %d completions waiting (collective index %u, run %u)", DF_MAX_COLLS,
             df_cqe_coll(cqe), df_cqe_epoch(cqe));
    fprintf(stderr, "dfccl: rank %d: %s\n", ctx->rank, dfcclGetLastErrorMessage());
    atomic_store(&ctx->fatal, dfcclInternalError);
    return;
  }
  ctx->set_aside[ctx->set_aside_tail++ % DF_MAX_COLLS] = cqe;
}

static void take_aside(df_ctx* ctx) { df_cq_host_reap(&ctx->cq, atomic_load(&ctx->grid), put_aside, ctx); }

/* Completes what was set aside, oldest first; the callbacks may set more aside.  Returns how many. */
static uint32_t complete_set_aside(df_ctx* ctx) {
  uint32_t n = 0;
  for (; ctx->set_aside_head != ctx->set_aside_tail; n++)
    on_completion(ctx, ctx->set_aside[ctx->set_aside_head++ % DF_MAX_COLLS]);
  return n;
}

/* Takes every published completion and completes it, unless another thread is taking them (0).
 * Nothing is outstanding, nothing can be published (a run counts until its callback): then it
 * writes nothing shared, so that idle callers and the poller do not pass the turn's line around. */
static uint32_t reap(df_ctx* ctx) {
  const df_ctx* previous;
  if (atomic_load_explicit(&ctx->outstanding, memory_order_acquire) == 0 || !take_turn(ctx, &previous)) return 0;
  take_aside(ctx);
  uint32_t n = complete_set_aside(ctx);
  end_turn(ctx, previous);
  return n;
}

dfcclResult_t dfcclProgress(dfcclRankCtx_t ctx, int* completed) {
  if (completed != NULL) *completed = 0;
  DF_CHECK(df_ctx_check(ctx));
  uint32_t n = reap(ctx);
  if (completed != NULL) *completed = (int)n;
  df_creations_progress(ctx); /* the caller's thread: a creation's exchanges are the caller's (exchange.c) */
  return dfcclSuccess;
}

void dfcclWaitPause(dfcclTarget_t target, unsigned poll) {
  if (target == dfcclTargetCuda && poll < DFCCL_WAIT_SPIN_POLLS) df_cpu_relax();
  else sched_yield();
}

/* The daemon failed (e.g. a CUDA error): every outstanding run ends with that error. */
void df_poller_fail_outstanding(df_ctx* ctx, dfcclResult_t error) {
  atomic_store(&ctx->fatal, error);
  fprintf(stderr, "dfccl: rank %d: daemon failed: %s (%s)\n", ctx->rank, dfcclGetErrorString(error),
          dfcclGetLastErrorMessage());
  for (int i = 0;; i++) {
    pthread_mutex_lock(&ctx->lock);
    if (i >= ctx->ncolls) {
      pthread_mutex_unlock(&ctx->lock);
      break;
    }
    df_coll* c = &ctx->colls[i];
    bool was = c->in_flight;
    c->in_flight = false;
    if (was) df_comm_run_ended(c);
    dfcclCallback_t callback = c->callback;
    void* callback_arg = c->callback_arg;
    int id = c->callback_id;
    pthread_mutex_unlock(&ctx->lock);
    if (was) {
      atomic_fetch_sub(&ctx->outstanding, 1);
      if (callback) callback(id, error, callback_arg);
    }
  }
}

dfcclResult_t df_daemon_launch(df_ctx* ctx) {
  __atomic_store_n(ctx->quit_request_host, 0, __ATOMIC_RELAXED); /* a caller may ask for a relaunch meanwhile */
  ctx->launch_report_host->progressed = ctx->launch_report_host->yielded = 0;
  ctx->launch_report_host->start_ns = ctx->launch_report_host->end_ns = 0;
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the last launch's blocks reset their vote themselves */
  ctx->submitted_at_launch = atomic_load(&ctx->submitted);
  uint32_t grid = atomic_load(&ctx->grid);
  atomic_store(&ctx->grid_launched, grid);
  DF_CHECK(ctx->target->launch(ctx, &ctx->args, (int)grid));
  atomic_fetch_add(&ctx->launches, 1);
  df_debug(ctx, "daemon launched with %u blocks", grid);
  return dfcclSuccess;
}

typedef struct {
  bool was_running;
  uint64_t asked_us; /* when the target was last asked whether the daemon runs */
  bool launched;     /* by the last manage_daemon */
  bool yielding;     /* the last launch left the GPU to daemons that time-slice with it */
  uint64_t ended_us;
  uint64_t delay_us;    /* before relaunching for outstanding runs */
  uint64_t progress_us; /* when a launch last reported progress */
} daemon_watch;

/* How often the poller asks the target whether a daemon that has not said it ended still runs: a
 * daemon kernel that faults never says so, and the answer carries its error. */
#define DF_DAEMON_ASK_US 1000

/* Whether the daemon runs.  A launch ends with block 0 storing its end time into the launch report
 * in host memory (df_daemon_block_main), so until then the poller takes it as running without
 * asking the target more than every DF_DAEMON_ASK_US.  Asked at every turn of its loop (a stream
 * query, its loop yielding between turns), the poller kept CUDA busy while the daemon ran, and a
 * submitting thread's wait for its default streams (dfcclWaitDefaultStreams, on every run's way)
 * took 2.9 us instead of 2.75 (one H100, benchmarks/stream_order_cost).  Most of the wait is CUDA's:
 * a query of an idle default stream costs 1.3 us while any kernel runs, 0.2 us otherwise
 * (docs/performance.md, twenty-ninth session). */
static dfcclResult_t daemon_running(df_ctx* ctx, daemon_watch* w, bool* running) {
  uint64_t now = df_now_us();
  bool ended = __atomic_load_n(&ctx->launch_report_host->end_ns, __ATOMIC_RELAXED) != 0;
  if (w->was_running && !ended && now - w->asked_us < DF_DAEMON_ASK_US) {
    *running = true;
    return dfcclSuccess;
  }
  w->asked_us = now;
  return ctx->target->daemon_running(ctx, running);
}

/* Returns false when the daemon is not running and nothing asks for it.  A failure is left in
 * ctx->fatal for the poller's loop, which fails the outstanding runs: this may run inside a
 * submission (df_set_aside_completions), where their callbacks must not run. */
static bool manage_daemon(df_ctx* ctx, daemon_watch* w) {
  bool running = false;
  dfcclResult_t r = daemon_running(ctx, w, &running);
  if (r != dfcclSuccess) {
    atomic_store(&ctx->fatal, r);
    return false;
  }
  if (running) {
    w->was_running = true;
    return true;
  }
  uint64_t now = df_now_us();
  if (w->was_running) { /* it just ended (a voluntary quit) */
    w->was_running = false;
    w->ended_us = now;
    bool progressed = ctx->launch_report_host->progressed != 0, yielded = ctx->launch_report_host->yielded != 0;
    if (ctx->cfg.debug >= 2) /* a timeline: GPU global time, one clock for the processes on the GPU */
      df_debug(ctx, "launch %llu: GPU time %llu..%llu ns (%.1f us)%s%s",
               (unsigned long long)atomic_load(&ctx->launches), (unsigned long long)ctx->launch_report_host->start_ns,
               (unsigned long long)ctx->launch_report_host->end_ns,
               (double)(ctx->launch_report_host->end_ns - ctx->launch_report_host->start_ns) / 1000.0,
               progressed ? ", progressed" : "", yielded ? ", yielded" : "");
    if (progressed) w->progress_us = now;
    /* It left the GPU to daemons that time-slice with it while the collectives were moving: back
     * after a short fixed delay, the time for a peer's launch to take the GPU -- not at once (this
     * daemon could take the GPU again before the peer it waits for) and without backing off.  Any
     * other progress resets the backoff, which is for launches that only wait (maybe for a
     * device synchronization to return). */
    w->yielding = yielded && now - w->progress_us < ctx->cfg.spin.quit_period_ns / 1000;
    if (w->yielding) w->delay_us = ctx->cfg.yield_delay_us;
    else if (progressed) w->delay_us = ctx->cfg.relaunch_delay_us;
  }
  bool new_sqes = atomic_load(&ctx->submitted) > ctx->submitted_at_launch;
  bool outstanding = atomic_load(&ctx->outstanding) > 0;
  if (!new_sqes && !(outstanding && now - w->ended_us >= w->delay_us)) return outstanding;
  if (!new_sqes && !w->yielding) { /* relaunching for stalled runs only: back off, a synchronization may wait */
    uint64_t next = w->delay_us ? w->delay_us * 2 : ctx->cfg.relaunch_delay_us;
    w->delay_us = next > ctx->cfg.relaunch_cap_us ? ctx->cfg.relaunch_cap_us : next;
  }
  r = df_daemon_launch(ctx);
  if (r != dfcclSuccess) {
    atomic_store(&ctx->fatal, r);
    return false;
  }
  w->was_running = true;
  w->launched = true;
  return true;
}

static _Thread_local daemon_watch* poller_watch; /* the poller loop's, for df_set_aside_completions */

void df_set_aside_completions(void* arg) {
  df_ctx* ctx = arg;
  take_aside(ctx);
  if (poller_watch != NULL && atomic_load(&ctx->fatal) == dfcclSuccess) manage_daemon(ctx, poller_watch);
}

static void idle_wait(df_ctx* ctx, uint64_t idle_rounds, bool daemon_needed) {
  if (!daemon_needed && atomic_load(&ctx->outstanding) == 0) {
    /* Nothing to do until someone submits. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 10 * 1000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&ctx->wake_lock);
    if (atomic_load(&ctx->submitted) == ctx->submitted_at_launch && !atomic_load(&ctx->poller_stop))
      pthread_cond_timedwait(&ctx->wake, &ctx->wake_lock, &until);
    pthread_mutex_unlock(&ctx->wake_lock);
    return;
  }
  uint64_t spin = ctx->cfg.poller_spin_rounds;
  if (idle_rounds < spin) { /* completions tend to come soon: stay responsive */
    sched_yield();
    return;
  }
  uint64_t shift = (idle_rounds - spin) / 500;
  long ns = 10000L << (shift > 6 ? 6 : shift); /* 10 us .. 640 us */
  nanosleep(&(struct timespec){.tv_nsec = ns}, NULL);
}

static void* poller_main(void* arg) {
  df_ctx* ctx = arg;
  daemon_watch watch = {.delay_us = ctx->cfg.relaunch_delay_us};
  poller_watch = &watch;
  uint64_t idle = 0, completions_seen = 0;
  bool failed_outstanding = false;
  while (!atomic_load(&ctx->poller_stop)) {
    uint32_t n = reap(ctx);
    uint64_t completions = atomic_load(&ctx->completions); /* some maybe taken by a dfcclProgress */
    if (n || completions != completions_seen) {
      idle = 0;
      watch.delay_us = ctx->cfg.relaunch_delay_us;
      completions_seen = completions;
    }
    watch.launched = false;
    dfcclResult_t fatal = (dfcclResult_t)atomic_load(&ctx->fatal);
    /* After a fatal error nothing relaunches the daemon: the runs still out end with the error
     * rather than never (their callbacks say so, and dfcclRun* refuses new ones). */
    if (fatal != dfcclSuccess && !failed_outstanding && atomic_load(&ctx->outstanding) > 0) {
      df_poller_fail_outstanding(ctx, fatal);
      failed_outstanding = true; /* once: it says so on stderr */
    }
    bool needed = fatal == dfcclSuccess && manage_daemon(ctx, &watch);
    df_hang_report_poll(ctx);
    df_timeout_poll(ctx);
    if (watch.launched) idle = 0; /* its end is near when it yields: keep watching closely */
    if (n == 0) idle_wait(ctx, idle++, needed);
  }
  while (atomic_load(&ctx->taking)) sched_yield(); /* a last look, after a dfcclProgress's turn */
  reap(ctx);
  return NULL;
}

dfcclResult_t df_poller_start(df_ctx* ctx) {
  atomic_store(&ctx->poller_stop, false);
  int err = pthread_create(&ctx->poller, NULL, poller_main, ctx);
  if (err) return df_error(dfcclSystemError, "starting the poller thread failed (error %d)", err);
  ctx->poller_started = true;
  return dfcclSuccess;
}

void df_poller_stop(df_ctx* ctx) {
  if (!ctx->poller_started) return;
  atomic_store(&ctx->poller_stop, true);
  df_poller_notify(ctx);
  pthread_join(ctx->poller, NULL);
  ctx->poller_started = false;
}

void df_poller_notify(df_ctx* ctx) {
  pthread_mutex_lock(&ctx->wake_lock);
  pthread_cond_signal(&ctx->wake);
  pthread_mutex_unlock(&ctx->wake_lock);
}
