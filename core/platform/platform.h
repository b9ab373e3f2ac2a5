/*
 * The daemon's code is written once and compiled twice: by nvcc for the GPU (one daemon block = one
 * CUDA thread block) and by the C compiler for the host execution target (one daemon block = one
 * CPU thread).  This header is the whole difference between the two.
 *
 * It is the bottom layer of the daemon's code: core/queue and core/kernel include it, and it
 * includes nothing of theirs, so the queues' layout and the daemon share one set of barriers.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_PLATFORM_PLATFORM_H
#define DFCCL_PLATFORM_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* DF_FN: daemon code.  DF_HOST_DEVICE_FN: also callable from the host code of a CUDA file (the
 * facts about types and ops that the host checks and the daemon relies on).  DF_ALWAYS_INLINE:
 * daemon code that must be inlined on the host too, where DF_FN is a mere `static inline`: generic
 * code whose arguments are constants at every call and fold away once inlined (reduce.h). */
#if defined(__CUDACC__)
#define DF_CUDA 1
#define DF_FN static __device__ __forceinline__
#define DF_ALWAYS_INLINE static __device__ __forceinline__
#define DF_HOST_DEVICE_FN static __host__ __device__ __forceinline__
#define DF_NOINLINE static __device__ __noinline__
#define DF_RESTRICT __restrict__
#else
#define DF_CUDA 0
#define DF_FN static inline
#define DF_ALWAYS_INLINE static inline __attribute__((always_inline))
#define DF_HOST_DEVICE_FN static inline
#define DF_NOINLINE static __attribute__((noinline, unused)) /* unused: a header of daemon code included by host code */
#define DF_RESTRICT restrict
#include <sched.h>
#include <time.h>
#endif

/* Where a thread is inside its daemon block.  On the host target a block has one thread. */
typedef struct {
  int tid;      /* thread index inside the block */
  int nthreads; /* threads in the block          */
  int bid;      /* block index = channel index   */
  int nblocks;  /* blocks in this launch         */
} df_block;

/* A thread's coordinates.  On a GPU they are read from the special registers and the launch's
 * constants, not from the struct: the struct sits in local memory (its address goes to the
 * data-moving routines, which are calls), and the daemon's SASS read a field of it 270 times, often
 * at the head of a chain of loads -- a run's context, a step's connectors.  Such a read costs
 * ~22 ns, from L1 even right after an acquire: the acquire's CCTL.IVALL leaves local lines alone
 * (benchmarks/local_after_acquire.cu on an H100, fortieth session) -- so this saves those tens of
 * nanoseconds a chain, and the registers and local memory the struct's copies cost, not trips. */
#if DF_CUDA
#define DF_COORDINATE(field, cuda_value)    \
  DF_FN int df_##field(const df_block* b) { \
    (void)b;                                \
    return (int)(cuda_value);               \
  }
#else
#define DF_COORDINATE(field, cuda_value) \
  DF_FN int df_##field(const df_block* b) { return b->field; }
#endif
DF_COORDINATE(tid, threadIdx.x)
DF_COORDINATE(nthreads, blockDim.x)
DF_COORDINATE(bid, blockIdx.x)
DF_COORDINATE(nblocks, gridDim.x)
#undef DF_COORDINATE

DF_FN bool df_is_leader(const df_block* b) { return df_tid(b) == 0; }

/* Barrier among the threads of one daemon block. */
DF_FN void df_block_sync(void) {
#if DF_CUDA
  __syncthreads();
#endif
}

/* Barrier among the threads of one daemon block that also tells each thread whether any thread
 * passed `mine` true. */
DF_FN bool df_block_sync_or(bool mine) {
#if DF_CUDA
  return __syncthreads_or(mine) != 0;
#else
  return mine;
#endif
}

/* ---- memory ordering between agents (host threads, GPUs, other processes) ----
 * Data are written with plain stores; a counter that publishes them is written with a release store
 * and read with an acquire load, at system scope.  Those are the only two orderings DFCCL needs. */

DF_FN uint64_t df_load_acquire_u64(const volatile uint64_t* p) {
#if DF_CUDA
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* Acquire among the blocks of one daemon (device memory). */
DF_FN uint32_t df_load_acquire_u32(const volatile uint32_t* p) {
#if DF_CUDA
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

DF_FN void df_store_release_u64(volatile uint64_t* p, uint64_t v) {
#if DF_CUDA
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* Release among the blocks of one daemon (device memory that neither the host nor a peer reads). */
DF_FN void df_store_release_gpu_u64(volatile uint64_t* p, uint64_t v) {
#if DF_CUDA
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

DF_FN void df_store_release_u32(volatile uint32_t* p, uint32_t v) {
#if DF_CUDA
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

DF_FN uint64_t df_load_acquire_gpu_u64(const volatile uint64_t* p) {
#if DF_CUDA
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* A relaxed (strong) store at system scope: after df_fence_system it publishes what came before, the
 * fence being the release -- one fence for several such stores.  On the host target it is a release
 * store: the same instruction on x86, and the release that ThreadSanitizer sees (it does not model
 * fences, so it would report the fence-then-store pairing as a race). */
DF_FN void df_store_relaxed_u32(volatile uint32_t* p, uint32_t v) {
#if DF_CUDA
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

DF_FN void df_store_relaxed_u64(volatile uint64_t* p, uint64_t v) {
#if DF_CUDA
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE /* as df_store_relaxed_u32 */);
#endif
}

DF_FN uint64_t df_load_relaxed_u64(const volatile uint64_t* p) {
#if DF_CUDA
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/* ---- words that several agents read and write with no order between them ----
 * Statistics, progress stamps, flags that are only ever set to one value, a struct the host copies
 * out for a report while the daemon runs.  On a GPU an aligned plain (or volatile) access of up to
 * 8 bytes is single-copy atomic: DF_RELAXED_* compile there to exactly the access they wrap.  On
 * the host target the blocks, the poller and the caller's threads share one process, where C11
 * makes such concurrent plain accesses a data race (ThreadSanitizer reports them): there they are
 * relaxed atomics, plain loads and stores on x86-64 and AArch64 all the same. */
#if DF_CUDA
#define DF_RELAXED_LOAD(lvalue) (lvalue)
#define DF_RELAXED_STORE(lvalue, value) ((lvalue) = (value))
#else
#define DF_RELAXED_LOAD(lvalue) __atomic_load_n(&(lvalue), __ATOMIC_RELAXED)
#define DF_RELAXED_STORE(lvalue, value) __atomic_store_n(&(lvalue), (value), __ATOMIC_RELAXED)
#endif
/* Statistics the host may read meanwhile.  On a GPU each update is a reduction that does not wait
 * for the old value (red.global): a load and a store would cost a trip to L2 on every run's path.
 * On the host target a relaxed increment (each block counts its own counters alone) and a relaxed
 * maximum (a collective's counters are shared by its blocks). */
DF_FN void df_count(uint64_t* p) {
#if DF_CUDA
  atomicAdd((unsigned long long*)p, 1ull);
#else
  __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
}

DF_FN void df_count_max_u64(uint64_t* p, uint64_t v) {
#if DF_CUDA
  atomicMax((unsigned long long*)p, (unsigned long long)v);
#else
  uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}

DF_FN void df_count_max_u32(uint32_t* p, uint32_t v) {
#if DF_CUDA
  atomicMax((unsigned int*)p, (unsigned int)v);
#else
  uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}

#if !DF_CUDA
/* Host target: copies `bytes` with relaxed atomic accesses, in words of 8, 4 or 1 bytes as the
 * addresses and the size allow -- what a GPU's memcpy to or from memory the daemon is using is. */
DF_FN void df_copy_relaxed(void* dst, const void* src, size_t bytes) {
  uintptr_t mix = (uintptr_t)dst | (uintptr_t)src | (uintptr_t)bytes;
  if ((mix & 7) == 0) {
    for (size_t i = 0; i < bytes / 8; i++)
      __atomic_store_n((uint64_t*)dst + i, __atomic_load_n((const uint64_t*)src + i, __ATOMIC_RELAXED),
                       __ATOMIC_RELAXED);
  } else if ((mix & 3) == 0) {
    for (size_t i = 0; i < bytes / 4; i++)
      __atomic_store_n((uint32_t*)dst + i, __atomic_load_n((const uint32_t*)src + i, __ATOMIC_RELAXED),
                       __ATOMIC_RELAXED);
  } else {
    for (size_t i = 0; i < bytes; i++)
      __atomic_store_n((unsigned char*)dst + i, __atomic_load_n((const unsigned char*)src + i, __ATOMIC_RELAXED),
                       __ATOMIC_RELAXED);
  }
}
#endif

/* `*dst = value` for a struct that the host may copy out while the daemon runs (a hang report reads
 * the dynamic contexts): on the host target word by word (df_copy_relaxed).  value: an lvalue. */
#if DF_CUDA
#define DF_STORE_SHARED(dst, value) (*(dst) = (value))
#else
#define DF_STORE_SHARED(dst, value) df_copy_relaxed((dst), &(value), sizeof *(dst))
#endif

/* Loads of what the host rewrites while the daemon runs (a collective's static context, copied in
 * at registration, maybe to an index a deregistered collective used before).  An SM's L1 is not
 * kept coherent with such copies and could still hold the old line -- or the line of a neighbour
 * read before -- so on a GPU these loads go to L2 (ld.global.cg).  df_load_l2 copies `bytes` (a
 * multiple of 16) from 16-byte-aligned src to 8-byte-aligned dst. */
DF_FN void df_load_l2(void* dst, const void* src, size_t bytes) {
#if DF_CUDA
  const longlong2* from = (const longlong2*)src;
  long long* to = (long long*)dst;
  for (size_t i = 0; i < bytes / 16; i++) {
    longlong2 v = __ldcg(from + i);
    to[2 * i] = v.x;
    to[2 * i + 1] = v.y;
  }
#else
  df_copy_relaxed(dst, src, bytes); /* the host's copy_in writes it likewise, from another thread */
#endif
}

DF_FN uint32_t df_load_l2_u32(const uint32_t* p) {
#if DF_CUDA
  return __ldcg((const unsigned int*)p);
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

DF_FN uint64_t df_load_l2_u64(const uint64_t* p) {
#if DF_CUDA
  return __ldcg((const unsigned long long*)p);
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/* Makes this thread's earlier writes (and, after a block barrier, the block's) visible system-wide
 * before its later writes. */
DF_FN void df_fence_system(void) {
#if DF_CUDA
  __threadfence_system();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* A release fence at system scope: this thread's earlier writes (and, after a block barrier, the
 * block's) are visible system-wide before any of its later strong stores -- with df_store_relaxed_*
 * after it, the release of several counters for the price of one (a release store is this fence and
 * one store). */
DF_FN void df_fence_release_system(void) {
#if DF_CUDA
  asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* Orders this thread's earlier loads and stores before its later ones, as seen by the other blocks
 * of the daemon (not by the host or by peers: that is df_fence_system). */
DF_FN void df_fence_device(void) {
#if DF_CUDA
  __threadfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Atomics among the blocks of one daemon, on device memory only.  A GPU's read-modify-write of
 * mapped host memory is not atomic with respect to the host (CUDA programming guide), and DFCCL
 * has seen a host store lost under one: what the daemon shares with the host (SQ, CQ, launch
 * report) has one writer per word and plain stores. */
DF_FN uint32_t df_atomic_add_u32(uint32_t* p, uint32_t v) {
#if DF_CUDA
  return atomicAdd((unsigned int*)p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

DF_FN uint64_t df_atomic_add_u64(uint64_t* p, uint64_t v) {
#if DF_CUDA
  return atomicAdd((unsigned long long*)p, (unsigned long long)v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

DF_FN uint64_t df_atomic_cas_u64(uint64_t* p, uint64_t expected, uint64_t desired) {
#if DF_CUDA
  return atomicCAS((unsigned long long*)p, (unsigned long long)expected, (unsigned long long)desired);
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
#endif
}

DF_FN uint64_t df_atomic_or_u64(uint64_t* p, uint64_t v) {
#if DF_CUDA
  return atomicOr((unsigned long long*)p, (unsigned long long)v);
#else
  return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Nanoseconds from an arbitrary origin, for periods (quit period), not for precise timing. */
DF_FN uint64_t df_time_ns(void) {
#if DF_CUDA
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* ---- low-latency lines (core/kernel/low_latency.h) ----
 * 16 bytes: two 8-byte words, each 4 bytes of data beside a 4-byte flag, each stored whole -- an
 * aligned 8-byte access is single-copy atomic on both targets -- so that a reader that sees the
 * flag in a word sees that word's data: no fence between data and flag, as in NCCL's LL protocol.
 * Both words are loaded and stored together (one 16-byte access on the GPU), the flags compared
 * by the caller.  Volatile on the GPU: the line is written by another agent and must not come
 * from L1. */
/* Word `half` (0: the low 4 bytes of data, 1: the high ones) of a line. */
DF_HOST_DEVICE_FN uint64_t df_ll_word(uint64_t data, uint32_t flag, int half) {
  return (uint64_t)flag << 32 | (uint32_t)(half ? data >> 32 : data);
}

/* `data` stored as `line`, both its words carrying `flag`. */
DF_FN void df_ll_store_line(char* line, uint64_t data, uint32_t flag) {
#if DF_CUDA
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(line)),
               "r"((uint32_t)data), "r"(flag), "r"((uint32_t)(data >> 32)), "r"(flag)
               : "memory");
#else
  uint64_t* word = (uint64_t*)(void*)line;
  __atomic_store_n(&word[0], df_ll_word(data, flag, 0), __ATOMIC_RELAXED);
  __atomic_store_n(&word[1], df_ll_word(data, flag, 1), __ATOMIC_RELAXED);
#endif
}

/* A line's four 32-bit words as loaded -- data, flag, data, flag -- with acquire order at system
 * scope where asked (what the writer stored before its release of the line is seen after it).  A
 * load issued before an acquire still goes out beside it (an acquire holds back only the later
 * ones): a caller loads several lines first and looks at them after, so that they come in one trip
 * over the bus (an SQE's lines, queue/sq.h). */
DF_FN void df_ll_load_words(const char* line, bool acquire, uint32_t w[4]) {
#if DF_CUDA
  if (acquire)
    asm volatile("ld.acquire.sys.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(__cvta_generic_to_global(line))
                 : "memory");
  else
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(__cvta_generic_to_global(line))
                 : "memory");
#else
  const uint64_t* word = (const uint64_t*)(const void*)line;
  int order = acquire ? __ATOMIC_ACQUIRE : __ATOMIC_RELAXED;
  uint64_t w0 = __atomic_load_n(&word[0], order), w1 = __atomic_load_n(&word[1], order);
  w[0] = (uint32_t)w0;
  w[1] = (uint32_t)(w0 >> 32);
  w[2] = (uint32_t)w1;
  w[3] = (uint32_t)(w1 >> 32);
#endif
}

/* The 8 data bytes of a line loaded as `w` into *data; true when both its flags are `flag`. */
DF_FN bool df_ll_line_data(const uint32_t w[4], uint32_t flag, uint64_t* data) {
  *data = (uint64_t)w[2] << 32 | w[0];
  return w[1] == flag && w[3] == flag;
}

/* The line's 8 data bytes into *data; true when both its flags are `flag`. */
DF_FN bool df_ll_load_line(const char* line, uint32_t flag, uint64_t* data) {
  uint32_t w[4];
  df_ll_load_words(line, false, w);
  return df_ll_line_data(w, flag, data);
}

/* A host thread's pause between two polls that spin: it tells the core (and its hyperthread
 * sibling) that it waits, without giving the core away. */
#if !DF_CUDA
static inline void df_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}
#endif

/* Called in every spin loop.  The host target shares few cores among many ranks and threads: a
 * waiting thread first yields, then sleeps briefly, so that the thread it waits for can run.  A
 * GPU block just spins. */
DF_FN void df_spin_pause(uint64_t iteration) {
#if DF_CUDA
  (void)iteration;
#else
  if ((iteration & 7) != 7) return;
  if (iteration < 64) {
    sched_yield();
  } else {
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
  }
#endif
}

#endif /* DFCCL_PLATFORM_PLATFORM_H */
