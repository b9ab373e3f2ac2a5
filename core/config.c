/*
 * Tunables: defaults per execution target, overridden by DFCCL_* environment variables
 * (README.md, "Tuning", lists them).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* An integer as README.md ("Tuning") writes one: decimal digits, or hexadecimal digits after 0x.
 * Nothing else: strtoull alone would also take leading spaces and a sign (" -1" is 2^64-1), octal
 * (010 is 8, where a reader sees ten) and, in base 16, a second "0x". */
static bool parse_integer(const char* text, uint64_t* value) {
  unsigned base = 10;
  const char* digit = text;
  if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    digit += 2;
  } else if (text[0] == '0' && text[1] != '\0') {
    return false; /* a leading zero: octal to C */
  }
  if (*digit == '\0') return false;
  uint64_t v = 0;
  for (; *digit; digit++) {
    unsigned d;
    if (*digit >= '0' && *digit <= '9') d = (unsigned)(*digit - '0');
    else if (base == 16 && *digit >= 'a' && *digit <= 'f') d = (unsigned)(*digit - 'a' + 10);
    else if (base == 16 && *digit >= 'A' && *digit <= 'F') d = (unsigned)(*digit - 'A' + 10);
    else return false;
    if (v > (UINT64_MAX - d) / base) return false; /* more than 64 bits */
    v = v * base + d;
  }
  *value = v;
  return true;
}

/* Is the variable set to something?  An empty value counts as unset. */
static bool env_given(const char* name) {
  const char* text = getenv(name);
  return text && *text;
}

/* Reads an unsigned integer variable; leaves *value alone when unset. */
static dfcclResult_t env_u64(const char* name, uint64_t min, uint64_t max, uint64_t* value) {
  if (!env_given(name)) return dfcclSuccess;
  const char* text = getenv(name);
  uint64_t v = 0;
  if (!parse_integer(text, &v) || v < min || v > max)
    return df_error(dfcclInvalidArgument,
                    "%s=\"%s\": expected an integer in [%llu, %llu] (decimal, or hexadecimal after 0x)", name, text,
                    (unsigned long long)min, (unsigned long long)max);
  *value = v;
  return dfcclSuccess;
}

static dfcclResult_t env_u32(const char* name, uint32_t min, uint32_t max, uint32_t* value) {
  uint64_t v = *value;
  DF_CHECK(env_u64(name, min, max, &v));
  *value = (uint32_t)v;
  return dfcclSuccess;
}

dfcclResult_t df_env_stream_order(bool* on) {
  uint32_t v = 1;
  DF_CHECK(env_u32("DFCCL_STREAM_ORDER", 0, 1, &v));
  *on = v != 0;
  return dfcclSuccess;
}

static bool is_power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

dfcclResult_t df_config_target(dfcclTarget_t requested, dfcclTarget_t* target) {
  if (requested == dfcclTargetCuda || requested == dfcclTargetHost) {
    *target = requested;
    return dfcclSuccess;
  }
  if (requested != dfcclTargetDefault)
    return df_error(dfcclInvalidArgument, "unknown execution target %d", (int)requested);
  const char* env = getenv("DFCCL_TARGET");
  if (!env || !*env || strcmp(env, "cuda") == 0) *target = dfcclTargetCuda;
  else if (strcmp(env, "host") == 0) *target = dfcclTargetHost;
  else return df_error(dfcclInvalidArgument, "DFCCL_TARGET=\"%s\": expected \"cuda\" or \"host\"", env);
  return dfcclSuccess;
}

/* The spin thresholds keep floor <= front <= ceiling: a queue position's threshold halves down to
 * the floor from the front, and growth stops at the ceiling.  Thresholds given in the environment
 * are used as is (README.md), so the ones not given -- defaults, or calibrated -- follow them. */
static void order_spin_thresholds(df_config* cfg) {
  df_spin_policy* s = &cfg->spin;
  bool front_given = cfg->spin_set[0], floor_given = cfg->spin_set[1], ceiling_given = cfg->spin_set[2];
  if (!front_given && floor_given && s->front < s->floor) s->front = s->floor;
  if (!front_given && ceiling_given && s->front > s->ceiling) s->front = s->ceiling;
  if (!floor_given && s->floor > s->front) s->floor = s->front;
  if (!ceiling_given && s->ceiling < s->front) s->ceiling = s->front;
}

static dfcclResult_t spin_out_of_order(const char* lower, uint64_t low, const char* higher, uint64_t high) {
  return df_error(dfcclInvalidArgument, "%s=%llu exceeds %s=%llu: spin thresholds need floor <= front <= ceiling",
                  lower, (unsigned long long)low, higher, (unsigned long long)high);
}

/* Thresholds given out of order are refused rather than moved; and a threshold grown by `growth`
 * (primitives.h: threshold x growth, then at most the ceiling) must not wrap around 64 bits into a
 * short wait, so the ceiling times the growth must fit. */
static dfcclResult_t check_spin_thresholds(df_config* cfg) {
  const df_spin_policy* s = &cfg->spin;
  bool front_given = cfg->spin_set[0], floor_given = cfg->spin_set[1], ceiling_given = cfg->spin_set[2];
  if (floor_given && front_given && s->floor > s->front)
    return spin_out_of_order("DFCCL_SPIN_FLOOR", s->floor, "DFCCL_SPIN_FRONT", s->front);
  if (front_given && ceiling_given && s->front > s->ceiling)
    return spin_out_of_order("DFCCL_SPIN_FRONT", s->front, "DFCCL_SPIN_CEILING", s->ceiling);
  if (floor_given && ceiling_given && s->floor > s->ceiling)
    return spin_out_of_order("DFCCL_SPIN_FLOOR", s->floor, "DFCCL_SPIN_CEILING", s->ceiling);
  order_spin_thresholds(cfg);
  uint64_t most = UINT64_MAX / s->growth;
  if (s->ceiling > most) {
    /* The ceiling is the one given, or follows the front (given, or following the floor). */
    const char* name = ceiling_given ? "DFCCL_SPIN_CEILING" : front_given ? "DFCCL_SPIN_FRONT" : "DFCCL_SPIN_FLOOR";
    uint64_t value = ceiling_given ? s->ceiling : front_given ? s->front : s->floor;
    return df_error(dfcclInvalidArgument,
                    "%s=%llu: a spin threshold grown %u times (DFCCL_SPIN_GROWTH) would overflow 64 bits; at most %llu "
                    "with this growth (DFCCL_PREEMPTION=0 waits without bound)",
                    name, (unsigned long long)value, s->growth, (unsigned long long)most);
  }
  return dfcclSuccess;
}

dfcclResult_t df_config_load(df_config* cfg, dfcclTarget_t requested) {
  memset(cfg, 0, sizeof *cfg);
  DF_CHECK(df_config_target(requested, &cfg->target));
  bool gpu = cfg->target == dfcclTargetCuda;
  /* A GPU block moves ~10-20 GB/s, so big collectives want many channels and deep FIFOs (2x H200,
   * 1 GiB all-reduce: 24 channels 0.88x NCCL, 32 0.93x, 48 0.99x -- docs/performance.md; 32 leaves
   * most SMs to the application); a host thread is slower and CI machines have two cores, so the
   * host target stays small. */
  cfg->max_channels = gpu ? 32 : 2;
  /* Every run is published before the wait for the caller's streams; a run of several channels
   * has its other blocks wait for block 0 at the gate.  2 x H200, 128 KiB - 16 MiB, all seven
   * collectives: 2-4 us less a run than waiting first (docs/performance.md, twenty-fifth session). */
  cfg->gate_channels = DF_MAX_BLOCKS;
  cfg->min_channel_bytes = gpu ? 64 << 10 : 1 << 20;
  cfg->slot_bytes = gpu ? 512 << 10 : 128 << 10;
  cfg->sq_entries = 4096; /* > DF_MAX_COLLS: in-flight runs alone never fill it */
  /* A communicator's connector sets are made before anyone knows its collectives' sizes, so they
   * take the largest slots a registration would: with 128 KiB slots a 128 MiB all-reduce reached
   * 250 GB/s where 512 KiB gave 283 (one H100, docs/performance.md).  On a GPU that is 32 channels
   * x 8 slots x 512 KiB = 128 MiB of FIFOs per set (about what NCCL holds per communicator), so
   * one set: runs on one communicator follow each other, as NCCL's do on its stream (disorder across
   * communicators is what preemption resolves), and consecutive runs on one set keep its FIFOs in
   * L2 (alternating two sets cost blocking all-reduces of 8-32 MiB 10-45 %, one H100).  The host
   * target's sets are small, and four. */
  cfg->comm_sets = gpu ? 1 : 4;
  cfg->comm_slot_bytes = gpu ? 512 << 10 : 128 << 10;
  cfg->cq_slots = 256;
  cfg->submit_timeout_ms = 30000;
  cfg->destroy_timeout_ms = 60000;
  /* A GPU relaunch waits a little so that a cudaDeviceSynchronize released by the quit returns
   * first; the host target's synchronization waits for one launch only, so no delay is needed. */
  cfg->relaunch_delay_us = gpu ? 50 : 0;
  cfg->relaunch_cap_us = 20000;
  /* Small all-reduces gather (n-1 hops, not 2(n-1)): 7-9 us faster than the ring at 2 ranks on
   * H100s, 8 B - 32 KiB (docs/performance.md, gather_ab); measured no higher than 32 KiB.  At 2
   * ranks a link carries what the ring's does (n-1 inputs against 2(n-1)/n) in one hop instead of
   * two, each channel its share: 4-6 us faster than the ring from 64 KiB to 4 MiB, 2 at 8 MiB and 3
   * slower at 16 MiB (2 x H200, twenty-sixth session).  Not measured on the host target, whose
   * slots hold 128 KiB anyway. */
  cfg->gather_bytes = 32 << 10;
  cfg->gather_bytes_pair = gpu ? 8 << 20 : 32 << 10;
  /* Low-latency slots are off until measured on two GPUs beside the Simple slots they replace
   * (docs/design.md, "Low-latency slots"). */
  cfg->ll_bytes = 0;
  cfg->yield_delay_us = 20;
  cfg->poller_spin_rounds = gpu ? 2000 : 100;
  /* Host polls yield and then sleep (see df_spin_pause), so they are far longer than GPU polls. */
  cfg->spin.front = gpu ? 1000 : 64;
  cfg->spin.floor = gpu ? 100 : 16;
  cfg->spin.decay_shift = 1;
  cfg->spin.growth = 20;
  cfg->spin.ceiling = gpu ? 10000 : 512;
  cfg->spin.quit_period_ns = (gpu ? 2000ull : 50000ull) * 1000;
  cfg->spin.preemption = 1;
  /* A wait looks around from 1/256 of its threshold on: the floor, at the calibrated thresholds
   * (docs/design.md: "Leaving for a run that can move"; 1/16 made the random order 1.4-2x slower). */
  cfg->spin.leave_share = 256;
  cfg->spin.follow = 1;
  cfg->spin.queue_by_id = 0;
  /* Four UCX workers and proxy threads per process on a GPU: over TCP on 2 H100s, 4.4-5.0 GB/s
   * busbw from 16 MiB against 1.4 on one lane and NCCL's sockets' 2.5-2.7, small runs unchanged;
   * eight moved more at 128 MiB but slowed 4-32 KiB runs (docs/performance.md, twenty-first
   * session).  One on the host target, whose daemon threads need the cores the proxies would spin on. */
  cfg->net_lanes = gpu ? 4 : 1;
  /* A wait that has lasted its share takes SQEs that join the task queue at its end instead of
   * leaving for the next round to take them (docs/design.md: "Entries taken in a wait"); 2: from
   * its first look, 0: it leaves. */
  cfg->spin.take_in_wait = 1;
  /* Once a run was preempted, a wait's first pass leaves for queued runs that begin by sending
   * (df_other_run_ready): ranks in different orders have each other's data before they wait for it. */
  cfg->spin.send_ahead = 1;

  cfg->spin_set[0] = env_given("DFCCL_SPIN_FRONT");
  cfg->spin_set[1] = env_given("DFCCL_SPIN_FLOOR");
  cfg->spin_set[2] = env_given("DFCCL_SPIN_CEILING");
  uint64_t quit_us = cfg->spin.quit_period_ns / 1000;
  uint32_t preemption = cfg->spin.preemption, leave_share = cfg->spin.leave_share, follow = cfg->spin.follow;
  uint32_t take_in_wait = cfg->spin.take_in_wait, send_ahead = cfg->spin.send_ahead;
  uint32_t debug = 0;
  DF_CHECK(env_u32("DFCCL_MAX_CHANNELS", 1, DF_MAX_BLOCKS, &cfg->max_channels));
  DF_CHECK(env_u32("DFCCL_GATE_CHANNELS", 1, DF_MAX_BLOCKS, &cfg->gate_channels));
  DF_CHECK(env_u64("DFCCL_MIN_CHANNEL_BYTES", 16, UINT64_MAX, &cfg->min_channel_bytes));
  DF_CHECK(env_u32("DFCCL_SLOT_BYTES", 256, 64u << 20, &cfg->slot_bytes));
  /* 256 bytes of pinned host memory an entry (queue/sq.h): at most 64 MiB. */
  DF_CHECK(env_u32("DFCCL_SQ_ENTRIES", 2, 1u << 18, &cfg->sq_entries));
  DF_CHECK(env_u32("DFCCL_COMM_SETS", 1, 16, &cfg->comm_sets));
  DF_CHECK(env_u64("DFCCL_HANG_REPORT_S", 0, 86400ull * 365, &cfg->hang_report_s));
  DF_CHECK(env_u64("DFCCL_TIMEOUT_S", 0, 86400ull * 365, &cfg->timeout_s));
  cfg->report_dir = getenv("DFCCL_REPORT_DIR");
  if (cfg->report_dir && !*cfg->report_dir) cfg->report_dir = NULL;
  DF_CHECK(env_u32("DFCCL_COMM_SLOT_BYTES", 256, 64u << 20, &cfg->comm_slot_bytes));
  DF_CHECK(env_u32("DFCCL_CQ_SLOTS", 1, 1u << 16, &cfg->cq_slots));
  DF_CHECK(env_u64("DFCCL_SUBMIT_TIMEOUT_MS", 0, UINT64_MAX, &cfg->submit_timeout_ms));
  DF_CHECK(env_u64("DFCCL_DESTROY_TIMEOUT_MS", 0, UINT64_MAX, &cfg->destroy_timeout_ms));
  DF_CHECK(env_u64("DFCCL_RELAUNCH_DELAY_US", 0, 10000000, &cfg->relaunch_delay_us));
  DF_CHECK(env_u64("DFCCL_RELAUNCH_DELAY_MAX_US", 0, 10000000, &cfg->relaunch_cap_us));
  DF_CHECK(env_u64("DFCCL_ALLREDUCE_GATHER_BYTES", 0, 64u << 20, &cfg->gather_bytes));
  if (env_given("DFCCL_ALLREDUCE_GATHER_BYTES")) cfg->gather_bytes_pair = cfg->gather_bytes; /* one size for all */
  DF_CHECK(env_u64("DFCCL_YIELD_DELAY_US", 0, 10000000, &cfg->yield_delay_us));
  DF_CHECK(env_u64("DFCCL_POLLER_SPIN_ROUNDS", 0, UINT64_MAX, &cfg->poller_spin_rounds));
  DF_CHECK(env_u64("DFCCL_SPIN_FRONT", 1, UINT64_MAX, &cfg->spin.front));
  DF_CHECK(env_u64("DFCCL_SPIN_FLOOR", 1, UINT64_MAX, &cfg->spin.floor));
  DF_CHECK(env_u32("DFCCL_SPIN_DECAY_SHIFT", 0, 63, &cfg->spin.decay_shift));
  DF_CHECK(env_u32("DFCCL_SPIN_GROWTH", 1, 1000000, &cfg->spin.growth));
  DF_CHECK(env_u64("DFCCL_SPIN_CEILING", 1, UINT64_MAX, &cfg->spin.ceiling));
  DF_CHECK(env_u64("DFCCL_QUIT_PERIOD_US", 1, 3600ull * 1000000, &quit_us));
  DF_CHECK(env_u32("DFCCL_PREEMPTION", 0, 1, &preemption));
  DF_CHECK(env_u32("DFCCL_LEAVE_FOR_READY", 0, 1u << 20, &leave_share));
  DF_CHECK(env_u32("DFCCL_FOLLOW_READY", 0, 1, &follow));
  DF_CHECK(env_u32("DFCCL_TAKE_IN_WAIT", 0, 2, &take_in_wait));
  DF_CHECK(env_u32("DFCCL_SEND_AHEAD", 0, 1, &send_ahead));
  const char* queue_order = getenv("DFCCL_QUEUE_ORDER");
  if (queue_order && *queue_order && strcmp(queue_order, "arrival") != 0) {
    if (strcmp(queue_order, "id") != 0)
      return df_error(dfcclInvalidArgument, "DFCCL_QUEUE_ORDER=\"%s\": expected \"arrival\" or \"id\"", queue_order);
    cfg->spin.queue_by_id = 1;
  }
  DF_CHECK(env_u32("DFCCL_DEBUG", 0, 9, &debug));
  DF_CHECK(df_env_stream_order(&cfg->stream_order));
  uint32_t stream_gate = 1;
  DF_CHECK(env_u32("DFCCL_STREAM_GATE", 0, 1, &stream_gate));
  cfg->stream_gate = stream_gate != 0;
  DF_CHECK(df_config_transport(&cfg->transport));
  DF_CHECK(env_u32("DFCCL_NET_LANES", 1, DF_NET_LANES_MAX, &cfg->net_lanes));
  uint32_t check_runs = 1;
  DF_CHECK(env_u32("DFCCL_CHECK_RUNS", 0, 1, &check_runs));
  cfg->check_runs = check_runs != 0;
  DF_CHECK(env_u32("DFCCL_LL_BYTES", 0, DF_LL_BYTES_MAX, &cfg->ll_bytes));
  uint32_t ll_check = 1;
  DF_CHECK(env_u32("DFCCL_LL_CHECK", 0, 1, &ll_check));
  cfg->ll_check = ll_check != 0;
  uint32_t set_aside = 1;
  DF_CHECK(env_u32("DFCCL_POLLER_SET_ASIDE", 0, 1, &set_aside));
  cfg->poller_set_aside = set_aside != 0;
  uint32_t show_transport = 0;
  DF_CHECK(env_u32("DFCCL_SHOW_TRANSPORT", 0, 1, &show_transport));
  uint32_t timeslice_yield = 1;
  uint64_t timeslice_idle_us = 30;
  DF_CHECK(env_u32("DFCCL_TIMESLICE_YIELD", 0, 1, &timeslice_yield));
  DF_CHECK(env_u64("DFCCL_TIMESLICE_IDLE_US", 0, 3600ull * 1000000, &timeslice_idle_us));
  cfg->timeslice_yield = timeslice_yield != 0;
  cfg->spin.timeslice_idle_ns = timeslice_idle_us * 1000;
  cfg->spin.quit_period_ns = quit_us * 1000;
  cfg->spin.preemption = preemption;
  cfg->spin.leave_share = leave_share;
  cfg->spin.follow = follow;
  cfg->spin.take_in_wait = take_in_wait;
  cfg->spin.send_ahead = send_ahead;
  cfg->debug = (int)debug;
  cfg->show_transport = show_transport || debug;

  if (cfg->slot_bytes % 16)
    return df_error(dfcclInvalidArgument, "DFCCL_SLOT_BYTES=%u: must be a multiple of 16", cfg->slot_bytes);
  if (cfg->comm_slot_bytes % 16)
    return df_error(dfcclInvalidArgument, "DFCCL_COMM_SLOT_BYTES=%u: must be a multiple of 16", cfg->comm_slot_bytes);
  if (!is_power_of_two(cfg->cq_slots))
    return df_error(dfcclInvalidArgument, "DFCCL_CQ_SLOTS=%u: must be a power of two", cfg->cq_slots);
  if (!is_power_of_two(cfg->sq_entries))
    return df_error(dfcclInvalidArgument, "DFCCL_SQ_ENTRIES=%u: must be a power of two", cfg->sq_entries);
  return check_spin_thresholds(cfg);
}

/* The waits the GPU defaults intend, in bare polls (the kernel's measure; a poll in the primitives
 * costs several times more): the front of a task queue waits 500 us for its peers, later positions
 * half as long each, down to 2 us, and a collective whose predecessor is sending waits up to 5 ms
 * (the paper's front threshold and x20 growth, as times).  The floor bounds what a pass over a long
 * task queue costs: with 50 us, 160 queued collectives took 8 ms per pass, and the case study's
 * late rank met its partner's collectives only once per pass (docs/performance.md).  A tenth (30 us
 * and 300 us) took the random-order program from 2.4x to 1.9x the fixed order at 2 ranks, but made
 * the fixed order itself 37 % slower at 4 ranks (64 KiB; 4 MiB: 56 %), its runs preempted before
 * their data came round the ring (nineteenth session, docs/performance.md). */
#define FRONT_WAIT_NS 500000.0
#define FLOOR_WAIT_NS 2000.0
#define CEILING_WAIT_NS 5000000.0

/* A poll costs between a hundredth of a nanosecond and a second; a measurement outside that (or not
 * a number) says nothing, and would make the thresholds absurd or overflow their 64 bits. */
#define LEAST_POLL_NS 0.01
#define MOST_POLL_NS 1e9

static uint64_t polls_for(double wait_ns, double poll_ns) {
  double polls = wait_ns / poll_ns; /* at most 5e8: fits */
  return polls < 16 ? 16 : (uint64_t)polls;
}

bool df_config_calibrate(df_config* cfg, double poll_ns) {
  if (!(poll_ns >= LEAST_POLL_NS && poll_ns <= MOST_POLL_NS)) return false;
  if (!cfg->spin_set[0]) cfg->spin.front = polls_for(FRONT_WAIT_NS, poll_ns);
  if (!cfg->spin_set[1]) cfg->spin.floor = polls_for(FLOOR_WAIT_NS, poll_ns);
  if (!cfg->spin_set[2]) cfg->spin.ceiling = polls_for(CEILING_WAIT_NS, poll_ns);
  order_spin_thresholds(cfg);
  return true;
}
