/*
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_bootstrap.h"
#include "mpi_options.h"

#ifdef DFCCL_HAVE_CUDA
#include <cuda_runtime_api.h>
#define CHECK_CUDA(call)                                                                             \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                  \
    }                                                                                                \
  } while (0)
#endif

static atomic_ulong progress_ticks;

void harness_progress(void) { atomic_fetch_add(&progress_ticks, 1); }

typedef struct {
  double seconds;
  char what[128];
} watchdog_args;

static void* watchdog_main(void* arg) {
  watchdog_args a = *(watchdog_args*)arg;
  free(arg);
  unsigned long last = atomic_load(&progress_ticks);
  struct timespec since;
  clock_gettime(CLOCK_MONOTONIC, &since);
  for (;;) {
    nanosleep(&(struct timespec){.tv_nsec = 100 * 1000000}, NULL);
    unsigned long now_ticks = atomic_load(&progress_ticks);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now_ticks != last) {
      last = now_ticks;
      since = now;
      continue;
    }
    double idle = (double)(now.tv_sec - since.tv_sec) + (double)(now.tv_nsec - since.tv_nsec) * 1e-9;
    if (idle >= a.seconds) {
      fprintf(stderr, "WATCHDOG: %s: no progress for %.1f s: hang detected\n", a.what, idle);
      fflush(stderr);
      _exit(HARNESS_WATCHDOG_EXIT);
    }
  }
  return NULL;
}

static double watchdog_override_s; /* TEST_WATCHDOG_S (0: not set), read by harness_environment */

void harness_watchdog_start(double seconds, const char* what) {
  if (watchdog_override_s > 0) seconds = watchdog_override_s;
  watchdog_args* a = malloc(sizeof *a);
  a->seconds = seconds;
  snprintf(a->what, sizeof a->what, "%s", what);
  pthread_t t;
  if (pthread_create(&t, NULL, watchdog_main, a) != 0) {
    fprintf(stderr, "cannot start the watchdog thread\n");
    exit(1);
  }
  pthread_detach(t);
}

void harness_check(dfcclResult_t r, const char* what, int line) {
  if (r == dfcclSuccess) return;
  fprintf(stderr, "line %d: %s: %s (%s)\n", line, what, dfcclGetErrorString(r), dfcclGetLastErrorMessage());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

bool harness_environment(const char* program) {
  options env = mpi_options(program, NULL, 0, NULL, "");
  const char* watchdog = getenv("TEST_WATCHDOG_S");
  if (watchdog != NULL && *watchdog != '\0' && !parse_double(watchdog, 0.1, &watchdog_override_s))
    options_fail(&env, "TEST_WATCHDOG_S is '%s': expected a number of seconds >= 0.1", watchdog);
  bool gpu = option_env_target_is_gpu(&env);
#ifndef DFCCL_HAVE_CUDA
  if (gpu) options_fail(&env, "built without CUDA: set DFCCL_TARGET=host to run on the host target");
#endif
  return gpu;
}

/* Two "hosts" on one machine (test/mpi/ucx_netns.sh): after MPI has started (its own sockets stay
 * where they were made), ranks below TEST_NETNS_SPLIT move this thread -- and so DFCCL's network
 * transport, whose sockets and threads it creates -- into the network namespace TEST_NETNS_A, the
 * others into TEST_NETNS_B.  The namespaces are joined by a veth pair only. */
static void enter_test_netns(int rank) {
  const char* split = getenv("TEST_NETNS_SPLIT");
  if (!split) return;
  const char* name = getenv(rank < atoi(split) ? "TEST_NETNS_A" : "TEST_NETNS_B");
  char path[256];
  snprintf(path, sizeof path, "/var/run/netns/%s", name ? name : "");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  /* As `ip netns exec` does: /sys shows the interfaces of the namespace that mounted it, and UCX
   * looks for its devices there, so this thread gets a mount namespace with a sysfs of its own. */
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0 || unshare(CLONE_NEWNS) != 0 ||
      mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 || umount2("/sys", MNT_DETACH) != 0 ||
      mount(name, "/sys", "sysfs", 0, NULL) != 0) {
    fprintf(stderr, "rank %d: cannot enter the network namespace %s: %s\n", rank, path, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  close(fd);
}

void harness_init(harness* h, int* argc, char*** argv, const char* program) {
  memset(h, 0, sizeof *h);
  h->program = program;
  int provided;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &h->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &h->nranks);
  enter_test_netns(h->rank);
  h->gpu = harness_environment(program);
  if (dfccl_mpi_bootstrap_init(MPI_COMM_WORLD, &h->init.bootstrap) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
  h->init.target = dfcclTargetDefault;
  h->init.device = -1;
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    int local = dfccl_mpi_local_rank(MPI_COMM_WORLD);
    h->init.device = local % devices;
    CHECK_CUDA(cudaSetDevice(h->init.device));
  }
#endif
  CHECK_DFCCL(dfcclInit(&h->ctx, &h->init));
  if (h->rank == 0) printf("%s: %d ranks, %s execution target\n", program, h->nranks, h->gpu ? "GPU (cuda)" : "host");
  fflush(stdout);
}

static void teardown(harness* h) {
  CHECK_DFCCL(dfcclDestroy(h->ctx));
  dfccl_mpi_bootstrap_fini(&h->init.bootstrap);
  MPI_Finalize();
}

static void teardown_before_exit(void* h) { teardown(h); }

options harness_options(harness* h, const char* usage, int argc, char** argv, const char* spec) {
  options o = mpi_options(h->program, usage, argc, argv, spec);
  o.before_exit = teardown_before_exit;
  o.arg = h;
  return o;
}

int harness_finish(harness* h, long failures) {
  long total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  teardown(h);
  return total == 0 ? 0 : 1;
}

void* harness_alloc(const harness* h, size_t bytes) {
  void* p = NULL;
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 16));
    return p;
  }
#endif
  (void)h;
  p = malloc(bytes ? bytes : 16);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

void harness_free(const harness* h, void* p) {
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    CHECK_CUDA(cudaFree(p));
    return;
  }
#endif
  (void)h;
  free(p);
}

#ifdef DFCCL_HAVE_CUDA
/* The daemon is not ordered after the caller's streams: a buffer must be complete before it is
 * handed to dfcclRun*.  A plain cudaMemcpy from pageable memory may return before its DMA lands,
 * so copies go through our own stream and are waited for.  (Not cudaDeviceSynchronize: that would
 * wait for the daemon too.) */
static cudaStream_t copy_stream(void) {
  static cudaStream_t s;
  if (!s) CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
#endif

void harness_upload(const harness* h, void* dst, const void* src, size_t bytes) {
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_stream()));
    CHECK_CUDA(cudaStreamSynchronize(copy_stream()));
    return;
  }
#endif
  (void)h;
  memcpy(dst, src, bytes);
}

void harness_download(const harness* h, void* dst, const void* src, size_t bytes) {
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, copy_stream()));
    CHECK_CUDA(cudaStreamSynchronize(copy_stream()));
    return;
  }
#endif
  (void)h;
  memcpy(dst, src, bytes);
}

double harness_gpu_used_mib(const harness* h) {
#ifdef DFCCL_HAVE_CUDA
  if (h->gpu) {
    size_t free_bytes = 0, total_bytes = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    return (double)(total_bytes - free_bytes) / (1 << 20);
  }
#endif
  (void)h;
  return 0;
}

void harness_on_complete(int collId, dfcclResult_t status, void* arg) {
  (void)collId;
  harness_counter* c = arg;
  if (status != dfcclSuccess) atomic_fetch_add(&c->errors, 1);
  atomic_fetch_add(&c->done, 1);
  harness_progress();
}

void harness_wait(harness_counter* counter, int target) {
  for (unsigned spins = 0; atomic_load(&counter->done) < target; spins++) {
    if (spins < 1000) sched_yield();
    else nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
  }
}

double harness_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t); /* cannot fail with this clock and a valid pointer */
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

dfcclStats_t harness_report_stats(const harness* h) {
  dfcclStats_t s;
  CHECK_DFCCL(dfcclGetStats(h->ctx, &s));
  printf("stats rank %d: sqes %llu, preemptions %llu, context loads %llu, saves %llu, voluntary quits %llu, "
         "launches %llu, max task queue %llu, completions %llu, full SQ waits %llu, full CQ waits %llu\n",
         h->rank, (unsigned long long)s.sqesRead, (unsigned long long)s.preemptions, (unsigned long long)s.contextLoads,
         (unsigned long long)s.contextSaves, (unsigned long long)s.voluntaryQuits, (unsigned long long)s.launches,
         (unsigned long long)s.maxTaskQueueLength, (unsigned long long)s.completions, (unsigned long long)s.sqFullWaits,
         (unsigned long long)s.cqFullWaits);
  fflush(stdout);
  dfcclStats_t total;
  _Static_assert(sizeof s % sizeof(uint64_t) == 0, "dfcclStats_t is all uint64_t");
  MPI_Reduce(&s, &total, (int)(sizeof s / sizeof(uint64_t)), MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  return total;
}

uint64_t harness_random(uint64_t* state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void harness_permutation(int* order, int n, uint64_t seed) {
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(harness_random(&seed) % (uint64_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

void harness_iteration_order(int* order, int n, uint64_t seed, int iteration, int rank) {
  harness_permutation(order, n, seed * 1000003u + (uint64_t)iteration * 7919u + (uint64_t)rank);
}

/* got: int32 or float elements, compared as float64 (which holds both exactly). */
static long check_sum(const harness* h, harness_value_fn value, int iteration, int coll, const void* got, bool f32,
                      size_t count) {
  /* value(rank, ...) = (rank + 1) * value(0, ...), so the sum over ranks is a multiple of it. */
  double ranks_sum = (double)h->nranks * (h->nranks + 1) / 2;
  long wrong = 0;
  for (size_t i = 0; i < count; i++) {
    double expected = value(0, iteration, coll, i) * ranks_sum;
    double v = f32 ? ((const float*)got)[i] : ((const int32_t*)got)[i];
    if (v != expected && wrong++ < 5)
      fprintf(stderr, "rank %d iteration %d collective %d element %zu: %.9g, expected %.0f\n", h->rank, iteration, coll,
              i, v, expected);
  }
  return wrong;
}

long harness_check_sum(const harness* h, harness_value_fn value, int iteration, int coll, const int32_t* got,
                       size_t count) {
  return check_sum(h, value, iteration, coll, got, false, count);
}

long harness_check_sum_float(const harness* h, harness_value_fn value, int iteration, int coll, const float* got,
                             size_t count) {
  return check_sum(h, value, iteration, coll, got, true, count);
}

int32_t harness_order_value(int rank, int iteration, int coll, size_t i) {
  return (int32_t)((rank + 1) * (int)((i + (size_t)iteration * 7 + (size_t)coll * 13) % 101 + 1));
}

void harness_iteration_done(const harness* h, int iteration, int iterations, int every) {
  if (h->rank == 0 && ((iteration + 1) % every == 0 || iteration + 1 == iterations)) {
    printf("iteration %d/%d done\n", iteration + 1, iterations);
    fflush(stdout);
  }
}
