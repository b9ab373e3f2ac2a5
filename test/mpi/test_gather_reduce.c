/*
 * Small all-reduces by gathering (DFCCL_ALLREDUCE_GATHER_BYTES; core/kernel/all_reduce_gathered.h):
 * every rank must get the sum of the ranks' inputs taken in rank order, ((in0 + in1) + in2) + ...,
 * to the bit -- the same result on every rank -- whatever the size, in place or not, through
 * registered collectives (dfcclRegisterAllReduce/dfcclRunAllReduce) and through a communicator
 * (dfcclSubmit).  The inputs are random floats and doubles of mixed magnitudes, so that another
 * order of the additions gives other bits.
 *
 *   mpirun -np N test_gather_reduce [-i iterations] [-g BYTES]
 *
 * -g BYTES (default 0): all-reduces up to BYTES run by gathering (the value of
 * DFCCL_ALLREDUCE_GATHER_BYTES the run was given): their results must be the rank-order sums to the
 * bit.  Larger ones, and all of them with -g 0, run on the ring, whose order of additions differs
 * per chunk: their results must be within a rounding bound of the rank-order sums.  The twin runs
 * with -g set and the gathering off (DFCCL_ALLREDUCE_GATHER_BYTES=0) on 3 or more ranks: it must
 * fail ("not the rank-order sum"), which shows that the bitwise check tells the algorithms apart.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Element counts: within one slot of the small sizes, and past the 64 KiB the CI runs use. */
#define NSIZES 7
static const size_t sizes[NSIZES] = {1, 3, 64, 1000, 4096, 16384, 40000};

/* Input element i of `rank` in iteration `it` for size index s: mixed signs and magnitudes. */
static double input_value(int rank, int it, int s, size_t i) {
  uint64_t state = ((uint64_t)rank << 40) ^ ((uint64_t)it << 20) ^ ((uint64_t)s << 56) ^ (i * 0x9e3779b97f4a7c15ull);
  uint64_t r = harness_random(&state);
  double mantissa = (double)(r >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
  return ldexp(mantissa, (int)(r % 24) - 12);
}

typedef struct {
  dfcclDataType_t dtype;
  size_t esize;
  const char* name;
} kind;

static const kind kinds[2] = {{dfcclFloat32, sizeof(float), "float"}, {dfcclFloat64, sizeof(double), "double"}};

/* The rank-order sum of element i, in the type's own arithmetic. */
static double rank_order_sum(const kind* k, int nranks, int it, int s, size_t i, double* magnitude) {
  *magnitude = 0;
  if (k->dtype == dfcclFloat32) {
    float acc = (float)input_value(0, it, s, i);
    *magnitude = fabs((double)acc);
    for (int q = 1; q < nranks; q++) {
      float v = (float)input_value(q, it, s, i);
      acc = acc + v;
      *magnitude += fabs((double)v);
    }
    return (double)acc;
  }
  double acc = input_value(0, it, s, i);
  *magnitude = fabs(acc);
  for (int q = 1; q < nranks; q++) {
    double v = input_value(q, it, s, i);
    acc = acc + v;
    *magnitude += fabs(v);
  }
  return acc;
}

/* Wrong elements of `got` (bits must match when `exact`, else within nranks rounding steps). */
static long check(const kind* k, int nranks, int it, int s, const void* got, size_t count, bool exact) {
  long wrong = 0;
  double eps = k->dtype == dfcclFloat32 ? 1.0 / (1 << 23) : 1.0 / (1ull << 52);
  for (size_t i = 0; i < count; i++) {
    double magnitude;
    double want = rank_order_sum(k, nranks, it, s, i, &magnitude);
    double have = k->dtype == dfcclFloat32 ? (double)((const float*)got)[i] : ((const double*)got)[i];
    bool ok = exact ? memcmp(&have, &want, sizeof have) == 0 : fabs(have - want) <= 2.0 * nranks * eps * magnitude;
    wrong += !ok;
  }
  return wrong;
}

static void fill(const kind* k, int rank, int it, int s, void* host, size_t count) {
  for (size_t i = 0; i < count; i++) {
    double v = input_value(rank, it, s, i);
    if (k->dtype == dfcclFloat32) ((float*)host)[i] = (float)v;
    else ((double*)host)[i] = v;
  }
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_gather_reduce");
  int iterations = 5;
  long gather_bytes = 0;
  options o = harness_options(&h, "usage: test_gather_reduce [-i iterations] [-g BYTES]", argc, argv, "i:g:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'i') iterations = option_int(&o, 1, 100000);
    else if (opt == 'g') gather_bytes = option_int(&o, 0, 64 << 20);
  }
  harness_watchdog_start(60, "all-reduces by gathering");

  dfcclComm_t comm;
  CHECK_DFCCL(dfcclCommCreate(h.ctx, NULL, 0, &comm));
  size_t largest = sizes[NSIZES - 1] * sizeof(double);
  void* send = harness_alloc(&h, largest);
  void* recv = harness_alloc(&h, largest);
  void* host = malloc(largest);
  if (!host) {
    perror("malloc");
    return harness_finish(&h, 1);
  }
  /* Registered collectives: id = 2 * (kind * NSIZES + s) + in_place. */
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < NSIZES; s++)
      for (int in_place = 0; in_place < 2; in_place++)
        CHECK_DFCCL(dfcclRegisterAllReduce(h.ctx, sizes[s], kinds[t].dtype, dfcclSum, 2 * (t * NSIZES + s) + in_place,
                                           NULL, 0, 0));

  long wrong_exact = 0, wrong_close = 0;
  harness_counter done = {0};
  int runs = 0;
  for (int it = 0; it < iterations; it++) {
    for (int t = 0; t < 2; t++) {
      const kind* k = &kinds[t];
      for (int s = 0; s < NSIZES; s++) {
        size_t bytes = sizes[s] * k->esize;
        bool exact = (long)bytes <= gather_bytes;
        for (int way = 0; way < 4; way++) { /* registered / communicator, out of place / in place */
          bool in_place = way & 1, via_comm = way >> 1;
          fill(k, h.rank, it, s, host, sizes[s]);
          harness_upload(&h, send, host, bytes);
          void* out = in_place ? send : recv;
          if (via_comm) {
            dfcclCollDesc_t d = {.kind = dfcclAllReduce, .count = sizes[s], .dtype = k->dtype, .op = dfcclSum};
            CHECK_DFCCL(dfcclSubmit(comm, &d, send, out, harness_on_complete, &done));
          } else {
            CHECK_DFCCL(
                dfcclRunAllReduce(h.ctx, send, out, 2 * (t * NSIZES + s) + in_place, harness_on_complete, &done));
          }
          harness_wait(&done, ++runs);
          memset(host, 0, bytes);
          harness_download(&h, host, out, bytes);
          long w = check(k, h.nranks, it, s, host, sizes[s], exact);
          if (w && exact)
            fprintf(stderr, "[rank %d] %s x %zu (%s, %s): %ld elements not the rank-order sum to the bit\n", h.rank,
                    k->name, sizes[s], in_place ? "in place" : "out of place", via_comm ? "communicator" : "registered",
                    w);
          if (w && !exact)
            fprintf(stderr, "[rank %d] %s x %zu (%s, %s): %ld elements wrong\n", h.rank, k->name, sizes[s],
                    in_place ? "in place" : "out of place", via_comm ? "communicator" : "registered", w);
          if (exact) wrong_exact += w;
          else wrong_close += w;
        }
      }
    }
    harness_progress();
  }
  if (atomic_load(&done.errors)) wrong_close++;
  if (h.rank == 0)
    printf("%d iterations x %d all-reduces on %d ranks (gathering up to %ld B): %s\n", iterations, runs / iterations,
           h.nranks, gather_bytes,
           wrong_exact   ? "WRONG: not the rank-order sum"
           : wrong_close ? "WRONG RESULTS"
                         : "all results exact (rank-order sums to the bit up to that size)");
  CHECK_DFCCL(dfcclCommDestroy(comm));
  harness_free(&h, send);
  harness_free(&h, recv);
  free(host);
  return harness_finish(&h, wrong_exact + wrong_close);
}
