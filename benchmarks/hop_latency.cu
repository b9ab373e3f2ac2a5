/*
 * hop_latency: what one hop of a ring costs with the daemon's own primitives, on the GPUs of this
 * machine (one process, peer access between ring neighbours) -- the floor under DFCCL's small-message
 * latency (issue 15).  A small all-reduce on n ranks is 2(n-1) hops in a chain, an all-gather n-1,
 * so the growth of a collective's time with n, beside this figure, tells how much of it is the
 * hops and how much the rest of a run (SQ, scheduling, CQ, the host).
 *
 * Build:  `make` builds it as benchmarks/hop_latency where configure found nvcc.
 * Run:    ./hop_latency [-g GPUS] [-r ROUNDS] [-w WARMUP]     (GPUS >= 2; default all of them)
 *
 * What is timed: a token goes around the ring of GPUs 0 -> 1 -> ... -> N-1 -> 0, `rounds` times
 * after `warmup` untimed rounds; GPU 0 reads %globaltimer before the first timed round and after
 * the last, and the time per hop is that over rounds x N.  One block of 512 threads per GPU (the
 * daemon's block size), its connectors laid out as the daemon's (core/kernel/daemon.h: FIFO and
 * tail in the receiver's memory, head in the sender's).  Modes:
 *   flag      the hardware floor of the protocol: the leader thread stores the round number into
 *             the successor's memory (st.release.sys) and polls its own word (ld.acquire.sys);
 *             no data, no barrier
 *   prim B    a token of B bytes with the daemon's primitives (primitives.h): GPU 0 df_copy_send
 *             then df_recv, the others df_recv_copy_send -- the leader's wait, the tag check, the
 *             block barriers, all threads' copy into the successor's FIFO, the leader's posts
 * Rounds alternate between two tokens; in the warm-up rounds and the last one every GPU checks
 * what landed (a wrong or stale element: exit status 1).  A run that does not end within 60 s is a
 * hang (exit status 1, the kernels end with the process).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <time.h>
#include <vector>

#include "collectives.h" /* the primitives and the daemon's types */
#include "cuda_check.h"
#include "daemon_launch.h" /* DF_CUDA_THREADS */
#include "options.h"       /* test/common: options_begin, option_int */

enum Mode { MODE_FLAG = 0, MODE_PRIM = 1 };

/* One GPU's part of the ring; every pointer is this GPU's device memory or, where it says so, its
 * neighbour's (reachable through peer access and unified addressing). */
struct Hop {
  df_daemon_args* args;         /* spin policy and the error words df_wait_ready looks at      */
  df_links* links;              /* this GPU's connectors: to its successor, from its predecessor */
  volatile uint64_t* flag_next; /* flag mode: the successor's word                              */
  volatile uint64_t* flag_mine; /* flag mode: this GPU's word                                   */
  const float* src;             /* GPU 0: the two tokens, `stride` elements apart               */
  float* dst;                   /* where the token lands here                                   */
  unsigned long long* errors;   /* [0] wrong elements seen on this GPU                          */
  unsigned long long* ns;       /* GPU 0: [0] time of the timed rounds                          */
  uint32_t rank, nranks, rounds, warmup, mode, nelem, stride;
};

/* The token of round `round`: what GPU 0 sends, and what every GPU must receive. */
__host__ __device__ inline float token_value(uint32_t round, uint32_t i) { return (float)((round * 131u + i) % 8191u); }

__global__ void hop_kernel(Hop h) {
  __shared__ df_block_shared sh;
  const df_block blk = {(int)threadIdx.x, (int)blockDim.x, 0, 1};
  const bool leader = df_is_leader(&blk);
  const uint32_t total = h.warmup + h.rounds;
  uint64_t start = 0;

  if (h.mode == MODE_FLAG) {
    if (!leader) return;
    for (uint32_t round = 1; round <= total; round++) {
      if (h.rank == 0 && round == h.warmup + 1) start = df_time_ns();
      if (h.rank == 0) df_store_release_u64(h.flag_next, round);
      while (df_load_acquire_u64(h.flag_mine) < round) {
      }
      if (h.rank != 0) df_store_release_u64(h.flag_next, round);
    }
    if (h.rank == 0) h.ns[0] = df_time_ns() - start;
    return;
  }

  /* A run of a one-channel all-gather-like collective, as the scheduler would have loaded it. */
  df_context_slot* slot = &sh.slots[0];
  if (leader) {
    memset(slot, 0, sizeof *slot);
    slot->stat.kind = DF_COLL_ALL_GATHER;
    slot->stat.dtype = dfcclFloat32;
    slot->stat.op = dfcclSum;
    slot->stat.nranks = h.nranks;
    slot->stat.rank = h.rank;
    slot->stat.nchannels = 1;
    slot->stat.root = -1;
    slot->stat.count = h.nelem;
    slot->stat.links = *h.links; /* the connectors as a context slot holds them */
    slot->dyn.epoch = 1;         /* not the 0 of timed_out[0]: no run here has timed out */
    slot->coll = 0;
    slot->tag = 1; /* every GPU's run carries the same tag, as a run agreed on by all would */
    sh.current = 0;
    sh.error_look_ns = 0;
  }
  df_block_sync();
  df_run run;
  run.args = h.args;
  run.blk = &blk;
  run.sh = &sh;
  run.ctx = slot;
  run.threshold = 1000;
  run.progressed = false;
  run.timesliced = false;
  run.error = DF_RUN_OK;
  run.ahead = 0;
  unsigned long long wrong = 0;
  for (uint32_t round = 0; round < total; round++) {
    if (h.rank == 0 && leader && round == h.warmup) start = df_time_ns();
    df_prim_result r;
    if (h.rank == 0) {
      r = df_copy_send(&run, h.src + (size_t)(round % 2) * h.stride, h.dst, h.nelem);
      if (r == DF_PRIM_DONE) r = df_recv(&run, h.dst, h.nelem);
    } else {
      r = df_recv_copy_send(&run, h.dst, h.nelem);
    }
    if (r != DF_PRIM_DONE) { /* cannot happen without preemption (args->spin.preemption = 0) */
      if (leader) atomicAdd(h.errors, 1ull << 40);
      return;
    }
    /* Rounds alternate between two tokens: a stale one would show.  Checked in the warm-up and the
     * last round only, so that the timed rounds are hops alone. */
    if (round < h.warmup || round + 1 == total) {
      for (uint32_t i = (uint32_t)blk.tid; i < h.nelem; i += (uint32_t)blk.nthreads)
        if (h.dst[i] != token_value(round % 2, i)) wrong++;
      df_block_sync(); /* every thread checked dst before the next round overwrites it */
    }
  }
  if (h.rank == 0 && leader) h.ns[0] = df_time_ns() - start;
  if (wrong) atomicAdd(h.errors, wrong);
}

/* ---------------------------------------------------------------- host */

struct Options {
  int gpus = 0; /* 0: all */
  uint32_t rounds = 20000;
  uint32_t warmup = 1000;
};

/* The project's strict options (test/common/options.h): a bad value ends the program, naming it. */
static Options parse(int argc, char** argv) {
  Options o;
  options op = options_begin("hop_latency", "usage: hop_latency [-g GPUS (>= 2)] [-r ROUNDS (>= 100)] [-w WARMUP]",
                             argc, argv, "g:r:w:");
  for (int opt; (opt = options_next(&op)) != -1;) {
    if (opt == 'g') o.gpus = option_int(&op, 2, 1024);
    else if (opt == 'r') o.rounds = (uint32_t)option_int(&op, 100, 1 << 24);
    else if (opt == 'w') o.warmup = (uint32_t)option_int(&op, 0, 1 << 24);
  }
  return o;
}

/* One GPU's memory for the ring. */
struct Gpu {
  df_recv_ctrl* recv_ctrl;  /* written by the predecessor */
  df_send_ctrl* send_ctrl;  /* written by the successor   */
  char* fifo;               /* written by the predecessor */
  uint64_t* counters;       /* [0] sent, [1] consumed     */
  df_connector* connectors; /* [0] to_next, [1] from_prev */
  df_links* links;
  df_daemon_args* args;
  uint32_t* error_words; /* run_errors and timed_out, [DF_MAX_COLLS] each */
  uint64_t* flag;
  float* src; /* [2 * max elements]: the two tokens */
  float* dst;
  unsigned long long* results; /* [0] errors, [1] ns */
  cudaStream_t stream;
};

static void enable_peer(int from, int to) {
  int can = 0;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) {
    fprintf(stderr, "hop_latency: GPU %d cannot access GPU %d (no peer access): not a ring of peers\n", from, to);
    exit(2);
  }
  CHECK_CUDA(cudaSetDevice(from));
  cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
  else CHECK_CUDA(e);
}

/* Waits for GPU `i`'s kernel; a ring whose token never comes back ends the program (the kernels
 * with it) rather than the machine's time. */
static void wait_or_die(int i, cudaStream_t stream, uint32_t mode, uint32_t bytes) {
  CHECK_CUDA(cudaSetDevice(i));
  struct timespec start, now, pause = {0, 100000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) CHECK_CUDA(e);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 60) {
      fprintf(stderr, "hop_latency: %s %u B: GPU %d's kernel has not ended after 60 s: the ring hangs\n",
              mode == MODE_FLAG ? "flag" : "prim", bytes, i);
      exit(1);
    }
    nanosleep(&pause, nullptr);
  }
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  const int n = o.gpus ? o.gpus : count;
  if (n < 2 || n > count) {
    fprintf(stderr, "hop_latency: needs 2 or more GPUs (asked for %d, this machine has %d)\n", n, count);
    return 2;
  }
  const std::vector<uint32_t> sizes = {16, 256, 4096, 65536}; /* bytes per hop */
  const uint32_t max_bytes = 65536, max_elems = max_bytes / 4;

  std::vector<Gpu> g(n);
  for (int i = 0; i < n; i++) {
    enable_peer(i, (i + 1) % n);
    enable_peer(i, (i + n - 1) % n);
    CHECK_CUDA(cudaSetDevice(i));
    CHECK_CUDA(cudaStreamCreateWithFlags(&g[i].stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&g[i].recv_ctrl, sizeof(df_recv_ctrl)));
    CHECK_CUDA(cudaMalloc(&g[i].send_ctrl, sizeof(df_send_ctrl)));
    CHECK_CUDA(cudaMalloc(&g[i].fifo, (size_t)DF_FIFO_STEPS * max_bytes));
    CHECK_CUDA(cudaMalloc(&g[i].counters, 2 * sizeof(uint64_t)));
    CHECK_CUDA(cudaMalloc(&g[i].connectors, 2 * sizeof(df_connector)));
    CHECK_CUDA(cudaMalloc(&g[i].links, sizeof(df_links)));
    CHECK_CUDA(cudaMalloc(&g[i].args, sizeof(df_daemon_args)));
    CHECK_CUDA(cudaMalloc(&g[i].error_words, 2 * DF_MAX_COLLS * sizeof(uint32_t)));
    CHECK_CUDA(cudaMemset(g[i].error_words, 0, 2 * DF_MAX_COLLS * sizeof(uint32_t)));
    CHECK_CUDA(cudaMalloc(&g[i].flag, sizeof(uint64_t)));
    CHECK_CUDA(cudaMalloc(&g[i].src, 2 * max_bytes));
    CHECK_CUDA(cudaMalloc(&g[i].dst, max_bytes));
    CHECK_CUDA(cudaMalloc(&g[i].results, 2 * sizeof(unsigned long long)));
  }
  std::vector<float> tokens(2 * max_elems);
  for (uint32_t t = 0; t < 2; t++)
    for (uint32_t k = 0; k < max_elems; k++) tokens[t * max_elems + k] = token_value(t, k);
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMemcpy(g[0].src, tokens.data(), 2 * max_bytes, cudaMemcpyHostToDevice));

  printf("# hop_latency: %d GPUs in a ring, %u rounds after %u warm-up, %d threads per block\n", n, o.rounds, o.warmup,
         DF_CUDA_THREADS);
  for (int i = 0; i < n; i++) {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, i));
    printf("#  GPU %d: %s\n", i, p.name);
  }
  printf("# %-6s %10s %12s\n", "mode", "bytes", "us per hop");
  int status = 0;
  for (int m = 0; m <= (int)sizes.size(); m++) {
    const uint32_t mode = m == 0 ? MODE_FLAG : MODE_PRIM;
    const uint32_t bytes = m == 0 ? 0 : sizes[m - 1];
    for (int i = 0; i < n; i++) { /* fresh connectors: every run starts at step 0 */
      const int next = (i + 1) % n, prev = (i + n - 1) % n;
      CHECK_CUDA(cudaSetDevice(i));
      CHECK_CUDA(cudaMemset(g[i].recv_ctrl, 0, sizeof(df_recv_ctrl)));
      CHECK_CUDA(cudaMemset(g[i].send_ctrl, 0, sizeof(df_send_ctrl)));
      CHECK_CUDA(cudaMemset(g[i].counters, 0, 2 * sizeof(uint64_t)));
      CHECK_CUDA(cudaMemset(g[i].flag, 0, sizeof(uint64_t)));
      CHECK_CUDA(cudaMemset(g[i].dst, 0, max_bytes));
      CHECK_CUDA(cudaMemset(g[i].results, 0, 2 * sizeof(unsigned long long)));
      df_connector c[2];
      memset(c, 0, sizeof c);
      c[0].recv_ctrl = g[next].recv_ctrl;
      c[0].send_ctrl = g[i].send_ctrl;
      c[0].fifo = g[next].fifo;
      c[1].recv_ctrl = g[i].recv_ctrl;
      c[1].send_ctrl = g[prev].send_ctrl;
      c[1].fifo = g[i].fifo;
      CHECK_CUDA(cudaMemcpy(g[i].connectors, c, sizeof c, cudaMemcpyHostToDevice));
      df_links l;
      memset(&l, 0, sizeof l);
      l.nchannels = 1;
      l.slot_bytes = bytes ? bytes : 16;
      l.prev_tagged = 1;
      l.to_next = g[i].connectors;
      l.from_prev = g[i].connectors + 1;
      l.sent = g[i].counters;
      l.consumed = g[i].counters + 1;
      CHECK_CUDA(cudaMemcpy(g[i].links, &l, sizeof l, cudaMemcpyHostToDevice));
      df_daemon_args a;
      memset(&a, 0, sizeof a);
      a.spin.front = a.spin.floor = 1000;
      a.spin.growth = 1;
      a.spin.ceiling = 1000;
      a.spin.preemption = 0; /* a wait only waits: the token always comes */
      a.run_errors = g[i].error_words;
      a.timed_out = g[i].error_words + DF_MAX_COLLS;
      CHECK_CUDA(cudaMemcpy(g[i].args, &a, sizeof a, cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < n; i++) {
      Hop h;
      memset(&h, 0, sizeof h);
      h.args = g[i].args;
      h.links = g[i].links;
      h.flag_next = g[(i + 1) % n].flag;
      h.flag_mine = g[i].flag;
      h.src = g[0].src;
      h.dst = g[i].dst;
      h.errors = g[i].results;
      h.ns = g[i].results + 1;
      h.rank = (uint32_t)i;
      h.nranks = (uint32_t)n;
      h.rounds = o.rounds;
      h.warmup = o.warmup;
      h.mode = mode;
      h.nelem = bytes / 4;
      h.stride = max_elems;
      CHECK_CUDA(cudaSetDevice(i));
      hop_kernel<<<1, DF_CUDA_THREADS, 0, g[i].stream>>>(h);
      CHECK_CUDA(cudaGetLastError());
    }
    unsigned long long results[2] = {0, 0}, wrong = 0;
    for (int i = 0; i < n; i++) wait_or_die(i, g[i].stream, mode, bytes);
    for (int i = 0; i < n; i++) {
      CHECK_CUDA(cudaSetDevice(i));
      unsigned long long r[2];
      CHECK_CUDA(cudaMemcpy(r, g[i].results, sizeof r, cudaMemcpyDeviceToHost));
      wrong += r[0];
      if (i == 0) memcpy(results, r, sizeof r);
    }
    const double us = (double)results[1] / 1000.0 / ((double)o.rounds * n);
    printf("  %-6s %10u %12.3f\n", mode == MODE_FLAG ? "flag" : "prim", bytes, us);
    if (wrong) {
      fprintf(stderr, "hop_latency: %s %u B: %llu wrong elements (or a failed wait: %llu)\n",
              mode == MODE_FLAG ? "flag" : "prim", bytes, wrong & ((1ull << 40) - 1), wrong >> 40);
      status = 1;
    }
  }
  return status;
}
