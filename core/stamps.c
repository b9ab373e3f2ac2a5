/*
 * Per-run time stamps on the host, and the report (a diagnostic build: ./configure --enable-stamps;
 * the daemon's side is kernel/stamps.h).  Without DF_STAMPS this file is empty and internal.h
 * makes every stamp a no-op.
 *
 * The report gives medians, in microseconds, between consecutive points of each run: the daemon's
 * on the daemon's clock, the host's on the host's, and the two crossings between them -- SQE
 * written to SQE seen, CQE written to CQE taken -- whose sum needs no common clock (the host's
 * time from publication to completion less the daemon's from seen to CQE).  Each crossing alone
 * is printed too, but it means something only where the GPU's global timer follows the host's
 * realtime clock (it usually does, to within a microsecond or two; the host target shares the
 * monotonic clock outright).
 *
 * With DFCCL_TRACE_FILE set, block 0's event trace (kernel/stamps.h) is kept as well and written to
 * DFCCL_TRACE_FILE.RANK when the context is destroyed: a header line, then "t event coll epoch arg
 * arg2" an event, t in ns on the daemon's clock.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifdef DF_STAMPS

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

typedef struct {
  uint64_t key; /* df_stamp_key; 0: none */
  uint64_t t[DF_HOST_STAMP_POINTS];
} host_record;

struct df_host_stamps {
  host_record records[DF_STAMP_RUNS];
};

static const char* const daemon_names[DF_STAMP_DAEMON_POINTS] = {
    "seen", "taken", "fetched", "round", "run", "context", "gate", "sent", "received", "executed", "complete", "cqe"};
static const char* const host_names[DF_HOST_STAMP_POINTS] = {"call",      "publish",    "published",
                                                             "gate open", "completion", "callback done"};

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Thread_local uint64_t call_ns; /* when this thread's current submitting call began */

void df_stamp_call(void) { call_ns = monotonic_ns(); }

void df_host_stamp(df_ctx* ctx, uint32_t coll, uint32_t epoch, df_host_stamp_point point) {
  if (!ctx->stamps) return;
  host_record* r = &ctx->stamps->records[df_stamp_slot(coll, epoch)];
  uint64_t key = df_stamp_key(coll, epoch);
  uint64_t now = monotonic_ns();
  if (point == DF_HOST_STAMP_PUBLISH) { /* before the SQE exists: no other thread stamps the run yet */
    __atomic_store_n(&r->key, key, __ATOMIC_RELAXED);
    for (int p = 0; p < DF_HOST_STAMP_POINTS; p++) __atomic_store_n(&r->t[p], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->t[DF_HOST_STAMP_CALL], call_ns, __ATOMIC_RELAXED);
  } else if (__atomic_load_n(&r->key, __ATOMIC_RELAXED) != key) {
    return;
  }
  __atomic_store_n(&r->t[point], now, __ATOMIC_RELAXED);
}

/* The event trace's buffers in daemon memory, zeroed (as every target's alloc leaves them). */
static dfcclResult_t trace_open(df_ctx* ctx) {
  const char* file = getenv("DFCCL_TRACE_FILE");
  if (file == NULL || *file == '\0') return dfcclSuccess;
  void* events = NULL;
  void* count = NULL;
  dfcclResult_t r = ctx->target->alloc(ctx, DF_TRACE_EVENTS * sizeof(df_trace_event), &events);
  if (r != dfcclSuccess) return r;
  r = ctx->target->alloc(ctx, sizeof(uint64_t), &count);
  if (r != dfcclSuccess) {
    ctx->target->free(ctx, events);
    return r;
  }
  ctx->args.trace = events;
  ctx->args.trace_count = count;
  return dfcclSuccess;
}

static const char* const event_names[DF_EVENTS] = {"round",    "taken", "run",     "gate-shut", "gate", "sent",
                                                   "received", "leave", "give-up", "executed",  "cqe"};

/* Writes the ring's events, oldest first, to DFCCL_TRACE_FILE.RANK. */
static void trace_write(df_ctx* ctx) {
  const char* file = getenv("DFCCL_TRACE_FILE");
  uint64_t count = 0;
  df_trace_event* events = malloc(DF_TRACE_EVENTS * sizeof *events);
  if (!events || ctx->target->copy_out(ctx, &count, ctx->args.trace_count, sizeof count) != dfcclSuccess ||
      ctx->target->copy_out(ctx, events, ctx->args.trace, DF_TRACE_EVENTS * sizeof *events) != dfcclSuccess) {
    fprintf(stderr, "dfccl: rank %d: the event trace could not be read back\n", ctx->rank);
    free(events);
    return;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", file, ctx->rank);
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "dfccl: rank %d: cannot write the event trace to %s\n", ctx->rank, path);
    free(events);
    return;
  }
  uint64_t first = count > DF_TRACE_EVENTS ? count - DF_TRACE_EVENTS : 0;
  fprintf(f, "# dfccl event trace: rank %d, %llu events (%llu lost to the ring); t event coll epoch arg arg2\n",
          ctx->rank, (unsigned long long)count, (unsigned long long)first);
  for (uint64_t i = first; i < count; i++) {
    const df_trace_event* e = &events[i % DF_TRACE_EVENTS];
    const char* name = e->event < DF_EVENTS ? event_names[e->event] : "?";
    fprintf(f, "%llu %s %u %u %u %llu\n", (unsigned long long)e->t, name, e->coll, e->epoch, e->arg,
            (unsigned long long)e->arg2);
  }
  if (fclose(f) != 0) fprintf(stderr, "dfccl: rank %d: writing the event trace to %s failed\n", ctx->rank, path);
  free(events);
}

dfcclResult_t df_stamps_open(df_ctx* ctx) {
  ctx->stamps = calloc(1, sizeof *ctx->stamps);
  if (!ctx->stamps) return df_error(dfcclSystemError, "out of host memory for the stamps");
  void* daemon = NULL; /* zeroed, as every target's alloc leaves it */
  dfcclResult_t r = ctx->target->alloc(ctx, DF_STAMP_RUNS * sizeof(df_stamp_record), &daemon);
  if (r == dfcclSuccess) r = trace_open(ctx);
  if (r != dfcclSuccess) {
    if (daemon) ctx->target->free(ctx, daemon);
    free(ctx->stamps);
    ctx->stamps = NULL;
    return r;
  }
  ctx->args.stamps = daemon;
  return dfcclSuccess;
}

static int by_value(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

/* A list of intervals (ns) and its median. */
typedef struct {
  uint64_t* v;
  size_t n;
} intervals;

static void add(intervals* s, uint64_t from, uint64_t to) {
  if (from != 0 && to >= from) s->v[s->n++] = to - from;
}

static double median_us(intervals* s) {
  if (s->n == 0) return 0;
  qsort(s->v, s->n, sizeof *s->v, by_value);
  return (double)s->v[s->n / 2] / 1000.0;
}

/* Prints "from > to median" when at least one run has both points (n: of how many, when not all). */
static void print_interval(FILE* f, const char* from, const char* to, intervals* s, size_t runs, bool* first) {
  if (s->n == 0) return;
  fprintf(f, "%s%s > %s %.2f", *first ? "" : " | ", from, to, median_us(s));
  if (s->n != runs) fprintf(f, " (%zu runs)", s->n);
  *first = false;
}

typedef struct {
  const df_stamp_record* d;
  const host_record* h;
} run_stamps;

static int by_seen(const void* a, const void* b) {
  const run_stamps *x = a, *y = b;
  return by_value(&x->d->t[DF_STAMP_SEEN], &y->d->t[DF_STAMP_SEEN]);
}

/* The intervals the report gives, each a list over the runs. */
typedef struct {
  intervals daemon[DF_STAMP_DAEMON_POINTS][DF_STAMP_DAEMON_POINTS]; /* [q][p]: point q to the run's next one, p */
  intervals host[DF_HOST_STAMP_POINTS];                             /* [p]: host point p-1 to p */
  intervals seen_to_cqe, cqe_to_next_seen, call_to_completion, callback_to_next_call;
  intervals crossings, sqe_crossing, cqe_crossing;     /* both (any clocks); each alone (common clock) */
  intervals look_apart, look_trip, cqe_to_next_looked; /* block 0's looks at the host's SQ */
} report_intervals;

static void report(df_ctx* ctx, const df_stamp_record* daemon) {
  enum { LISTS = sizeof(report_intervals) / sizeof(intervals) };
  run_stamps* runs = calloc(DF_STAMP_RUNS, sizeof *runs);
  report_intervals* s = calloc(1, sizeof *s);
  uint64_t* pool = calloc((size_t)LISTS * DF_STAMP_RUNS, sizeof *pool);
  if (!runs || !s || !pool) goto out;
  intervals* lists = (intervals*)s;
  for (size_t i = 0; i < LISTS; i++) lists[i].v = pool + i * DF_STAMP_RUNS;
  /* Complete runs: seen and CQE on the daemon, published and completion on the host. */
  size_t n = 0;
  for (uint32_t i = 0; i < DF_STAMP_RUNS; i++) {
    const df_stamp_record* d = &daemon[i];
    const host_record* h = &ctx->stamps->records[i];
    if (d->key == 0 || d->key != h->key || !d->t[DF_STAMP_SEEN] || !d->t[DF_STAMP_CQE] ||
        !h->t[DF_HOST_STAMP_PUBLISHED] || !h->t[DF_HOST_STAMP_COMPLETION])
      continue;
    runs[n++] = (run_stamps){d, h};
  }
  if (n == 0) goto out;
  qsort(runs, n, sizeof *runs, by_seen);
  /* The host's monotonic stamps on the daemon's clock: the GPU's global timer is realtime-like. */
  struct timespec rt, mono;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  uint64_t to_daemon_clock =
      ctx->cfg.target == dfcclTargetCuda
          ? (uint64_t)(((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll + (rt.tv_nsec - mono.tv_nsec))
          : 0;
  for (size_t i = 0; i < n; i++) {
    const df_stamp_record* d = runs[i].d;
    const host_record* h = runs[i].h;
    for (int p = 1, q = 0; p < DF_STAMP_DAEMON_POINTS; p++) { /* each point from the last one the run had */
      if (!d->t[p]) continue;
      add(&s->daemon[q][p], d->t[q], d->t[p]);
      q = p;
    }
    for (int p = 1; p < DF_HOST_STAMP_POINTS; p++) add(&s->host[p], h->t[p - 1], h->t[p]);
    add(&s->call_to_completion, h->t[DF_HOST_STAMP_CALL], h->t[DF_HOST_STAMP_COMPLETION]);
    add(&s->seen_to_cqe, d->t[DF_STAMP_SEEN], d->t[DF_STAMP_CQE]);
    /* The host's time from publication to completion less the daemon's from seen to CQE. */
    add(&s->crossings, d->t[DF_STAMP_CQE] - d->t[DF_STAMP_SEEN],
        h->t[DF_HOST_STAMP_COMPLETION] - h->t[DF_HOST_STAMP_PUBLISHED]);
    add(&s->sqe_crossing, h->t[DF_HOST_STAMP_PUBLISHED] + to_daemon_clock, d->t[DF_STAMP_SEEN]);
    add(&s->cqe_crossing, d->t[DF_STAMP_CQE], h->t[DF_HOST_STAMP_COMPLETION] + to_daemon_clock);
    add(&s->look_apart, d->looked_before, d->looked);
    add(&s->look_trip, d->looked, d->t[DF_STAMP_SEEN]);
    if (i + 1 < n) {
      add(&s->cqe_to_next_seen, d->t[DF_STAMP_CQE], runs[i + 1].d->t[DF_STAMP_SEEN]);
      add(&s->cqe_to_next_looked, d->t[DF_STAMP_CQE], runs[i + 1].d->looked);
      add(&s->callback_to_next_call, h->t[DF_HOST_STAMP_CALLBACK_DONE], runs[i + 1].h->t[DF_HOST_STAMP_CALL]);
    }
  }
  /* Every line names its rank: mpirun interleaves the ranks' output by lines, even of one write. */
  char* text = NULL;
  size_t text_bytes = 0;
  FILE* f = open_memstream(&text, &text_bytes);
  if (!f) goto out;
  bool first = true;
  fprintf(f, "dfccl: rank %d: stamps of %zu runs (block 0's), medians in us\ndfccl: rank %d: daemon: ", ctx->rank, n,
          ctx->rank);
  for (int p = 1; p < DF_STAMP_DAEMON_POINTS; p++)
    for (int q = 0; q < p; q++) print_interval(f, daemon_names[q], daemon_names[p], &s->daemon[q][p], n, &first);
  first = true;
  fprintf(f, "\ndfccl: rank %d: daemon: ", ctx->rank);
  print_interval(f, "seen", "cqe", &s->seen_to_cqe, n, &first);
  print_interval(f, "cqe", "next seen", &s->cqe_to_next_seen, n - 1, &first);
  /* The look that found a run's entry began at "looked", the one before at "look before": the
   * entry became visible to the GPU between the two looks' reads, so published > seen lies between
   * the look's trip and the two looks' distance plus it. */
  first = true;
  fprintf(f, "\ndfccl: rank %d: looks: ", ctx->rank);
  print_interval(f, "look before", "looked", &s->look_apart, n, &first);
  print_interval(f, "looked", "seen", &s->look_trip, n, &first);
  print_interval(f, "cqe", "next looked", &s->cqe_to_next_looked, n - 1, &first);
  first = true;
  fprintf(f, "\ndfccl: rank %d: host: ", ctx->rank);
  for (int p = 1; p < DF_HOST_STAMP_POINTS; p++)
    print_interval(f, host_names[p - 1], host_names[p], &s->host[p], n, &first);
  print_interval(f, "call", "completion", &s->call_to_completion, n, &first);
  print_interval(f, "callback done", "next call", &s->callback_to_next_call, n - 1, &first);
  first = true;
  fprintf(f, "\ndfccl: rank %d: across: ", ctx->rank);
  print_interval(f, "published > seen + cqe", "completion (bus and polls, any clocks)", &s->crossings, n, &first);
  print_interval(f, "published", "seen", &s->sqe_crossing, n, &first);
  print_interval(f, "cqe", "completion", &s->cqe_crossing, n, &first);
  fprintf(f, "\n");
  fclose(f);
  fputs(text, stdout);
  fflush(stdout);
  free(text);
out:
  free(pool);
  free(s);
  free(runs);
}

void df_stamps_close(df_ctx* ctx) {
  if (!ctx->stamps) return;
  df_stamp_record* daemon = malloc(DF_STAMP_RUNS * sizeof *daemon);
  if (daemon && ctx->args.stamps &&
      ctx->target->copy_out(ctx, daemon, ctx->args.stamps, DF_STAMP_RUNS * sizeof *daemon) == dfcclSuccess)
    report(ctx, daemon);
  free(daemon);
  if (ctx->args.trace) {
    trace_write(ctx);
    ctx->target->free(ctx, ctx->args.trace);
    ctx->target->free(ctx, ctx->args.trace_count);
    ctx->args.trace = NULL;
    ctx->args.trace_count = NULL;
  }
  if (ctx->args.stamps) ctx->target->free(ctx, ctx->args.stamps);
  ctx->args.stamps = NULL;
  free(ctx->stamps);
  ctx->stamps = NULL;
}

#endif /* DF_STAMPS */
