/*
 * dfccl_bench: bandwidth of DFCCL's collectives, and of NCCL's in the same run, under mpirun.
 * See README.md for usage and bench.h for the other files.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "mpi_bootstrap.h"

int bench_rank = 0;

/* ---- errors ---- */

void bench_die(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  fprintf(stderr, "[rank %d] dfccl_bench: %s:%d: ", bench_rank, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

const char* bench_mpi_error_string(int rc, char* buf, int len) {
  int n = 0;
  if (MPI_Error_string(rc, buf, &n) != MPI_SUCCESS) snprintf(buf, (size_t)len, "MPI error %d", rc);
  return buf;
}

double bench_now_sec(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) BENCH_DIE("clock_gettime(CLOCK_MONOTONIC) failed");
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- sizes, libraries, measurements ---- */

typedef struct {
  bench_coll coll;
  int index;    /* DFCCL collective ids 2*index (out of place) and 2*index+1 (in place) */
  size_t count; /* as passed to the collective (all-gather-v: its blocks' unit) */
  size_t bytes; /* nccl-tests' size: count * type size * bench_coll_count_unit */
} bench_size;

typedef enum { LIB_DFCCL, LIB_NCCL, LIB_COUNT } bench_lib;
static const char* const lib_names[LIB_COUNT] = {"DFCCL", "NCCL"};

typedef struct {
  double timeUs;
  unsigned long long wrong;
} bench_result;

typedef struct {
  const bench_opts* opts;
  int rank, nranks;
  int nlibs;             /* 1: DFCCL; 2: DFCCL and NCCL */
  int nextIndex;         /* of the next size, over all collectives */
  bench_pattern pattern; /* of the collective being measured */
  bench_buffers buffers;
  bench_dfccl* dfccl;
#ifdef DFCCL_HAVE_NCCL
  bench_nccl* nccl;
#endif
  double busbwSum[LIB_COUNT]; /* of the collective being measured */
  int measurements[LIB_COUNT];
  unsigned long long wrong[LIB_COUNT];      /* of the collective being measured */
  unsigned long long totalWrong[LIB_COUNT]; /* over all collectives */
} bench_state;

static int coll_id(const bench_size* z, int inPlace) { return 2 * z->index + inPlace; }

static void register_size(bench_state* s, const bench_size* z) {
  for (int inPlace = 0; inPlace < 1 + bench_coll_in_place(z->coll); inPlace++)
    bench_dfccl_register(s->dfccl, z->coll, z->count, s->opts->dtype, s->opts->op, s->opts->root, coll_id(z, inPlace));
}

static void run_lib(bench_state* s, bench_lib lib, const bench_size* z, const bench_layout* l, int times) {
  void* send = bench_buffers_send(&s->buffers, l);
  void* recv = bench_buffers_recv(&s->buffers, l);
  if (lib == LIB_DFCCL) {
    bench_dfccl_run(s->dfccl, z->coll, coll_id(z, l->inPlace), send, recv, times);
    return;
  }
#ifdef DFCCL_HAVE_NCCL
  bench_nccl_run(s->nccl, z->coll, send, recv, z->count, s->opts->dtype, s->opts->op, s->opts->root, times);
#endif
}

/* Warmup, timed runs (slowest rank), then one checked run on fresh data. */
static bench_result measure(bench_state* s, bench_lib lib, const bench_size* z, int inPlace) {
  const bench_opts* o = s->opts;
  bench_result r = {0.0, 0};
  bench_layout l;
  bench_coll_layout(&l, z->coll, z->count, bench_type_size(o->dtype), s->rank, s->nranks, o->root, inPlace);
  bench_buffers_prepare(&s->buffers, &s->pattern, &l);
  run_lib(s, lib, z, &l, o->warmup);

  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  double start = bench_now_sec();
  run_lib(s, lib, z, &l, o->iters);
  double mine = (bench_now_sec() - start) / o->iters, slowest = 0.0;
  CHECK_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  r.timeUs = slowest * 1e6;

  if (o->check) {
    bench_buffers_prepare(&s->buffers, &s->pattern, &l);
    run_lib(s, lib, z, &l, 1);
    unsigned long long wrong = bench_buffers_count_wrong(&s->buffers, &s->pattern, &l);
    CHECK_MPI(MPI_Allreduce(&wrong, &r.wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  }
  return r;
}

/* ---- output (rank 0) ---- */

static void print_result(bench_state* s, bench_lib lib, const bench_size* z, const bench_result* r) {
  double algbw = r->timeUs > 0 ? (double)z->bytes / r->timeUs * 1e-3 : 0.0; /* GB/s */
  double busbw = algbw * bench_coll_busbw_factor(z->coll, s->nranks);
  s->busbwSum[lib] += busbw;
  s->measurements[lib]++;
  s->wrong[lib] += r->wrong;
  if (s->rank != 0) return;
  printf("  %9.2f %7.2f %7.2f", r->timeUs, algbw, busbw);
  if (s->opts->check) printf(" %7llu", r->wrong);
  else printf(" %7s", "N/A");
}

static void run_size(bench_state* s, const bench_size* z) {
  if (s->rank == 0)
    printf("%12zu %12zu %9s %6s", z->bytes, z->count, bench_type_name(s->opts->dtype),
           bench_coll_reduces(z->coll) ? bench_op_name(s->opts->op) : "none");
  register_size(s, z);
  for (int lib = 0; lib < s->nlibs; lib++) {
    for (int inPlace = 0; inPlace < 2; inPlace++) {
      if (inPlace && !bench_coll_in_place(z->coll)) {
        if (s->rank == 0) printf("  %9s %7s %7s %7s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      bench_result r = measure(s, (bench_lib)lib, z, inPlace);
      print_result(s, (bench_lib)lib, z, &r);
    }
  }
  if (s->rank == 0) {
    printf("\n");
    fflush(stdout);
  }
}

static void run_sizes(bench_state* s, bench_coll coll) {
  const bench_opts* o = s->opts;
  size_t unit = bench_type_size(o->dtype) * bench_coll_count_unit(coll, s->nranks), lastCount = 0;
  for (size_t bytes = o->minBytes;;) {
    bench_size z = {coll, s->nextIndex, bytes / unit, bytes / unit * unit};
    if (z.count > 0 && z.count != lastCount) {
      run_size(s, &z);
      lastCount = z.count;
      s->nextIndex++;
    }
    double next = (double)bytes * o->factor;
    if (next > (double)o->maxBytes) break;
    bytes = (size_t)next > bytes ? (size_t)next : bytes + 1;
  }
}

static void describe_rank(const bench_state* s, int device, char* line, size_t len) {
  char host[MPI_MAX_PROCESSOR_NAME];
  int hostLen = 0;
  CHECK_MPI(MPI_Get_processor_name(host, &hostLen));
  int n = snprintf(line, len, "#  Rank %3d  Pid %7d  on %-16s ", s->rank, (int)getpid(), host);
  if (n < 0 || (size_t)n >= len) return;
  if (s->opts->target == BENCH_TARGET_HOST) {
    snprintf(line + n, len - (size_t)n, "host target");
    return;
  }
#ifdef DFCCL_HAVE_CUDA
  struct cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  snprintf(line + n, len - (size_t)n, "device %2d [%04x:%02x:%02x.0] %.64s", device, prop.pciDomainID, prop.pciBusID,
           prop.pciDeviceID, prop.name);
#else
  (void)device;
#endif
}

static void print_build(const bench_state* s) {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  (void)s; /* unused in a host-only build */
  CHECK_MPI(MPI_Get_library_version(mpi, &len));
  mpi[strcspn(mpi, ",\n")] = '\0';
  printf("# Build: DFCCL %d.%d, %s", DFCCL_VERSION_MAJOR, DFCCL_VERSION_MINOR, mpi);
#ifdef DFCCL_HAVE_CUDA
  if (s->opts->target == BENCH_TARGET_CUDA) {
    int runtime = 0, driver = 0;
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    CHECK_CUDA(cudaDriverGetVersion(&driver));
    printf(", CUDA runtime %d.%d driver %d.%d", runtime / 1000, (runtime % 1000) / 10, driver / 1000,
           (driver % 1000) / 10);
  }
#endif
#ifdef DFCCL_HAVE_NCCL
  if (s->nlibs > 1) {
    char nccl[32];
    bench_nccl_version(nccl, sizeof(nccl));
    printf(", NCCL %s", nccl);
  }
#endif
#ifdef __VERSION__
  printf(", compiler %s", __VERSION__);
#endif
  printf(", built %s %s\n", __DATE__, __TIME__);
}

static void print_header(const bench_state* s, int device) {
  const bench_opts* o = s->opts;
  char line[320];
  describe_rank(s, device, line, sizeof(line));
  char* all = NULL;
  if (s->rank == 0) {
    all = malloc((size_t)s->nranks * sizeof(line));
    if (all == NULL) BENCH_DIE("out of memory");
  }
  CHECK_MPI(MPI_Gather(line, (int)sizeof(line), MPI_CHAR, all, (int)sizeof(line), MPI_CHAR, 0, MPI_COMM_WORLD));
  if (s->rank != 0) return;

  char date[64];
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm) == NULL || strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    snprintf(date, sizeof(date), "unknown");
  int rooted = 0;
  printf("# dfccl_bench");
  for (int c = 0; c < BENCH_NCOLLS; c++) {
    if (!o->colls[c]) continue;
    printf(" %s", bench_coll_name((bench_coll)c));
    rooted |= bench_coll_rooted((bench_coll)c);
  }
  printf(": minBytes %zu maxBytes %zu factor %g warmup %d iters %d check %d target %s", o->minBytes, o->maxBytes,
         o->factor, o->warmup, o->iters, o->check, bench_target_name(o->target));
  if (rooted) printf(" root %d", o->root);
  printf("\n");
  printf("# Date: %s\n", date);
  print_build(s);
  printf("# nranks %d, libraries: DFCCL%s\n#\n# Using devices\n", s->nranks, s->nlibs > 1 ? " NCCL" : "");
  for (int r = 0; r < s->nranks; r++) printf("%s\n", all + (size_t)r * sizeof(line));
  printf("#\n");
  free(all);
  fflush(stdout);
}

/* The column headings of one collective's table, its name in the top left corner. */
static void print_table_header(const bench_state* s, bench_coll coll) {
  if (s->rank != 0) return;
  const char* note = bench_coll_note(coll);
  if (note != NULL) printf("# %s\n", note); /* above the title: log readers take the title's line */
  char title[48];
  if (bench_coll_rooted(coll)) snprintf(title, sizeof(title), "%s, root %d", bench_coll_name(coll), s->opts->root);
  else snprintf(title, sizeof(title), "%s", bench_coll_name(coll));
  printf("# %-40s", title); /* under the "#" line that ends the header or a summary */
  for (int m = 0; m < 2 * s->nlibs; m++) {
    char label[40];
    int n = snprintf(label, sizeof(label), "%s %s", lib_names[m / 2], m % 2 ? "in-place" : "out-of-place");
    int pad = (33 - n) / 2;
    printf("  %*s%-*s", pad, "", 33 - pad, label);
  }
  printf("\n#%11s %12s %9s %6s", "size", "count", "type", "redop");
  for (int m = 0; m < 2 * s->nlibs; m++) printf("  %9s %7s %7s %7s", "time", "algbw", "busbw", "#wrong");
  printf("\n#%11s %12s %9s %6s", "(B)", "(elements)", "", "");
  for (int m = 0; m < 2 * s->nlibs; m++) printf("  %9s %7s %7s %7s", "(us)", "(GB/s)", "(GB/s)", "");
  printf("\n");
  fflush(stdout);
}

static void print_summary(const bench_state* s) {
  if (s->rank != 0) return;
  printf("#\n");
  for (int lib = 0; lib < s->nlibs; lib++) {
    double avg = s->measurements[lib] ? s->busbwSum[lib] / s->measurements[lib] : 0.0;
    printf("# %-5s Avg bus bandwidth    : %g GB/s\n", lib_names[lib], avg);
    if (s->opts->check) printf("# %-5s Wrong elements       : %llu\n", lib_names[lib], s->wrong[lib]);
  }
  printf("#\n");
  fflush(stdout);
}

#define BENCH_NSTATS 11

static void print_stats(const bench_state* s) {
  dfcclStats_t st;
  CHECK_DFCCL(dfcclGetStats(bench_dfccl_ctx(s->dfccl), &st));
  uint64_t mine[BENCH_NSTATS] = {st.sqesRead,       st.preemptions, st.contextLoads, st.contextSaves,
                                 st.voluntaryQuits, st.relaunches,  st.launches,     st.maxTaskQueueLength,
                                 st.completions,    st.sqFullWaits, st.cqFullWaits};
  uint64_t* all = NULL;
  if (s->rank == 0) {
    all = malloc((size_t)s->nranks * sizeof(mine));
    if (all == NULL) BENCH_DIE("out of memory");
  }
  CHECK_MPI(MPI_Gather(mine, BENCH_NSTATS, MPI_UINT64_T, all, BENCH_NSTATS, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  if (s->rank != 0) return;
  static const char* const names[BENCH_NSTATS] = {"sqesRead", "preempt",  "ctxLoads", "ctxSaves",
                                                  "volQuits", "relaunch", "launches", "maxTaskQ",
                                                  "complete", "sqFull",   "cqFull"};
  printf("# DFCCL stats (dfcclGetStats)\n#  rank");
  for (int i = 0; i < BENCH_NSTATS; i++) printf(" %10s", names[i]);
  printf("\n");
  for (int r = 0; r < s->nranks; r++) {
    printf("#  %4d", r);
    for (int i = 0; i < BENCH_NSTATS; i++) printf(" %10llu", (unsigned long long)all[r * BENCH_NSTATS + i]);
    printf("\n");
  }
  fflush(stdout);
  free(all);
}

/* ---- set-up and main ---- */

/* cudaSetDevice(node-local rank % devices); -1 on the host target. */
static int select_device(const bench_opts* o) {
  if (o->target == BENCH_TARGET_HOST) return -1;
#ifdef DFCCL_HAVE_CUDA
  int local = dfccl_mpi_local_rank(MPI_COMM_WORLD);
  if (local < 0) BENCH_DIE("could not find the node-local rank");
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  if (count < 1) BENCH_DIE("no CUDA device");
  CHECK_CUDA(cudaSetDevice(local % count));
  return local % count;
#else
  BENCH_DIE("the cuda target needs a build with -DDFCCL_HAVE_CUDA");
#endif
}

static void setup(bench_state* s, const bench_opts* o, int device) {
  bench_buffers_alloc(&s->buffers, o->target, o->maxBytes);
  s->dfccl = bench_dfccl_init(o, device);
#ifdef DFCCL_HAVE_NCCL
  if (o->runNccl) s->nccl = bench_nccl_init(s->rank, s->nranks, s->buffers.stream);
#endif
}

static void teardown(bench_state* s) {
#ifdef DFCCL_HAVE_NCCL
  bench_nccl_fini(s->nccl);
#endif
  bench_dfccl_fini(s->dfccl);
  bench_buffers_free(&s->buffers);
}

/* One collective's table and summary. */
static void run_coll(bench_state* s, bench_coll coll) {
  const bench_opts* o = s->opts;
  bench_pattern_init(&s->pattern, coll, o->dtype, o->op, s->rank, s->nranks, o->root);
  for (int lib = 0; lib < LIB_COUNT; lib++) {
    s->busbwSum[lib] = 0.0;
    s->measurements[lib] = 0;
    s->wrong[lib] = 0;
  }
  print_table_header(s, coll);
  run_sizes(s, coll);
  print_summary(s);
  for (int lib = 0; lib < LIB_COUNT; lib++) s->totalWrong[lib] += s->wrong[lib];
  bench_pattern_fini(&s->pattern);
}

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "dfccl_bench: MPI_Init failed\n");
    return 1;
  }
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  bench_state s;
  memset(&s, 0, sizeof(s));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &s.rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &s.nranks));
  bench_rank = s.rank;

  bench_opts o;
  if (bench_parse_args(argc, argv, s.nranks, &o) != 0) { /* -h */
    MPI_Finalize();
    return 0;
  }
  s.opts = &o;
  s.nlibs = o.runNccl ? 2 : 1;

  int device = select_device(&o);
  setup(&s, &o, device);
  print_header(&s, device);
  for (int c = 0; c < BENCH_NCOLLS; c++)
    if (o.colls[c]) run_coll(&s, (bench_coll)c);
  if (o.printStats) print_stats(&s);
  teardown(&s);

  unsigned long long wrong = s.totalWrong[LIB_DFCCL] + s.totalWrong[LIB_NCCL];
  CHECK_MPI(MPI_Finalize());
  return wrong != 0 ? 1 : 0;
}
