/*
 * MPI implementation of DFCCL's bootstrap callback, for tests and benchmarks.  DFCCL's core never
 * depends on MPI; a program that has MPI hands this bootstrap to dfcclInit.
 *
 *   dfcclInitArgs_t args = {0};
 *   if (dfccl_mpi_bootstrap_init(MPI_COMM_WORLD, &args.bootstrap) != 0) ...
 *   dfcclInit(&ctx, &args); ... dfcclDestroy(ctx);
 *   dfccl_mpi_bootstrap_fini(&args.bootstrap);   (before MPI_Finalize)
 *
 * Bootstrap ranks are the ranks of `comm`.  The allgather callback is collective over the ranks it
 * lists: the whole communicator uses a private duplicate of `comm`; a proper subset uses a
 * sub-communicator built with MPI_Comm_create_group (collective only over the listed ranks) and
 * cached by rank list.  The callback must be called from a thread that may call MPI (the thread that
 * called dfccl_mpi_bootstrap_init, unless MPI was initialized with MPI_THREAD_MULTIPLE), and calls
 * on one bootstrap must not overlap.  Messages go to stderr; functions return nonzero on failure.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_MPI_BOOTSTRAP_H
#define DFCCL_MPI_BOOTSTRAP_H

#include <mpi.h>

#include "dfccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills bs (rank, nranks, allgather, state) for the ranks of `comm`, which it duplicates; collective
 * over `comm`.  Returns 0 on success; on failure bs is zeroed. */
int dfccl_mpi_bootstrap_init(MPI_Comm comm, dfcclBootstrap_t* bs);

/* Frees the duplicate, the cached sub-communicators and the state, and zeroes bs.  Safe on a zeroed
 * bs.  Call it after dfcclDestroy and before MPI_Finalize. */
void dfccl_mpi_bootstrap_fini(dfcclBootstrap_t* bs);

/* This process's rank among the processes of `comm` that share its node (MPI_COMM_TYPE_SHARED), to
 * choose a GPU; collective over `comm`; -1 on failure. */
int dfccl_mpi_local_rank(MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* DFCCL_MPI_BOOTSTRAP_H */
