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
#include "bench_parse.h"
#include "dtypes.h"

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

static const struct {
  const char* name;
  const char* alias1;
  const char* alias2;
  size_t size;
} type_table[dfcclNumTypes] = {
    [dfcclInt8] = {"int8", "char", NULL, 1},          [dfcclUint8] = {"uint8", NULL, NULL, 1},
    [dfcclInt16] = {"int16", "short", NULL, 2},       [dfcclUint16] = {"uint16", NULL, NULL, 2},
    [dfcclInt32] = {"int32", "int", NULL, 4},         [dfcclUint32] = {"uint32", NULL, NULL, 4},
    [dfcclInt64] = {"int64", NULL, NULL, 8},          [dfcclUint64] = {"uint64", NULL, NULL, 8},
    [dfcclFloat16] = {"half", "float16", "fp16", 2},  [dfcclBfloat16] = {"bfloat16", "bf16", NULL, 2},
    [dfcclFloat32] = {"float", "float32", "fp32", 4}, [dfcclFloat64] = {"double", "float64", "fp64", 8},
};

static const char* const op_names[dfcclNumOps] = {
    [dfcclSum] = "sum",   [dfcclProd] = "prod", [dfcclMax] = "max",   [dfcclMin] = "min",
    [dfcclBand] = "band", [dfcclBor] = "bor",   [dfcclBxor] = "bxor", [dfcclLand] = "land",
    [dfcclLor] = "lor",   [dfcclLxor] = "lxor"};

const char* bench_type_name(dfcclDataType_t dtype) {
  return (unsigned)dtype < dfcclNumTypes ? type_table[dtype].name : "?";
}

size_t bench_type_size(dfcclDataType_t dtype) {
  return (unsigned)dtype < dfcclNumTypes ? type_table[dtype].size : 0;
}

const char* bench_op_name(dfcclRedOp_t op) { return (unsigned)op < dfcclNumOps ? op_names[op] : "?"; }

const char* bench_target_name(bench_target target) {
  return target == BENCH_TARGET_CUDA ? "cuda" : "host";
}

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
    if (same(s, op_names[o])) {
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

/* ---- numbers ---- */

/* ---- usage ---- */

static void usage(const char* prog) {
  printf("Usage: mpirun -np N %s [options]\n"
         "Collective benchmark of DFCCL%s, one process per GPU (or per rank with -t host).\n"
         "  -C COLL   allreduce allgather reducescatter broadcast reduce, or all (one after the\n"
         "            other) (default allreduce)\n"
         "  -r ROOT   root rank of broadcast and reduce (default 0)\n"
         "  -b SIZE   smallest message in bytes, K/M/G suffixes (default 8); all-gather and\n"
         "            reduce-scatter: the whole gathered / scattered buffer\n"
         "  -e SIZE   largest message in bytes (default 128M)\n"
         "  -f F      multiply the size by F between steps (default 2)\n"
         "  -n N      timed iterations per size (default 20)\n"
         "  -w N      warmup iterations per size (default 5)\n"
         "  -c 0|1    check results (default 1)\n"
         "  -d TYPE   int8 uint8 int16 uint16 int32 uint32 int64 uint64 half bfloat16 float double\n"
         "            (default float)\n"
         "  -o OP     sum prod max min, and for the integer types band bor bxor land lor lxor\n"
         "            (default sum)\n"
         "  -t T      execution target: cuda or host (default %s); host keeps buffers in host\n"
         "            memory and uses no CUDA and no NCCL\n"
         "  -N 0|1    also run NCCL (default %d; needs a build with -DDFCCL_HAVE_NCCL)\n"
         "  -S        print dfcclGetStats of every rank at the end\n"
         "  -T SEC    give up on a DFCCL run that takes longer than SEC seconds (default 60)\n"
         "  -h        this help\n",
         prog, BENCH_NCCL_DEFAULT ? " and NCCL" : "", bench_target_name(BENCH_TARGET_DEFAULT),
         BENCH_NCCL_DEFAULT);
}

/* ---- parsing ---- */

static int check_consistency(bench_opts* o, int ncclGiven, int rank, int nranks) {
  char undefined_op[128];
  const char* why = NULL;
  if (o->minBytes == 0 || o->maxBytes < o->minBytes) why = "need 0 < minbytes (-b) <= maxbytes (-e)";
  else if (o->root >= nranks) why = "the root (-r) must be a rank, below the number of ranks";
  else if (o->factor <= 1.0) why = "the size factor (-f) must be greater than 1";
  else if (!df_op_defined_for(o->op, o->dtype)) {
    snprintf(undefined_op, sizeof undefined_op, "-o %s is not defined for -d %s (bitwise and logical ops: integer types only)",
             bench_op_name(o->op), bench_type_name(o->dtype));
    why = undefined_op;
  }
#ifndef DFCCL_HAVE_CUDA
  else if (o->target == BENCH_TARGET_CUDA) why = "-t cuda: this build has no CUDA (-DDFCCL_HAVE_CUDA)";
#endif
#ifndef DFCCL_HAVE_NCCL
  else if (o->runNccl) why = "-N 1: this build has no NCCL (-DDFCCL_HAVE_NCCL)";
#endif
  else if (o->runNccl && o->target == BENCH_TARGET_HOST && ncclGiven) why = "-N 1 needs -t cuda";
  if (why != NULL) {
    if (rank == 0) fprintf(stderr, "dfccl_bench: %s\n", why);
    return 2;
  }
  if (o->target == BENCH_TARGET_HOST) o->runNccl = 0; /* host target: no CUDA, no NCCL */
  return 0;
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

  int ncclGiven = 0, bad = 0, opt;
  const char* badArg = NULL;
  opterr = 0;
  while (!bad && (opt = getopt(argc, argv, "b:e:f:n:w:c:d:o:t:N:ST:C:r:h")) != -1) {
    switch (opt) {
      case 'b': bad = parse_bytes(optarg, &o->minBytes); break;
      case 'e': bad = parse_bytes(optarg, &o->maxBytes); break;
      case 'f': bad = parse_double(optarg, 1.0, &o->factor); break;
      case 'n': bad = parse_int(optarg, 1, 1 << 30, &o->iters); break;
      case 'w': bad = parse_int(optarg, 0, 1 << 30, &o->warmup); break;
      case 'c': bad = parse_int(optarg, 0, 1, &o->check); break;
      case 'd': bad = parse_type(optarg, &o->dtype); break;
      case 'o': bad = parse_op(optarg, &o->op); break;
      case 't':
        if (same(optarg, "cuda")) o->target = BENCH_TARGET_CUDA;
        else if (same(optarg, "host")) o->target = BENCH_TARGET_HOST;
        else bad = -1;
        break;
      case 'N': bad = parse_int(optarg, 0, 1, &o->runNccl); ncclGiven = 1; break;
      case 'S': o->printStats = 1; break;
      case 'T': bad = parse_double(optarg, 0.001, &o->timeoutSec); break;
      case 'C': bad = parse_colls(optarg, o->colls); break;
      case 'r': bad = parse_int(optarg, 0, 1 << 30, &o->root); break;
      case 'h':
        if (bench_rank == 0) usage(argv[0]);
        return 1;
      default: bad = -1; optarg = NULL; break;
    }
    if (bad) badArg = optarg;
  }
  if (!bad && optind < argc) {
    bad = -1;
    badArg = argv[optind];
    opt = 0;
  }
  if (bad) {
    if (bench_rank == 0) {
      if (opt == 0) fprintf(stderr, "dfccl_bench: unexpected argument '%s'\n", badArg);
      else if (badArg != NULL) fprintf(stderr, "dfccl_bench: bad value '%s' for -%c\n", badArg, opt);
      else fprintf(stderr, "dfccl_bench: unknown option or missing value: -%c\n", optopt);
      fprintf(stderr, "Try '%s -h'.\n", argv[0]);
    }
    return 2;
  }
  return check_consistency(o, ncclGiven, bench_rank, nranks);
}
