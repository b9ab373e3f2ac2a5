/*
 * A run reads its buffers as the calling thread's default streams leave them (DFCCL_STREAM_ORDER),
 * on one GPU with a context of one rank.  Each iteration queues, on a default stream, a host
 * function that sleeps -d ms and behind it the copy that fills the send buffer, then runs the
 * all-reduce at once, so the fill lands well after the call:
 *   - the result must be the fill, never the buffer's earlier contents;
 *   - with the streams opening the gate on the GPU (DFCCL_STREAM_GATE=1, the default) the call
 *     returns before the fill lands (the host neither waited nor asked) and dfcclStats_t.streamGates
 *     counts the run; with the host's gate (DFCCL_STREAM_GATE=0) the call returns only after the
 *     host waited;
 *   - a thread with no CUDA context runs the same collective on a buffer filled and synchronized
 *     beforehand: its run falls back to the host's gate (not counted), still exact.
 * Fills go to the legacy stream, the per-thread stream, or alternate (-s).  With DFCCL_STREAM_ORDER=0
 * (the twin) the runs read the earlier contents: "stale" is printed and the exit status is 1.
 *
 *   test_stream_gate [-i iterations] [-d delay_ms] [-s legacy|per-thread|both] [-n floats]
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h" /* test/common */
#include "dfccl.h"
#include "options.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void check(dfcclResult_t r, const char* what) {
  if (r != dfcclSuccess) {
    fprintf(stderr, "test_stream_gate: %s: %s\n", what, dfcclGetLastErrorMessage());
    exit(2);
  }
}

static void on_done(int id, dfcclResult_t status, void* arg) {
  (void)id;
  atomic_store((atomic_int*)arg, status == dfcclSuccess ? 1 : 2);
}

static void sleep_on_stream(void* ms) {
  long v = (long)(size_t)ms;
  nanosleep(&(struct timespec){.tv_sec = v / 1000, .tv_nsec = (v % 1000) * 1000000}, NULL);
}

typedef struct {
  dfcclRankCtx_t ctx;
  float *send, *recv;
  atomic_int done;
  dfcclResult_t submitted;
} run_args;

static void* run_without_context(void* p) {
  run_args* r = p;
  r->submitted = dfcclRunAllReduce(r->ctx, r->send, r->recv, 0, on_done, &r->done);
  return NULL;
}

/* The elements of recv that are not `want`, and the first of them. */
static size_t wrong_elements(const float* recv, size_t n, float want, float* host, float* first) {
  CHECK_CUDA(cudaMemcpy(host, recv, n * sizeof(float), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++)
    if (host[i] != want && wrong++ == 0) *first = host[i];
  return wrong;
}

static void wait_done(atomic_int* done) {
  while (atomic_load(done) == 0) continue;
  if (atomic_load(done) != 1) {
    fprintf(stderr, "test_stream_gate: a run failed\n");
    exit(2);
  }
}

int main(int argc, char** argv) {
  long iterations = 20, delay_ms = 20, n = 1 << 20;
  const char* streams = "both";
  options o =
      options_begin("test_stream_gate",
                    "usage: test_stream_gate [-i iterations] [-d delay_ms] [-s legacy|per-thread|both] [-n floats]",
                    argc, argv, "i:d:s:n:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 1 << 20);
    else if (opt == 'd') delay_ms = option_int(&o, 1, 10000);
    else if (opt == 'n') n = option_int(&o, 1, 1 << 28);
    else if (opt == 's') {
      streams = o.value;
      if (strcmp(streams, "legacy") && strcmp(streams, "per-thread") && strcmp(streams, "both"))
        options_fail(&o, "-s: expected legacy, per-thread or both, got '%s'", streams);
    }
  }
  if (dfcclDeviceCount() == 0) {
    puts("SKIP: no GPU");
    return 0;
  }
  const char* order_env = getenv("DFCCL_STREAM_ORDER");
  const char* gate_env = getenv("DFCCL_STREAM_GATE");
  bool ordered = !(order_env && strcmp(order_env, "0") == 0);
  bool on_gpu = ordered && !(gate_env && strcmp(gate_env, "0") == 0); /* on by default */
  size_t bytes = (size_t)n * sizeof(float);
  float *send, *recv, *fill, *host = malloc(bytes);
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMalloc((void**)&send, bytes));
  CHECK_CUDA(cudaMalloc((void**)&recv, bytes));
  CHECK_CUDA(cudaMallocHost((void**)&fill, bytes));
  if (!host) return 2;

  dfcclRankCtx_t ctx;
  dfcclInitArgs_t args = {.target = dfcclTargetCuda, .device = 0, .bootstrap = {.rank = 0, .nranks = 1}};
  check(dfcclInit(&ctx, &args), "dfcclInit");
  check(dfcclRegisterAllReduce(ctx, (size_t)n, dfcclFloat32, dfcclSum, 0, NULL, 0, 0), "dfcclRegisterAllReduce");

  long stale = 0, slow_returns = 0, fast_returns = 0;
  double call_ms_max = 0, call_ms_min = 1e30;
  dfcclStats_t before, after;
  for (long it = 0; it < iterations; it++) {
    bool legacy = strcmp(streams, "legacy") == 0 || (strcmp(streams, "both") == 0 && it % 2 == 0);
    cudaStream_t s = legacy ? cudaStreamLegacy : cudaStreamPerThread;
    float old = -1.0f - (float)it, want = (float)(it + 1);
    for (long i = 0; i < n; i++) host[i] = old, fill[i] = want;
    CHECK_CUDA(cudaMemcpy(send, host, bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(recv, 0, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());
    check(dfcclGetStats(ctx, &before), "dfcclGetStats");
    CHECK_CUDA(cudaLaunchHostFunc(s, sleep_on_stream, (void*)(size_t)delay_ms));
    CHECK_CUDA(cudaMemcpyAsync(send, fill, bytes, cudaMemcpyHostToDevice, s));
    atomic_int done = 0;
    double t0 = now_ms();
    check(dfcclRunAllReduce(ctx, send, recv, 0, on_done, &done), "dfcclRunAllReduce");
    double call_ms = now_ms() - t0;
    wait_done(&done);
    check(dfcclGetStats(ctx, &after), "dfcclGetStats");
    call_ms_max = call_ms > call_ms_max ? call_ms : call_ms_max;
    call_ms_min = call_ms < call_ms_min ? call_ms : call_ms_min;
    if (call_ms < (double)delay_ms / 2) fast_returns++;
    else slow_returns++;
    float first = 0;
    size_t wrong = wrong_elements(recv, (size_t)n, want, host, &first);
    if (wrong) {
      stale++;
      printf("iteration %ld (%s stream): stale: %zu of %ld elements wrong, first %g (want %g, earlier %g)\n", it,
             legacy ? "legacy" : "per-thread", wrong, n, first, want, old);
    }
    if (on_gpu && after.streamGates != before.streamGates + 1) {
      printf("iteration %ld: streamGates went from %llu to %llu, expected one more\n", it,
             (unsigned long long)before.streamGates, (unsigned long long)after.streamGates);
      stale++;
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
  }

  /* A thread without a CUDA context: its run cannot queue a write on streams it does not have. */
  float want = 7.0f;
  for (long i = 0; i < n; i++) fill[i] = want;
  CHECK_CUDA(cudaMemcpy(send, fill, bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(recv, 0, bytes));
  CHECK_CUDA(cudaDeviceSynchronize());
  check(dfcclGetStats(ctx, &before), "dfcclGetStats");
  run_args r = {.ctx = ctx, .send = send, .recv = recv};
  pthread_t thread;
  if (pthread_create(&thread, NULL, run_without_context, &r) != 0 || pthread_join(thread, NULL) != 0) return 2;
  check(r.submitted, "dfcclRunAllReduce from a thread without a CUDA context");
  wait_done(&r.done);
  check(dfcclGetStats(ctx, &after), "dfcclGetStats");
  float first = 0;
  size_t wrong = wrong_elements(recv, (size_t)n, want, host, &first);
  bool thread_ok = wrong == 0 && after.streamGates == before.streamGates;
  printf("thread without a CUDA context: %zu wrong elements, streamGates %+lld (0 expected): %s\n", wrong,
         (long long)(after.streamGates - before.streamGates), thread_ok ? "ok" : "WRONG");

  check(dfcclDestroy(ctx), "dfcclDestroy");
  printf("%ld iterations of %ld floats, fills %d ms late on the %s stream(s): %ld stale; dfcclRun took %.3f-%.3f ms "
         "(%ld returned before the fill, %ld after)\n",
         iterations, n, (int)delay_ms, streams, stale, call_ms_min, call_ms_max, fast_returns, slow_returns);
  /* The gate on the GPU must not make the host wait; the host's gate must (it waits for the fill). */
  bool returns_ok = !ordered || (on_gpu ? slow_returns == 0 : fast_returns == 0);
  if (!returns_ok)
    printf("dfcclRun %s the fill: expected the %s\n", on_gpu ? "waited for" : "did not wait for",
           on_gpu ? "gate on the GPU to leave the host free" : "host to wait");
  bool pass = stale == 0 && thread_ok && returns_ok;
  printf("%s\n", pass ? "PASS" : ordered ? "FAIL" : "stale inputs seen (twin: expected without the ordering)");
  cudaFree(send);
  cudaFree(recv);
  cudaFreeHost(fill);
  free(host);
  return pass ? 0 : 1;
}
