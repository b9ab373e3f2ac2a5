/*
 * MPI datatypes and ops -> DFCCL.
 *
 * Reductions: a predefined datatype and a predefined op that Open MPI itself accepts together
 * (Open MPI's own table, ompi_op_ddt_map and the op's intrinsic functions, decides: MPI_CHAR is a
 * signed byte there, MPI_OFFSET unsigned, MPI_WCHAR takes no op), reduced by DFCCL on the integer
 * or floating-point type of the same size and signedness.  Complex numbers are pairs of floats for
 * MPI_SUM.  Everything else -- MPI_MINLOC/MAXLOC and the pair types, user ops, long double,
 * derived datatypes -- falls back (staged through host memory when the buffers are device memory).
 *
 * Broadcast and all-gather only move data: any datatype whose elements lie contiguously (every
 * predefined type, MPI_Type_contiguous, committed derived types without gaps) moves as its bytes.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef MCA_COLL_DFCCL_DTYPES_H
#define MCA_COLL_DFCCL_DTYPES_H

#include <stdbool.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/op/op.h"
#include "ompi/op/op.h"

#include <dfccl.h>

/* What DFCCL reduces for a call: `per_element` DFCCL elements of `dtype` per MPI element. */
typedef struct {
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  size_t per_element;
} dfccl_reduction_t;

static inline dfcclDataType_t dfccl_int_of(size_t bytes, bool is_signed) {
  switch (bytes) {
    case 1: return is_signed ? dfcclInt8 : dfcclUint8;
    case 2: return is_signed ? dfcclInt16 : dfcclUint16;
    case 4: return is_signed ? dfcclInt32 : dfcclUint32;
    case 8: return is_signed ? dfcclInt64 : dfcclUint64;
    default: return dfcclNumTypes;
  }
}

static inline dfcclDataType_t dfccl_float_of(size_t bytes) {
  return bytes == 4 ? dfcclFloat32 : bytes == 8 ? dfcclFloat64 : dfcclNumTypes;
}

/* The DFCCL type of one of Open MPI's reduction classes (OMPI_OP_BASE_TYPE_*) of `bytes` bytes;
 * *pairs when an element is two of them (complex). */
static inline dfcclDataType_t dfccl_dtype_of_class(int cls, size_t bytes, size_t* per_element) {
  *per_element = 1;
  /* clang-format off */
  switch (cls) {
    case OMPI_OP_BASE_TYPE_INT8_T: case OMPI_OP_BASE_TYPE_INT16_T: case OMPI_OP_BASE_TYPE_INT32_T:
    case OMPI_OP_BASE_TYPE_INT64_T: case OMPI_OP_BASE_TYPE_LONG: case OMPI_OP_BASE_TYPE_INTEGER:
    case OMPI_OP_BASE_TYPE_INTEGER1: case OMPI_OP_BASE_TYPE_INTEGER2: case OMPI_OP_BASE_TYPE_INTEGER4:
    case OMPI_OP_BASE_TYPE_INTEGER8:
      return dfccl_int_of(bytes, true);
    case OMPI_OP_BASE_TYPE_UINT8_T: case OMPI_OP_BASE_TYPE_UINT16_T: case OMPI_OP_BASE_TYPE_UINT32_T:
    case OMPI_OP_BASE_TYPE_UINT64_T: case OMPI_OP_BASE_TYPE_UNSIGNED_LONG: case OMPI_OP_BASE_TYPE_BYTE:
      return dfccl_int_of(bytes, false);
    case OMPI_OP_BASE_TYPE_BOOL: /* C _Bool: 0 or 1, for the logical ops */
      return dfccl_int_of(bytes, false);
    case OMPI_OP_BASE_TYPE_FLOAT: case OMPI_OP_BASE_TYPE_DOUBLE: case OMPI_OP_BASE_TYPE_REAL:
    case OMPI_OP_BASE_TYPE_REAL4: case OMPI_OP_BASE_TYPE_REAL8: case OMPI_OP_BASE_TYPE_DOUBLE_PRECISION:
      return dfccl_float_of(bytes);
    case OMPI_OP_BASE_TYPE_C_FLOAT_COMPLEX: case OMPI_OP_BASE_TYPE_C_DOUBLE_COMPLEX:
      *per_element = 2;
      return dfccl_float_of(bytes / 2);
    default:
      return dfcclNumTypes; /* long double, Fortran logical, pair types for MINLOC/MAXLOC, ... */
  }
  /* clang-format on */
}

static inline bool dfccl_op_of(const struct ompi_op_t* op, dfcclRedOp_t* out) {
  switch (op->o_f_to_c_index) {
    case OMPI_OP_BASE_FORTRAN_SUM: *out = dfcclSum; return true;
    case OMPI_OP_BASE_FORTRAN_PROD: *out = dfcclProd; return true;
    case OMPI_OP_BASE_FORTRAN_MAX: *out = dfcclMax; return true;
    case OMPI_OP_BASE_FORTRAN_MIN: *out = dfcclMin; return true;
    case OMPI_OP_BASE_FORTRAN_BAND: *out = dfcclBand; return true;
    case OMPI_OP_BASE_FORTRAN_BOR: *out = dfcclBor; return true;
    case OMPI_OP_BASE_FORTRAN_BXOR: *out = dfcclBxor; return true;
    case OMPI_OP_BASE_FORTRAN_LAND: *out = dfcclLand; return true;
    case OMPI_OP_BASE_FORTRAN_LOR: *out = dfcclLor; return true;
    case OMPI_OP_BASE_FORTRAN_LXOR: *out = dfcclLxor; return true;
    default: return false; /* MAXLOC, MINLOC, REPLACE, NO_OP */
  }
}

/* How DFCCL reduces `count` elements of dtype with op, or NULL (*why set) when it cannot. */
static inline bool dfccl_reduction_of(struct ompi_datatype_t* dtype, struct ompi_op_t* op, dfccl_reduction_t* out,
                                      const char** why) {
  if (!ompi_op_is_intrinsic(op) || !dfccl_op_of(op, &out->op)) {
    *why = "op (a user op, MINLOC, MAXLOC or REPLACE)";
    return false;
  }
  if (!ompi_datatype_is_predefined(dtype) || dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED) {
    *why = "datatype (derived)";
    return false;
  }
  int cls = ompi_op_ddt_map[dtype->id];
  if (cls < 0 || op->o_func.intrinsic.fns[cls] == NULL) {
    *why = "datatype and op (Open MPI does not reduce this pair)";
    return false;
  }
  size_t bytes;
  ompi_datatype_type_size(dtype, &bytes);
  out->dtype = dfccl_dtype_of_class(cls, bytes, &out->per_element);
  if (out->dtype == dfcclNumTypes || (out->per_element == 2 && out->op != dfcclSum)) {
    *why = "datatype (no DFCCL equivalent for this op)";
    return false;
  }
  return true;
}

/* The bytes of `count` elements of dtype when they lie contiguously in memory (*start_gap: where
 * they start, from the buffer pointer), else false. */
static inline bool dfccl_contiguous_bytes(struct ompi_datatype_t* dtype, size_t count, size_t* bytes,
                                          ptrdiff_t* start_gap) {
  if (count > INT32_MAX || !ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t)count)) return false;
  size_t size;
  ptrdiff_t true_lb, true_extent;
  ompi_datatype_type_size(dtype, &size);
  ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
  *bytes = size * count;
  *start_gap = true_lb;
  return true;
}

#endif
