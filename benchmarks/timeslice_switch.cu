/*
 * What a GPU shared by processes without MPS costs each time it passes from one process's kernel
 * to another's: the limit under the latency of collectives between ranks on one GPU, whose
 * daemons can only take turns (docs/performance.md).
 *
 * Two processes (forked) on GPU 0 take turns through a flag in shared host memory: a process waits
 * (on the host) for its turn, launches a kernel that hands the turn to the other process, and waits
 * for the kernel; so every turn passes the GPU from one process's context to the other's, as a
 * DFCCL daemon that yields passes it to the peer's.  Printed: the time per turn.  Alone (-p 1) the
 * same loop stays in one context: a launch, the kernel and its completion seen by the host.
 *
 *   timeslice_switch [-p 1|2] [-n turns]
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options.h" /* test/common */

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

/* Hands the turn to the other process. */
__global__ void take_turn(volatile int* turn, int me, int peers) {
  *turn = (me + 1) % peers;
  __threadfence_system();
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

int main(int argc, char** argv) {
  int procs = 2, turns = 200;
  options o = options_begin("timeslice_switch", "usage: timeslice_switch [-p 1|2] [-n turns]", argc, argv, "p:n:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'p') procs = option_int(&o, 1, 2);
    else if (opt == 'n') turns = option_int(&o, 1, 1 << 30);
  }
  int* shared = (int*)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  memset(shared, 0, 4096);
  int me = 0;
  if (procs == 2 && fork() == 0) me = 1; /* CUDA is initialised after the fork, in each process */
  CHECK(cudaSetDevice(0));
  CHECK(cudaHostRegister(shared, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable));
  int* turn = NULL;
  CHECK(cudaHostGetDevicePointer((void**)&turn, shared, 0));
  take_turn<<<1, 1>>>(turn + 16, 0, 1); /* warm-up: the module is loaded (the flag untouched) */
  CHECK(cudaDeviceSynchronize());
  volatile int* ready = (volatile int*)shared + 32; /* both processes set up before the clock starts */
  __atomic_fetch_add((int*)ready, 1, __ATOMIC_SEQ_CST);
  while (*ready < procs) {
  }
  double start = now_us();
  for (int t = 0; t < turns; t++) {
    while (procs == 2 && *(volatile int*)shared != me) {
    }
    take_turn<<<1, 1>>>(turn, me, procs);
    CHECK(cudaDeviceSynchronize());
  }
  double per_turn = (now_us() - start) / turns;
  if (me == 0) {
    if (procs == 2) wait(NULL);
    printf("%d process%s on one GPU: %.1f us per turn (%d turns)%s\n", procs, procs == 2 ? "es" : "", per_turn, turns,
           procs == 2 ? ": a kernel launched, the GPU handed to the other process and back" : ": launch + exit");
  }
  return 0;
}
