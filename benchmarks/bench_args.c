/*
 * dfccl_bench options.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"
#include "dtypes.h"
#include "mpi_options.h" /* test/common */

#ifdef DFCCL_HAVE_NCCL
#define BENCH_NCCL_DEFAULT 1
#else
#define BENCH_NCCL_DEFAULT 0
#endif
#ifdef DFCCL_HAVE_CUDA
#define BENCH_TARGET_DEFAULT BENCH_TARGET_CUDA
#else
#define BENCH_TARGET_DEFAULT BENCH_TARGET_HOST
#endif

/* ---- names ---- */

/* The names nccl-tests uses first, then aliases; sizes and op names are dtypes.h's. */
static const struct {
  const char* name;
  const char* alias1;
  const char* alias2;
} type_table[dfcclNumTypes] = {
    [dfcclInt16] = {"int16", "short", NULL},       [dfcclUint16] = {"uint16", NULL, NULL},
    [dfcclInt8] = {"int8", "char", NULL},          [dfcclUint8] = {"uint8", NULL, NULL},
    [dfcclInt32] = {"int32", "int", NULL},         [dfcclUint32] = {"uint32", NULL, NULL},
    [dfcclInt64] = {"int64", NULL, NULL},          [dfcclUint64] = {"uint64", NULL, NULL},
    [dfcclFloat16] = {"half", "float16", "fp16"},  [dfcclBfloat16] = {"bfloat16", "bf16", NULL},
    [dfcclFloat32] = {"float", "float32", "fp32"}, [dfcclFloat64] = {"double", "float64", "fp64"},
};

const char* bench_type_name(dfcclDataType_t dtype) {
  return (unsigned)dtype < dfcclNumTypes ? type_table[dtype].name : "?";
}

size_t bench_type_size(dfcclDataType_t dtype) { return df_dtype_bytes(dtype); }

const char* bench_op_name(dfcclRedOp_t op) { return df_op_name(op); }

const char* bench_target_name(bench_target target) { return target == BENCH_TARGET_CUDA ? "cuda" : "host"; }

static int same(const char* a, const char* b) { return b != NULL && strcasecmp(a, b) == 0; }

static int parse_type(const char* s, dfcclDataType_t* out) {
  for (int t = 0; t < dfcclNumTypes; t++) {
    if (same(s, type_table[t].name) || same(s, type_table[t].alias1) || same(s, type_table[t].alias2)) {
      *out = (dfcclDataType_t)t;
      return 0;
    }
  }
  return -1;
}

static int parse_op(const char* s, dfcclRedOp_t* out) {
  for (int o = 0; o < dfcclNumOps; o++) {
    if (same(s, df_op_name((dfcclRedOp_t)o))) {
      *out = (dfcclRedOp_t)o;
      return 0;
    }
  }
  return -1;
}

/* One collective as -C names it, or "all". */
static int parse_colls(const char* s, int* colls) {
  int all = same(s, "all"), found = all;
  for (int c = 0; c < BENCH_NCOLLS; c++) {
    colls[c] = all || same(s, bench_coll_option((bench_coll)c));
    found |= colls[c];
  }
  return found ? 0 : -1;
}

/* ---- usage ---- */

#define TYPE_NAMES "int8 uint8 int16 uint16 int32 uint32 int64 uint64 half bfloat16 float double"
#define OP_NAMES "sum prod max min band bor bxor land lor lxor"
#define COLL_NAMES "allreduce allgather reducescatter broadcast reduce alltoall allgatherv, or all"

static void usage(const char* prog) {
  printf("Usage: mpirun -np N %s [options]\n"
         "Collective benchmark of DFCCL%s, one process per GPU (or per rank with -t host).\n"
         "  -C COLL   " COLL_NAMES "\n"
         "            (the seven one after the other) (default allreduce); allgatherv: rank r\n"
         "            sends (r + 1) x count elements\n"
         "  -r ROOT   root rank of broadcast and reduce (default 0)\n"
         "  -b SIZE   smallest message in bytes, K/M/G suffixes (default 8); all-gather(-v),\n"
         "            reduce-scatter and all-to-all: the whole gathered / scattered / sent buffer\n"
         "  -e SIZE   largest message in bytes (default 128M)\n"
         "  -f F      multiply the size by F between steps (default 2)\n"
         "  -n N      timed iterations per size (default 20)\n"
         "  -w N      warmup iterations per size (default 5)\n"
         "  -c 0|1    check results (default 1)\n"
         "  -d TYPE   " TYPE_NAMES " (default float)\n"
         "  -o OP     " OP_NAMES " (default sum; the last six for the integer types)\n"
         "  -t T      execution target: cuda or host (default %s); host keeps buffers in host\n"
         "            memory and uses no CUDA and no NCCL\n"
         "  -N 0|1    also run NCCL (default %d; needs a build with -DDFCCL_HAVE_NCCL)\n"
         "  -S        print dfcclGetStats of every rank at the end\n"
         "  -T SEC    give up on a DFCCL run that takes longer than SEC seconds (default 60)\n"
         "  -A API    register (dfcclRegister*, dfcclRun*) or comm (dfcclCommCreate, dfcclSubmit)\n"
         "            (default register)\n"
         "  -P 0|1    wait for a run by taking its completion (dfcclProgress: 1, the default), or\n"
         "            only through DFCCL's poller thread (0)\n"
         "  -h        this help\n",
         prog, BENCH_NCCL_DEFAULT ? " and NCCL" : "", bench_target_name(BENCH_TARGET_DEFAULT), BENCH_NCCL_DEFAULT);
}

/* ---- parsing ---- */

/* What no single option says is wrong: ends the program like a bad option. */
static void check_consistency(const options* op, bench_opts* o, int ncclGiven) {
  const char* why = NULL;
  char undefined_op[128];
  if (o->minBytes == 0 || o->maxBytes < o->minBytes) why = "need 0 < minbytes (-b) <= maxbytes (-e)";
  else if (o->factor <= 1.0) why = "the size factor (-f) must be greater than 1";
  else if (!df_op_defined_for(o->op, o->dtype)) {
    snprintf(undefined_op, sizeof undefined_op,
             "-o %s is not defined for -d %s (bitwise and logical ops: integer types only)", bench_op_name(o->op),
             bench_type_name(o->dtype));
    why = undefined_op;
  }
#ifndef DFCCL_HAVE_CUDA
  else if (o->target == BENCH_TARGET_CUDA)
    why = "-t cuda: this build has no CUDA (-DDFCCL_HAVE_CUDA)";
#endif
#ifndef DFCCL_HAVE_NCCL
  else if (o->runNccl) why = "-N 1: this build has no NCCL (-DDFCCL_HAVE_NCCL)";
#endif
  else if (o->runNccl && o->target == BENCH_TARGET_HOST && ncclGiven) why = "-N 1 needs -t cuda";
  if (why != NULL) options_fail(op, "%s", why);
  if (o->target == BENCH_TARGET_HOST) o->runNccl = 0; /* host target: no CUDA, no NCCL */
}

int bench_parse_args(int argc, char** argv, int nranks, bench_opts* o) {
  o->minBytes = 8;
  o->maxBytes = (size_t)128 << 20;
  o->factor = 2.0;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->dtype = dfcclFloat32;
  o->op = dfcclSum;
  o->target = BENCH_TARGET_DEFAULT;
  o->runNccl = BENCH_NCCL_DEFAULT;
  o->printStats = 0;
  o->timeoutSec = 60.0;
  for (int c = 0; c < BENCH_NCOLLS; c++) o->colls[c] = c == BENCH_ALLREDUCE;
  o->root = 0;
  o->viaComm = 0;
  o->takeCompletions = 1;

  static const char* const targets[] = {"cuda", "host", NULL};
  static const char* const apis[] = {"register", "comm", NULL};
  int ncclGiven = 0;
  options op = mpi_options("dfccl_bench", "Try 'dfccl_bench -h'.", argc, argv, "b:e:f:n:w:c:d:o:t:N:ST:C:r:A:P:h");
  for (int opt; (opt = options_next(&op)) != -1;) {
    switch (opt) {
      case 'b': o->minBytes = option_bytes(&op); break;
      case 'e': o->maxBytes = option_bytes(&op); break;
      case 'f': o->factor = option_double(&op, 1.0); break;
      case 'n': o->iters = option_int(&op, 1, 1 << 30); break;
      case 'w': o->warmup = option_int(&op, 0, 1 << 30); break;
      case 'c': o->check = option_int(&op, 0, 1); break;
      case 'd':
        if (parse_type(op.value, &o->dtype) != 0)
          options_fail(&op, "-d: expected one of " TYPE_NAMES ", got '%s'", op.value);
        break;
      case 'o':
        if (parse_op(op.value, &o->op) != 0) options_fail(&op, "-o: expected one of " OP_NAMES ", got '%s'", op.value);
        break;
      case 't': o->target = option_choice(&op, targets) == 0 ? BENCH_TARGET_CUDA : BENCH_TARGET_HOST; break;
      case 'N':
        o->runNccl = option_int(&op, 0, 1);
        ncclGiven = 1;
        break;
      case 'S': o->printStats = 1; break;
      case 'T': o->timeoutSec = option_double(&op, 0.001); break;
      case 'C':
        if (parse_colls(op.value, o->colls) != 0)
          options_fail(&op, "-C: expected one of " COLL_NAMES ", got '%s'", op.value);
        break;
      case 'r': o->root = option_int(&op, 0, nranks - 1); break;
      case 'A': o->viaComm = option_choice(&op, apis) == 1; break;
      case 'P': o->takeCompletions = option_int(&op, 0, 1); break;
      case 'h':
        if (bench_rank == 0) usage(argv[0]);
        return 1;
    }
  }
  check_consistency(&op, o, ncclGiven);
  return 0;
}
