/*
 * Workload-independent overheads of the daemon (paper §6.2), measured on one GPU: the cost of the
 * daemon's own device functions, called the way the daemon calls them, inside a single block of
 * 512 threads (the daemon's block size) where only the leader thread works, as in the daemon.
 *
 * Build:  `make` builds it as benchmarks/overheads where configure found nvcc (the architecture of
 *         --with-cuda-arch, default sm_90)
 * Run:    ./overheads [--reps N] [--warmup N] [--colls N] [--device N]
 *         (defaults: 10000 timed repetitions after 1000 warm-up ones, 1000 collectives, device 0)
 *
 * What is timed (leader thread; the other 511 threads wait at the block barrier, as in the daemon):
 *   - Block 0's SQE fetch as df_fetch_sqes does it: df_sq_forward() of one valid SQE that the host
 *     wrote into the SQ (pinned, mapped host memory) into the SQ mirror (device memory), then
 *     df_sq_read() of it from the mirror, with the frontiers in df_block_state; and the same on an
 *     empty SQ (block 0's idle poll).  The other blocks only read the mirror.
 *   - df_context_acquire() of a collective that is not resident (static + dynamic context from the
 *     global tables into the shared-memory slot; the slot holds another, clean, collective), and
 *     df_context_save() of a dirty slot; also df_context_acquire() whose slot holds a dirty context
 *     (save + load, what a preemption-heavy schedule pays).  Each with L1 "cold" (the whole block
 *     reads 1 MiB of other data between repetitions, as the data path would) and L1 "warm".
 *   - df_cq_try_write() (the block's own ring in pinned host memory: the entry, then a release
 *     store of the tail), and for comparison two ring-buffer CQs written here that the blocks would
 *     share: one producer (load tail and head, write the entry, __threadfence_system, atomically
 *     advance tail) and several producers (reserve a position atomically, check head, write the
 *     entry, __threadfence_system, publish tail in order by CAS).
 * The tables are allocated with the sizes core/context.c alloc_tables uses (DF_MAX_COLLS x
 * DF_MAX_BLOCKS) and hold `--colls` registered collectives.  The SQ and CQs are sized to the number
 * of repetitions, so that every read finds a fresh entry written by the host and every CQE write
 * finds room on its first try (no poller runs during the measurement).
 *
 * Each repetition reads %globaltimer and clock64 around the operation; the result of the operation
 * is consumed (stored to shared memory) before the closing clock read, so loads still in flight are
 * waited for.  The same loop with no operation (the "empty" loop, per L1 mode) is measured the same
 * way and its median is subtracted.  Cycles are converted to ns with cudaDevAttrClockRate; ns from
 * %globaltimer are reported beside them (its step is printed: when it is coarse, prefer the cycles).
 * Every value read is checked (SQE fields, context contents, saved contexts, CQE values read back by
 * the host, counters); any mismatch makes the program exit with status 1.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon_kernel.cuh" /* the daemon: scheduler.h, context.h, block.h, daemon.h, queue/sq.h, queue/cq.h */
#include "daemon_launch.h"
#include "cuda_check.h"
#include "options.h" /* test/common: parse_long */

static constexpr int kThreads = DF_CUDA_THREADS; /* 512, like the daemon */
static constexpr size_t kFlushBytes = 1u << 20;  /* > L1 (256 KiB per SM on sm_90) */

/* Plain ring-buffer CQ control words, each on its own 128-byte line of one pinned allocation. */
static constexpr int kReserve = 0, kHead = 16, kTail = 32, kCtrlWords = 48;

enum Op {
  OP_EMPTY = 0,
  OP_SQ_READ,
  OP_SQ_POLL_EMPTY,
  OP_CTX_LOAD,
  OP_CTX_SAVE,
  OP_CTX_EVICT,
  OP_CQ_WRITE,
  OP_PLAIN_CQ_1P,
  OP_PLAIN_CQ_MP,
};

struct PlainCq {
  uint64_t* entries; /* [n], pinned host memory (device address) */
  uint64_t* ctrl;    /* [kCtrlWords], pinned host memory          */
  uint32_t n;
};

struct Params {
  uint32_t total; /* repetitions including warm-up */
  uint32_t warmup;
  uint32_t ncolls;       /* registered collectives         */
  int flush;             /* 1: evict L1 before each repetition */
  const uint4* scratch;  /* kFlushBytes of zeros           */
  const df_links* links; /* [ncolls]: addresses the static contexts' links name (never read) */
  PlainCq plain;
  uint64_t* cycles;           /* [total - warmup] */
  uint64_t* nanos;            /* [total - warmup] */
  uint64_t* run;              /* [0] cycles, [1] ns of the whole loop (leader) */
  unsigned long long* errors; /* [0] count, [1] first failing repetition, [2] what failed */
};

/* ================================================================ expected contents */

/* One function writes the tables on the host and checks them on the GPU. */
__host__ __device__ inline df_coll_static expected_static(uint32_t c, const df_links* links) {
  df_coll_static s = {};
  s.kind = DF_COLL_ALL_REDUCE;
  s.dtype = dfcclFloat32;
  s.op = dfcclSum;
  s.nranks = 2;
  s.rank = c & 1;
  s.nchannels = 1;
  s.root = -1;
  s.priority = (int32_t)(c % 3);
  s.count = 4096ull * (c + 1);
  s.links.nchannels = 1;
  s.links.from_prev = (df_connector*)(links + c); /* one address per collective */
  s.flags = 0;
  s.order = c;
  s.blocks = NULL;
  return s;
}

/* The dynamic context of a queued run; `saves` runs of progress (iteration + 1 each) saved since. */
__host__ __device__ inline df_coll_dynamic expected_dynamic(uint32_t c, uint32_t saves) {
  df_coll_dynamic d;
  d.sendbuff = (const void*)(uintptr_t)(0x7f0000000000ull + (uint64_t)c * 0x100000ull);
  d.recvbuff = (void*)(uintptr_t)(0x7f0000080000ull + (uint64_t)c * 0x100000ull);
  d.epoch = c + 1;
  d.iteration = 3ull * c + saves;
  d.step = c % 5;
  d.gated = 0;
  d.received = 0;
  d.pad[0] = d.pad[1] = 0;
  return d;
}

/* SQE number i (the i-th submission) and CQE number i. */
__host__ __device__ inline uint32_t sqe_coll(uint32_t i, uint32_t ncolls) { return i % ncolls; }
__host__ __device__ inline uint32_t sqe_epoch(uint32_t i, uint32_t ncolls) { return i / ncolls + 1; }
__host__ __device__ inline uint64_t sqe_sendbuff(uint32_t i) { return 0x7e0000000000ull + 64ull * i; }
__host__ __device__ inline uint64_t sqe_recvbuff(uint32_t i) { return 0x7d0000000000ull + 64ull * i; }
/* The CQE layout of cq.h (epoch << 32 | valid bit | collective), written out here so the host checks it. */
__host__ __device__ inline uint64_t cqe_value(uint32_t i, uint32_t ncolls) {
  return ((uint64_t)sqe_epoch(i, ncolls) << 32) | DF_CQE_VALID | sqe_coll(i, ncolls); /* df_cqe_pack, error 0 */
}

/* ================================================================ device helpers */

__device__ __forceinline__ uint64_t read_clock(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

__device__ __forceinline__ uint64_t read_globaltimer(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

/* All threads: read kFlushBytes of other data through L1 so that what the leader loads next comes
 * from L2 (as after a primitive that moved data). */
__device__ __forceinline__ void flush_l1(const uint4* scratch, volatile uint64_t* sink) {
  uint32_t acc = 0;
  for (size_t k = threadIdx.x; k < kFlushBytes / sizeof(uint4); k += blockDim.x) {
    uint4 v = __ldca(scratch + k);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0xdeadbeefu) *sink = acc; /* never: the scratch is zero; keeps the loads */
}

/* Plain ring-buffer CQ, one producer: the tail is the position to write. */
__device__ __forceinline__ bool plain_cq_write_1p(PlainCq q, uint64_t cqe) {
  uint64_t t = df_load_relaxed_u64(&q.ctrl[kTail]);
  uint64_t h = df_load_relaxed_u64(&q.ctrl[kHead]);
  if (t - h >= q.n) return false; /* full */
  ((volatile uint64_t*)q.entries)[t % q.n] = cqe;
  __threadfence_system(); /* the entry before the tail that publishes it */
  atomicAdd((unsigned long long*)&q.ctrl[kTail], 1ull);
  return true;
}

/* Plain ring-buffer CQ, several producers (blocks): reserve a position, wait for room, write the
 * entry, fence, then publish the tail in reservation order. */
__device__ __forceinline__ bool plain_cq_write_mp(PlainCq q, uint64_t cqe) {
  uint64_t r = atomicAdd((unsigned long long*)&q.ctrl[kReserve], 1ull);
  for (uint32_t spins = 0; r - df_load_relaxed_u64(&q.ctrl[kHead]) >= q.n; spins++)
    if (spins == (1u << 20)) return false; /* full (no poller runs here) */
  ((volatile uint64_t*)q.entries)[r % q.n] = cqe;
  __threadfence_system();
  for (uint32_t spins = 0; atomicCAS((unsigned long long*)&q.ctrl[kTail], r, r + 1) != r; spins++)
    if (spins == (1u << 20)) return false;
  return true;
}

enum Failure {
  FAIL_SQE = 1,
  FAIL_SQ_POLL,
  FAIL_CTX_LOAD,
  FAIL_CTX_SAVE,
  FAIL_CQE,
};

__device__ void record_failure(const Params& p, uint32_t i, int what) {
  if (atomicAdd(&p.errors[0], 1ull) == 0) {
    p.errors[1] = i;
    p.errors[2] = (unsigned long long)what;
  }
}

/* The slot holds collective c as loaded from the tables (its dynamic context saved `saves` times). */
__device__ bool slot_matches(const df_context_slot* slot, uint32_t c, uint32_t saves, const df_links* links) {
  const df_coll_static s = expected_static(c, links);
  const df_coll_dynamic d = expected_dynamic(c, saves);
  return slot->coll == (int32_t)c && slot->dirty == 0 && slot->stat.kind == s.kind && slot->stat.dtype == s.dtype &&
         slot->stat.op == s.op && slot->stat.nranks == s.nranks && slot->stat.rank == s.rank &&
         slot->stat.nchannels == s.nchannels && slot->stat.root == s.root && slot->stat.priority == s.priority &&
         slot->stat.count == s.count && slot->stat.links.from_prev == s.links.from_prev &&
         slot->dyn.sendbuff == d.sendbuff && slot->dyn.recvbuff == d.recvbuff && slot->dyn.epoch == d.epoch &&
         slot->dyn.iteration == d.iteration && slot->dyn.step == d.step;
}

/* ================================================================ the measurement kernel */

template <int OP>
__global__ void __launch_bounds__(kThreads, 1) measure_kernel(const df_daemon_args* a, Params p) {
  __shared__ df_block_shared shared; /* the daemon block's working memory */
  __shared__ volatile uint64_t sink; /* where a timed result is consumed  */
  df_block blk;
  blk.tid = (int)threadIdx.x;
  blk.nthreads = (int)blockDim.x;
  blk.bid = (int)blockIdx.x;
  blk.nblocks = (int)gridDim.x;
  df_block_shared* sh = &shared;
  const bool leader = df_is_leader(&blk);

  uint64_t run_c0 = 0, run_g0 = 0;
  if (leader) {
    df_context_block_start(a, &blk, sh); /* as a (re)launched daemon block: empty slots */
    sink = 0;
    run_g0 = read_globaltimer();
    run_c0 = read_clock();
  }
  df_block_sync();

  uint32_t prepared = 0; /* OP_CTX_SAVE: slot made dirty before the timed save */
  for (uint32_t i = 0; i < p.total; i++) {
    const uint32_t c = i % p.ncolls;     /* collective of this repetition */
    const uint32_t round = i / p.ncolls; /* times it was used before      */

    if constexpr (OP == OP_CTX_SAVE) {
      if (leader) { /* untimed: load c (its slot holds another, clean, collective), let it progress */
        prepared = df_context_acquire(a, &blk, sh, c);
        df_context_slot* slot = &sh->slots[prepared];
        if (!slot_matches(slot, c, round, p.links)) record_failure(p, i, FAIL_CTX_LOAD);
        slot->dyn.iteration++;
        slot->dirty = 1;
      }
    }
    if (p.flush) {
      df_block_sync();
      flush_l1(p.scratch, &sink);
    }
    df_block_sync();
    if (!leader) continue;

    /* Inputs prepared outside the timed region. */
    const uint64_t cqe = df_cqe_pack(sqe_coll(i, p.ncolls), sqe_epoch(i, p.ncolls), 0);
    df_sqe e;
    memset(&e, 0, sizeof e);
    bool ok = true;
    uint32_t index = 0;
    uint64_t v = 0;

    const uint64_t g0 = read_globaltimer();
    const uint64_t c0 = read_clock();
    if constexpr (OP == OP_SQ_READ || OP == OP_SQ_POLL_EMPTY) {
      /* as df_fetch_sqes on block 0: the previous entry handed back (in the daemon that waits for
       * the next round, off the run's path, but it is this entry's cost all the same), then the
       * entry taken while it is forwarded */
      df_block_state* bs = &a->blocks[blk.bid];
      df_sq_acknowledge(a->sq_host, &bs->sq_acknowledged, bs->sq_forwarded);
      bool next = false; /* the look for the next entry, which comes with this one's read */
      ok = df_sq_lines_read(a->sq_host, bs->sq_forwarded, &e, &next) && df_sq_forward(a->sq, &bs->sq_forwarded, &e);
      bs->sq_frontier = bs->sq_forwarded;
      v = (uint64_t)ok ^ ((uint64_t)next << 1) ^ e.coll ^ ((uint64_t)e.epoch << 32) ^ (uint64_t)(uintptr_t)e.sendbuff ^
          (uint64_t)(uintptr_t)e.recvbuff ^ e.nreaders;
    } else if constexpr (OP == OP_CTX_LOAD || OP == OP_CTX_EVICT) {
      index = df_context_acquire(a, &blk, sh, c); /* as df_run_task */
      v = index;
    } else if constexpr (OP == OP_CTX_SAVE) {
      df_context_save(a, &blk, &sh->slots[prepared]); /* as df_context_acquire/_block_stop */
    } else if constexpr (OP == OP_CQ_WRITE) {
      df_block_state* bs = &a->blocks[blk.bid]; /* as df_complete_run */
      ok = df_cq_try_write(a->cq, (uint32_t)blk.bid, &bs->cq_tail, &bs->cq_head_seen, cqe);
      v = ok;
    } else if constexpr (OP == OP_PLAIN_CQ_1P) {
      ok = plain_cq_write_1p(p.plain, cqe);
      v = ok;
    } else if constexpr (OP == OP_PLAIN_CQ_MP) {
      ok = plain_cq_write_mp(p.plain, cqe);
      v = ok;
    }
    sink = v; /* waits for the operation's loads */
    const uint64_t c1 = read_clock();
    const uint64_t g1 = read_globaltimer();

    /* Checks, untimed. */
    if constexpr (OP == OP_SQ_READ) {
      if (!ok || e.coll != sqe_coll(i, p.ncolls) || e.epoch != sqe_epoch(i, p.ncolls) ||
          (uint64_t)(uintptr_t)e.sendbuff != sqe_sendbuff(i) || (uint64_t)(uintptr_t)e.recvbuff != sqe_recvbuff(i) ||
          e.nreaders != 1 || a->blocks[blk.bid].sq_frontier != (uint64_t)i + 1)
        record_failure(p, i, FAIL_SQE);
    } else if constexpr (OP == OP_SQ_POLL_EMPTY) {
      if (ok || a->blocks[blk.bid].sq_frontier != 0) record_failure(p, i, FAIL_SQ_POLL);
    } else if constexpr (OP == OP_CTX_LOAD || OP == OP_CTX_EVICT) {
      const uint32_t saves = OP == OP_CTX_EVICT ? round : 0;
      if (index != c % DF_CONTEXT_SLOTS || !slot_matches(&sh->slots[index], c, saves, p.links))
        record_failure(p, i, FAIL_CTX_LOAD);
      if constexpr (OP == OP_CTX_EVICT) { /* progress: saved when the next collective of this slot takes it */
        sh->slots[index].dyn.iteration++;
        sh->slots[index].dirty = 1;
      }
    } else if constexpr (OP == OP_CTX_SAVE) {
      const volatile uint64_t* saved = &df_global_dynamic(a, &blk, c)->iteration;
      if (sh->slots[prepared].dirty != 0 || *saved != expected_dynamic(c, round + 1).iteration)
        record_failure(p, i, FAIL_CTX_SAVE);
    } else if constexpr (OP == OP_CQ_WRITE) {
      if (!ok || a->blocks[blk.bid].cq_tail != (uint64_t)i + 1) record_failure(p, i, FAIL_CQE);
    } else if constexpr (OP == OP_PLAIN_CQ_1P || OP == OP_PLAIN_CQ_MP) {
      if (!ok) record_failure(p, i, FAIL_CQE);
    }
    if (i >= p.warmup) {
      p.cycles[i - p.warmup] = c1 - c0;
      p.nanos[i - p.warmup] = g1 - g0;
    }
  }
  if (leader) {
    const uint64_t run_c1 = read_clock();
    const uint64_t run_g1 = read_globaltimer();
    p.run[0] = run_c1 - run_c0;
    p.run[1] = run_g1 - run_g0;
    if constexpr (OP == OP_SQ_READ) /* the last entry, as a daemon block does before it quits */
      df_sq_acknowledge(a->sq_host, &a->blocks[blk.bid].sq_acknowledged, a->blocks[blk.bid].sq_forwarded);
  }
}

/* The daemon kernel of core/kernel/daemon_cuda.cu, compiled here only to read its attributes (the
 * real one is static in the library); never launched. */
static __global__ void __launch_bounds__(DF_CUDA_THREADS, 1) daemon_twin_kernel(const df_daemon_args* args) {
  df_daemon_kernel_body(args);
}

/* Leader: the smallest step of %globaltimer, and the clock over the probe. */
__global__ void timer_probe_kernel(uint64_t* out) {
  if (threadIdx.x != 0) return;
  uint64_t prev = read_globaltimer();
  const uint64_t g0 = prev, c0 = read_clock();
  uint64_t min_step = UINT64_MAX;
  for (int changes = 0; changes < 256;) {
    const uint64_t t = read_globaltimer();
    if (t != prev) {
      if (t - prev < min_step) min_step = t - prev;
      prev = t;
      changes++;
    }
  }
  out[0] = min_step;
  out[1] = read_clock() - c0;
  out[2] = prev - g0;
}

/* ================================================================ host */

struct Options {
  uint32_t reps = 10000;
  uint32_t warmup = 1000;
  uint32_t ncolls = 1000;
  int device = 0;
};

[[noreturn]] static void usage(const char* prog) {
  fprintf(stderr, "usage: %s [--reps N (>= 10000)] [--warmup N (>= 8)] [--colls N (8..%d)] [--device N]\n", prog,
          DF_MAX_COLLS);
  exit(2);
}

/* The value of option `name` (text, NULL when it is missing), whole, in [lo, hi]; else a message and
 * the usage, exit status 2. */
static long option_value(const char* prog, const char* name, const char* text, long lo, long hi) {
  long v = 0;
  if (text != nullptr && parse_long(text, lo, hi, &v)) return v;
  if (text == nullptr) fprintf(stderr, "%s: %s needs a value\n", prog, name);
  else fprintf(stderr, "%s: %s: expected an integer in [%ld, %ld], got '%s'\n", prog, name, lo, hi, text);
  usage(prog);
}

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string arg = argv[i];
    const char* text = i + 1 < argc ? argv[i + 1] : nullptr;
    /* >= 8 collectives: each acquire misses (4 slots); >= 8 warm-up: every timed eviction saves. */
    if (arg == "--reps") o.reps = (uint32_t)option_value(argv[0], "--reps", text, 10000, 1 << 24);
    else if (arg == "--warmup") o.warmup = (uint32_t)option_value(argv[0], "--warmup", text, 8, 1 << 24);
    else if (arg == "--colls") o.ncolls = (uint32_t)option_value(argv[0], "--colls", text, 8, DF_MAX_COLLS);
    else if (arg == "--device") o.device = (int)option_value(argv[0], "--device", text, 0, 1023);
    else {
      fprintf(stderr, "%s: unknown option '%s'\n", argv[0], argv[i]);
      usage(argv[0]);
    }
  }
  return o;
}

/* Device memory the library's alloc_tables allocates, and the pinned memory the benchmark uses. */
struct Tables {
  df_daemon_args host_args; /* device and mapped pointers, as the daemon gets them */
  df_daemon_args* dev_args = nullptr;
  df_coll_static* colls = nullptr;
  df_coll_dynamic* dynamic = nullptr;
  uint32_t* done_blocks = nullptr;
  df_coll_counters* coll_counters = nullptr;
  df_block_state* blocks = nullptr;
  uint16_t* saved_tasks = nullptr;
  uint64_t* quit_votes = nullptr;
  uint32_t* quit_request_host = nullptr;
  df_sqe_lines* sq_host = nullptr;
  df_sqe* sq_mirror = nullptr;
  uint32_t sq_entries = 0;
  uint64_t* cq_host = nullptr; /* block 0's tail, the host's head, block 0's ring */
  uint32_t cq_ring = 0;
  uint64_t* plain_entries_host = nullptr;
  uint64_t* plain_ctrl_host = nullptr;
  PlainCq plain;
  df_links* links = nullptr;
  uint4* scratch = nullptr;
};

template <typename T>
static void alloc_device(T** p, size_t bytes) {
  CHECK_CUDA(cudaMalloc((void**)p, bytes));
  CHECK_CUDA(cudaMemset(*p, 0, bytes));
}

template <typename T>
static T* alloc_mapped(T** host, size_t bytes) {
  CHECK_CUDA(cudaHostAlloc((void**)host, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  memset((void*)*host, 0, bytes);
  T* daemon = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer((void**)&daemon, (void*)*host, 0));
  return daemon;
}

static void build_tables(Tables& t, const Options& o) {
  const uint32_t total = o.reps + o.warmup;
  df_daemon_args& a = t.host_args;
  memset(&a, 0, sizeof a);
  /* The sizes of core/context.c alloc_tables. */
  alloc_device(&t.colls, DF_MAX_COLLS * sizeof(df_coll_static));
  alloc_device(&t.dynamic, (size_t)DF_MAX_BLOCKS * DF_MAX_COLLS * sizeof(df_coll_dynamic));
  alloc_device(&t.done_blocks, DF_MAX_COLLS * sizeof(uint32_t));
  alloc_device(&t.coll_counters, DF_MAX_COLLS * sizeof(df_coll_counters));
  alloc_device(&t.blocks, DF_MAX_BLOCKS * sizeof(df_block_state));
  alloc_device(&t.saved_tasks, (size_t)DF_MAX_BLOCKS * DF_MAX_COLLS * sizeof(uint16_t));
  alloc_device(&t.quit_votes, sizeof(uint64_t));
  a.colls = t.colls;
  a.dynamic = t.dynamic;
  a.done_blocks = t.done_blocks;
  a.coll_counters = t.coll_counters;
  a.blocks = t.blocks;
  a.saved_tasks = t.saved_tasks;
  a.quit_votes = t.quit_votes;
  a.quit_request = alloc_mapped(&t.quit_request_host, 64);
  /* SQ: a power of two >= the reads, so that each read takes a fresh entry the host wrote. */
  t.sq_entries = 4096;
  while (t.sq_entries < total) t.sq_entries *= 2;
  /* The ring, then its acknowledged count on a line of its own (as df_sq_host_init). */
  a.sq_host.entries = alloc_mapped(&t.sq_host, ((size_t)t.sq_entries + 1) * sizeof(df_sqe_lines));
  a.sq_host.acknowledged = (volatile uint64_t*)(a.sq_host.entries + t.sq_entries);
  a.sq_host.mask = t.sq_entries - 1;
  alloc_device(&t.sq_mirror, (size_t)t.sq_entries * sizeof(df_sqe));
  a.sq.entries = t.sq_mirror;
  a.sq.mask = t.sq_entries - 1;
  /* CQ: block 0's ring (the only block here), with room for every write. */
  t.cq_ring = 1;
  while (t.cq_ring < total) t.cq_ring *= 2;
  uint64_t* cq = (uint64_t*)alloc_mapped(&t.cq_host, (DF_CQ_STRIDE + (size_t)t.cq_ring) * sizeof(uint64_t));
  a.cq.heads = cq;
  a.cq.entries = cq + DF_CQ_STRIDE;
  a.cq.ring = t.cq_ring;
  /* The GPU defaults of core/config.c (unused by the functions measured). */
  a.spin.front = 1000;
  a.spin.floor = 100;
  a.spin.decay_shift = 1;
  a.spin.growth = 20;
  a.spin.ceiling = 10000;
  a.spin.quit_period_ns = 2000ull * 1000;
  a.spin.preemption = 1;
  alloc_device(&t.dev_args, sizeof a);
  CHECK_CUDA(cudaMemcpy(t.dev_args, &a, sizeof a, cudaMemcpyHostToDevice));

  t.plain.entries = alloc_mapped(&t.plain_entries_host, (size_t)total * sizeof(uint64_t));
  t.plain.ctrl = alloc_mapped(&t.plain_ctrl_host, kCtrlWords * sizeof(uint64_t));
  t.plain.n = total;
  alloc_device(&t.links, (size_t)o.ncolls * sizeof(df_links));
  alloc_device(&t.scratch, kFlushBytes);
}

static void free_tables(Tables& t) {
  void* device[] = {t.dev_args,    t.colls,      t.dynamic, t.done_blocks, t.coll_counters, t.blocks,
                    t.saved_tasks, t.quit_votes, t.links,   t.scratch,     t.sq_mirror};
  for (void* p : device) CHECK_CUDA(cudaFree(p));
  void* host[] = {t.quit_request_host, t.sq_host, t.cq_host, t.plain_entries_host, t.plain_ctrl_host};
  for (void* p : host) CHECK_CUDA(cudaFreeHost(p));
}

/* Before each experiment: 1000 registered collectives with queued runs, empty queues. */
static void reset_tables(Tables& t, const Options& o, int op) {
  const uint32_t total = o.reps + o.warmup;
  std::vector<df_coll_static> colls(DF_MAX_COLLS);
  memset(colls.data(), 0, colls.size() * sizeof(df_coll_static));
  std::vector<df_coll_dynamic> dyn(DF_MAX_COLLS);
  memset(dyn.data(), 0, dyn.size() * sizeof(df_coll_dynamic));
  for (uint32_t c = 0; c < o.ncolls; c++) {
    colls[c] = expected_static(c, t.links);
    dyn[c] = expected_dynamic(c, 0);
  }
  CHECK_CUDA(cudaMemcpy(t.colls, colls.data(), colls.size() * sizeof(df_coll_static), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(t.dynamic, 0, (size_t)DF_MAX_BLOCKS * DF_MAX_COLLS * sizeof(df_coll_dynamic)));
  CHECK_CUDA(cudaMemcpy(t.dynamic, dyn.data(), dyn.size() * sizeof(df_coll_dynamic), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(t.done_blocks, 0, DF_MAX_COLLS * sizeof(uint32_t)));
  CHECK_CUDA(cudaMemset(t.coll_counters, 0, DF_MAX_COLLS * sizeof(df_coll_counters)));
  CHECK_CUDA(cudaMemset(t.blocks, 0, DF_MAX_BLOCKS * sizeof(df_block_state)));
  CHECK_CUDA(cudaMemset(t.saved_tasks, 0, (size_t)DF_MAX_BLOCKS * DF_MAX_COLLS * sizeof(uint16_t)));
  CHECK_CUDA(cudaMemset(t.quit_votes, 0, sizeof(uint64_t)));

  /* SQ as df_sq_host_init + df_sq_host_submit leave it: entries 0..total-1 written by the host. */
  memset((void*)t.sq_host, 0, ((size_t)t.sq_entries + 1) * sizeof(df_sqe_lines));
  for (uint32_t s = 0; op == OP_SQ_READ && s < total; s++) {
    df_sqe e;
    memset(&e, 0, sizeof e);
    e.coll = sqe_coll(s, o.ncolls);
    e.epoch = sqe_epoch(s, o.ncolls);
    e.sendbuff = (const void*)(uintptr_t)sqe_sendbuff(s);
    e.recvbuff = (void*)(uintptr_t)sqe_recvbuff(s);
    e.nreaders = 1; /* one daemon block reads the mirror */
    df_sqe_write_lines(&t.sq_host[s], s, &e);
  }
  std::vector<df_sqe> mirror(t.sq_entries); /* as core/context.c alloc_sq_mirror */
  memset(mirror.data(), 0, mirror.size() * sizeof(df_sqe));
  for (df_sqe& m : mirror) m.seq = DF_SEQ_NONE;
  CHECK_CUDA(cudaMemcpy(t.sq_mirror, mirror.data(), mirror.size() * sizeof(df_sqe), cudaMemcpyHostToDevice));
  memset(t.cq_host, 0, (DF_CQ_STRIDE + (size_t)t.cq_ring) * sizeof(uint64_t)); /* as df_cq_host_init */
  memset(t.plain_entries_host, 0, (size_t)t.plain.n * sizeof(uint64_t));
  memset(t.plain_ctrl_host, 0, kCtrlWords * sizeof(uint64_t));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Host-side checks after an experiment: what the GPU wrote, read back.  Returns the mismatches. */
static uint64_t verify(const Tables& t, const Options& o, int op) {
  const uint32_t total = o.reps + o.warmup;
  uint64_t bad = 0;
  df_block_state bs;
  CHECK_CUDA(cudaMemcpy(&bs, t.blocks, sizeof bs, cudaMemcpyDeviceToHost));
  std::vector<df_coll_counters> cc(o.ncolls);
  CHECK_CUDA(cudaMemcpy(cc.data(), t.coll_counters, o.ncolls * sizeof(df_coll_counters), cudaMemcpyDeviceToHost));
  uint64_t loads = 0, saves = 0;
  for (const df_coll_counters& x : cc) {
    loads += x.context_loads;
    saves += x.context_saves;
  }
  auto expect = [&bad](const char* what, uint64_t got, uint64_t want) {
    if (got != want) {
      fprintf(stderr, "  check failed: %s = %" PRIu64 ", expected %" PRIu64 "\n", what, got, want);
      bad++;
    }
  };
  switch (op) {
    case OP_SQ_READ: {
      expect("sq_frontier", bs.sq_frontier, total);
      expect("sq_forwarded", bs.sq_forwarded, total);
      const uint64_t* acknowledged = (const uint64_t*)(void*)(t.sq_host + t.sq_entries);
      expect("SQEs acknowledged", __atomic_load_n(acknowledged, __ATOMIC_ACQUIRE), total);
      break;
    }
    case OP_SQ_POLL_EMPTY: {
      expect("sq_frontier", bs.sq_frontier, 0);
      expect("sq_forwarded", bs.sq_forwarded, 0);
      const uint64_t* acknowledged = (const uint64_t*)(void*)(t.sq_host + t.sq_entries);
      expect("SQEs acknowledged", __atomic_load_n(acknowledged, __ATOMIC_ACQUIRE), 0);
      break;
    }
    case OP_CTX_LOAD:
    case OP_CTX_SAVE:
    case OP_CTX_EVICT: {
      /* Replay the slots: a save writes back one more iteration of progress. */
      std::vector<uint32_t> saved(o.ncolls, 0);
      uint64_t want_saves = 0;
      int64_t holder[DF_CONTEXT_SLOTS];
      for (int64_t& h : holder) h = -1;
      for (uint32_t i = 0; i < total; i++) {
        const uint32_t c = i % o.ncolls;
        int64_t& h = holder[c % DF_CONTEXT_SLOTS];
        if (op == OP_CTX_SAVE) {
          saved[c]++;
          want_saves++;
        } else if (op == OP_CTX_EVICT && h >= 0 && h != (int64_t)c) {
          saved[h]++;
          want_saves++;
        }
        h = c;
      }
      expect("block context_loads", bs.counters.context_loads, total);
      expect("block context_saves", bs.counters.context_saves, want_saves);
      expect("sum of collectives' context_loads", loads, total);
      expect("sum of collectives' context_saves", saves, want_saves);
      std::vector<df_coll_dynamic> dyn(o.ncolls);
      CHECK_CUDA(cudaMemcpy(dyn.data(), t.dynamic, o.ncolls * sizeof(df_coll_dynamic), cudaMemcpyDeviceToHost));
      uint64_t wrong = 0;
      for (uint32_t c = 0; c < o.ncolls; c++) {
        const df_coll_dynamic want = expected_dynamic(c, saved[c]);
        wrong += memcmp(&dyn[c], &want, sizeof want) != 0;
      }
      expect("dynamic contexts in global memory not as expected", wrong, 0);
      break;
    }
    case OP_CQ_WRITE: {
      expect("cq_tail", bs.cq_tail, total);
      uint64_t wrong = 0;
      for (uint32_t s = 0; s < total; s++)
        wrong += __atomic_load_n(&t.cq_host[DF_CQ_STRIDE + s], __ATOMIC_ACQUIRE) != cqe_value(s, o.ncolls);
      expect("CQ entries not holding the expected CQE", wrong, 0);
      break;
    }
    case OP_PLAIN_CQ_1P:
    case OP_PLAIN_CQ_MP: {
      expect("plain CQ tail", __atomic_load_n(&t.plain_ctrl_host[kTail], __ATOMIC_ACQUIRE), total);
      if (op == OP_PLAIN_CQ_MP)
        expect("plain CQ reserve", __atomic_load_n(&t.plain_ctrl_host[kReserve], __ATOMIC_ACQUIRE), total);
      uint64_t wrong = 0;
      for (uint32_t s = 0; s < total; s++)
        wrong += __atomic_load_n(&t.plain_entries_host[s], __ATOMIC_ACQUIRE) != cqe_value(s, o.ncolls);
      expect("plain CQ entries not holding the expected CQE", wrong, 0);
      break;
    }
    default: break;
  }
  return bad;
}

struct Result {
  std::string name;
  std::string paper;
  int op = OP_EMPTY;
  int flush = 0;
  std::vector<int64_t> cycles; /* per repetition, empty-loop median subtracted */
  std::vector<int64_t> nanos;  /* per repetition (globaltimer), empty-loop median subtracted */
  int64_t raw_cycles_median = 0, raw_nanos_median = 0;
  double run_mhz = 0; /* clock64 / globaltimer over the loop */
};

/* Nearest-rank percentile of a sorted copy. */
static int64_t percentile(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  size_t rank = (size_t)(q * (double)v.size() + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > v.size()) rank = v.size();
  return v[rank - 1];
}

static void launch(int op, const df_daemon_args* dev_args, const Params& p) {
  switch (op) {
    case OP_EMPTY: measure_kernel<OP_EMPTY><<<1, kThreads>>>(dev_args, p); break;
    case OP_SQ_READ: measure_kernel<OP_SQ_READ><<<1, kThreads>>>(dev_args, p); break;
    case OP_SQ_POLL_EMPTY: measure_kernel<OP_SQ_POLL_EMPTY><<<1, kThreads>>>(dev_args, p); break;
    case OP_CTX_LOAD: measure_kernel<OP_CTX_LOAD><<<1, kThreads>>>(dev_args, p); break;
    case OP_CTX_SAVE: measure_kernel<OP_CTX_SAVE><<<1, kThreads>>>(dev_args, p); break;
    case OP_CTX_EVICT: measure_kernel<OP_CTX_EVICT><<<1, kThreads>>>(dev_args, p); break;
    case OP_CQ_WRITE: measure_kernel<OP_CQ_WRITE><<<1, kThreads>>>(dev_args, p); break;
    case OP_PLAIN_CQ_1P: measure_kernel<OP_PLAIN_CQ_1P><<<1, kThreads>>>(dev_args, p); break;
    case OP_PLAIN_CQ_MP: measure_kernel<OP_PLAIN_CQ_MP><<<1, kThreads>>>(dev_args, p); break;
    default: fprintf(stderr, "unknown op %d\n", op); exit(2);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
}

static const char* failure_name(unsigned long long what) {
  switch (what) {
    case FAIL_SQE: return "SQE read back differs from what the host wrote";
    case FAIL_SQ_POLL: return "an empty SQ returned an entry";
    case FAIL_CTX_LOAD: return "loaded context differs from the tables";
    case FAIL_CTX_SAVE: return "saved context not in global memory";
    case FAIL_CQE: return "CQE write failed";
    default: return "?";
  }
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const uint32_t total = o.reps + o.warmup;
  CHECK_CUDA(cudaSetDevice(o.device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, o.device));
  int clock_khz = 0, can_map = 0, cc_major = 0, cc_minor = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, o.device));
  CHECK_CUDA(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, o.device));
  CHECK_CUDA(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, o.device));
  CHECK_CUDA(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, o.device));
  if (!can_map || clock_khz <= 0) {
    fprintf(stderr, "device %d cannot map host memory or reports no clock rate\n", o.device);
    return 2;
  }
  const double ghz = clock_khz / 1e6; /* cycles per ns */
  printf("DFCCL workload-independent overheads (paper section 6.2)\n");
  printf("device %d: %s, sm_%d%d, %d SMs, SM clock %.0f MHz (cudaDevAttrClockRate)\n", o.device, prop.name, cc_major,
         cc_minor, prop.multiProcessorCount, clock_khz / 1e3);
  printf("1 block x %d threads (leader times, others wait at the barrier), %u timed repetitions after %u warm-up, "
         "%u registered collectives\n",
         kThreads, o.reps, o.warmup, o.ncolls);

  /* ---- memory, as built ---- */
  cudaFuncAttributes twin, meas;
  CHECK_CUDA(cudaFuncGetAttributes(&twin, daemon_twin_kernel));
  CHECK_CUDA(cudaFuncGetAttributes(&meas, measure_kernel<OP_CTX_LOAD>));
  const size_t smem = sizeof(df_block_shared);
  const size_t dyn_block = (size_t)DF_MAX_COLLS * sizeof(df_coll_dynamic);
  const size_t tasks_block = (size_t)DF_MAX_COLLS * sizeof(uint16_t);
  const size_t global_block = dyn_block + tasks_block + sizeof(df_block_state);
  const size_t per_coll = sizeof(df_coll_static) + sizeof(df_coll_counters) + sizeof(uint32_t);
  const size_t used_block = (size_t)o.ncolls * (sizeof(df_coll_dynamic) + sizeof(uint16_t)) + sizeof(df_block_state);
  printf("\nmemory per daemon block, as built (DF_MAX_COLLS %d, DF_MAX_BLOCKS %d, DF_CONTEXT_SLOTS %d):\n",
         DF_MAX_COLLS, DF_MAX_BLOCKS, DF_CONTEXT_SLOTS);
  printf(
      "  shared  sizeof(df_block_shared)                      %8zu B  (%d slots x %zu B + task queue %d x 2 B + state)\n",
      smem, DF_CONTEXT_SLOTS, sizeof(df_context_slot), DF_MAX_COLLS);
  printf(
      "          cudaFuncGetAttributes: daemon kernel twin    %8zu B  (%d regs, %zu B local); benchmark kernel %zu B "
      "(df_block_shared + %zu B sink)\n",
      twin.sharedSizeBytes, twin.numRegs, twin.localSizeBytes, meas.sharedSizeBytes, meas.sharedSizeBytes - smem);
  printf("  global  dynamic contexts %d x %zu B                %8zu B\n", DF_MAX_COLLS, sizeof(df_coll_dynamic),
         dyn_block);
  printf("          saved task queue %d x %zu B                  %8zu B\n", DF_MAX_COLLS, sizeof(uint16_t),
         tasks_block);
  printf("          df_block_state                               %8zu B\n", sizeof(df_block_state));
  printf("          total per block                              %8zu B  (%.1f KiB; %zu KiB for all %d blocks)\n",
         global_block, global_block / 1024.0, global_block * DF_MAX_BLOCKS / 1024, DF_MAX_BLOCKS);
  printf("  per collective, shared by all blocks: static context %zu B + counters %zu B + done counter %zu B = %zu B"
         " (%zu KiB for %d)\n",
         sizeof(df_coll_static), sizeof(df_coll_counters), sizeof(uint32_t), per_coll, per_coll * DF_MAX_COLLS / 1024,
         DF_MAX_COLLS);
  printf("  for %u collectives: dynamic contexts used %u x %zu B = %zu B per block; with task queue entries and "
         "block state %zu B per block; per-collective data %zu B for all blocks\n",
         o.ncolls, o.ncolls, sizeof(df_coll_dynamic), (size_t)o.ncolls * sizeof(df_coll_dynamic), used_block,
         per_coll * o.ncolls);
  printf("  pinned host memory (defaults): SQ 4096 x %zu B = %zu B, CQ 256 x 8 B = 2048 B\n", sizeof(df_sqe),
         4096 * sizeof(df_sqe));
  printf("  paper (RTX 3090, 1,000 collectives): 13 KB shared + 4 MB global per block, 11 KB global for all blocks\n");
  bool memory_ok = twin.sharedSizeBytes == smem;
  if (!memory_ok)
    printf("  MISMATCH: the daemon twin uses %zu B of shared memory, sizeof says %zu B\n", twin.sharedSizeBytes, smem);

  /* ---- clocks ---- */
  uint64_t* probe = nullptr;
  CHECK_CUDA(cudaMalloc((void**)&probe, 3 * sizeof(uint64_t)));
  timer_probe_kernel<<<1, 32>>>(probe);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  uint64_t probe_host[3];
  CHECK_CUDA(cudaMemcpy(probe_host, probe, sizeof probe_host, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(probe));
  printf("\n%%globaltimer: smallest step %" PRIu64 " ns%s; clock64 ran at %.0f MHz during the probe\n", probe_host[0],
         probe_host[0] >= 100 ? " (coarse: prefer the ns converted from cycles)" : "",
         probe_host[2] ? probe_host[1] * 1e3 / (double)probe_host[2] : 0.0);

  /* ---- experiments ---- */
  Tables t;
  build_tables(t, o);
  Params p;
  memset(&p, 0, sizeof p);
  p.total = total;
  p.warmup = o.warmup;
  p.ncolls = o.ncolls;
  p.scratch = t.scratch;
  p.links = t.links;
  p.plain = t.plain;
  CHECK_CUDA(cudaMalloc((void**)&p.cycles, o.reps * sizeof(uint64_t)));
  CHECK_CUDA(cudaMalloc((void**)&p.nanos, o.reps * sizeof(uint64_t)));
  CHECK_CUDA(cudaMalloc((void**)&p.run, 2 * sizeof(uint64_t)));
  CHECK_CUDA(cudaMalloc((void**)&p.errors, 3 * sizeof(unsigned long long)));
  printf("SQ %u entries, CQ ring of %u entries, shared ring CQ %u entries (sized to the repetitions); "
         "L1 cold = the block reads %zu KiB of other data before each repetition\n\n",
         t.sq_entries, t.cq_ring, t.plain.n, kFlushBytes / 1024);

  struct Spec {
    const char* name;
    int op, flush;
    const char* paper;
  };
  const Spec specs[] = {
      {"empty loop (L1 warm)", OP_EMPTY, 0, ""},
      {"empty loop (L1 cold)", OP_EMPTY, 1, ""},
      {"SQE take (block 0): forward + hand back, 1 valid SQE", OP_SQ_READ, 0, "-"},
      {"SQ poll (block 0), nothing to read", OP_SQ_POLL_EMPTY, 0, "-"},
      {"context load: df_context_acquire, L1 cold", OP_CTX_LOAD, 1, "0.45 us"},
      {"context load: df_context_acquire, L1 warm", OP_CTX_LOAD, 0, "0.45 us"},
      {"context save: df_context_save, L1 cold", OP_CTX_SAVE, 1, "0.05 us"},
      {"context save: df_context_save, L1 warm", OP_CTX_SAVE, 0, "0.05 us"},
      {"acquire evicting a dirty slot, L1 cold", OP_CTX_EVICT, 1, "-"},
      {"CQE write: df_cq_try_write (own ring)", OP_CQ_WRITE, 0, "2.0 us"},
      {"CQE write: shared ring, 1 producer", OP_PLAIN_CQ_1P, 0, "6.9 us"},
      {"CQE write: shared ring, multi-producer", OP_PLAIN_CQ_MP, 0, "6.9 us"},
  };
  std::vector<Result> results;
  int64_t empty_cycles[2] = {0, 0}, empty_nanos[2] = {0, 0};
  uint64_t failures = memory_ok ? 0 : 1;
  std::vector<uint64_t> cycles(o.reps), nanos(o.reps);
  for (const Spec& s : specs) {
    reset_tables(t, o, s.op);
    p.flush = s.flush;
    CHECK_CUDA(cudaMemset(p.errors, 0, 3 * sizeof(unsigned long long)));
    launch(s.op, t.dev_args, p);
    unsigned long long errors[3];
    uint64_t run[2];
    CHECK_CUDA(cudaMemcpy(errors, p.errors, sizeof errors, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(run, p.run, sizeof run, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(cycles.data(), p.cycles, o.reps * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(nanos.data(), p.nanos, o.reps * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    uint64_t bad = verify(t, o, s.op);
    if (errors[0]) {
      fprintf(stderr, "  %s: %llu repetitions failed their check, first %llu: %s\n", s.name, errors[0], errors[1],
              failure_name(errors[2]));
      bad += errors[0];
    }
    failures += bad;

    Result r;
    r.name = s.name;
    r.paper = s.paper;
    r.op = s.op;
    r.flush = s.flush;
    r.run_mhz = run[1] ? run[0] * 1e3 / (double)run[1] : 0.0;
    std::vector<int64_t> raw_c(cycles.begin(), cycles.end()), raw_n(nanos.begin(), nanos.end());
    r.raw_cycles_median = percentile(raw_c, 0.5);
    r.raw_nanos_median = percentile(raw_n, 0.5);
    if (s.op == OP_EMPTY) {
      empty_cycles[s.flush] = r.raw_cycles_median;
      empty_nanos[s.flush] = r.raw_nanos_median;
    }
    r.cycles.resize(o.reps);
    r.nanos.resize(o.reps);
    for (uint32_t i = 0; i < o.reps; i++) {
      r.cycles[i] = raw_c[i] - empty_cycles[s.flush];
      r.nanos[i] = raw_n[i] - empty_nanos[s.flush];
    }
    printf("%-44s raw median %6" PRId64 " cyc %6" PRId64 " ns, minus empty %4" PRId64 " cyc %4" PRId64
           " ns; min %6" PRId64 " max %8" PRId64 " cyc; SM clock %.0f MHz measured; checks %s\n",
           s.name, r.raw_cycles_median, r.raw_nanos_median, empty_cycles[s.flush], empty_nanos[s.flush],
           percentile(r.cycles, 0.0), percentile(r.cycles, 1.0), r.run_mhz, bad ? "FAILED" : "ok");
    if (s.op != OP_EMPTY) results.push_back(r);
  }

  /* ---- the table ---- */
  printf("\nper operation: median and p90 over %u repetitions, empty loop subtracted; ns = cycles / %.3f GHz "
         "(cudaDevAttrClockRate); gtimer = %%globaltimer\n",
         o.reps, ghz);
  printf("%-44s %9s %9s %9s %9s %9s %9s  %s\n", "operation", "med cyc", "p90 cyc", "med ns", "p90 ns", "gt med ns",
         "gt p90 ns", "paper RTX 3090");
  auto ns_of = [ghz](int64_t cyc) { return cyc / ghz; };
  for (const Result& r : results) {
    const int64_t mc = percentile(r.cycles, 0.5), pc = percentile(r.cycles, 0.9);
    printf("%-44s %9" PRId64 " %9" PRId64 " %9.0f %9.0f %9" PRId64 " %9" PRId64 "  %s\n", r.name.c_str(), mc, pc,
           ns_of(mc), ns_of(pc), percentile(r.nanos, 0.5), percentile(r.nanos, 0.9), r.paper.c_str());
  }
  auto median_ns = [&](int op, int flush) {
    for (const Result& r : results)
      if (r.op == op && r.flush == flush) return ns_of(percentile(r.cycles, 0.5));
    return 0.0;
  };
  printf("memory per block: %zu B shared; %zu B global as built, %zu B for %u collectives; %zu B per collective "
         "(paper: 13 KB shared, 4 MB global)\n",
         smem, global_block, used_block, o.ncolls, per_coll);
  printf("%s: %s, load %.2f us, save %.2f us, CQE %.2f us (plain ring %.2f / %.2f us), %zu B smem/block, "
         "%zu B global/block%s\n",
         failures ? "FAIL" : "overheads", prop.name, median_ns(OP_CTX_LOAD, 1) / 1e3, median_ns(OP_CTX_SAVE, 1) / 1e3,
         median_ns(OP_CQ_WRITE, 0) / 1e3, median_ns(OP_PLAIN_CQ_1P, 0) / 1e3, median_ns(OP_PLAIN_CQ_MP, 0) / 1e3, smem,
         global_block, failures ? " -- CHECKS FAILED (see above)" : "");

  CHECK_CUDA(cudaFree(p.cycles));
  CHECK_CUDA(cudaFree(p.nanos));
  CHECK_CUDA(cudaFree(p.run));
  CHECK_CUDA(cudaFree(p.errors));
  free_tables(t);
  return failures ? 1 : 0;
}
