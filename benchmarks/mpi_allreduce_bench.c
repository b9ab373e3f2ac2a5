/*
 * mpi_allreduce_bench: the collectives that coll/dfccl routes to DFCCL -- MPI_Allreduce,
 * MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Alltoall and MPI_Allgatherv
 * (dfccl_bench's seven) -- on CUDA device buffers
 * (through coll/dfccl when Open MPI loads it), beside the same collective staged through host
 * memory, as a user of a non-CUDA-aware MPI does it.  Issue 4's benchmark (MPI_Allreduce, the
 * default); benchmarks/mpi_allreduce_bench.sh runs it beside dfccl_bench (DFCCL's core API and
 * NCCL) and checks the targets.
 *
 *   mpirun -np N mpi_allreduce_bench [-C COLL] [-R ROOT] [-b SIZE] [-e SIZE] [-f F] [-n N] [-w N]
 *                                    [-c 0|1] [-r] [-a] [-h]
 *
 * One rank per GPU (GPU local_rank % device_count), float32 (sum for the reductions), broadcast and
 * reduce from root -R (default 0).  Sizes from -b to -e bytes multiplied by -f, counted as
 * dfccl_bench counts them (benchmarks/README.md, "Sizes"): the per-rank buffer, which for
 * all-gather, reduce-scatter and all-to-all is the whole gathered, scattered or sent buffer of
 * nranks x count floats, and for all-gather-v the gathered buffer of its uneven blocks (rank r
 * sends (r + 1) x count floats, packed in rank order: n(n+1)/2 x count floats).
 * For every collective of -C (one table each, in the order of COLL_OPTION_NAMES) and every size, in
 * the same run:
 *   component  the MPI call on cudaMalloc'd buffers: coll/dfccl hands them to DFCCL's GPU daemon
 *              (the first call of a size sets up its signature: a warm-up call);
 *   staged     cudaMemcpy of the rank's input device -> pageable malloc'd host buffer, the MPI call
 *              on the host buffers (host buffers are not routed: Open MPI's own component runs
 *              it), cudaMemcpy of the rank's output host -> device, and a wait for the legacy
 *              default stream (a pageable upload may return before its data has landed; the
 *              component's results are in place on return).  A rank copies what it has: the
 *              broadcast root uploads nothing and the other ranks download nothing; reduce's
 *              non-roots upload nothing.
 * Timing as in dfccl_bench: -w warm-up calls, MPI_Barrier, the wall clock around -n calls; the time
 * reported is the mean per call on the slowest rank.  With -c 1 one more call of each path on
 * small-integer inputs (exact in float) into a reset output is compared element by element on the
 * ranks that have an output (mpi_coll_bench_colls.c: what each call reads and writes).
 *
 * After each table, the MPI_T counter coll_dfccl_<entry point>_routed of its collective tells how
 * many component calls coll/dfccl ran through DFCCL (the fewest on any rank).  Without coll/dfccl
 * (the counter does not exist) the program refuses to pass device buffers to MPI unless -a says
 * that MPI is CUDA-aware.
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

#include "cudart_dl.h"            /* test/common: libcudart loaded at run time */
#include "mpi_coll_bench_colls.h" /* the seven collectives */
#include "mpi_options.h"          /* test/common: strict options */
#include "mpi_pvar.h"             /* test/common: find_pvar */

/* coll/dfccl's default coll_dfccl_max_colls: signatures routed per communicator at most. */
#define DEFAULT_MAX_COLLS 128

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

static const char* mpi_error_text(int rc, char* text, int len) {
  int n = 0;
  if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS) snprintf(text, (size_t)len, "MPI error %d", rc);
  return text;
}

#define CHECK_MPI(call)                                                     \
  do {                                                                      \
    int rc_ = (call);                                                       \
    if (rc_ != MPI_SUCCESS) {                                               \
      char s_[MPI_MAX_ERROR_STRING];                                        \
      DIE("%s failed: %s", #call, mpi_error_text(rc_, s_, (int)sizeof s_)); \
    }                                                                       \
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
  bool colls[COLL_COUNT]; /* -C: the collectives to measure */
  int root;               /* -R: of broadcast and reduce */
  size_t minBytes, maxBytes;
  double factor;
  int iters, warmup, check;
  bool requireRouted; /* -r: every component call must be routed by coll/dfccl */
  bool cudaAware;     /* -a: the MPI takes device buffers itself; coll/dfccl need not be loaded */
} settings;

static void usage(const char* prog) {
  printf("Usage: mpirun -np N %s [options]       (see benchmarks/mpi_allreduce_bench.sh)\n"
         "MPI collectives (float; sum for the reductions) on CUDA device buffers, through coll/dfccl,\n"
         "beside staging through pageable host memory; one rank per GPU (GPU = local rank %% device count).\n"
         "  -C COLL   " COLL_OPTION_NAMES ",\n"
         "            or all (the seven one after the other) (default allreduce); allgatherv: rank r\n"
         "            sends (r + 1) x count floats\n"
         "  -R ROOT   root rank of broadcast and reduce (default 0)\n"
         "  -b SIZE   smallest message in bytes per rank, K/M/G suffixes (default 1K); all-gather(-v),\n"
         "            reduce-scatter and all-to-all: the whole gathered / scattered / sent buffer, as\n"
         "            in dfccl_bench\n"
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
  *o = (settings){.colls = {[COLL_ALLREDUCE] = true},
                  .minBytes = 1024,
                  .maxBytes = (size_t)256 << 20,
                  .factor = 4.0,
                  .iters = 20,
                  .warmup = 5,
                  .check = 1};
  options op = mpi_options("mpi_allreduce_bench", "Try 'mpi_allreduce_bench -h'.", argc, argv, "C:R:b:e:f:n:w:c:rah");
  for (int opt; (opt = options_next(&op)) != -1;) {
    switch (opt) {
      case 'C':
        if (!coll_parse(op.value, o->colls))
          options_fail(&op, "-C: expected one of " COLL_OPTION_NAMES ", or all, got '%s'", op.value);
        break;
      case 'R': o->root = option_int(&op, 0, nranks - 1); break;
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

/* ---- sizes -------------------------------------------------------------------------------------- */

/* The walk from -b to -e, as dfccl_bench walks it: each size rounded down to a whole count. */
typedef struct {
  size_t bytes, lastCount;
  bool done;
} size_walk;

/* The count of the next size (`unit` bytes per count), skipping counts of zero and repeats; 0 after
 * the last. */
static size_t next_count(const settings* o, size_t unit, size_walk* w) {
  while (!w->done) {
    size_t count = w->bytes / unit;
    double next = (double)w->bytes * o->factor;
    if (next > (double)o->maxBytes) w->done = true;
    else w->bytes = (size_t)next > w->bytes ? (size_t)next : w->bytes + 1;
    if (count > 0 && count != w->lastCount) {
      w->lastCount = count;
      return count;
    }
  }
  return 0;
}

static size_t unit_bytes(coll_kind coll) { return sizeof(float) * coll_count_unit(coll, nranks); }

/* Component signatures (one per size of each collective), all on MPI_COMM_WORLD. */
static int count_signatures(const settings* o) {
  int n = 0;
  for (int c = 0; c < COLL_COUNT; c++) {
    if (!o->colls[c]) continue;
    size_walk w = {.bytes = o->minBytes};
    while (next_count(o, unit_bytes((coll_kind)c), &w) != 0) n++;
  }
  return n;
}

/* ---- buffers and the two paths ------------------------------------------------------------------ */

typedef struct {
  float *sendDev, *recvDev;   /* cudaMalloc'd: what the component path passes to MPI */
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

/* Every collective's layout fits `bytes` (-e): its largest buffer is its size. */
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

/* Where the layout's input lies: the send buffer, or broadcast's one (receive) buffer. */
static float* input_dev(const buffers* b, const coll_layout* l) { return l->inputInRecv ? b->recvDev : b->sendDev; }
static float* input_host(const buffers* b, const coll_layout* l) { return l->inputInRecv ? b->recvHost : b->sendHost; }

/* The device input holds this rank's inputs (both paths read it; no path writes it). */
static void prepare_inputs(buffers* b, const coll_layout* l) {
  if (l->inCount == 0) return;
  float* host = input_host(b, l);
  for (size_t i = 0; i < l->inCount; i++) host[i] = coll_input(rank, i);
  CHECK_CUDA(cuda.memcpy(input_dev(b, l), host, l->inCount * sizeof(float), CUDA_MEMCPY_HOST_TO_DEVICE));
  default_stream_done();
}

/* The staged path's communicator: coll/dfccl decides a signature's route once, by what the ranks
 * pass at its first call, so the host buffers of the staged path, on MPI_COMM_WORLD, would follow
 * the device buffers' route (through DFCCL, on copies).  On a communicator of their own they get
 * Open MPI's own collectives, which is what staging is measured against.  For the same reason the
 * program's own host-buffer calls on MPI_COMM_WORLD are only barriers, gathers and all-reduces of
 * int, double and unsigned long long, none of which can share a signature with a measured call. */
static MPI_Comm staged_comm = MPI_COMM_NULL;

/* One collective call; an error names the MPI function. */
static void call_coll(const coll_layout* l, const void* send, void* recv, MPI_Comm comm) {
  int rc = coll_call(l, send, recv, comm);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    DIE("%s (count %zu) failed: %s", coll_mpi_name(l->coll), l->count, mpi_error_text(rc, text, (int)sizeof text));
  }
}

static void run_staged(buffers* b, const coll_layout* l) {
  if (l->inCount > 0)
    CHECK_CUDA(cuda.memcpy(input_host(b, l), input_dev(b, l), l->inCount * sizeof(float), CUDA_MEMCPY_DEVICE_TO_HOST));
  call_coll(l, b->sendHost, b->recvHost, staged_comm);
  if (l->outCount > 0)
    CHECK_CUDA(cuda.memcpy(b->recvDev, b->recvHost, l->outCount * sizeof(float), CUDA_MEMCPY_HOST_TO_DEVICE));
  default_stream_done();
}

static void run_path(buffers* b, path_t path, const coll_layout* l, int times) {
  for (int t = 0; t < times; t++) {
    if (path == PATH_COMPONENT) call_coll(l, b->sendDev, b->recvDev, MPI_COMM_WORLD);
    else run_staged(b, l);
  }
}

/* Mean seconds per call on the slowest rank. */
static double time_path(buffers* b, path_t path, const coll_layout* l, int iters) {
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = MPI_Wtime();
  run_path(b, path, l, iters);
  double mine = (MPI_Wtime() - t0) / iters, slowest = 0.0;
  CHECK_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD)); /* host: not routed */
  return slowest;
}

/* One call into an output reset to 0xff bytes (NaN), compared exactly; wrong elements over all ranks. */
static unsigned long long check_path(buffers* b, path_t path, const coll_layout* l) {
  size_t bytes = l->outCount * sizeof(float);
  if (bytes > 0) CHECK_CUDA(cuda.memset(b->recvDev, 0xff, bytes));
  default_stream_done();
  run_path(b, path, l, 1);
  unsigned long long wrong = 0, all = 0;
  if (bytes > 0) {
    CHECK_CUDA(cuda.memcpy(b->image, b->recvDev, bytes, CUDA_MEMCPY_DEVICE_TO_HOST));
    for (size_t k = 0; k < l->outCount; k++) wrong += !(b->image[k] == coll_expected(l, k));
  }
  CHECK_MPI(MPI_Allreduce(&wrong, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return all;
}

/* ---- the MPI_T counters of routed calls --------------------------------------------------------- */

typedef struct {
  bool found[COLL_COUNT]; /* on every rank (only the selected collectives' are looked for) */
  bool sessionOpen;
  MPI_T_pvar_session session;
  MPI_T_pvar_handle handle[COLL_COUNT];
} routed_counters;

/* Continuous counters (counting from the start): callers subtract a value read before. */
static unsigned long long routed_read(routed_counters* c, coll_kind coll) {
  unsigned long long v = 0;
  if (c->found[coll]) CHECK_MPI(MPI_T_pvar_read(c->session, c->handle[coll], &v));
  return v;
}

/* The counters exist where Open MPI loaded coll/dfccl. */
static void routed_open(routed_counters* c, const settings* o) {
  int provided, index[COLL_COUNT], mine[COLL_COUNT], all[COLL_COUNT];
  CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
  for (int k = 0; k < COLL_COUNT; k++) {
    index[k] = o->colls[k] ? find_pvar(coll_routed_counter((coll_kind)k)) : -1;
    mine[k] = index[k] >= 0;
  }
  CHECK_MPI(MPI_Allreduce(mine, all, COLL_COUNT, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  for (int k = 0; k < COLL_COUNT; k++) {
    c->found[k] = all[k];
    c->sessionOpen |= c->found[k];
  }
  if (!c->sessionOpen) return;
  CHECK_MPI(MPI_T_pvar_session_create(&c->session));
  for (int k = 0; k < COLL_COUNT; k++) {
    int count;
    if (c->found[k]) CHECK_MPI(MPI_T_pvar_handle_alloc(c->session, index[k], NULL, &c->handle[k], &count));
  }
}

/* Before MPI_Finalize: the reverse order crashes Open MPI 4.1.4. */
static void routed_close(routed_counters* c) {
  if (c->sessionOpen) CHECK_MPI(MPI_T_pvar_session_free(&c->session));
  CHECK_MPI(MPI_T_finalize());
}

/* The first selected collective whose counter is missing, or COLL_COUNT when none is. */
static coll_kind first_missing_counter(const settings* o, const routed_counters* c) {
  for (int k = 0; k < COLL_COUNT; k++)
    if (o->colls[k] && !c->found[k]) return (coll_kind)k;
  return COLL_COUNT;
}

/* ---- output (rank 0) ---------------------------------------------------------------------------- */

static void print_build(void) {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0, runtime = 0, driver = 0;
  CHECK_MPI(MPI_Get_library_version(mpi, &len));
  mpi[strcspn(mpi, ",\n")] = '\0';
  CHECK_CUDA(cuda.runtime_get_version(&runtime));
  CHECK_CUDA(cuda.driver_get_version(&driver));
  printf("# Build: %s, CUDA runtime %d.%d driver %d.%d (%s, loaded at run time)", mpi, runtime / 1000,
         (runtime % 1000) / 10, driver / 1000, (driver % 1000) / 10, cuda.soname);
#ifdef __VERSION__
  printf(", compiler %s", __VERSION__);
#endif
  printf(", built %s %s\n", __DATE__, __TIME__);
}

static void print_settings(const settings* o) {
  bool rooted = false;
  printf("# mpi_allreduce_bench");
  for (int c = 0; c < COLL_COUNT; c++) {
    if (!o->colls[c]) continue;
    printf(" %s", coll_title((coll_kind)c));
    rooted |= coll_rooted((coll_kind)c);
  }
  printf(": minBytes %zu maxBytes %zu factor %g warmup %d iters %d check %d requireRouted %d cudaAware %d", o->minBytes,
         o->maxBytes, o->factor, o->warmup, o->iters, o->check, o->requireRouted, o->cudaAware);
  if (rooted) printf(" root %d", o->root);
  printf("\n");
}

static void print_component(const settings* o, const routed_counters* counters) {
  coll_kind missing = first_missing_counter(o, counters);
  printf("# nranks %d, coll/dfccl ", nranks);
  if (missing != COLL_COUNT) printf("not loaded (no MPI_T counter %s)\n", coll_routed_counter(missing));
  else printf("loaded (MPI_T counters coll_dfccl_<entry point>_routed found)\n");
  int signatures = count_signatures(o);
  if (missing == COLL_COUNT && signatures > DEFAULT_MAX_COLLS)
    printf("# note: %d component signatures on MPI_COMM_WORLD; coll/dfccl routes coll_dfccl_max_colls of them "
           "(default %d), later ones fall back: raise it (--mca coll_dfccl_max_colls, at most 2048) or measure "
           "fewer sizes or collectives\n",
           signatures, DEFAULT_MAX_COLLS);
}

static void print_header(const settings* o, int device, const routed_counters* counters) {
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

  char date[64];
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm) == NULL || strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    snprintf(date, sizeof date, "unknown");
  print_settings(o);
  printf("# Date: %s\n", date);
  print_build();
  print_component(o, counters);
  printf("# component: the MPI call on cudaMalloc'd buffers; staged: cudaMemcpy to pageable malloc'd memory, "
         "the same call on it, cudaMemcpy back\n#\n# Using devices\n");
  for (int r = 0; r < nranks; r++) printf("%s\n", all + (size_t)r * sizeof line);
  printf("#\n");
  free(all);
  fflush(stdout);
}

/* The column headings of one collective's table, its dfccl_bench title in the top left corner. */
static void print_table_header(const settings* o, coll_kind coll) {
  if (rank != 0) return;
  char title[48];
  if (coll_rooted(coll)) snprintf(title, sizeof title, "%s, root %d", coll_title(coll), o->root);
  else snprintf(title, sizeof title, "%s", coll_title(coll));
  printf("# %s\n# %-23s", coll_description(coll), title); /* as wide as a row's size and count */
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

/* ---- measurements ------------------------------------------------------------------------------- */

/* One collective's table. */
typedef struct {
  double busbwSum[NPATHS];
  int rows;
  unsigned long long wrong[NPATHS];
  unsigned long long componentCalls;
} totals;

static void print_row(const settings* o, coll_kind coll, size_t count, const double timeUs[NPATHS],
                      const unsigned long long wrong[NPATHS], totals* tot) {
  size_t bytes = count * unit_bytes(coll);
  if (rank == 0) printf("%12zu %12zu", bytes, count);
  for (int p = 0; p < NPATHS; p++) {
    double algbw = timeUs[p] > 0 ? (double)bytes / timeUs[p] * 1e-3 : 0.0; /* GB/s */
    double busbw = algbw * coll_busbw_factor(coll, nranks);
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

static void run_size(buffers* b, const settings* o, coll_kind coll, size_t count, totals* tot) {
  coll_layout l;
  if (!coll_layout_init(&l, coll, count, rank, nranks, o->root)) DIE("out of host memory for a layout");
  double timeUs[NPATHS];
  unsigned long long wrong[NPATHS] = {0, 0};
  prepare_inputs(b, &l);
  for (int p = 0; p < NPATHS; p++) {
    run_path(b, (path_t)p, &l, o->warmup);
    timeUs[p] = time_path(b, (path_t)p, &l, o->iters) * 1e6;
    if (o->check) wrong[p] = check_path(b, (path_t)p, &l);
    tot->wrong[p] += wrong[p];
  }
  tot->componentCalls += (unsigned long long)(o->warmup + o->iters + o->check);
  tot->rows++;
  print_row(o, coll, count, timeUs, wrong, tot);
  coll_layout_fini(&l);
}

/* Prints the table's summary; returns false when -r was given and coll/dfccl did not route exactly
 * the component calls (fewer, or host calls too). */
static bool report_routing(const settings* o, routed_counters* c, coll_kind coll, unsigned long long start,
                           const totals* tot) {
  unsigned long long mine = routed_read(c, coll) - start, fewest = 0, most = 0, calls = tot->componentCalls;
  CHECK_MPI(MPI_Allreduce(&mine, &fewest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD));
  bool found = c->found[coll], ok = !o->requireRouted || (found && fewest == calls && most == calls);
  const char* counter = coll_routed_counter(coll);
  if (rank != 0) return ok;
  printf("#\n");
  for (int p = 0; p < NPATHS; p++) {
    printf("# %-9s Avg bus bandwidth    : %g GB/s\n", path_names[p], tot->rows ? tot->busbwSum[p] / tot->rows : 0.0);
    if (o->check) printf("# %-9s Wrong elements       : %llu\n", path_names[p], tot->wrong[p]);
  }
  if (!found) printf("# routed: unknown (coll/dfccl not loaded) for %llu component calls\n", calls);
  else
    printf("# routed %llu of %llu component calls through coll/dfccl (MPI_T %s, fewest on any rank)\n", fewest, calls,
           counter);
  if (found && most > calls)
    printf("# routed up to %llu calls on a rank: host-buffer calls were routed too (coll_dfccl_host_target on?), so "
           "the staged column is not Open MPI's own %s\n",
           most, coll_mpi_name(coll));
  printf("#\n");
  fflush(stdout);
  if (!ok)
    fprintf(stderr, "mpi_allreduce_bench: -r: %s: coll/dfccl %s\n", coll_mpi_name(coll),
            !found           ? "is not loaded"
            : fewest < calls ? "did not route every component call"
                             : "routed more than the component calls");
  return ok;
}

/* One collective's table and summary: false on a wrong element or (with -r) a routing failure. */
static bool run_coll(buffers* b, const settings* o, coll_kind coll, routed_counters* counters) {
  totals tot;
  memset(&tot, 0, sizeof tot);
  unsigned long long start = routed_read(counters, coll);
  print_table_header(o, coll);
  size_walk w = {.bytes = o->minBytes};
  for (size_t count; (count = next_count(o, unit_bytes(coll), &w)) != 0;) run_size(b, o, coll, count, &tot);
  bool routedOk = report_routing(o, counters, coll, start, &tot);
  return routedOk && tot.wrong[PATH_COMPONENT] + tot.wrong[PATH_STAGED] == 0;
}

/* ---- main --------------------------------------------------------------------------------------- */

/* cudaSetDevice(node-local rank % devices), before any collective on device buffers. */
static int select_device(int devices) {
  MPI_Comm node;
  int local = 0;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  CHECK_MPI(MPI_Comm_rank(node, &local));
  CHECK_MPI(MPI_Comm_free(&node));
  int device = local % devices;
  CHECK_CUDA(cuda.set_device(device));
  return device;
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
  int device = select_device(devices);

  routed_counters counters;
  memset(&counters, 0, sizeof counters);
  routed_open(&counters, &o);
  coll_kind missing = first_missing_counter(&o, &counters);
  if (missing != COLL_COUNT && !o.cudaAware) {
    if (rank == 0)
      fprintf(stderr,
              "mpi_allreduce_bench: coll/dfccl is not loaded (no MPI_T counter %s): device buffers would reach an "
              "MPI that may not be CUDA-aware. Load it (see mpi_allreduce_bench.sh), or pass -a if this MPI is "
              "CUDA-aware.\n",
              coll_routed_counter(missing));
    routed_close(&counters);
    MPI_Finalize();
    return 1;
  }

  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &staged_comm));
  CHECK_MPI(MPI_Comm_set_errhandler(staged_comm, MPI_ERRORS_RETURN));
  buffers b;
  buffers_alloc(&b, o.maxBytes / sizeof(float) * sizeof(float));
  print_header(&o, device, &counters);
  bool ok = true;
  for (int c = 0; c < COLL_COUNT; c++)
    if (o.colls[c]) ok = run_coll(&b, &o, (coll_kind)c, &counters) && ok;
  CHECK_MPI(MPI_Comm_free(&staged_comm));
  routed_close(&counters);
  CHECK_MPI(MPI_Finalize());
  buffers_free(&b);
  return ok ? 0 : 1;
}
