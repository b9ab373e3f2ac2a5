/*
 * dfccl_bench: all-reduce bandwidth of DFCCL, and of NCCL in the same run, under mpirun.
 * See README.md for usage and bench.h for the other files.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
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

static double now_sec(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) BENCH_DIE("clock_gettime(CLOCK_MONOTONIC) failed");
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- DFCCL: one run at a time, each waited for through its completion callback ---- */

typedef struct {
  dfcclRankCtx_t ctx;
  dfcclBootstrap_t bootstrap;
  double timeoutSec;
  uint64_t submitted;            /* runs submitted by the main thread  */
  atomic_uint_fast64_t completed; /* runs completed, by the callback     */
  atomic_int expectedColl;       /* the collective of the run in flight */
  atomic_int failedStatus;       /* first error a callback reported     */
  atomic_int failedColl;
} bench_dfccl;

/* Runs on DFCCL's poller thread. */
static void dfccl_done(int collId, dfcclResult_t status, void* arg) {
  bench_dfccl* d = arg;
  int bad = status != dfcclSuccess ? (int)status
          : collId != atomic_load(&d->expectedColl) ? (int)dfcclInternalError : 0;
  if (bad) {
    int none = dfcclSuccess;
    if (atomic_compare_exchange_strong(&d->failedStatus, &none, bad)) atomic_store(&d->failedColl, collId);
  }
  atomic_fetch_add_explicit(&d->completed, 1, memory_order_release);
}

static void dfccl_init(bench_dfccl* d, const bench_opts* o, int device) {
  memset(d, 0, sizeof(*d));
  atomic_init(&d->completed, 0);
  atomic_init(&d->expectedColl, -1);
  atomic_init(&d->failedStatus, dfcclSuccess);
  atomic_init(&d->failedColl, -1);
  d->timeoutSec = o->timeoutSec;
  dfcclInitArgs_t args;
  memset(&args, 0, sizeof(args));
  args.target = o->target == BENCH_TARGET_CUDA ? dfcclTargetCuda : dfcclTargetHost;
  args.device = device;
  if (dfccl_mpi_bootstrap_init(MPI_COMM_WORLD, &args.bootstrap) != 0)
    BENCH_DIE("dfccl_mpi_bootstrap_init failed");
  d->bootstrap = args.bootstrap;
  CHECK_DFCCL(dfcclInit(&d->ctx, &args));
}

static void dfccl_fini(bench_dfccl* d) {
  CHECK_DFCCL(dfcclDestroy(d->ctx));
  dfccl_mpi_bootstrap_fini(&d->bootstrap);
}

/* Waits for every submitted run's callback, or gives up after the timeout. */
static void dfccl_wait(bench_dfccl* d, int collId) {
  double start = now_sec();
  unsigned spins = 0;
  while (atomic_load_explicit(&d->completed, memory_order_acquire) < d->submitted) {
    sched_yield();
    if ((++spins & 255u) == 0 && now_sec() - start > d->timeoutSec)
      BENCH_DIE("collective %d: no completion callback within %.1f s (%llu of %llu runs completed); "
                "giving up", collId, d->timeoutSec,
                (unsigned long long)atomic_load(&d->completed), (unsigned long long)d->submitted);
  }
  int status = atomic_load(&d->failedStatus);
  if (status != dfcclSuccess)
    BENCH_DIE("collective %d: a run completed with %s%s", atomic_load(&d->failedColl),
              dfcclGetErrorString((dfcclResult_t)status),
              status == dfcclInternalError ? " (or its callback named another collective)" : "");
}

/* `times` runs of collective collId, one after the other. */
static void dfccl_allreduce(bench_dfccl* d, int collId, const void* send, void* recv, int times) {
  atomic_store(&d->expectedColl, collId);
  for (int i = 0; i < times; i++) {
    d->submitted++;
    CHECK_DFCCL(dfcclRunAllReduce(d->ctx, send, recv, collId, dfccl_done, d));
    dfccl_wait(d, collId);
  }
}

/* ---- sizes, libraries, measurements ---- */

typedef struct {
  int index; /* DFCCL collective ids 2*index (out of place) and 2*index+1 (in place) */
  size_t count, bytes;
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
  int nlibs; /* 1: DFCCL; 2: DFCCL and NCCL */
  bench_pattern pattern;
  bench_buffers buffers;
  bench_dfccl dfccl;
#ifdef DFCCL_HAVE_NCCL
  bench_nccl* nccl;
#endif
  double busbwSum[LIB_COUNT];
  int measurements[LIB_COUNT];
  unsigned long long wrong[LIB_COUNT];
} bench_state;

static int coll_id(const bench_size* z, int inPlace) { return 2 * z->index + inPlace; }

static void register_size(bench_state* s, const bench_size* z) {
  for (int inPlace = 0; inPlace < 2; inPlace++)
    CHECK_DFCCL(dfcclRegisterAllReduce(s->dfccl.ctx, z->count, s->opts->dtype, s->opts->op,
                                       coll_id(z, inPlace), NULL, 0, 0));
}

static void run_lib(bench_state* s, bench_lib lib, const bench_size* z, int inPlace, int times) {
  void* recv = s->buffers.recv;
  const void* send = inPlace ? recv : s->buffers.send;
  if (lib == LIB_DFCCL) {
    dfccl_allreduce(&s->dfccl, coll_id(z, inPlace), send, recv, times);
    return;
  }
#ifdef DFCCL_HAVE_NCCL
  bench_nccl_allreduce(s->nccl, send, recv, z->count, s->opts->dtype, s->opts->op, times);
#endif
}

/* Warmup, timed runs (slowest rank), then one checked run on fresh data. */
static bench_result measure(bench_state* s, bench_lib lib, const bench_size* z, int inPlace) {
  const bench_opts* o = s->opts;
  bench_result r = {0.0, 0};
  bench_buffers_prepare(&s->buffers, &s->pattern, z->count, inPlace);
  run_lib(s, lib, z, inPlace, o->warmup);

  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  double start = now_sec();
  run_lib(s, lib, z, inPlace, o->iters);
  double mine = (now_sec() - start) / o->iters, slowest = 0.0;
  CHECK_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  r.timeUs = slowest * 1e6;

  if (o->check) {
    bench_buffers_prepare(&s->buffers, &s->pattern, z->count, inPlace);
    run_lib(s, lib, z, inPlace, 1);
    unsigned long long wrong = bench_buffers_count_wrong(&s->buffers, &s->pattern, z->count);
    CHECK_MPI(MPI_Allreduce(&wrong, &r.wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  }
  return r;
}

/* ---- output (rank 0) ---- */

static void print_result(bench_state* s, bench_lib lib, const bench_size* z, const bench_result* r) {
  double algbw = r->timeUs > 0 ? (double)z->bytes / r->timeUs * 1e-3 : 0.0; /* GB/s */
  double busbw = algbw * 2.0 * (s->nranks - 1) / s->nranks;
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
           bench_op_name(s->opts->op));
  register_size(s, z);
  for (int lib = 0; lib < s->nlibs; lib++) {
    for (int inPlace = 0; inPlace < 2; inPlace++) {
      bench_result r = measure(s, (bench_lib)lib, z, inPlace);
      print_result(s, (bench_lib)lib, z, &r);
    }
  }
  if (s->rank == 0) {
    printf("\n");
    fflush(stdout);
  }
}

static void run_sizes(bench_state* s) {
  const bench_opts* o = s->opts;
  size_t typeSize = bench_type_size(o->dtype), lastCount = 0;
  int index = 0;
  for (size_t bytes = o->minBytes;;) {
    bench_size z = {index, bytes / typeSize, bytes / typeSize * typeSize};
    if (z.count > 0 && z.count != lastCount) {
      run_size(s, &z);
      lastCount = z.count;
      index++;
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
  snprintf(line + n, len - (size_t)n, "device %2d [%04x:%02x:%02x.0] %.64s", device, prop.pciDomainID,
           prop.pciBusID, prop.pciDeviceID, prop.name);
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
  CHECK_MPI(MPI_Gather(line, (int)sizeof(line), MPI_CHAR, all, (int)sizeof(line), MPI_CHAR, 0,
                       MPI_COMM_WORLD));
  if (s->rank != 0) return;

  char date[64];
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm) == NULL || strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    snprintf(date, sizeof(date), "unknown");
  printf("# dfccl_bench all-reduce: minBytes %zu maxBytes %zu factor %g warmup %d iters %d check %d "
         "target %s\n", o->minBytes, o->maxBytes, o->factor, o->warmup, o->iters, o->check,
         bench_target_name(o->target));
  printf("# Date: %s\n", date);
  print_build(s);
  printf("# nranks %d, libraries: DFCCL%s\n#\n# Using devices\n", s->nranks, s->nlibs > 1 ? " NCCL" : "");
  for (int r = 0; r < s->nranks; r++) printf("%s\n", all + (size_t)r * sizeof(line));
  free(all);

  printf("#\n#%41s", "");
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

#define BENCH_NSTATS 9

static void print_stats(const bench_state* s) {
  dfcclStats_t st;
  CHECK_DFCCL(dfcclGetStats(s->dfccl.ctx, &st));
  uint64_t mine[BENCH_NSTATS] = {st.sqesRead,       st.preemptions, st.contextLoads,
                                 st.contextSaves,   st.voluntaryQuits, st.relaunches,
                                 st.launches,       st.maxTaskQueueLength, st.completions};
  uint64_t* all = NULL;
  if (s->rank == 0) {
    all = malloc((size_t)s->nranks * sizeof(mine));
    if (all == NULL) BENCH_DIE("out of memory");
  }
  CHECK_MPI(MPI_Gather(mine, BENCH_NSTATS, MPI_UINT64_T, all, BENCH_NSTATS, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  if (s->rank != 0) return;
  static const char* const names[BENCH_NSTATS] = {"sqesRead", "preempt", "ctxLoads", "ctxSaves", "volQuits",
                                                  "relaunch", "launches", "maxTaskQ", "complete"};
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
  bench_pattern_init(&s->pattern, o->dtype, o->op, s->rank, s->nranks);
  bench_buffers_alloc(&s->buffers, o->target, o->maxBytes);
  dfccl_init(&s->dfccl, o, device);
#ifdef DFCCL_HAVE_NCCL
  if (o->runNccl) s->nccl = bench_nccl_init(s->rank, s->nranks, s->buffers.stream);
#endif
}

static void teardown(bench_state* s) {
#ifdef DFCCL_HAVE_NCCL
  bench_nccl_fini(s->nccl);
#endif
  dfccl_fini(&s->dfccl);
  bench_buffers_free(&s->buffers);
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
  int parsed = bench_parse_args(argc, argv, &o);
  if (parsed != 0) {
    MPI_Finalize();
    return parsed == 1 ? 0 : 1;
  }
  s.opts = &o;
  s.nlibs = o.runNccl ? 2 : 1;

  int device = select_device(&o);
  setup(&s, &o, device);
  print_header(&s, device);
  run_sizes(&s);
  print_summary(&s);
  if (o.printStats) print_stats(&s);
  teardown(&s);

  unsigned long long wrong = s.wrong[LIB_DFCCL] + s.wrong[LIB_NCCL];
  CHECK_MPI(MPI_Finalize());
  return wrong != 0 ? 1 : 0;
}
