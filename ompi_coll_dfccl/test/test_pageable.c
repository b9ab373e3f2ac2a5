/*
 * Stale inputs: device buffers filled the way CUDA programs fill them, with NO synchronization
 * before the MPI call, must give exact results through coll/dfccl.
 *
 * A CUDA-aware MPI program fills a device buffer with cudaMemcpy from ordinary (pageable) host
 * memory and passes it to MPI at once.  Such a copy returns when the data is staged, not when it
 * has landed: the last part's DMA may still be in flight.  Any CUDA-aware MPI reads the buffer
 * after that work (its own copies are ordered on the same streams); DFCCL's daemon runs on a
 * stream of its own, so coll/dfccl must order every routed collective after the calling thread's
 * default streams.  DFCCL_STREAM_ORDER=0 turns that ordering off: then this program sees the
 * previous contents (pageable.sh's twin).
 *
 *   test_pageable [-s legacy|per-thread|kernel] [-i iterations] [-m max_bytes] [-S seed]
 *                 [-d delay_bytes] [-e wrong_calls] [-t seconds] [-w watchdog_s]
 *     -s legacy      (default) cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) from malloc'd memory
 *     -s per-thread  cudaMemcpyAsync(..., cudaStreamPerThread) from malloc'd memory, never
 *                    synchronized: what a program built with --default-stream per-thread does
 *     -s kernel      cudaMemsetAsync on stream 0 (the legacy default stream), behind a memset of
 *                    delay_bytes (default 64 MiB) of scratch on the same stream: work queued
 *                    like a kernel's, still running when MPI is called
 *     -i  calls (default 1000); -m  largest buffer in bytes (default 16 MiB; 4 KiB .. 64 MiB used);
 *     -S  seed of the call sequence (default 1); -w  watchdog seconds (default 120);
 *     -e  end early once this many calls were wrong, -t  once this many seconds passed (default 0:
 *         never; the ranks agree every 50 calls, on host memory, so they stop at the same call)
 *
 * Each iteration is one blocking collective on a duplicate of MPI_COMM_WORLD: MPI_Allreduce,
 * MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block or MPI_Reduce (MPI_UINT32_T, MPI_SUM), its
 * size (4 B to max_bytes, the large ones half of the time), root (0 or last), MPI_IN_PLACE (where
 * MPI allows it, a quarter of the time) and which buffer is filled last, drawn from one random
 * sequence that is the same on every rank.  The inputs change every iteration; the receive buffer
 * holds 0xFFFFFFFF wherever no input goes, filled before or after the send buffer as drawn (a late
 * copy landing over the result shows too).  The result is copied back and checked exactly, and
 * the component's MPI_T counters must show the call routed through DFCCL
 * (coll_dfccl_<collective>_routed one higher, nothing fallen back): a fallback, which stages
 * through host memory and is ordered, would hide the defect.
 *
 * Each rank prints its first mismatches (collective, iteration, element, got, expected).  The
 * last line on rank 0 is "PASS: N calls, 0 wrong" or "FAIL: K wrong of N" (K calls with a wrong
 * element on some rank), the exit status 1 on failure.  A watchdog (alarm, reset every call)
 * prints WATCHDOG and exits 42.  Without a GPU every rank prints "SKIP: no GPU" and exits 0.
 * Run with: mpirun --mca coll_dfccl_priority 90 ... test_pageable  (see pageable.sh).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <errno.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudart.h"
#include "elements.h"
#include "mpi_options.h" /* test/common */

enum { ALLREDUCE, BCAST, ALLGATHER, RSB, REDUCE, NCOLLS };
static const char* const coll_names[NCOLLS] = {"allreduce", "bcast", "allgather", "reduce_scatter_block", "reduce"};

typedef enum { MODE_LEGACY, MODE_PER_THREAD, MODE_KERNEL } fill_mode_t;
static const char* const mode_names[] = {"legacy", "per-thread", "kernel", NULL};

static const uint32_t SENTINEL = 0xFFFFFFFFu; /* what the receive buffer holds before the call */
#define MISMATCH_LINES 5                      /* per rank */

static int rank, nranks;
static fill_mode_t mode = MODE_LEGACY;

/* ---- the call sequence, alike on every rank ----------------------------------------------------- */

static uint64_t rng_state;
static uint32_t next_random(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

typedef struct {
  int coll, root, in_place, send_last;
  size_t count; /* MPI count: per rank for all-gather and reduce-scatter */
} call_t;

/* Sizes of the largest buffer of a call, in bytes (capped at -m): a few small ones (their own
 * signatures), then 1 MiB and up, where a pageable copy's last DMA is still in flight when
 * cudaMemcpy returns.  Few sizes: every (collective, count, root) is a DFCCL signature, and a
 * communicator holds coll_dfccl_max_colls (128) of them before calls fall back. */
static const size_t levels[] = {4, 4100, 65540, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
#define NLEVELS (sizeof levels / sizeof levels[0])

static size_t send_elems(const call_t* c) { return c->coll == RSB ? c->count * (size_t)nranks : c->count; }
static size_t recv_elems(const call_t* c) {
  return c->coll == ALLGATHER || (c->coll == RSB && c->in_place) ? c->count * (size_t)nranks : c->count;
}
/* Where MPI takes MPI_IN_PLACE on this rank: reduce at its root only, never broadcast. */
static bool in_place_here(const call_t* c) { return c->in_place && (c->coll != REDUCE || rank == c->root); }

/* The next call: every draw made on every rank, so that the sequence is the same everywhere. */
static call_t draw_call(size_t max_bytes) {
  size_t small = 0, large = 0;
  for (size_t l = 0; l < NLEVELS && levels[l] <= max_bytes; l++) {
    if (levels[l] < (1u << 20)) small++;
    else large++;
  }
  call_t c;
  c.coll = (int)(next_random() % NCOLLS);
  uint32_t coin = next_random(), pick = next_random(), root_last = next_random() % 2, in_place = next_random() % 4 == 0;
  c.send_last = (int)(next_random() % 2);
  bool big = large > 0 && coin % 2 == 0;
  size_t elems = (big ? levels[small + pick % large] : levels[pick % small]) / sizeof(uint32_t);
  c.count = c.coll == ALLGATHER || c.coll == RSB ? elems / (size_t)nranks : elems; /* largest buffer <= level */
  if (c.count == 0) c.count = 1;
  c.root = c.coll == BCAST || c.coll == REDUCE ? (root_last ? nranks - 1 : 0) : -1;
  c.in_place = c.coll != BCAST && in_place;
  return c;
}

/* ---- values ------------------------------------------------------------------------------------- */

/* Rank r's input element j in iteration it.  Copies: a different value at every j, and at every
 * element a different one in every iteration (0x9E37 is odd, so it * 0x9E37 mod 2^28 repeats only
 * after 2^28 iterations); below 2^28, so sums of up to 16 ranks never reach the sentinel.  Sets
 * (kernel mode) write one byte everywhere: 1..62, different from the last iteration's. */
static uint32_t byte_of(int r, int it) { return 1u + (uint32_t)((unsigned)it * 5u + (unsigned)r * 3u) % 62u; }
static uint32_t input(int r, int it, size_t j) {
  if (mode == MODE_KERNEL) return byte_of(r, it) * 0x01010101u;
  return ((uint32_t)it * 0x9E37u + (uint32_t)r * 0x3Bu + (uint32_t)j * 7u + 1u) & 0x0FFFFFFFu;
}

static uint32_t sum_inputs(int it, size_t j) {
  uint32_t s = 0;
  for (int r = 0; r < nranks; r++) s += input(r, it, j);
  return s;
}

/* Element i of the result on this rank; false where MPI leaves it undefined (a non-root's reduce). */
static bool wanted(const call_t* c, int it, size_t i, uint32_t* want) {
  switch (c->coll) {
    case ALLREDUCE: *want = sum_inputs(it, i); return true;
    case BCAST: *want = input(c->root, it, i); return true;
    case ALLGATHER: *want = input((int)(i / c->count), it, i % c->count); return true;
    case RSB:
      if (i >= c->count) return false; /* in place: MPI defines the first count elements only */
      *want = sum_inputs(it, (size_t)rank * c->count + i);
      return true;
    default:
      if (rank != c->root) return false;
      *want = sum_inputs(it, i);
      return true;
  }
}

/* ---- filling the device buffers, as the mode does it -------------------------------------------- */

static uint32_t *send_d, *recv_d, *send_h, *recv_h; /* device buffers and their pageable host images */
static void* delay_d;
static size_t delay_bytes = 64u << 20;

/* Host images of this rank's buffers before the call: inputs where MPI reads them (the receive
 * buffer for MPI_IN_PLACE, at this rank's block for all-gather), the sentinel elsewhere. */
static void images(const call_t* c, int it) {
  size_t nr = recv_elems(c);
  for (size_t i = 0; i < nr; i++) recv_h[i] = SENTINEL;
  if (c->coll == BCAST) {
    if (rank == c->root)
      for (size_t i = 0; i < c->count; i++) recv_h[i] = input(rank, it, i);
    return;
  }
  uint32_t* in = in_place_here(c) ? recv_h : send_h;
  size_t at = in_place_here(c) && c->coll == ALLGATHER ? (size_t)rank * c->count : 0;
  for (size_t j = 0; j < send_elems(c); j++) in[at + j] = input(rank, it, j);
}

/* One buffer's new contents, left in flight: copied from its pageable image (legacy, per-thread),
 * or set on stream 0 (kernel: the sentinel everywhere, then the input where it goes). */
static void fill_one(uint32_t* dev, const uint32_t* host, size_t elems, const call_t* c, int it, bool is_recv) {
  size_t bytes = elems * sizeof(uint32_t);
  if (mode == MODE_LEGACY) {
    CHECK_CUDA(cuda.memcpy(dev, host, bytes, CUDA_MEMCPY_HOST_TO_DEVICE));
  } else if (mode == MODE_PER_THREAD) {
    CHECK_CUDA(cuda_async.memcpy_async(dev, host, bytes, CUDA_MEMCPY_HOST_TO_DEVICE, CUDA_STREAM_PER_THREAD));
  } else {
    int b = (int)byte_of(rank, it);
    if (!is_recv) { /* a send buffer is all input */
      CHECK_CUDA(cuda_async.memset_async(dev, b, bytes, CUDA_STREAM_0));
      return;
    }
    CHECK_CUDA(cuda_async.memset_async(dev, 0xFF, bytes, CUDA_STREAM_0));
    if (c->coll == BCAST ? rank == c->root : in_place_here(c)) {
      size_t at = c->coll == ALLGATHER ? (size_t)rank * c->count : 0, n = c->coll == BCAST ? c->count : send_elems(c);
      CHECK_CUDA(cuda_async.memset_async(dev + at, b, n * sizeof(uint32_t), CUDA_STREAM_0));
    }
  }
}

/* The fill of one call: both buffers (the one MPI reads last, or first, as drawn), no wait. */
static void fill(const call_t* c, int it) {
  if (mode != MODE_KERNEL) images(c, it);
  else CHECK_CUDA(cuda_async.memset_async(delay_d, it & 0xFF, delay_bytes, CUDA_STREAM_0)); /* busy stream 0 */
  bool uses_send = c->coll != BCAST && !in_place_here(c);
  if (uses_send && !c->send_last) fill_one(send_d, send_h, send_elems(c), c, it, false);
  fill_one(recv_d, recv_h, recv_elems(c), c, it, true);
  if (uses_send && c->send_last) fill_one(send_d, send_h, send_elems(c), c, it, false);
}

/* ---- the call, its route and its result --------------------------------------------------------- */

static entry_counters_t counters;

static void issue(const call_t* c, MPI_Comm comm) {
  const void* sbuf = in_place_here(c) ? MPI_IN_PLACE : (const void*)send_d;
  int n = (int)c->count;
  switch (c->coll) {
    case ALLREDUCE: CHECK_MPI(MPI_Allreduce(sbuf, recv_d, n, MPI_UINT32_T, MPI_SUM, comm)); break;
    case BCAST: CHECK_MPI(MPI_Bcast(recv_d, n, MPI_UINT32_T, c->root, comm)); break;
    case ALLGATHER: CHECK_MPI(MPI_Allgather(sbuf, n, MPI_UINT32_T, recv_d, n, MPI_UINT32_T, comm)); break;
    case RSB: CHECK_MPI(MPI_Reduce_scatter_block(sbuf, recv_d, n, MPI_UINT32_T, MPI_SUM, comm)); break;
    default: CHECK_MPI(MPI_Reduce(sbuf, recv_d, n, MPI_UINT32_T, MPI_SUM, c->root, comm)); break;
  }
}

static void describe(char* out, size_t len, const call_t* c) {
  char root[24] = "";
  if (c->root >= 0) snprintf(root, sizeof root, " root %d", c->root);
  snprintf(out, len, "%s count %zu%s%s, %s filled last", coll_names[c->coll], c->count, root,
           c->in_place ? " in place" : "", c->coll == BCAST || in_place_here(c) || !c->send_last ? "recv" : "send");
}

static int mismatch_lines;

/* Wrong elements of this rank's result (its first few printed). */
static size_t check(const call_t* c, int it) {
  size_t nr = recv_elems(c), wrong = 0, first = 0;
  uint32_t first_got = 0, first_want = 0;
  CHECK_CUDA(cuda.memcpy(recv_h, recv_d, nr * sizeof(uint32_t), CUDA_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < nr; i++) {
    uint32_t want;
    if (wanted(c, it, i, &want) && recv_h[i] != want && wrong++ == 0)
      first = i, first_got = recv_h[i], first_want = want;
  }
  if (wrong > 0 && mismatch_lines++ < MISMATCH_LINES) {
    char what[128];
    describe(what, sizeof what, c);
    fprintf(stderr, "rank %d: wrong: iteration %d, %s: [%zu] = %u, expected %u (%s; %zu of %zu elements wrong)\n", rank,
            it, coll_names[c->coll], first, first_got, first_want, what, wrong, nr);
  }
  return wrong;
}

/* ---- main --------------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
  long iterations = 1000, max_bytes = 16l << 20, seed = 1, watchdog_s = 120, delay = (long)delay_bytes;
  long end_wrong = 0, end_s = 0;
  options o = mpi_options("test_pageable",
                          "usage (2 or more ranks): test_pageable [-s legacy|per-thread|kernel] [-i iterations] "
                          "[-m max_bytes] [-S seed] [-d delay_bytes] [-e wrong_calls] [-t seconds] [-w watchdog_s]",
                          argc, argv, "s:i:m:S:d:e:t:w:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    switch (opt) {
      case 's': mode = (fill_mode_t)option_choice(&o, mode_names); break;
      case 'i': iterations = option_long(&o, 1, 100000000); break;
      case 'm': max_bytes = option_long(&o, 4096, 1l << 30); break;
      case 'S': seed = option_long(&o, 0, 1l << 62); break;
      case 'd': delay = option_long(&o, 0, 1l << 32); break;
      case 'e': end_wrong = option_long(&o, 0, 100000000); break;
      case 't': end_s = option_long(&o, 0, 86400l * 365); break;
      case 'w': watchdog_s = option_long(&o, 1, 86400); break;
    }
  }
  if (nranks < 2) options_fail(&o, "run on 2 or more ranks");
  delay_bytes = (size_t)delay;

  char why[200];
  int devices = 0, have = cuda_load(&devices, why, sizeof why);
  if (have && !cuda_async_load(why, sizeof why)) have = 0;
  if (!cuda_on_every_rank(have, why)) return 0;
  int local_size = select_node_gpu(devices);
  MPI_Comm comm;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));

  /* Device buffers of the largest size and their pageable (malloc) images. */
  size_t cap = (size_t)max_bytes;
  send_d = dev_alloc(cap), recv_d = dev_alloc(cap);
  send_h = malloc(cap), recv_h = malloc(cap);
  unsigned char* wrong_at = calloc((size_t)iterations, 1); /* per call: wrong here; then anywhere */
  unsigned char* wrong_any = calloc((size_t)iterations, 1);
  if (send_h == NULL || recv_h == NULL || wrong_at == NULL || wrong_any == NULL) {
    fprintf(stderr, "rank %d: out of host memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (mode == MODE_KERNEL && delay_bytes > 0) delay_d = dev_alloc(delay_bytes);
  else delay_bytes = 0;
  /* The previous contents: the sentinel, uploaded and landed. */
  memset(send_h, 0xFF, cap);
  upload(send_d, send_h, cap), upload(recv_d, send_h, cap);
  uploads_done();

  if (rank == 0)
    printf("pageable %s: %d ranks, %d per node on %d GPU(s), %ld calls, buffers up to %ld bytes, seed %ld%s\n",
           mode_names[mode], nranks, local_size, local_size < devices ? local_size : devices, iterations, max_bytes,
           seed, mode == MODE_KERNEL ? ", stream 0 kept busy by a memset before each fill" : ""),
        fflush(stdout);

  entry_counters_open(&counters, coll_names, NCOLLS);
  watchdog_start((unsigned)watchdog_s);
  rng_state = (uint64_t)seed;
  unsigned long long wrong_elements = 0, not_routed = 0;
  long done = 0, wrong_here = 0;
  const char* ended = NULL; /* why the calls ended before -i */
  double t0 = MPI_Wtime();
  while (done < iterations && ended == NULL) {
    int it = (int)done++;
    call_t c = draw_call(cap);
    counts_t before = entry_counters_read(&counters);
    fill(&c, it);
    issue(&c, comm); /* right after the fill: nothing waited for it */
    counts_t after = entry_counters_read(&counters);
    size_t wrong = check(&c, it);
    wrong_elements += wrong;
    wrong_at[it] = wrong > 0;
    wrong_here += wrong > 0;
    unsigned long long routed = after.routed[c.coll] - before.routed[c.coll];
    unsigned long long fell = after.fallback[c.coll] - before.fallback[c.coll];
    if (routed != 1 || fell != 0) {
      if (not_routed++ < MISMATCH_LINES) {
        char what[128];
        describe(what, sizeof what, &c);
        fprintf(stderr, "rank %d: iteration %d, %s: not routed through DFCCL (routed +%llu, fell back +%llu)\n", rank,
                it, what, routed, fell);
      }
    }
    watchdog_reset();
    if ((end_wrong > 0 || end_s > 0) && done % 50 == 0 && done < iterations) {
      /* Every rank the same verdict (host memory: Open MPI's own path, not one of the checked calls). */
      long mine[2] = {wrong_here, end_s > 0 && MPI_Wtime() - t0 >= (double)end_s}, all[2];
      CHECK_MPI(MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
      if (end_wrong > 0 && all[0] >= end_wrong) ended = "-e: wrong calls seen";
      else if (all[1]) ended = "-t: time is up";
    }
  }
  double elapsed = MPI_Wtime() - t0;
  alarm(0);
  entry_counters_close(&counters);

  /* A call is wrong when it is wrong on any rank (host buffers: Open MPI's own path). */
  unsigned long long all_elements = 0, all_not_routed = 0;
  CHECK_MPI(MPI_Allreduce(wrong_at, wrong_any, (int)done, MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(&wrong_elements, &all_elements, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(&not_routed, &all_not_routed, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
  long wrong_calls = 0;
  for (long it = 0; it < done; it++) wrong_calls += wrong_any[it];
  bool ok = wrong_calls == 0 && all_not_routed == 0;
  if (rank == 0) {
    printf("pageable %s: %ld calls in %.1f s, %llu wrong elements, %llu rank-calls not routed through DFCCL\n",
           mode_names[mode], done, elapsed, all_elements, all_not_routed);
    if (ended != NULL)
      printf("pageable %s: ended after %ld of %ld calls (%s)\n", mode_names[mode], done, iterations, ended);
    if (ok) printf("PASS: %ld calls, 0 wrong\n", done);
    else if (wrong_calls > 0) printf("FAIL: %ld wrong of %ld\n", wrong_calls, done);
    else printf("FAIL: 0 wrong of %ld, but %llu rank-calls not routed\n", done, all_not_routed);
    fflush(stdout);
  }
  CHECK_MPI(MPI_Comm_free(&comm));
  dev_free(send_d), dev_free(recv_d);
  if (delay_d != NULL) dev_free(delay_d);
  free(send_h), free(recv_h), free(wrong_at), free(wrong_any);
  CHECK_MPI(MPI_Finalize());
  return ok ? 0 : 1;
}
