/*
 * Whether coll/dfccl took part in this job, for bad_params.sh: one MPI_Allreduce of host buffers
 * on MPI_COMM_WORLD, checked, and the component's MPI_T counter of the MPI_Allreduce calls it ran
 * (the counters exist only where Open MPI loaded the component).  Rank 0 prints
 *
 *   coll/dfccl: loaded, N MPI_Allreduce routed        or        coll/dfccl: not loaded
 *
 * and then PASS or FAIL for the sum; the exit status is 0 on PASS either way.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>

#include "mpi_options.h" /* test/common */
#include "mpi_pvar.h"    /* test/common: find_pvar */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  options_none(mpi_options("test_params", "usage: test_params (no options)", argc, argv, ""));
  int provided, rank, size;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* A counter reports the increase since its handle was allocated. */
  MPI_T_pvar_session session;
  MPI_T_pvar_handle routed_handle = MPI_T_PVAR_HANDLE_NULL;
  MPI_T_pvar_session_create(&session);
  int index = find_pvar("coll_dfccl_allreduce_routed"), count;
  bool loaded = index >= 0 && MPI_T_pvar_handle_alloc(session, index, NULL, &routed_handle, &count) == MPI_SUCCESS;

  int mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  bool exact = sum == size * (size + 1) / 2;

  unsigned long long routed = 0;
  if (loaded) {
    MPI_T_pvar_read(session, routed_handle, &routed);
    MPI_T_pvar_handle_free(session, &routed_handle);
  }
  MPI_T_pvar_session_free(&session);
  MPI_T_finalize(); /* before MPI_Finalize (Open MPI 4.1) */
  if (rank == 0) {
    if (loaded) printf("coll/dfccl: loaded, %llu MPI_Allreduce routed\n", routed);
    else printf("coll/dfccl: not loaded\n");
    printf("%s\n", exact ? "PASS" : "FAIL");
  }
  MPI_Finalize();
  return exact ? 0 : 1;
}
