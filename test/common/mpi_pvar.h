/*
 * MPI_T performance variables by name, for the programs that read coll/dfccl's counters (the
 * component's tests, mpi_allreduce_bench).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_MPI_PVAR_H
#define DFCCL_TEST_MPI_PVAR_H

#include <mpi.h>
#include <string.h>

/* The index of the MPI_T performance variable `name` (MPI_T initialized), or -1: a component's
 * variables exist only where Open MPI loaded it. */
static inline int find_pvar(const char* name) {
  int n = 0;
  if (MPI_T_pvar_get_num(&n) != MPI_SUCCESS) return -1;
  for (int i = 0; i < n; i++) {
    char pname[256], desc[256];
    int nlen = sizeof pname, dlen = sizeof desc, verbosity, var_class, bind, readonly, continuous, atomic;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_pvar_get_info(i, pname, &nlen, &verbosity, &var_class, &type, &enumtype, desc, &dlen, &bind, &readonly,
                            &continuous, &atomic) == MPI_SUCCESS &&
        strcmp(pname, name) == 0)
      return i;
  }
  return -1;
}

#endif /* DFCCL_TEST_MPI_PVAR_H */
