/*
 * options.h for MPI programs: read after MPI_Init by every rank, which all get the same arguments
 * and so fail alike.  Rank 0 says what is wrong, and every rank finalizes MPI before exit(2), so
 * mpirun reports exit status 2 rather than an abort.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_MPI_OPTIONS_H
#define DFCCL_TEST_MPI_OPTIONS_H

#include <mpi.h>

#include "options.h"

static inline void options_finalize_mpi(void* arg) {
  (void)arg;
  MPI_Finalize();
}

static inline options mpi_options(const char* program, const char* usage, int argc, char** argv, const char* spec) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  options o = options_begin(program, usage, argc, argv, spec);
  o.report = rank == 0;
  o.before_exit = options_finalize_mpi;
  return o;
}

#endif /* DFCCL_TEST_MPI_OPTIONS_H */
