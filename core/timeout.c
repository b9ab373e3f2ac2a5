/*
 * Per-run timeouts (DFCCL_TIMEOUT_S) and what a failed run leaves behind.
 *
 * A run times out when the daemon's progress stamp of its collective has not changed for the
 * timeout: a block stamps the time whenever it leaves the run after moving data, so a run that moves
 * slowly is never cut, only one that waits.  The poller then writes a hang report (what every
 * pending run waits on, and for whom) and tells the daemon the run's epoch; the run's blocks see it
 * at their next wait and fail their part, and the block that ends the run revokes its connectors --
 * a revoked counter into every channel's successor and predecessor (kernel/daemon.h).  Peers that
 * wait on those fail at once with the same reason and revoke theirs in turn: every participant's
 * run fails with dfcclTimedOut, whether its own timeout expired or not.  A participant that
 * disagrees on a run (kernel/primitives.h checks each slot's tag) fails it the same way, with
 * dfcclMismatch.  No participant runs on those connectors again: the collective, or the
 * communicator of the connector set, refuses new runs with dfcclRevoked.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>

#include "clock.h"
#include "internal.h"

#define CHECK_PERIOD_US 100000 /* ten times a second: a timeout is whole seconds */
#define MAX_EXPIRED 64         /* runs failed per look (the rest at the next one) */

static void describe(const df_coll* c, uint32_t epoch, char* buf, size_t n) {
  if (c->id < 0) snprintf(buf, n, "communicator run %d", c->callback_id);
  else snprintf(buf, n, "run %u of collective %d", epoch, c->id);
}

static const char* reason_of(dfcclResult_t r) {
  return r == dfcclTimedOut    ? "a participant's run made no progress within its DFCCL_TIMEOUT_S"
         : r == dfcclMismatch  ? "the participants disagree on it (kind, count, type, op, root, or a skipped run)"
         : r == dfcclCudaError ? "the caller's default streams could not be waited for (a CUDA error)"
                               : "the daemon reported an unknown failure";
}

/* Caller holds ctx->lock.  Runs in flight without progress for the timeout: marked, listed. */
static int find_expired(df_ctx* ctx, uint64_t now, uint64_t timeout, int* expired, uint32_t* epochs) {
  int n = 0;
  for (int i = 0; i < ctx->ncolls && n < MAX_EXPIRED; i++) {
    df_coll* c = &ctx->colls[i];
    if (!c->in_flight || c->timing_out) continue;
    uint64_t stamp = __atomic_load_n(&ctx->progress_host[i], __ATOMIC_RELAXED); /* the blocks stamp it meanwhile */
    if (stamp != c->progress_seen) {
      c->progress_seen = stamp;
      c->progress_us = now;
    }
    uint64_t since = c->progress_us > c->submitted_us ? c->progress_us : c->submitted_us;
    if (now - since < timeout) continue;
    c->timing_out = true;
    expired[n] = i;
    epochs[n++] = c->epoch;
  }
  return n;
}

void df_timeout_poll(df_ctx* ctx) {
  uint64_t timeout_s = ctx->cfg.timeout_s;
  if (timeout_s == 0 || atomic_load(&ctx->outstanding) == 0) return;
  uint64_t now = df_now_us();
  if (now - ctx->timeouts_checked_us < CHECK_PERIOD_US) return;
  ctx->timeouts_checked_us = now;
  int expired[MAX_EXPIRED];
  uint32_t epochs[MAX_EXPIRED];
  pthread_mutex_lock(&ctx->lock);
  int n = find_expired(ctx, now, timeout_s * 1000000ull, expired, epochs);
  pthread_mutex_unlock(&ctx->lock);
  if (n == 0) return;
  char reason[96];
  snprintf(reason, sizeof reason, "%d run%s without progress for DFCCL_TIMEOUT_S=%llu", n, n > 1 ? "s" : "",
           (unsigned long long)timeout_s);
  df_hang_report_write(ctx, reason); /* before the runs fail: it shows what they waited for */
  for (int k = 0; k < n; k++) {
    char what[64];
    pthread_mutex_lock(&ctx->lock);
    describe(&ctx->colls[expired[k]], epochs[k], what, sizeof what);
    pthread_mutex_unlock(&ctx->lock);
    pthread_mutex_lock(&ctx->tables_lock);
    dfcclResult_t r = ctx->target->copy_in(ctx, (void*)&ctx->args.timed_out[expired[k]], &epochs[k], sizeof epochs[k]);
    pthread_mutex_unlock(&ctx->tables_lock);
    if (r != dfcclSuccess) { /* the daemon cannot be told: nothing it does can be trusted */
      df_poller_fail_outstanding(ctx, r);
      return;
    }
    fprintf(stderr,
            "dfccl: rank %d: %s made no progress for %llu s (DFCCL_TIMEOUT_S): it fails with dfcclTimedOut on "
            "every participant, and its connectors are revoked\n",
            ctx->rank, what, (unsigned long long)timeout_s);
  }
}

dfcclResult_t df_run_outcome(df_ctx* ctx, int index, uint32_t error) {
  df_coll* c = &ctx->colls[index];
  bool timed_out_here = c->timing_out;
  c->timing_out = false;
  if (error == DF_RUN_OK) return dfcclSuccess; /* it completed before the daemon saw its timeout */
  dfcclResult_t r = error == DF_RUN_TIMED_OUT       ? dfcclTimedOut
                    : error == DF_RUN_MISMATCH      ? dfcclMismatch
                    : error == DF_RUN_CALLER_FAILED ? dfcclCudaError
                                                    : dfcclInternalError;
  if (c->failed == dfcclSuccess) c->failed = r;
  if (!timed_out_here) { /* said above for the runs this rank timed out */
    char what[64];
    describe(c, c->epoch, what, sizeof what);
    fprintf(stderr, "dfccl: rank %d: %s failed (%s): %s; its connectors are revoked\n", ctx->rank, what,
            dfcclGetErrorString(r), reason_of(r));
  }
  return r;
}

dfcclResult_t df_check_not_failed(const df_ctx* ctx, int index, const char* what) {
  const df_coll* c = &ctx->colls[index];
  if (c->failed == dfcclSuccess) return dfcclSuccess;
  return df_error(dfcclRevoked,
                  "%s refused: an earlier run failed (%s: %s) and revoked the connectors on every participant; "
                  "release this one (dfcclDeregister, dfcclCommDestroy) and make a new one",
                  what, dfcclGetErrorString(c->failed), reason_of(c->failed));
}
