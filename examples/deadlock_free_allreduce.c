/*
 * deadlock_free_allreduce: CUDA-aware MPI all-reduces on GPU buffers, issued in an order that
 * deadlocks GPU collective libraries which busy-wait (NCCL-like), completing through coll/dfccl.
 *
 *   mpirun -np 2 --mca coll_dfccl_priority 90 ./deadlock_free_allreduce [iterations]
 *   (the component must be on Open MPI's component path: see examples/README.md, or examples/run.sh)
 *
 * Each rank uses one GPU and two communicators, A and B.  Every iteration, even ranks start an
 * all-reduce on A and then one on B; odd ranks start B, then A.  Even ranks also call
 * cudaDeviceSynchronize between their two calls.  Then everyone waits for both and checks them.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <ctype.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT (1 << 20) /* floats per all-reduce (4 MiB) */

/* Every call's return code is checked: on error, say which call failed where, and abort. */
#define CHECK_MPI(call)                                             \
  do {                                                              \
    int rc_ = (call);                                               \
    if (rc_ != MPI_SUCCESS) die(#call, "MPI error", rc_, __LINE__); \
  } while (0)
#define CHECK_CUDA(call)                                                          \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_), (int)e_, __LINE__); \
  } while (0)

static int rank, size;

static void die(const char* call, const char* what, int code, int line) {
  fprintf(stderr, "rank %d: %s failed: %s (%d) at line %d\n", rank, call, what, code, line);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The optional argument, taken whole: an integer in [1, 1000000] (default 20).  Anything else is
 * refused (rank 0 says why) with exit status 2.  (DFCCL's tests share test/common/options.h; this
 * example stays one self-contained file.) */
static int iterations_argument(int argc, char** argv) {
  if (argc == 1) return 20;
  const char* text = argv[1];
  char* end = NULL;
  errno = 0;
  long n = isdigit((unsigned char)text[0]) ? strtol(text, &end, 10) : 0;
  if (argc == 2 && n >= 1 && n <= 1000000 && errno == 0 && *end == '\0') return (int)n;
  if (rank == 0) {
    if (argc > 2) fprintf(stderr, "deadlock_free_allreduce: unexpected argument '%s'\n", argv[2]);
    else fprintf(stderr, "deadlock_free_allreduce: iterations: expected an integer in [1, 1000000], got '%s'\n", text);
    fprintf(stderr, "usage: mpirun -np N (N >= 2) deadlock_free_allreduce [iterations]\n");
  }
  MPI_Finalize();
  exit(2);
}

/* Element i of rank r's input on communicator c (0 = A, 1 = B) in iteration it: small integers,
 * so float sums are exact and the check can be exact. */
static float input(int r, int c, int it, int i) { return (float)((r + 1) * (i % 64) + 1000 * c + it); }

static float expected(int c, int it, int i) {
  return (float)(size * (size + 1) / 2 * (i % 64) + size * (1000 * c + it));
}

/* Fills communicator c's send buffer on the GPU and waits until the data is there: the DFCCL
 * daemon is not ordered after your CUDA streams (like any CUDA-aware MPI, it reads the buffer
 * when the call is made), so finish producing a buffer before passing it to MPI. */
static void fill(float* host, float* send_d, int c, int it) {
  for (int i = 0; i < COUNT; i++) host[i] = input(rank, c, it, i);
  CHECK_CUDA(cudaMemcpy(send_d, host, COUNT * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaStreamSynchronize(0)); /* a copy from pageable memory may return before it lands */
}

static int wrong_elements(float* host, const float* recv_d, int c, int it) {
  CHECK_CUDA(cudaMemcpy(host, recv_d, COUNT * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < COUNT; i++) wrong += host[i] != expected(c, it, i);
  return wrong;
}

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)); /* so CHECK_MPI sees errors */
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int iterations = iterations_argument(argc, argv);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np N (N >= 2) deadlock_free_allreduce [iterations]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  /* One GPU per process: the local rank (among the ranks on this node) picks the GPU, before any
   * collective on device buffers.  More ranks than GPUs works, but is slow without MPS. */
  MPI_Comm node;
  int local_rank, devices;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  CHECK_MPI(MPI_Comm_rank(node, &local_rank));
  CHECK_MPI(MPI_Comm_free(&node));
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(local_rank % devices));

  /* Two communicators over the same ranks; the names show up in coll/dfccl's verbose output. */
  MPI_Comm comm[2];
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm[0]));
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm[1]));
  CHECK_MPI(MPI_Comm_set_name(comm[0], "example A"));
  CHECK_MPI(MPI_Comm_set_name(comm[1], "example B"));

  float *send_d[2], *recv_d[2];
  float* host = malloc(COUNT * sizeof(float));
  if (host == NULL) die("malloc", "out of memory", 0, __LINE__);
  for (int c = 0; c < 2; c++) {
    CHECK_CUDA(cudaMalloc((void**)&send_d[c], COUNT * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void**)&recv_d[c], COUNT * sizeof(float)));
  }

  /* A first blocking call on each communicator, checked like the others (not needed: a nonblocking
   * call is routed through DFCCL from its first use on). */
  int wrong = 0;
  for (int c = 0; c < 2; c++) {
    fill(host, send_d[c], c, 0);
    CHECK_MPI(MPI_Allreduce(send_d[c], recv_d[c], COUNT, MPI_FLOAT, MPI_SUM, comm[c]));
    wrong += wrong_elements(host, recv_d[c], c, 0);
  }

  /* The disordered part.  With a library whose collective kernels busy-wait, even ranks' A kernel
   * would spin waiting for the odd ranks' A, which their GPUs queue behind B, which spins waiting
   * for the even ranks' B, which is never issued: the even ranks are stuck in cudaDeviceSynchronize
   * until A finishes.  A cycle: every rank hangs.  Through coll/dfccl both calls go to DFCCL's
   * daemon kernel on each GPU: a collective that cannot progress is preempted and the other one
   * runs, and when nothing can progress the daemon quits, so cudaDeviceSynchronize returns. */
  int even = rank % 2 == 0, first = even ? 0 : 1, second = 1 - first;
  if (rank < 2)
    printf("rank %d: all-reduce on %s, %sthen on %s\n", rank, first == 0 ? "A" : "B",
           even ? "cudaDeviceSynchronize, " : "", second == 0 ? "A" : "B");
  for (int it = 1; it <= iterations; it++) {
    for (int c = 0; c < 2; c++) fill(host, send_d[c], c, it);
    MPI_Request req[2];
    CHECK_MPI(MPI_Iallreduce(send_d[first], recv_d[first], COUNT, MPI_FLOAT, MPI_SUM, comm[first], &req[0]));
    if (even) CHECK_CUDA(cudaDeviceSynchronize()); /* or cudaFree, or a blocking copy */
    CHECK_MPI(MPI_Iallreduce(send_d[second], recv_d[second], COUNT, MPI_FLOAT, MPI_SUM, comm[second], &req[1]));
    CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    for (int c = 0; c < 2; c++) wrong += wrong_elements(host, recv_d[c], c, it);
  }

  int wrong_anywhere = 0;
  CHECK_MPI(MPI_Allreduce(&wrong, &wrong_anywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)); /* host: Open MPI's own */
  if (rank == 0) {
    printf("%d ranks, %d iterations of 2 all-reduces of %d floats in opposite orders: %d wrong elements\n", size,
           iterations, COUNT, wrong_anywhere);
    printf("%s\n", wrong_anywhere == 0 ? "OK" : "FAILED");
  }
  for (int c = 0; c < 2; c++) {
    CHECK_CUDA(cudaFree(send_d[c]));
    CHECK_CUDA(cudaFree(recv_d[c]));
    CHECK_MPI(MPI_Comm_free(&comm[c]));
  }
  free(host);
  CHECK_MPI(MPI_Finalize());
  return wrong_anywhere == 0 ? 0 : 1;
}
