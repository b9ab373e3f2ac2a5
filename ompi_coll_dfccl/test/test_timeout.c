/*
 * coll_dfccl_timeout: a rank that skips an MPI_Allreduce (host-target mode; run with
 * --mca coll_dfccl_timeout T).  On a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN:
 *   1. every rank: MPI_Allreduce, routed to DFCCL, exact;
 *   2. the last rank skips the second: every other rank's call returns MPI_ERR_OTHER within 2 T;
 *   3. the last rank's next call (its second) returns MPI_ERR_OTHER too, and so does every rank's
 *      next one (the communicator's DFCCL collectives are revoked);
 *   4. a new duplicate works, exact; MPI_Comm_free and MPI_Finalize are clean.
 * Prints PASS when all of that holds.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 1024

static int rank, size, failures;

static void expect(int ok, const char* what) {
  if (!ok) {
    printf("rank %d: FAIL: %s\n", rank, what);
    failures++;
  }
}

static int allreduce(MPI_Comm comm, int* in, int* out, double* seconds) {
  for (int i = 0; i < COUNT; i++) in[i] = (rank + 1) * (i % 11 + 1);
  double start = MPI_Wtime();
  int rc = MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, comm);
  *seconds = MPI_Wtime() - start;
  return rc;
}

static int exact(const int* out) {
  int wrong = 0;
  for (int i = 0; i < COUNT; i++) wrong += out[i] != size * (size + 1) / 2 * (i % 11 + 1);
  return wrong == 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double timeout = argc > 1 ? atof(argv[1]) : 1;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int *in = malloc(COUNT * sizeof *in), *out = malloc(COUNT * sizeof *out);
  double s;
  expect(allreduce(comm, in, out, &s) == MPI_SUCCESS && exact(out), "the first all-reduce is exact");
  int skipper = rank == size - 1, rc = MPI_SUCCESS, eclass = MPI_SUCCESS;
  if (!skipper) {
    rc = allreduce(comm, in, out, &s);
    MPI_Error_class(rc, &eclass);
    printf("rank %d: the skipped all-reduce returned %s after %.2f s\n", rank,
           eclass == MPI_ERR_OTHER ? "MPI_ERR_OTHER" : "something else", s);
    expect(eclass == MPI_ERR_OTHER, "the skipped all-reduce returns MPI_ERR_OTHER");
    expect(s < 2 * timeout, "within twice the timeout");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (skipper) {
    rc = allreduce(comm, in, out, &s);
    MPI_Error_class(rc, &eclass);
    printf("rank %d: its next all-reduce returned %s\n", rank,
           eclass == MPI_ERR_OTHER ? "MPI_ERR_OTHER" : "something else");
    expect(eclass == MPI_ERR_OTHER, "the skipping rank's next all-reduce returns MPI_ERR_OTHER");
  }
  rc = allreduce(comm, in, out, &s);
  MPI_Error_class(rc, &eclass);
  expect(eclass == MPI_ERR_OTHER, "a later all-reduce on the communicator returns MPI_ERR_OTHER (revoked)");
  MPI_Comm fresh;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  expect(allreduce(fresh, in, out, &s) == MPI_SUCCESS && exact(out), "a new communicator's all-reduce is exact");
  MPI_Comm_free(&fresh);
  MPI_Comm_free(&comm);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: coll_dfccl_timeout %.0f s, %d ranks\n", all ? "FAIL" : "PASS", timeout, size);
  free(in);
  free(out);
  MPI_Finalize();
  return all != 0;
}
