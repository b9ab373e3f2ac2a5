/*
 * Bad input: every misuse gets its error code and a message, never a hang, a crash or corrupted
 * data.  Run on 2 ranks.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mpi_bootstrap.h"

static long failures;

static void expect(dfcclResult_t got, dfcclResult_t want, const char* what, int rank) {
  if (got == want) {
    if (rank == 0)
      printf("ok   %-58s -> %s: %s\n", what, dfcclGetErrorString(got), got ? dfcclGetLastErrorMessage() : "");
    return;
  }
  failures++;
  fprintf(stderr, "FAIL rank %d: %s: got %s (%s), expected %s\n", rank, what, dfcclGetErrorString(got),
          dfcclGetLastErrorMessage(), dfcclGetErrorString(want));
}

/* The last error's sentence must name both words (e.g. the op and the type). */
static void expect_message(const char* word1, const char* word2, int rank) {
  const char* message = dfcclGetLastErrorMessage();
  if (strstr(message, word1) && strstr(message, word2)) return;
  failures++;
  fprintf(stderr, "FAIL rank %d: the message \"%s\" does not name %s and %s\n", rank, message, word1, word2);
}

int main(int argc, char** argv) {
  harness h;
  harness_init(&h, &argc, &argv, "test_bad_input");
  options_none(harness_options(&h, "usage: test_bad_input (no options)", argc, argv, ""));
  harness_watchdog_start(60, "bad input");
  dfcclRankCtx_t ctx = h.ctx;
  int other = 1 - h.rank;

  /* Initialisation */
  expect(dfcclInit(NULL, &h.init), dfcclInvalidArgument, "dfcclInit with a NULL context pointer", h.rank);
  dfcclInitArgs_t bad = h.init;
  bad.bootstrap.rank = 7;
  dfcclRankCtx_t unused = NULL;
  expect(dfcclInit(&unused, &bad), dfcclInvalidArgument, "dfcclInit with rank 7 of 2", h.rank);
  setenv("DFCCL_SPIN_FRONT", "lots", 1);
  expect(dfcclInit(&unused, &h.init), dfcclInvalidArgument, "dfcclInit with DFCCL_SPIN_FRONT=lots", h.rank);
  unsetenv("DFCCL_SPIN_FRONT");
  setenv("DFCCL_TRANSPORT", "carrier-pigeon", 1);
  expect(dfcclInit(&unused, &h.init), dfcclInvalidArgument, "dfcclInit with DFCCL_TRANSPORT=carrier-pigeon", h.rank);
  expect_message("DFCCL_TRANSPORT", "carrier-pigeon", h.rank);
  unsetenv("DFCCL_TRANSPORT");

  /* Registration */
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, -1, NULL, 0, 0), dfcclInvalidArgument, "negative id",
         h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, (dfcclDataType_t)99, dfcclSum, 1, NULL, 0, 0), dfcclInvalidArgument,
         "unknown data type", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, (dfcclRedOp_t)99, 1, NULL, 0, 0), dfcclInvalidArgument,
         "unknown op", h.rank);
  /* Bitwise and logical ops are defined for the integers only (as in MPI). */
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclFloat32, dfcclBand, 1, NULL, 0, 0), dfcclInvalidArgument, "band on fp32",
         h.rank);
  expect_message("band", "fp32", h.rank);
  expect(dfcclRegisterReduce(ctx, 8, dfcclBfloat16, dfcclLxor, 0, 1, NULL, 0, 0), dfcclInvalidArgument,
         "lxor on bf16 (reduce)", h.rank);
  expect_message("lxor", "bf16", h.rank);
  expect(dfcclRegisterAllReduce(ctx, SIZE_MAX / 2, dfcclInt64, dfcclSum, 1, NULL, 0, 0), dfcclInvalidArgument,
         "count overflow", h.rank);
  int twice[] = {0, 0};
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, 1, twice, 2, 0), dfcclInvalidArgument,
         "a participant listed twice", h.rank);
  int outside[] = {0, 5};
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, 1, outside, 2, 0), dfcclInvalidArgument,
         "participant out of range", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, 1, &other, 1, 0), dfcclInvalidArgument,
         "participants without the caller", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, 1, NULL, 3, 0), dfcclInvalidArgument,
         "NULL participants with a count", h.rank);
  /* Registration is collective: a mismatch, or a misuse on one rank only, fails on every rank. */
  expect(dfcclRegisterAllReduce(ctx, 8 + (size_t)h.rank, dfcclInt32, dfcclSum, 5, NULL, 0, 0), dfcclInvalidArgument,
         "ranks register different counts", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, h.rank ? dfcclInt32 : (dfcclDataType_t)99, dfcclSum, 6, NULL, 0, 0),
         dfcclInvalidArgument, "one rank passes an unknown type", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, h.rank ? dfcclInt32 : dfcclFloat32, dfcclBand, 7, NULL, 0, 0),
         dfcclInvalidArgument, "one rank passes band on fp32", h.rank);
  /* All-gather-v: its arrays are checked, and must be the same on every rank. */
  size_t counts[2] = {4, 4}, displs[2] = {0, 4}, other_displs[2] = {4, 0};
  expect(dfcclRegisterAllGatherV(ctx, NULL, displs, dfcclInt32, 8, NULL, 0, 0), dfcclInvalidArgument,
         "all-gather-v with NULL recvcounts", h.rank);
  expect_message("NULL", "recvcounts", h.rank);
  size_t huge[2] = {SIZE_MAX / 2, 4};
  expect(dfcclRegisterAllGatherV(ctx, huge, displs, dfcclInt32, 9, NULL, 0, 0), dfcclInvalidArgument,
         "all-gather-v with an overflowing block", h.rank);
  expect(dfcclRegisterAllGatherV(ctx, counts, h.rank ? displs : other_displs, dfcclInt32, 10, NULL, 0, 0),
         dfcclInvalidArgument, "ranks register all-gather-v with different displacements", h.rank);
  expect_message("different counts", "displacements", h.rank);
  size_t uneven[2] = {(size_t)h.rank + 1, 3};
  expect(dfcclRegisterReduceScatterV(ctx, uneven, dfcclInt32, dfcclSum, 11, NULL, 0, 0), dfcclInvalidArgument,
         "ranks register reduce-scatter-v with different counts", h.rank);
  expect(dfcclRegisterReduceScatterV(ctx, NULL, dfcclInt32, dfcclSum, 12, NULL, 0, 0), dfcclInvalidArgument,
         "reduce-scatter-v with NULL recvcounts", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 1024, dfcclInt32, dfcclSum, 1, NULL, 0, 0), dfcclSuccess, "register id 1", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, 1, NULL, 0, 0), dfcclDuplicateId, "register id 1 again",
         h.rank);
  expect(dfcclRegisterAllReduce(ctx, 0, dfcclFloat32, dfcclMax, 2, NULL, 0, 0), dfcclSuccess, "register count 0",
         h.rank);
  expect(dfcclRegisterAllToAll(ctx, 256, dfcclInt32, 13, NULL, 0, 0), dfcclSuccess, "register all-to-all", h.rank);

  /* Runs */
  int32_t* buf = harness_alloc(&h, 1024 * sizeof(int32_t));
  int32_t host[1024];
  for (int i = 0; i < 1024; i++) host[i] = h.rank + 1;
  harness_upload(&h, buf, host, sizeof host);
  harness_counter done = {0};
  expect(dfcclRunAllReduce(ctx, buf, buf, 99, harness_on_complete, &done), dfcclUnregisteredId,
         "run an unregistered id", h.rank);
  expect(dfcclRunAllReduce(ctx, NULL, buf, 1, harness_on_complete, &done), dfcclInvalidArgument, "NULL sendbuff",
         h.rank);
  expect(dfcclRunAllReduce(ctx, buf, NULL, 1, harness_on_complete, &done), dfcclInvalidArgument, "NULL recvbuff",
         h.rank);
  /* All-to-all has no in place: any overlap of its 2 x 256 elements is refused. */
  expect(dfcclRunAllToAll(ctx, buf, buf, 13, harness_on_complete, &done), dfcclInvalidArgument, "all-to-all in place",
         h.rank);
  expect(dfcclRunAllToAll(ctx, buf, buf + 511, 13, harness_on_complete, &done), dfcclInvalidArgument,
         "all-to-all buffers overlapping by one element", h.rank);
  expect(dfcclRunAllToAll(ctx, buf + 511, buf, 13, harness_on_complete, &done), dfcclInvalidArgument,
         "all-to-all buffers overlapping by one element, the other way", h.rank);
  if (h.gpu) {
    expect(dfcclRunAllReduce(ctx, host, buf, 1, harness_on_complete, &done), dfcclWrongDevice,
           "host memory on the GPU target", h.rank);
  }
  /* Rank 0 submits first; its run cannot finish before rank 1's, so a second submission finds it
   * in flight. */
  int target = 0;
  if (h.rank == 0) {
    expect(dfcclRunAllReduce(ctx, buf, buf, 1, harness_on_complete, &done), dfcclSuccess, "run id 1", h.rank);
    target++;
    expect(dfcclRunAllReduce(ctx, buf, buf, 1, harness_on_complete, &done), dfcclInFlight, "run id 1 while in flight",
           h.rank);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (h.rank == 1) {
    expect(dfcclRunAllReduce(ctx, buf, buf, 1, harness_on_complete, &done), dfcclSuccess, "run id 1", h.rank);
    target++;
  }
  expect(dfcclRunAllReduce(ctx, NULL, NULL, 2, harness_on_complete, &done), dfcclSuccess, "count 0 with NULL buffers",
         h.rank);
  target++;
  harness_wait(&done, target);
  harness_download(&h, host, buf, sizeof host);
  for (int i = 0; i < 1024; i++)
    if (host[i] != 3) {
      failures++;
      fprintf(stderr, "rank %d: element %d is %d after the misuse, expected 3\n", h.rank, i, host[i]);
      break;
    }
  if (atomic_load(&done.errors)) failures++;

  /* Communicators and descriptors: misuse is refused before a run takes its number, so the run
   * after it still pairs with the peers' (its result is checked). */
  dfcclComm_t comm = NULL;
  expect(dfcclCommCreate(ctx, NULL, 0, NULL), dfcclInvalidArgument, "dfcclCommCreate with a NULL comm", h.rank);
  expect(dfcclCommCreateWithKey(ctx, NULL, 0, 1u << 26, &comm), dfcclInvalidArgument, "a key of 2^26", h.rank);
  /* Keyed (test_comm's communicators agree on serials): the runs below use it. */
  expect(dfcclCommCreateWithKey(ctx, NULL, 0, 7, &comm), dfcclSuccess, "dfcclCommCreateWithKey of all ranks", h.rank);
  dfcclCollDesc_t sum = {.kind = dfcclAllReduce, .count = 1024, .dtype = dfcclInt32, .op = dfcclSum};
  dfcclCollDesc_t bad_kind = sum, bad_root = {.kind = dfcclBroadcast, .count = 8, .dtype = dfcclInt32, .root = 2};
  dfcclCollDesc_t bad_op = {.kind = dfcclReduce, .count = 8, .dtype = dfcclFloat32, .op = dfcclBand};
  dfcclCollDesc_t a2a = {.kind = dfcclAllToAll, .count = 256, .dtype = dfcclInt32};
  bad_kind.kind = (dfcclCollKind_t)17;
  expect(dfcclSubmit(NULL, &sum, buf, buf, NULL, NULL), dfcclInvalidArgument, "dfcclSubmit to NULL", h.rank);
  expect(dfcclSubmit(comm, NULL, buf, buf, NULL, NULL), dfcclInvalidArgument, "dfcclSubmit of NULL", h.rank);
  expect(dfcclSubmit(comm, &bad_kind, buf, buf, NULL, NULL), dfcclInvalidArgument, "an unknown kind", h.rank);
  expect(dfcclSubmit(comm, &bad_root, buf, buf, NULL, NULL), dfcclInvalidArgument, "root 2 of 2 ranks", h.rank);
  expect(dfcclSubmit(comm, &bad_op, buf, buf, NULL, NULL), dfcclInvalidArgument, "band on fp32 (descriptor)", h.rank);
  expect(dfcclSubmit(comm, &a2a, buf, buf, NULL, NULL), dfcclInvalidArgument, "all-to-all in place (descriptor)",
         h.rank);
  expect(dfcclSubmit(comm, &sum, NULL, buf, NULL, NULL), dfcclInvalidArgument, "NULL sendbuff (descriptor)", h.rank);
  for (int i = 0; i < 1024; i++) host[i] = h.rank + 1;
  harness_upload(&h, buf, host, sizeof host);
  harness_counter comm_done = {0};
  expect(dfcclSubmit(comm, &sum, buf, buf, harness_on_complete, &comm_done), dfcclSuccess, "a run after the misuse",
         h.rank);
  harness_wait(&comm_done, 1);
  harness_download(&h, host, buf, sizeof host);
  for (int i = 0; i < 1024; i++)
    if (host[i] != 3) {
      failures++;
      fprintf(stderr, "rank %d: element %d is %d after the descriptors' misuse, expected 3\n", h.rank, i, host[i]);
      break;
    }
  expect(dfcclCommDestroy(comm), dfcclSuccess, "dfcclCommDestroy", h.rank);
  expect(dfcclSubmit(comm, &sum, buf, buf, NULL, NULL), dfcclInvalidArgument, "dfcclSubmit after dfcclCommDestroy",
         h.rank);

  /* Strings */
  for (int r = 0; r <= dfcclNumResults; r++)
    if (!dfcclGetErrorString((dfcclResult_t)r) || !*dfcclGetErrorString((dfcclResult_t)r)) failures++;

  /* Use after destroy */
  harness_free(&h, buf);
  expect(dfcclDestroy(ctx), dfcclSuccess, "destroy", h.rank);
  expect(dfcclRunAllReduce(ctx, NULL, NULL, 2, NULL, NULL), dfcclDestroyed, "run after destroy", h.rank);
  expect(dfcclRegisterAllReduce(ctx, 8, dfcclInt32, dfcclSum, 3, NULL, 0, 0), dfcclDestroyed, "register after destroy",
         h.rank);
  expect(dfcclDestroy(ctx), dfcclDestroyed, "destroy twice", h.rank);

  long total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (h.rank == 0)
    printf("%s\n", total ? "SOME MISUSE WAS NOT REPORTED CORRECTLY" : "every misuse reported with its error code");
  dfccl_mpi_bootstrap_fini(&h.init.bootstrap);
  MPI_Finalize();
  return total ? 1 : 0;
}
