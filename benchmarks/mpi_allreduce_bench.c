/*
 * mpi_allreduce_bench: MPI_Allreduce on CUDA device buffers (through coll/dfccl when Open MPI loads
 * it) beside the same all-reduce staged through host memory, as a user of a non-CUDA-aware MPI does
 * it.  Issue 4's benchmark; benchmarks/mpi_allreduce_bench.sh runs it beside dfccl_bench (DFCCL's
 * core API and NCCL) and checks the targets.
 *
 *   mpirun -np N mpi_allreduce_bench [-b SIZE] [-e SIZE] [-f F] [-n N] [-w N] [-c 0|1] [-r] [-a] [-h]
 *
 * One rank per GPU (GPU local_rank % device_count), float32 sum, sizes from -b to -e bytes (per
 * rank, as in dfccl_bench) multiplied by -f.  For every size, in the same run:
 *   component  MPI_Allreduce(sendbuf, recvbuf) on cudaMalloc'd buffers: coll/dfccl hands them to
 *              DFCCL's GPU daemon (the first call of a size sets up its signature: a warm-up call);
 *   staged     cudaMemcpy device -> pageable malloc'd host buffer, MPI_Allreduce on the host
 *              buffers (host buffers are not routed: Open MPI's own component runs it), cudaMemcpy
 *              host -> device, and a wait for the legacy default stream (a pageable upload may
 *              return before its data has landed; the component's results are in place on return).
 * Timing as in dfccl_bench: -w warm-up calls, MPI_Barrier, the wall clock around -n calls; the time
 * reported is the mean per call on the slowest rank.  With -c 1 one more call of each path on
 * small-integer inputs (exact in float) into a reset output is compared element by element.
 *
 * At the end, the MPI_T counter coll_dfccl_allreduce_routed tells how many component calls
 * coll/dfccl ran through DFCCL (the fewest on any rank).  Without coll/dfccl (the counter does not
 * exist) the program refuses to pass device buffers to MPI unless -a says that MPI is CUDA-aware.
 *
 * CUDA is loaded at run time (dlopen of libcudart), so this builds with plain MPI and no CUDA
 * headers; where it cannot be loaded or there is no GPU, rank 0 prints "no GPU: nothing to measure"
 * and every rank exits 0.  No device synchronization anywhere: DFCCL's daemon is a persistent
 * kernel (a device synchronization waits for it to quit); inputs are made ready by waiting for the
 * legacy default stream, which carries the copies and memsets.
 *
 * Exit status: 0 measured (or no GPU), 1 an error, a wrong element, or with -r a component call
 * that coll/dfccl did not route, 2 bad options.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudart_dl.h"   /* test/common: libcudart loaded at run time */
#include "mpi_options.h" /* test/common: strict options */
#include "mpi_pvar.h"    /* test/common: find_pvar */

#define ROUTED_COUNTER "coll_dfccl_allreduce_routed"

static int rank, nranks;

/* ---- errors ------------------------------------------------------------------------------------- */

static void die(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  fprintf(stderr, "[rank %d] mpi_allreduce_bench: %s:%d: ", rank, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

#define DIE(...) die(__FILE__, __LINE__, __VA_ARGS__)

#define CHECK_MPI(call)                                                                                \
  do {                                                                                                 \
    int rc_ = (call);                                                                                  \
    if (rc_ != MPI_SUCCESS) {                                                                          \
      char s_[MPI_MAX_ERROR_STRING];                                                                   \
      int n_ = 0;                                                                                      \
      if (MPI_Error_string(rc_, s_, &n_) != MPI_SUCCESS) snprintf(s_, sizeof s_, "MPI error %d", rc_); \
      DIE("%s failed: %s", #call, s_);                                                                 \
    }                                                                                                  \
  } while (0)

/* ---- CUDA, loaded at run time ------------------------------------------------------------------- */

#define CHECK_CUDA(call)                                                          \
  do {                                                                            \
    cuda_status_t e_ = (call);                                                    \
    if (e_ != 0) DIE("%s failed: %s (%d)", #call, cuda.get_error_string(e_), e_); \
  } while (0)

/* Copies and memsets from the host run on the legacy default stream, and the DFCCL daemon is not
 * ordered after any stream: wait for that stream (not the device, which would wait for the daemon
 * to quit). */
static void default_stream_done(void) { CHECK_CUDA(cuda.stream_synchronize(NULL)); }

/* ---- options ------------------------------------------------------------------------------------ */

typedef struct {
  size_t minBytes, maxBytes;
  double factor;
  int iters, warmup, check;
  bool requireRouted; /* -r: every component call must be routed by coll/dfccl */
  bool cudaAware;     /* -a: the MPI takes device buffers itself; coll/dfccl need not be loaded */
} settings;

static void usage(const char* prog) {
  printf("Usage: mpirun -np N %s [options]       (see benchmarks/mpi_allreduce_bench.sh)\n"
         "MPI_Allreduce (float sum) on CUDA device buffers, through coll/dfccl, beside staging\n"
         "through pageable host memory; one rank per GPU (GPU = local rank %% device count).\n"
         "  -b SIZE   smallest message in bytes per rank, K/M/G suffixes (default 1K)\n"
         "  -e SIZE   largest message in bytes per rank (default 256M)\n"
         "  -f F      multiply the size by F (> 1) between steps (default 4)\n"
         "  -n N      timed calls per size and path (default 20)\n"
         "  -w N      warm-up calls per size and path (default 5; the first component call of a\n"
         "            size sets up its signature in coll/dfccl)\n"
         "  -c 0|1    check each path once per size, exactly, on small-integer inputs (default 1)\n"
         "  -r        require coll/dfccl to route every component call (else exit 1)\n"
         "  -a        this MPI is CUDA-aware: pass device buffers to it even without coll/dfccl\n"
         "  -h        this help\n",
         prog);
}

/* 0 to run, 1 after -h.  A bad option ends the program with exit status 2 (rank 0 says why). */
static int parse_args(int argc, char** argv, settings* o) {
  *o = (settings){.minBytes = 1024, .maxBytes = (size_t)256 << 20, .factor = 4.0, .iters = 20, .warmup = 5, .check = 1};
  options op = mpi_options("mpi_allreduce_bench", "Try 'mpi_allreduce_bench -h'.", argc, argv, "b:e:f:n:w:c:rah");
  for (int opt; (opt = options_next(&op)) != -1;) {
    switch (opt) {
      case 'b': o->minBytes = option_bytes(&op); break;
      case 'e': o->maxBytes = option_bytes(&op); break;
      case 'f': o->factor = option_double(&op, 1.0); break;
      case 'n': o->iters = option_int(&op, 1, 1 << 30); break;
      case 'w': o->warmup = option_int(&op, 0, 1 << 30); break;
      case 'c': o->check = option_int(&op, 0, 1); break;
      case 'r': o->requireRouted = true; break;
      case 'a': o->cudaAware = true; break;
      case 'h':
        if (rank == 0) usage(argv[0]);
        return 1;
    }
  }
  if (o->factor == 1.0) options_fail(&op, "-f: the size factor must be greater than 1");
  if (o->minBytes < sizeof(float) || o->maxBytes < o->minBytes)
    options_fail(&op, "need 4 <= minbytes (-b) <= maxbytes (-e)");
  if (o->maxBytes / sizeof(float) > INT_MAX)
    options_fail(&op, "maxbytes (-e) above what an int count of floats reaches");
  return 0;
}

/* ---- buffers and the two paths ------------------------------------------------------------------ */

typedef struct {
  float *sendDev, *recvDev;   /* cudaMalloc'd: what the component path passes to MPI_Allreduce */
  float *sendHost, *recvHost; /* malloc'd (pageable), as a user of a non-CUDA-aware MPI stages */
  float* image;               /* host copy of a result, for checks */
} buffers;

typedef enum { PATH_COMPONENT, PATH_STAGED, NPATHS } path_t;
static const char* const path_names[NPATHS] = {"component", "staged"};

static void* host_alloc(size_t bytes) {
  void* p = malloc(bytes);
  if (p == NULL) DIE("out of host memory (%zu bytes)", bytes);
  return p;
}

static void buffers_alloc(buffers* b, size_t bytes) {
  CHECK_CUDA(cuda.dev_malloc((void**)&b->sendDev, bytes));
  CHECK_CUDA(cuda.dev_malloc((void**)&b->recvDev, bytes));
  b->sendHost = host_alloc(bytes);
  b->recvHost = host_alloc(bytes);
  b->image = host_alloc(bytes);
}

/* After MPI_Finalize (coll/dfccl's daemon is gone by then): no MPI_Abort on failure. */
static void buffers_free(buffers* b) {
  cuda_status_t e1 = cuda.dev_free(b->sendDev), e2 = cuda.dev_free(b->recvDev);
  if (e1 != 0 || e2 != 0) fprintf(stderr, "[rank %d] mpi_allreduce_bench: cudaFree failed\n", rank);
  free(b->sendHost);
  free(b->recvHost);
  free(b->image);
}

/* Rank r's input element i: a small integer, so that every sum is exact in float. */
static float input(int r, size_t i) { return (float)((long)((i * 31 + (size_t)r * 17) % 11) - 5); }

static float expected(size_t i) {
  long sum = 0;
  for (int r = 0; r < nranks; r++) sum += (long)input(r, i);
  return (float)sum;
}

/* The send buffer on the device holds this rank's inputs (both paths read it). */
static void prepare_inputs(buffers* b, size_t count) {
  for (size_t i = 0; i < count; i++) b->sendHost[i] = input(rank, i);
  CHECK_CUDA(cuda.memcpy(b->sendDev, b->sendHost, count * sizeof(float), CUDA_MEMCPY_HOST_TO_DEVICE));
  default_stream_done();
}

/* The staged path's communicator: coll/dfccl decides a signature's route once, by what the ranks
 * pass at its first call, so the host buffers of the staged path, on MPI_COMM_WORLD, would follow
 * the device buffers' route (through DFCCL, on copies).  On a communicator of their own they get
 * Open MPI's own all-reduce, which is what staging is measured against. */
static MPI_Comm staged_comm = MPI_COMM_NULL;

static void run_path(buffers* b, path_t path, size_t count, int times) {
  size_t bytes = count * sizeof(float);
  for (int t = 0; t < times; t++) {
    if (path == PATH_COMPONENT) {
      CHECK_MPI(MPI_Allreduce(b->sendDev, b->recvDev, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      continue;
    }
    CHECK_CUDA(cuda.memcpy(b->sendHost, b->sendDev, bytes, CUDA_MEMCPY_DEVICE_TO_HOST));
    if (staged_comm == MPI_COMM_NULL) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &staged_comm));
    CHECK_MPI(MPI_Allreduce(b->sendHost, b->recvHost, (int)count, MPI_FLOAT, MPI_SUM, staged_comm));
    CHECK_CUDA(cuda.memcpy(b->recvDev, b->recvHost, bytes, CUDA_MEMCPY_HOST_TO_DEVICE));
    default_stream_done();
  }
}

/* Mean seconds per call on the slowest rank. */
static double time_path(buffers* b, path_t path, size_t count, int iters) {
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = MPI_Wtime();
  run_path(b, path, count, iters);
  double mine = (MPI_Wtime() - t0) / iters, slowest = 0.0;
  CHECK_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD)); /* host: not routed */
  return slowest;
}

/* One call into an output reset to 0xff bytes (NaN), compared exactly; wrong elements over all ranks. */
static unsigned long long check_path(buffers* b, path_t path, size_t count) {
  size_t bytes = count * sizeof(float);
  CHECK_CUDA(cuda.memset(b->recvDev, 0xff, bytes));
  default_stream_done();
  run_path(b, path, count, 1);
  CHECK_CUDA(cuda.memcpy(b->image, b->recvDev, bytes, CUDA_MEMCPY_DEVICE_TO_HOST));
  unsigned long long wrong = 0, all = 0;
  for (size_t i = 0; i < count; i++) wrong += !(b->image[i] == expected(i));
  CHECK_MPI(MPI_Allreduce(&wrong, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return all;
}

/* ---- the MPI_T counter of routed calls ---------------------------------------------------------- */

typedef struct {
  bool found; /* on every rank */
  MPI_T_pvar_session session;
  MPI_T_pvar_handle handle;
  unsigned long long start;
} routed_counter;

static unsigned long long routed_read(routed_counter* c) {
  unsigned long long v = 0;
  if (c->found) CHECK_MPI(MPI_T_pvar_read(c->session, c->handle, &v));
  return v;
}

/* The counter exists where Open MPI loaded coll/dfccl.  It is continuous (counting from the
 * start); the value at opening is subtracted, whether a handle reports the total or the increase. */
static void routed_open(routed_counter* c) {
  int provided, index, count, mine, all = 0;
  CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
  index = find_pvar(ROUTED_COUNTER);
  mine = index >= 0;
  CHECK_MPI(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  c->found = all;
  if (!c->found) return;
  CHECK_MPI(MPI_T_pvar_session_create(&c->session));
  CHECK_MPI(MPI_T_pvar_handle_alloc(c->session, index, NULL, &c->handle, &count));
  c->start = routed_read(c);
}

/* Before MPI_Finalize: the reverse order crashes Open MPI 4.1.4. */
static void routed_close(routed_counter* c) {
  if (c->found) CHECK_MPI(MPI_T_pvar_session_free(&c->session));
  CHECK_MPI(MPI_T_finalize());
}

/* ---- output (rank 0) ---------------------------------------------------------------------------- */

static void print_header(const settings* o, int device, const routed_counter* counter) {
  char line[256], host[MPI_MAX_PROCESSOR_NAME], bus[32] = "?";
  int hostLen = 0;
  CHECK_MPI(MPI_Get_processor_name(host, &hostLen));
  CHECK_CUDA(cuda.device_get_pci_bus_id(bus, (int)sizeof bus, device));
  snprintf(line, sizeof line, "#  Rank %3d  Pid %7d  on %-16.64s device %2d [%.31s]", rank, (int)getpid(), host, device,
           bus);
  char* all = NULL;
  if (rank == 0) all = host_alloc((size_t)nranks * sizeof line);
  CHECK_MPI(MPI_Gather(line, (int)sizeof line, MPI_CHAR, all, (int)sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD));
  if (rank != 0) return;

  char date[64], mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm) == NULL || strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    snprintf(date, sizeof date, "unknown");
  int len = 0, runtime = 0, driver = 0;
  CHECK_MPI(MPI_Get_library_version(mpi, &len));
  mpi[strcspn(mpi, ",\n")] = '\0';
  CHECK_CUDA(cuda.runtime_get_version(&runtime));
  CHECK_CUDA(cuda.driver_get_version(&driver));
  printf("# mpi_allreduce_bench: minBytes %zu maxBytes %zu factor %g warmup %d iters %d check %d requireRouted %d "
         "cudaAware %d\n",
         o->minBytes, o->maxBytes, o->factor, o->warmup, o->iters, o->check, o->requireRouted, o->cudaAware);
  printf("# Date: %s\n", date);
  printf("# Build: %s, CUDA runtime %d.%d driver %d.%d (%s, loaded at run time)", mpi, runtime / 1000,
         (runtime % 1000) / 10, driver / 1000, (driver % 1000) / 10, cuda.soname);
#ifdef __VERSION__
  printf(", compiler %s", __VERSION__);
#endif
  printf(", built %s %s\n", __DATE__, __TIME__);
  printf("# nranks %d, coll/dfccl %s\n", nranks,
         counter->found ? "loaded (MPI_T counter " ROUTED_COUNTER " found)"
                        : "not loaded (no MPI_T counter " ROUTED_COUNTER ")");
  printf("# component: MPI_Allreduce on cudaMalloc'd buffers; staged: cudaMemcpy to pageable malloc'd memory, "
         "MPI_Allreduce on it, cudaMemcpy back\n#\n# Using devices\n");
  for (int r = 0; r < nranks; r++) printf("%s\n", all + (size_t)r * sizeof line);
  printf("#\n");
  free(all);

  printf("# MPI_Allreduce, float sum, out of place\n#%24s", "");
  for (int p = 0; p < NPATHS; p++) {
    const char* label = p == PATH_COMPONENT ? "component: device buffers" : "staged: pageable host copies";
    int pad = (33 - (int)strlen(label)) / 2;
    printf("  %*s%-*s", pad, "", 33 - pad, label);
  }
  printf("  %9s\n#%11s %12s", "staged /", "size", "count");
  for (int p = 0; p < NPATHS; p++) printf("  %9s %7s %7s %7s", "time", "algbw", "busbw", "#wrong");
  printf("  %9s\n#%11s %12s", "component", "(B)", "(elements)");
  for (int p = 0; p < NPATHS; p++) printf("  %9s %7s %7s %7s", "(us)", "(GB/s)", "(GB/s)", "");
  printf("  %9s\n", "(time)");
  fflush(stdout);
}

/* ---- main --------------------------------------------------------------------------------------- */

typedef struct {
  double busbwSum[NPATHS];
  int rows;
  unsigned long long wrong[NPATHS];
  unsigned long long componentCalls;
} totals;

static void run_size(buffers* b, const settings* o, size_t count, totals* tot) {
  size_t bytes = count * sizeof(float);
  double timeUs[NPATHS];
  unsigned long long wrong[NPATHS] = {0, 0};
  prepare_inputs(b, count);
  for (int p = 0; p < NPATHS; p++) {
    run_path(b, (path_t)p, count, o->warmup);
    timeUs[p] = time_path(b, (path_t)p, count, o->iters) * 1e6;
    if (o->check) wrong[p] = check_path(b, (path_t)p, count);
    tot->wrong[p] += wrong[p];
  }
  tot->componentCalls += (unsigned long long)(o->warmup + o->iters + o->check);
  tot->rows++;
  if (rank == 0) printf("%12zu %12zu", bytes, count);
  for (int p = 0; p < NPATHS; p++) {
    double algbw = timeUs[p] > 0 ? (double)bytes / timeUs[p] * 1e-3 : 0.0; /* GB/s */
    double busbw = algbw * 2.0 * (nranks - 1) / nranks;
    tot->busbwSum[p] += busbw;
    if (rank != 0) continue;
    printf("  %9.2f %7.2f %7.2f", timeUs[p], algbw, busbw);
    if (o->check) printf(" %7llu", wrong[p]);
    else printf(" %7s", "N/A");
  }
  if (rank == 0) {
    printf("  %9.2f\n", timeUs[PATH_COMPONENT] > 0 ? timeUs[PATH_STAGED] / timeUs[PATH_COMPONENT] : 0.0);
    fflush(stdout);
  }
}

static void run_sizes(buffers* b, const settings* o, totals* tot) {
  size_t lastCount = 0;
  for (size_t bytes = o->minBytes;;) {
    size_t count = bytes / sizeof(float);
    if (count > 0 && count != lastCount) {
      run_size(b, o, count, tot);
      lastCount = count;
    }
    double next = (double)bytes * o->factor;
    if (next > (double)o->maxBytes) break;
    bytes = (size_t)next > bytes ? (size_t)next : bytes + 1;
  }
}

/* Prints the summary; returns false when -r was given and coll/dfccl did not route exactly the
 * component calls (fewer, or host calls too). */
static bool report_routing(const settings* o, routed_counter* c, const totals* tot) {
  unsigned long long mine = routed_read(c) - c->start, fewest = 0, most = 0, calls = tot->componentCalls;
  CHECK_MPI(MPI_Allreduce(&mine, &fewest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD));
  bool ok = !o->requireRouted || (c->found && fewest == calls && most == calls);
  if (rank != 0) return ok;
  printf("#\n");
  for (int p = 0; p < NPATHS; p++) {
    printf("# %-9s Avg bus bandwidth    : %g GB/s\n", path_names[p], tot->rows ? tot->busbwSum[p] / tot->rows : 0.0);
    if (o->check) printf("# %-9s Wrong elements       : %llu\n", path_names[p], tot->wrong[p]);
  }
  if (!c->found) printf("# routed: unknown (coll/dfccl not loaded) for %llu component calls\n", calls);
  else
    printf("# routed %llu of %llu component calls through coll/dfccl (MPI_T %s, fewest on any rank)\n", fewest, calls,
           ROUTED_COUNTER);
  if (c->found && most > calls)
    printf("# routed up to %llu calls on a rank: host-buffer calls were routed too (coll_dfccl_host_target on?), so "
           "the staged column is not Open MPI's own all-reduce\n",
           most);
  printf("#\n");
  fflush(stdout);
  if (!ok)
    fprintf(stderr, "mpi_allreduce_bench: -r: coll/dfccl %s\n",
            !c->found        ? "is not loaded"
            : fewest < calls ? "did not route every component call"
                             : "routed more than the component calls");
  return ok;
}

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "mpi_allreduce_bench: MPI_Init failed\n");
    return 1;
  }
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
  settings o;
  if (parse_args(argc, argv, &o) != 0) { /* -h */
    MPI_Finalize();
    return 0;
  }

  /* Skip everywhere unless every rank has a GPU. */
  char why[160] = "";
  int devices = 0, mine = cuda_load(&devices, why, sizeof why), everywhere = 0;
  CHECK_MPI(MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!everywhere) {
    if (rank == 0) printf("no GPU: nothing to measure (rank 0: %s)\n", mine ? "has one; another rank has none" : why);
    CHECK_MPI(MPI_Finalize());
    return 0;
  }

  MPI_Comm node;
  int local = 0;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  CHECK_MPI(MPI_Comm_rank(node, &local));
  CHECK_MPI(MPI_Comm_free(&node));
  int device = local % devices;
  CHECK_CUDA(cuda.set_device(device)); /* before any collective on device buffers */

  routed_counter counter = {0};
  routed_open(&counter);
  if (!counter.found && !o.cudaAware) {
    if (rank == 0)
      fprintf(stderr, "mpi_allreduce_bench: coll/dfccl is not loaded (no MPI_T counter " ROUTED_COUNTER "): "
                      "device buffers would reach an MPI that may not be CUDA-aware. Load it (see "
                      "mpi_allreduce_bench.sh), or pass -a if this MPI is CUDA-aware.\n");
    routed_close(&counter);
    MPI_Finalize();
    return 1;
  }

  buffers b;
  buffers_alloc(&b, o.maxBytes / sizeof(float) * sizeof(float));
  print_header(&o, device, &counter);
  totals tot;
  memset(&tot, 0, sizeof tot);
  run_sizes(&b, &o, &tot);
  bool routedOk = report_routing(&o, &counter, &tot);
  routed_close(&counter);
  CHECK_MPI(MPI_Finalize());
  buffers_free(&b);
  return tot.wrong[PATH_COMPONENT] + tot.wrong[PATH_STAGED] != 0 || !routedOk ? 1 : 0;
}
