/*
 * Hang reports: every collective this rank has registered, and for each run still pending how long
 * it has waited and how far each of its channels got.  Written by the poller when a run has been
 * pending DFCCL_HANG_REPORT_S seconds (and again every as many seconds while one still is), when the
 * process gets SIGUSR1 (if the program left that signal alone), and by dfcclWriteHangReport.
 *
 * To stderr as lines, or with DFCCL_REPORT_DIR to <dir>/dfccl-hang-rank<R>.txt and .json (the latest
 * report, replaced whole).  The JSON lists every registered collective with the runs submitted and
 * completed, so that tools/dfccl-hang-report can merge the ranks' reports: a rank that submitted
 * fewer runs of a collective than the ranks waiting for it is the one they wait for.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "internal.h"
#include "kernel/collectives.h"

static const char* const kind_names[DF_COLL_NUM_KINDS] = {"all-reduce", "all-gather", "reduce-scatter",
                                                          "broadcast",  "reduce",     "all-to-all"};

/* ---- SIGUSR1 ---- */

/* Counted by the handler on whichever thread the signal lands, read by the pollers: a lock-free
 * atomic, which a handler may use (C11 7.14.1.1) and which, unlike a volatile sig_atomic_t, is also
 * safe between threads. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a signal handler may use atomic_int");
static atomic_int signals_seen;
static pthread_once_t signal_once = PTHREAD_ONCE_INIT;

static void on_sigusr1(int sig) {
  (void)sig;
  atomic_fetch_add(&signals_seen, 1);
}

/* Takes SIGUSR1 only if nobody else did: a program's own handler stays. */
static void install_signal(void) {
  struct sigaction old;
  if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
}

void df_hang_report_init(df_ctx* ctx) {
  pthread_once(&signal_once, install_signal);
  ctx->report_signals_seen = atomic_load(&signals_seen);
}

/* ---- one report ---- */

typedef struct {
  int index;
  df_coll record; /* a copy, taken under ctx->lock */
  int* ranks;     /* the participants (a copy)     */
  int nranks;
  uint64_t waiting_ms;
  int queued; /* a communicator's runs waiting behind this one */
} coll_view;

/* A channel's connectors as they stand: the slots its predecessor posted to it and it took, and the
 * slots it sent to its successor and the successor freed.  Read while the daemon runs (the words
 * may move meanwhile; each is read whole). */
typedef struct {
  uint64_t posted, taken, sent, freed;
} channel_counters;

static bool read_counters(df_ctx* ctx, const df_links* links, uint32_t c, channel_counters* k) {
  /* Only the control blocks' addresses, set when the links were made: a sender's credit, beside
   * them in its connector, moves while the daemon runs (ThreadSanitizer saw the whole copy race). */
  df_send_ctrl* to_successor;
  df_recv_ctrl* from_predecessor;
  const df_target_ops* t = ctx->target;
  return t->copy_out(ctx, &k->sent, &links->sent[c], sizeof k->sent) == dfcclSuccess &&
         t->copy_out(ctx, &k->taken, &links->consumed[c], sizeof k->taken) == dfcclSuccess &&
         t->copy_out(ctx, &to_successor, &links->to_next[c].send_ctrl, sizeof to_successor) == dfcclSuccess &&
         t->copy_out(ctx, &from_predecessor, &links->from_prev[c].recv_ctrl, sizeof from_predecessor) == dfcclSuccess &&
         t->copy_out(ctx, &k->posted, (const void*)&from_predecessor->tail, sizeof k->posted) == dfcclSuccess &&
         t->copy_out(ctx, &k->freed, (const void*)&to_successor->head, sizeof k->freed) == dfcclSuccess;
}

/* A counter for the text: its value, or "revoked" (a failed run's mark, daemon.h). */
static const char* counter_text(uint64_t value, char out[24]) {
  if (value & DF_REVOKED_BIT) snprintf(out, 24, "revoked");
  else snprintf(out, 24, "%llu", (unsigned long long)value);
  return out;
}

/* What the counters say about one channel's neighbours (world ranks prev and next): whether a slot
 * from the predecessor waits to be taken, whether the successor's FIFO is full.  Which of the two
 * the run waits for depends on its step; together with the other ranks' reports they show which
 * neighbour has not done its part. */
static void write_counters(const channel_counters* k, int prev, int next, FILE* text, FILE* json) {
  char a[24], b[24], c[24], d[24];
  bool revoked = (k->posted | k->freed) & DF_REVOKED_BIT;
  bool none_waiting = !revoked && k->posted <= k->taken, fifo_full = !revoked && k->sent >= k->freed + DF_FIFO_STEPS;
  if (text) {
    fprintf(text, " (from rank %d: %s posted, %s taken%s; to rank %d: %s sent, %s freed%s)", prev,
            counter_text(k->posted, a), counter_text(k->taken, b), none_waiting ? ", none waiting" : "", next,
            counter_text(k->sent, c), counter_text(k->freed, d), fifo_full ? ", its FIFO full" : "");
  }
  if (json) { /* a revoked counter's value means nothing: null, and "revoked" says why */
    fprintf(json,
            ",\"from_rank\":%d,\"posted\":%s,\"taken\":%llu,\"to_rank\":%d,\"sent\":%llu,\"freed\":%s,\"revoked\":%s,"
            "\"none_waiting\":%s,\"fifo_full\":%s",
            prev, k->posted & DF_REVOKED_BIT ? "null" : counter_text(k->posted, a), (unsigned long long)k->taken, next,
            (unsigned long long)k->sent, k->freed & DF_REVOKED_BIT ? "null" : counter_text(k->freed, d),
            revoked ? "true" : "false", none_waiting ? "true" : "false", fifo_full ? "true" : "false");
  }
}

/* Per channel: where the run stood when its context was last saved (a context resident in a block
 * may be further), of how many iterations and steps, and its connectors' counters. */
static void write_channels(df_ctx* ctx, const coll_view* v, FILE* text, FILE* json) {
  df_coll_static st = v->record.stat;  /* its links' pointers point into daemon memory: the counters are read there */
  if (st.links.nchannels == 0) return; /* one participant */
  uint32_t n = st.nranks;
  int prev = v->ranks && v->nranks == (int)n ? v->ranks[(st.rank + n - 1) % n] : -1; /* world ranks */
  int next = v->ranks && v->nranks == (int)n ? v->ranks[(st.rank + 1) % n] : -1;
  if (json) fprintf(json, ",\"channels\":[");
  for (uint32_t c = 0; c < st.nchannels; c++) {
    df_coll_dynamic d;
    if (ctx->target->copy_out(ctx, &d, &ctx->args.dynamic[(size_t)c * DF_MAX_COLLS + (size_t)v->index], sizeof d) !=
        dfcclSuccess)
      break;
    df_plan plan;
    df_plan_init(&plan, &st, c);
    bool this_run = d.epoch == v->record.epoch; /* else the channel has not saved this run's context yet */
    unsigned long long iteration = this_run ? d.iteration : 0;
    unsigned step = this_run ? d.step : 0;
    if (text)
      fprintf(text, "%s channel %u: iteration %llu of %llu, step %u of %u", c ? "," : "", c, iteration,
              (unsigned long long)plan.iterations, step, plan.steps);
    if (json)
      fprintf(json, "%s{\"iteration\":%llu,\"iterations\":%llu,\"step\":%u,\"steps\":%u", c ? "," : "", iteration,
              (unsigned long long)plan.iterations, step, plan.steps);
    channel_counters k;
    if (read_counters(ctx, &st.links, c, &k)) write_counters(&k, prev, next, text, json);
    if (json) fputc('}', json);
  }
  if (json) fprintf(json, "]");
}

static void write_view(df_ctx* ctx, const coll_view* v, const df_coll_counters* counters, FILE* text, FILE* json,
                       bool first) {
  const df_coll* r = &v->record;
  const df_coll_static* st = &r->stat;
  bool known = st->kind < DF_COLL_NUM_KINDS;
  const char* kind = known ? kind_names[st->kind] : "none yet";
  const char* dtype = df_dtype_name((dfcclDataType_t)st->dtype);
  const char* op = df_op_name((dfcclRedOp_t)st->op);
  bool rooted = st->kind == DF_COLL_BROADCAST || st->kind == DF_COLL_REDUCE;
  bool reduces = st->kind == DF_COLL_ALL_REDUCE || st->kind == DF_COLL_REDUCE_SCATTER || st->kind == DF_COLL_REDUCE;
  int root = rooted && v->ranks && st->root >= 0 && st->root < v->nranks ? v->ranks[st->root] : -1; /* world rank */
  if (json) {
    fprintf(json,
            "%s\n{\"id\":%d,\"communicator_run\":%d,\"kind\":\"%s\",\"count\":%llu,\"dtype\":\"%s\",\"op\":\"%s\","
            "\"root\":%d,\"ranks\":[",
            first ? "" : ",", r->id, r->id < 0 && r->in_flight ? r->callback_id : -1, kind,
            (unsigned long long)st->count, dtype, op, root);
    for (int i = 0; i < v->nranks; i++) fprintf(json, "%s%d", i ? "," : "", v->ranks[i]);
    fprintf(json,
            "],\"submitted\":%u,\"completed\":%llu,\"pending\":%s,\"queued\":%d,\"waiting_ms\":%llu,"
            "\"preemptions\":%u",
            r->epoch, (unsigned long long)r->runs, r->in_flight ? "true" : "false", v->queued,
            (unsigned long long)v->waiting_ms, counters[v->index].preemptions);
  }
  if (text && r->in_flight) {
    fprintf(text, "dfccl-hang rank %d: collective %d (%s %llu x %s%s%s", ctx->rank, r->id, kind,
            (unsigned long long)st->count, dtype, reduces ? " " : "", reduces ? op : "");
    if (rooted) fprintf(text, ", root %d", root);
    fprintf(text, ") on ranks");
    for (int i = 0; i < v->nranks; i++) fprintf(text, "%s%d", i ? "," : " ", v->ranks[i]);
    if (r->id < 0) fprintf(text, " (communicator run %d)", r->callback_id);
    fprintf(text, ": run %u pending for %llu ms, %llu completed, %d queued behind it, %u preemptions;", r->epoch,
            (unsigned long long)v->waiting_ms, (unsigned long long)r->runs, v->queued, counters[v->index].preemptions);
  }
  if (r->in_flight) write_channels(ctx, v, text, json);
  if (text && r->in_flight) fputc('\n', text);
  if (json) fputc('}', json);
}

/* Copies what the report needs of every registered collective; the caller frees views[i].ranks. */
static int collect(df_ctx* ctx, coll_view** out, uint64_t now_us) {
  pthread_mutex_lock(&ctx->lock);
  coll_view* views = calloc((size_t)ctx->ncolls + 1, sizeof *views);
  int n = 0;
  for (int i = 0; views && i < ctx->ncolls; i++) {
    const df_coll* c = &ctx->colls[i];
    if (c->state != DF_COLL_READY || !c->group) continue;
    coll_view* v = &views[n];
    v->index = i;
    v->record = *c;
    v->nranks = c->group->nranks;
    v->ranks = malloc((size_t)v->nranks * sizeof *v->ranks);
    if (v->ranks) memcpy(v->ranks, c->group->ranks, (size_t)v->nranks * sizeof *v->ranks);
    else v->nranks = 0;
    v->waiting_ms = c->in_flight && now_us > c->submitted_us ? (now_us - c->submitted_us) / 1000 : 0;
    for (const df_comm_run* q = c->queued; q; q = q->next) v->queued++;
    n++;
  }
  pthread_mutex_unlock(&ctx->lock);
  *out = views;
  return views ? n : 0;
}

#define REPORT_PATH 4096

/* Opens <dir>/dfccl-hang-rank<R>.<ext>.tmp; `final` gets the name it is renamed to when complete.
 * NULL (errno set) when it cannot be made. */
static FILE* open_report(const char* dir, int rank, const char* ext, char tmp[REPORT_PATH + 8],
                         char final[REPORT_PATH]) {
  int n = snprintf(final, REPORT_PATH, "%s/dfccl-hang-rank%d.%s", dir, rank, ext);
  if (n < 0 || n >= REPORT_PATH) {
    errno = ENAMETOOLONG;
    return NULL;
  }
  snprintf(tmp, REPORT_PATH + 8, "%s.tmp", final);
  return fopen(tmp, "w");
}

dfcclResult_t df_hang_report_write(df_ctx* ctx, const char* reason) {
  uint64_t now_us = df_now_us();
  coll_view* views;
  int n = collect(ctx, &views, now_us);
  if (views == NULL) return df_error(dfcclOutOfResources, "out of memory for a hang report");
  df_coll_counters* counters = calloc(DF_MAX_COLLS, sizeof *counters);
  dfcclResult_t r = counters ? dfcclSuccess : df_error(dfcclOutOfResources, "out of memory for a hang report");
  if (r == dfcclSuccess)
    r = ctx->target->copy_out(ctx, counters, ctx->args.coll_counters, DF_MAX_COLLS * sizeof *counters);
  int pending = 0;
  for (int i = 0; i < n; i++) pending += views[i].record.in_flight;

  const char* dir = ctx->cfg.report_dir;
  char text_tmp[REPORT_PATH + 8], text_final[REPORT_PATH], json_tmp[REPORT_PATH + 8], json_final[REPORT_PATH];
  FILE* text = stderr;
  FILE* json = NULL;
  if (r == dfcclSuccess && dir) {
    text = open_report(dir, ctx->rank, "txt", text_tmp, text_final);
    json = open_report(dir, ctx->rank, "json", json_tmp, json_final);
    if (!text || !json)
      r = df_error(dfcclSystemError, "hang report: cannot write to DFCCL_REPORT_DIR=%s: %s", dir, strerror(errno));
  }
  if (r == dfcclSuccess) {
    fprintf(text, "dfccl-hang rank %d: report (%s): %d runs pending, %d collectives registered\n", ctx->rank, reason,
            pending, n);
    if (json)
      fprintf(json, "{\"rank\":%d,\"nranks\":%d,\"pid\":%d,\"reason\":\"%s\",\"time_ms\":%llu,\"collectives\":[",
              ctx->rank, ctx->nranks, (int)getpid(), reason, (unsigned long long)(now_us / 1000));
    for (int i = 0; i < n; i++) write_view(ctx, &views[i], counters, text, json, i == 0);
    if (json) fprintf(json, "\n]}\n");
    fflush(text);
  }
  if (dir) { /* complete reports replace the last ones; a failed one leaves nothing */
    if (text && text != stderr && (fclose(text) != 0 || r != dfcclSuccess || rename(text_tmp, text_final) != 0))
      unlink(text_tmp);
    if (json && (fclose(json) != 0 || r != dfcclSuccess || rename(json_tmp, json_final) != 0)) unlink(json_tmp);
    if (r == dfcclSuccess)
      fprintf(stderr, "dfccl-hang rank %d: %d runs pending; report in %s (%s)\n", ctx->rank, pending, json_final,
              reason);
  }
  for (int i = 0; i < n; i++) free(views[i].ranks);
  free(views);
  free(counters);
  return r;
}

/* ---- when ---- */

void df_hang_report_poll(df_ctx* ctx) {
  int seen = atomic_load(&signals_seen);
  if (seen != ctx->report_signals_seen) {
    ctx->report_signals_seen = seen;
    df_hang_report_write(ctx, "SIGUSR1");
  }
  uint64_t period_s = ctx->cfg.hang_report_s;
  if (period_s == 0 || atomic_load(&ctx->outstanding) == 0) return;
  uint64_t now = df_now_us(), period = period_s * 1000000ull;
  if (now - ctx->report_checked_us < 100000) return; /* look ten times a second */
  ctx->report_checked_us = now;
  if (ctx->report_written_us && now - ctx->report_written_us < period) return;
  uint64_t oldest = now;
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < ctx->ncolls; i++)
    if (ctx->colls[i].in_flight && ctx->colls[i].submitted_us < oldest) oldest = ctx->colls[i].submitted_us;
  pthread_mutex_unlock(&ctx->lock);
  if (now - oldest < period) return;
  char reason[64];
  snprintf(reason, sizeof reason, "a run pending for %.1f s", (double)(now - oldest) / 1e6);
  df_hang_report_write(ctx, reason);
  ctx->report_written_us = now;
}

dfcclResult_t dfcclWriteHangReport(dfcclRankCtx_t ctx) {
  DF_CHECK(df_ctx_check(ctx));
  return df_hang_report_write(ctx, "dfcclWriteHangReport");
}
