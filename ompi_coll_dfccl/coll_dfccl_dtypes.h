/*
 * MPI predefined datatypes and ops that DFCCL reduces natively (and, for broadcast and all-gather,
 * moves: those also take MPI_BYTE and MPI_CHAR).  Anything not listed (derived
 * datatypes, MPI_2INT & co, complex, bool, 16-bit integers, MAXLOC/MINLOC, logical and bitwise
 * ops, user ops) falls back to the previous component.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_COLL_DFCCL_DTYPES_H
#define MCA_COLL_DFCCL_DTYPES_H

#include <stdbool.h>
#include "mpi.h"
#include <dfccl.h>

#define DFCCL_INT_OF_SIZE(s) ((s) == 8 ? dfcclInt64 : (s) == 4 ? dfcclInt32 : dfcclNumTypes)
#define DFCCL_UINT_OF_SIZE(s) ((s) == 8 ? dfcclUint64 : (s) == 4 ? dfcclUint32 : dfcclNumTypes)

static const struct {
  MPI_Datatype mpi;
  dfcclDataType_t dfccl;
} dfccl_dtype_table[] = {
    {MPI_INT8_T, dfcclInt8},          {MPI_UINT8_T, dfcclUint8},
    {MPI_SIGNED_CHAR, dfcclInt8},     {MPI_UNSIGNED_CHAR, dfcclUint8},
    {MPI_INT32_T, dfcclInt32},        {MPI_UINT32_T, dfcclUint32},
    {MPI_INT64_T, dfcclInt64},        {MPI_UINT64_T, dfcclUint64},
    {MPI_INT, DFCCL_INT_OF_SIZE(sizeof(int))},
    {MPI_UNSIGNED, DFCCL_UINT_OF_SIZE(sizeof(unsigned))},
    {MPI_LONG, DFCCL_INT_OF_SIZE(sizeof(long))},
    {MPI_UNSIGNED_LONG, DFCCL_UINT_OF_SIZE(sizeof(unsigned long))},
    {MPI_LONG_LONG, DFCCL_INT_OF_SIZE(sizeof(long long))},
    {MPI_LONG_LONG_INT, DFCCL_INT_OF_SIZE(sizeof(long long))},
    {MPI_UNSIGNED_LONG_LONG, DFCCL_UINT_OF_SIZE(sizeof(unsigned long long))},
    {MPI_FLOAT, dfcclFloat32},        {MPI_DOUBLE, dfcclFloat64},
};

static inline bool dfccl_dtype_of(MPI_Datatype dt, dfcclDataType_t* out) {
  for (size_t i = 0; i < sizeof dfccl_dtype_table / sizeof dfccl_dtype_table[0]; i++)
    if (dfccl_dtype_table[i].mpi == dt) {
      *out = dfccl_dtype_table[i].dfccl;
      return *out != dfcclNumTypes;
    }
  return false;
}

/* Collectives that only move data (broadcast, all-gather) take bytes and characters too. */
static inline bool dfccl_move_dtype_of(MPI_Datatype dt, dfcclDataType_t* out) {
  if (dt == MPI_BYTE || dt == MPI_CHAR) {
    *out = dfcclUint8;
    return true;
  }
  return dfccl_dtype_of(dt, out);
}

static inline bool dfccl_op_of(MPI_Op op, dfcclRedOp_t* out) {
  if (op == MPI_SUM) *out = dfcclSum;
  else if (op == MPI_PROD) *out = dfcclProd;
  else if (op == MPI_MAX) *out = dfcclMax;
  else if (op == MPI_MIN) *out = dfcclMin;
  else return false;
  return true;
}

#endif
