/*
 * Runs submitted to a communicator that is still being made (dfcclCommCreateStart): held in call
 * order, then submitted in that order by the test that sees the creation end -- or, if it failed,
 * ended through their callbacks with dfcclCreationFailed.
 *
 * A held run is checked where it is submitted, as any run is (its descriptor against the
 * communicator's ranks, its buffers), so that a bad argument is refused to its caller, and the
 * caller's work on its buffers is waited for there: the run is published later, by whichever
 * thread tests the creation, whose default streams are not the caller's.  It keeps a copy of its
 * descriptor and of a v kind's arrays, which dfcclSubmit reads during the call only.  The held runs
 * are the communicator's first, so a run's place in the line is the number it takes when it is
 * submitted (its callback's collId).
 *
 * Order: until the line is empty and the communicator READY, every submission joins the end of the
 * line -- also while the tester submits what it took from it (PUBLISHING) -- so no run overtakes
 * one submitted before it.  While the communicator is not READY only the tester submits, so the
 * one-submitter rule of df_comm_submit holds.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct df_held_run {
  struct df_held_run* next;
  dfcclSubmission_t run; /* run.desc is &desc */
  dfcclCollDesc_t desc;  /* its counts and displs point into arrays */
  uint64_t number;       /* its place in the line */
  size_t arrays[];       /* a v kind's counts (nranks), then all-gather-v's displs (nranks) */
} df_held_run;

static int callback_id(uint64_t number) { return (int)(number & INT_MAX); }

/* A copy of a checked submission that outlives the call; NULL when out of memory. */
static df_held_run* copy_run(const struct dfcclComm* c, const dfcclSubmission_t* s, uint64_t number) {
  const dfcclCollDesc_t* d = s->desc;
  size_t n = (size_t)c->nranks;
  bool counts = d->kind == dfcclAllGatherV || d->kind == dfcclReduceScatterV; /* checked: not NULL */
  bool displs = d->kind == dfcclAllGatherV && d->displs != NULL;              /* reduce-scatter-v's are not asked for */
  size_t arrays = (counts ? n : 0) + (displs ? n : 0);
  df_held_run* h = malloc(sizeof *h + arrays * sizeof h->arrays[0]);
  if (h == NULL) return NULL;
  h->next = NULL;
  h->desc = *d;
  h->desc.counts = h->desc.displs = NULL; /* what the kind ignores stays out */
  if (counts) h->desc.counts = memcpy(h->arrays, d->counts, n * sizeof h->arrays[0]);
  if (displs) h->desc.displs = memcpy(h->arrays + n, d->displs, n * sizeof h->arrays[0]);
  h->run = *s;
  h->run.desc = &h->desc;
  h->number = number;
  return h;
}

/* Each run of the line ends with `error` through its callback. */
static void end_line(df_held_run* line, dfcclResult_t error) {
  while (line != NULL) {
    df_held_run* h = line;
    line = h->next;
    if (h->run.callback) h->run.callback(callback_id(h->number), error, h->run.callbackArg);
    free(h);
  }
}

static void free_line(df_held_run* line) {
  while (line != NULL) {
    df_held_run* h = line;
    line = h->next;
    free(h);
  }
}

static dfcclResult_t refuse_after_failure(struct dfcclComm* c) {
  char why[sizeof c->failure_message];
  pthread_mutex_lock(&c->ctx->lock);
  dfcclResult_t failure = c->failure;
  snprintf(why, sizeof why, "%s", c->failure_message);
  pthread_mutex_unlock(&c->ctx->lock);
  return df_error(dfcclCreationFailed, "dfcclSubmit: the communicator's creation failed: %s (%s)",
                  dfcclGetErrorString(failure), why);
}

dfcclResult_t df_comm_hold(struct dfcclComm* c, const dfcclSubmission_t* runs, int n) {
  df_ctx* ctx = c->ctx;
  pthread_mutex_lock(&ctx->lock);
  uint64_t first = c->nheld;
  df_comm_stage stage = c->stage;
  pthread_mutex_unlock(&ctx->lock);
  if (stage == DF_COMM_FAILED) return refuse_after_failure(c);

  /* Checked and copied, all of them before any is held: one refused run refuses the batch. */
  df_held_run *line = NULL, **end = &line;
  dfcclResult_t r = dfcclSuccess;
  for (int i = 0; i < n && r == dfcclSuccess; i++) {
    r = df_comm_check_held(c, &runs[i], first + (uint64_t)i, i == 0); /* one wait orders the batch */
    if (r == dfcclSuccess && (*end = copy_run(c, &runs[i], first + (uint64_t)i)) == NULL)
      r = df_error(dfcclOutOfResources, "out of memory");
    if (r == dfcclSuccess) end = &(*end)->next;
    else if (n > 1) {
      char why[512];
      snprintf(why, sizeof why, "%s", dfcclGetLastErrorMessage());
      df_error(r, "dfcclSubmitBatch: run %d of %d: %s", i, n, why);
    }
  }
  if (r != dfcclSuccess) {
    free_line(line);
    return r;
  }

  pthread_mutex_lock(&ctx->lock);
  stage = c->stage;
  bool hold = (stage == DF_COMM_CREATING || stage == DF_COMM_PUBLISHING) && c->nheld == first;
  if (hold) {
    if (c->held_last) c->held_last->next = line;
    else c->held = line;
    for (df_held_run* h = line; h != NULL; h = h->next) c->held_last = h;
    c->nheld += (uint64_t)n;
  }
  pthread_mutex_unlock(&ctx->lock);
  if (hold) return dfcclSuccess;
  free_line(line);
  /* Made meanwhile, and every held run submitted: these follow them (their buffers are waited for). */
  if (stage == DF_COMM_READY) return df_comm_submit(c, runs, n, true);
  if (stage == DF_COMM_FAILED) return refuse_after_failure(c);
  return df_error(dfcclInvalidArgument,
                  "dfcclSubmit: the communicator took another run while run %llu was submitted (submit from one "
                  "thread at a time, in the same order on every rank)",
                  (unsigned long long)first);
}

/* The runs taken from the line go to the daemon as one batch: a batch refused (nothing was
 * submitted) ends each of them with that error, as the run after a failed one would. */
static void submit_line(struct dfcclComm* c, df_held_run* line) {
  int n = 0;
  for (df_held_run* h = line; h != NULL; h = h->next) n++;
  dfcclSubmission_t* runs = calloc((size_t)n, sizeof *runs);
  dfcclResult_t r = dfcclOutOfResources;
  if (runs != NULL) {
    int i = 0;
    for (df_held_run* h = line; h != NULL; h = h->next) runs[i++] = h->run;
    r = df_comm_submit(c, runs, n, true);
    free(runs);
  }
  if (r == dfcclSuccess) {
    free_line(line);
    return;
  }
  if (runs == NULL) df_error(r, "out of memory for the %d runs held while the communicator was made", n);
  fprintf(stderr, "dfccl: rank %d: the %d runs held while a communicator was made fail: %s (%s)\n", c->ctx->rank, n,
          dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  end_line(line, r);
}

void df_comm_publish_held(struct dfcclComm* c) {
  df_ctx* ctx = c->ctx;
  for (;;) {
    pthread_mutex_lock(&ctx->lock);
    df_held_run* line = c->held;
    c->held = c->held_last = NULL;
    if (line == NULL) c->stage = DF_COMM_READY; /* from now on runs are submitted as they come */
    pthread_mutex_unlock(&ctx->lock);
    if (line == NULL) return;
    submit_line(c, line);
  }
}

void df_comm_fail_held(struct dfcclComm* c, dfcclResult_t error) {
  pthread_mutex_lock(&c->ctx->lock);
  df_held_run* line = c->held;
  c->held = c->held_last = NULL;
  pthread_mutex_unlock(&c->ctx->lock);
  end_line(line, error);
}
