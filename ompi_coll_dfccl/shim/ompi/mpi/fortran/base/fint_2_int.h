/*
 * Stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which Debian's and Ubuntu's
 * libopenmpi-dev do not ship although ompi/op/op.h includes it.  Fortran INTEGER is a C int on the
 * supported hosts (Debian 12 and Ubuntu 24.04, amd64), so the conversions are plain casts.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SHIM_FINT_2_INT_H
#define DFCCL_SHIM_FINT_2_INT_H

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))
#define OMPI_PFINT_2_PINT(a) ((int*)(a))

#endif
