/*
 * libFuzzer target: the core's environment variables (core/config.c, core/transport.c).
 *
 * The input is lines NAME=VALUE.  A NAME the core reads (the DFCCL_* variables of README.md,
 * "Tuning") is set to VALUE: any bytes up to the newline, a NUL ending it as it would in a real
 * environment.  POLL_NS=X gives the cost of a poll that df_config_calibrate then sees (strtod's
 * syntax: "nan" and "1e-300" too).  Other lines are ignored.  Then df_config_load runs for each
 * execution target, and its verdict is checked against this file's own reading of README.md:
 *   - an integer is decimal digits, or hexadecimal digits after 0x; no sign, no spaces, and no
 *     leading zero (C would read 010 as octal 8; a reader takes it for ten);
 *   - a value outside its range, a slot size that is not a multiple of 16, a queue size that is
 *     not a power of two, a word not in its list, are refused, and the message names the variable;
 *   - every value given is used as is: nothing is clamped or rounded, and spin thresholds set here
 *     survive calibration; thresholds not given follow those that are (floor <= front <= ceiling);
 *   - a threshold grown by DFCCL_SPIN_GROWTH never overflows 64 bits: the ceiling times the growth
 *     fits, or the configuration is refused;
 *   - a valid environment is accepted, and every value, given or default, lies in its range.
 * A variable set to the empty string counts as unset, as in the core.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "internal.h"

#define GETTER(fn, expr) \
  static uint64_t fn(const df_config* c) { return (uint64_t)(expr); }
GETTER(max_channels, c->max_channels)
GETTER(gate_channels, c->gate_channels)
GETTER(min_channel_bytes, c->min_channel_bytes)
GETTER(slot_bytes, c->slot_bytes)
GETTER(sq_entries, c->sq_entries)
GETTER(comm_sets, c->comm_sets)
GETTER(hang_report_s, c->hang_report_s)
GETTER(timeout_s, c->timeout_s)
GETTER(comm_slot_bytes, c->comm_slot_bytes)
GETTER(cq_slots, c->cq_slots)
GETTER(submit_timeout_ms, c->submit_timeout_ms)
GETTER(destroy_timeout_ms, c->destroy_timeout_ms)
GETTER(relaunch_delay_us, c->relaunch_delay_us)
GETTER(relaunch_cap_us, c->relaunch_cap_us)
GETTER(gather_bytes, c->gather_bytes)
GETTER(yield_delay_us, c->yield_delay_us)
GETTER(poller_spin_rounds, c->poller_spin_rounds)
GETTER(spin_front, c->spin.front)
GETTER(spin_floor, c->spin.floor)
GETTER(spin_decay_shift, c->spin.decay_shift)
GETTER(spin_growth, c->spin.growth)
GETTER(spin_ceiling, c->spin.ceiling)
GETTER(quit_period_us, c->spin.quit_period_ns / 1000)
GETTER(preemption, c->spin.preemption)
GETTER(debug, c->debug)
GETTER(stream_order, c->stream_order)
GETTER(stream_gate, c->stream_gate)
GETTER(check_runs, c->check_runs)
GETTER(poller_set_aside, c->poller_set_aside)
GETTER(timeslice_yield, c->timeslice_yield)
GETTER(timeslice_idle_us, c->spin.timeslice_idle_ns / 1000)

typedef enum { ANY_VALUE, MULTIPLE_OF_16, POWER_OF_TWO } value_rule;

typedef struct {
  const char* name;
  uint64_t min, max;
  value_rule rule;
  uint64_t (*field)(const df_config*); /* the value loaded; NULL: no field of its own */
} integer_var;

typedef enum {
  MAX_CHANNELS,
  GATE_CHANNELS,
  MIN_CHANNEL_BYTES,
  SLOT_BYTES,
  SQ_ENTRIES,
  COMM_SETS,
  HANG_REPORT_S,
  TIMEOUT_S,
  COMM_SLOT_BYTES,
  CQ_SLOTS,
  SUBMIT_TIMEOUT_MS,
  DESTROY_TIMEOUT_MS,
  RELAUNCH_DELAY_US,
  RELAUNCH_DELAY_MAX_US,
  ALLREDUCE_GATHER_BYTES,
  YIELD_DELAY_US,
  POLLER_SPIN_ROUNDS,
  SPIN_FRONT,
  SPIN_FLOOR,
  SPIN_DECAY_SHIFT,
  SPIN_GROWTH,
  SPIN_CEILING,
  QUIT_PERIOD_US,
  PREEMPTION,
  DEBUG,
  STREAM_ORDER,
  STREAM_GATE,
  CHECK_RUNS,
  POLLER_SET_ASIDE,
  SHOW_TRANSPORT,
  TIMESLICE_YIELD,
  TIMESLICE_IDLE_US,
  NINTEGERS
} integer_id;

#define YEAR_S (86400ull * 365)
#define HOUR_US (3600ull * 1000000)
static const integer_var integers[NINTEGERS] = {
    [MAX_CHANNELS] = {"DFCCL_MAX_CHANNELS", 1, DF_MAX_BLOCKS, ANY_VALUE, max_channels},
    [GATE_CHANNELS] = {"DFCCL_GATE_CHANNELS", 1, DF_MAX_BLOCKS, ANY_VALUE, gate_channels},
    [MIN_CHANNEL_BYTES] = {"DFCCL_MIN_CHANNEL_BYTES", 16, UINT64_MAX, ANY_VALUE, min_channel_bytes},
    [SLOT_BYTES] = {"DFCCL_SLOT_BYTES", 256, 64u << 20, MULTIPLE_OF_16, slot_bytes},
    [SQ_ENTRIES] = {"DFCCL_SQ_ENTRIES", 2, 1u << 18, POWER_OF_TWO, sq_entries},
    [COMM_SETS] = {"DFCCL_COMM_SETS", 1, 16, ANY_VALUE, comm_sets},
    [HANG_REPORT_S] = {"DFCCL_HANG_REPORT_S", 0, YEAR_S, ANY_VALUE, hang_report_s},
    [TIMEOUT_S] = {"DFCCL_TIMEOUT_S", 0, YEAR_S, ANY_VALUE, timeout_s},
    [COMM_SLOT_BYTES] = {"DFCCL_COMM_SLOT_BYTES", 256, 64u << 20, MULTIPLE_OF_16, comm_slot_bytes},
    [CQ_SLOTS] = {"DFCCL_CQ_SLOTS", 1, 1u << 16, POWER_OF_TWO, cq_slots},
    [SUBMIT_TIMEOUT_MS] = {"DFCCL_SUBMIT_TIMEOUT_MS", 0, UINT64_MAX, ANY_VALUE, submit_timeout_ms},
    [DESTROY_TIMEOUT_MS] = {"DFCCL_DESTROY_TIMEOUT_MS", 0, UINT64_MAX, ANY_VALUE, destroy_timeout_ms},
    [RELAUNCH_DELAY_US] = {"DFCCL_RELAUNCH_DELAY_US", 0, 10000000, ANY_VALUE, relaunch_delay_us},
    [RELAUNCH_DELAY_MAX_US] = {"DFCCL_RELAUNCH_DELAY_MAX_US", 0, 10000000, ANY_VALUE, relaunch_cap_us},
    [ALLREDUCE_GATHER_BYTES] = {"DFCCL_ALLREDUCE_GATHER_BYTES", 0, 64u << 20, ANY_VALUE, gather_bytes},
    [YIELD_DELAY_US] = {"DFCCL_YIELD_DELAY_US", 0, 10000000, ANY_VALUE, yield_delay_us},
    [POLLER_SPIN_ROUNDS] = {"DFCCL_POLLER_SPIN_ROUNDS", 0, UINT64_MAX, ANY_VALUE, poller_spin_rounds},
    [SPIN_FRONT] = {"DFCCL_SPIN_FRONT", 1, UINT64_MAX, ANY_VALUE, spin_front},
    [SPIN_FLOOR] = {"DFCCL_SPIN_FLOOR", 1, UINT64_MAX, ANY_VALUE, spin_floor},
    [SPIN_DECAY_SHIFT] = {"DFCCL_SPIN_DECAY_SHIFT", 0, 63, ANY_VALUE, spin_decay_shift},
    [SPIN_GROWTH] = {"DFCCL_SPIN_GROWTH", 1, 1000000, ANY_VALUE, spin_growth},
    [SPIN_CEILING] = {"DFCCL_SPIN_CEILING", 1, UINT64_MAX, ANY_VALUE, spin_ceiling},
    [QUIT_PERIOD_US] = {"DFCCL_QUIT_PERIOD_US", 1, HOUR_US, ANY_VALUE, quit_period_us},
    [PREEMPTION] = {"DFCCL_PREEMPTION", 0, 1, ANY_VALUE, preemption},
    [DEBUG] = {"DFCCL_DEBUG", 0, 9, ANY_VALUE, debug},
    [STREAM_ORDER] = {"DFCCL_STREAM_ORDER", 0, 1, ANY_VALUE, stream_order},
    [STREAM_GATE] = {"DFCCL_STREAM_GATE", 0, 1, ANY_VALUE, stream_gate},
    [CHECK_RUNS] = {"DFCCL_CHECK_RUNS", 0, 1, ANY_VALUE, check_runs},
    [POLLER_SET_ASIDE] = {"DFCCL_POLLER_SET_ASIDE", 0, 1, ANY_VALUE, poller_set_aside},
    [SHOW_TRANSPORT] = {"DFCCL_SHOW_TRANSPORT", 0, 1, ANY_VALUE, NULL}, /* show_transport is it or DFCCL_DEBUG */
    [TIMESLICE_YIELD] = {"DFCCL_TIMESLICE_YIELD", 0, 1, ANY_VALUE, timeslice_yield},
    [TIMESLICE_IDLE_US] = {"DFCCL_TIMESLICE_IDLE_US", 0, HOUR_US, ANY_VALUE, timeslice_idle_us},
};

/* Variables that are not integers: words from a list, and free text. */
enum { TARGET_VAR, TRANSPORT_VAR, REPORT_DIR_VAR, HOST_ID_VAR, NOTHERS };
static const char* const other_names[NOTHERS] = {"DFCCL_TARGET", "DFCCL_TRANSPORT", "DFCCL_REPORT_DIR",
                                                 "DFCCL_HOST_ID"};

/* One input, read: what each variable is set to (NULL: unset), and its value as the core reads it
 * (NULL: unset or empty). */
typedef struct {
  char* integer_set[NINTEGERS];
  char* other_set[NOTHERS];
  const char* integer_text[NINTEGERS];
  const char* other_text[NOTHERS];
  bool has_poll_ns;
  double poll_ns;
} fuzz_input;

/* What README.md says an integer is (see the top of the file). */
static bool spec_integer(const char* text, uint64_t* out) {
  const char* p = text;
  unsigned base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
  } else if (p[0] == '0' && p[1] != '\0') {
    return false;
  }
  if (*p == '\0') return false;
  uint64_t v = 0;
  for (; *p; p++) {
    unsigned d;
    if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
    else if (base == 16 && *p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
    else return false;
    if (v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

static bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

static bool satisfies(const integer_var* var, uint64_t v) {
  if (v < var->min || v > var->max) return false;
  if (var->rule == MULTIPLE_OF_16) return v % 16 == 0;
  if (var->rule == POWER_OF_TWO) return power_of_two(v);
  return true;
}

/* Values are cut at this many bytes (the environment entries below have room for them). */
#define MAX_VALUE 4096

static char* copy_value(const uint8_t* p, size_t n) {
  if (n > MAX_VALUE) n = MAX_VALUE;
  char* s = malloc(n + 1);
  FUZZ_REQUIRE(s != NULL, "out of memory");
  memcpy(s, p, n);
  s[n] = '\0'; /* a NUL in the value ends it, as in a real environment */
  return s;
}

static void read_line(fuzz_input* in, const uint8_t* line, size_t n) {
  const uint8_t* eq = memchr(line, '=', n);
  if (!eq) return;
  size_t name_len = (size_t)(eq - line), value_len = n - name_len - 1;
  const uint8_t* value = eq + 1;
  char** slot = NULL;
  for (size_t i = 0; i < NINTEGERS && !slot; i++)
    if (strlen(integers[i].name) == name_len && memcmp(line, integers[i].name, name_len) == 0)
      slot = &in->integer_set[i];
  for (size_t i = 0; i < NOTHERS && !slot; i++)
    if (strlen(other_names[i]) == name_len && memcmp(line, other_names[i], name_len) == 0) slot = &in->other_set[i];
  if (slot) {
    free(*slot); /* a later line wins, as a later setenv would */
    *slot = copy_value(value, value_len);
  } else if (name_len == 7 && memcmp(line, "POLL_NS", 7) == 0) {
    char* text = copy_value(value, value_len);
    in->has_poll_ns = true;
    in->poll_ns = strtod(text, NULL);
    free(text);
  }
}

/* The core takes an empty value for an unset variable. */
static const char* value_of(const char* set) { return set && set[0] ? set : NULL; }

static void read_input(fuzz_input* in, const uint8_t* data, size_t size) {
  memset(in, 0, sizeof *in);
  while (size > 0) {
    const uint8_t* nl = memchr(data, '\n', size);
    size_t n = nl ? (size_t)(nl - data) : size;
    read_line(in, data, n);
    data += nl ? n + 1 : n;
    size -= nl ? n + 1 : n;
  }
  for (size_t i = 0; i < NINTEGERS; i++) in->integer_text[i] = value_of(in->integer_set[i]);
  for (size_t i = 0; i < NOTHERS; i++) in->other_text[i] = value_of(in->other_set[i]);
}

static void clear_environment(void) {
  for (size_t i = 0; i < NINTEGERS; i++) unsetenv(integers[i].name);
  for (size_t i = 0; i < NOTHERS; i++) unsetenv(other_names[i]);
}

/* putenv on these, not setenv: glibc's setenv keeps every value it was ever given (a program may
 * still hold getenv's pointer), which a fuzzer setting millions of values sees as a leak. */
static char integer_entry[NINTEGERS][64 + MAX_VALUE + 1], other_entry[NOTHERS][64 + MAX_VALUE + 1];

static void put_variable(char* entry, size_t size, const char* name, const char* value) {
  snprintf(entry, size, "%s=%s", name, value);
  putenv(entry);
}

static void set_environment(const fuzz_input* in) {
  clear_environment();
  for (size_t i = 0; i < NINTEGERS; i++)
    if (in->integer_set[i])
      put_variable(integer_entry[i], sizeof integer_entry[i], integers[i].name, in->integer_set[i]);
  for (size_t i = 0; i < NOTHERS; i++)
    if (in->other_set[i]) put_variable(other_entry[i], sizeof other_entry[i], other_names[i], in->other_set[i]);
}

static void free_input(fuzz_input* in) {
  for (size_t i = 0; i < NINTEGERS; i++) free(in->integer_set[i]);
  for (size_t i = 0; i < NOTHERS; i++) free(in->other_set[i]);
}

/* The defaults of each target: what df_config_load gives with nothing set. */
static df_config defaults_cuda, defaults_host;

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  clear_environment();
  FUZZ_REQUIRE(df_config_load(&defaults_cuda, dfcclTargetCuda) == dfcclSuccess, "%s", dfcclGetLastErrorMessage());
  FUZZ_REQUIRE(df_config_load(&defaults_host, dfcclTargetHost) == dfcclSuccess, "%s", dfcclGetLastErrorMessage());
  return 0;
}

/* The verdict this file expects for one load, and why. */
typedef struct {
  const char* bad[NINTEGERS + NOTHERS + 6]; /* variables that are wrong on their own or in pairs */
  size_t nbad;
  dfcclTarget_t target;
  bool overflow;                          /* no bad variable, but ceiling x growth overflows */
  uint64_t value[NINTEGERS];              /* the given integers, parsed */
  bool given[NINTEGERS];                  /* ... and valid */
  uint64_t front, floor, ceiling, growth; /* the spin thresholds the load must end with */
} expectation;

static void note_bad(expectation* e, const char* name) { e->bad[e->nbad++] = name; }

/* Two thresholds given in the wrong order: either name will do in the message. */
static void note_bad_pair(expectation* e, integer_id lower, integer_id higher) {
  if (e->given[lower] && e->given[higher] && e->value[lower] > e->value[higher]) {
    note_bad(e, integers[lower].name);
    note_bad(e, integers[higher].name);
  }
}

static void expect_spin(const df_config* defaults, expectation* e) {
  const bool *g = e->given, front_given = g[SPIN_FRONT], floor_given = g[SPIN_FLOOR], ceiling_given = g[SPIN_CEILING];
  const uint64_t* v = e->value;
  note_bad_pair(e, SPIN_FLOOR, SPIN_FRONT);
  note_bad_pair(e, SPIN_FRONT, SPIN_CEILING);
  note_bad_pair(e, SPIN_FLOOR, SPIN_CEILING);
  /* Values not given follow those that are. */
  uint64_t front = front_given ? v[SPIN_FRONT] : defaults->spin.front;
  if (!front_given && floor_given && front < v[SPIN_FLOOR]) front = v[SPIN_FLOOR];
  if (!front_given && ceiling_given && front > v[SPIN_CEILING]) front = v[SPIN_CEILING];
  uint64_t floor = floor_given ? v[SPIN_FLOOR] : (defaults->spin.floor < front ? defaults->spin.floor : front);
  uint64_t ceiling =
      ceiling_given ? v[SPIN_CEILING] : (defaults->spin.ceiling > front ? defaults->spin.ceiling : front);
  e->front = front;
  e->floor = floor;
  e->ceiling = ceiling;
  e->growth = g[SPIN_GROWTH] ? v[SPIN_GROWTH] : defaults->spin.growth;
  e->overflow = ceiling > UINT64_MAX / e->growth;
}

static void expect_load(const fuzz_input* in, dfcclTarget_t requested, expectation* e) {
  memset(e, 0, sizeof *e);
  e->target = requested;
  if (requested == dfcclTargetDefault) {
    const char* t = in->other_text[TARGET_VAR];
    if (!t || strcmp(t, "cuda") == 0) e->target = dfcclTargetCuda;
    else if (strcmp(t, "host") == 0) e->target = dfcclTargetHost;
    else note_bad(e, "DFCCL_TARGET");
  }
  const char* transport = in->other_text[TRANSPORT_VAR];
  if (transport && strcmp(transport, "auto") && strcmp(transport, "p2p") && strcmp(transport, "ucx"))
    note_bad(e, "DFCCL_TRANSPORT");
  for (size_t i = 0; i < NINTEGERS; i++) {
    if (!in->integer_text[i]) continue;
    if (spec_integer(in->integer_text[i], &e->value[i]) && satisfies(&integers[i], e->value[i])) e->given[i] = true;
    else note_bad(e, integers[i].name);
  }
  expect_spin(e->target == dfcclTargetHost ? &defaults_host : &defaults_cuda, e);
}

static bool names_a_bad_variable(const expectation* e, const char* message) {
  for (size_t i = 0; i < e->nbad; i++)
    if (strstr(message, e->bad[i])) return true;
  return false;
}

/* The thresholds' order, and that growing one never overflows. */
static void check_spin_order(const df_config* cfg, const char* when) {
  const df_spin_policy* s = &cfg->spin;
  FUZZ_REQUIRE(s->floor >= 1 && s->floor <= s->front && s->front <= s->ceiling,
               "%s: spin floor %llu, front %llu, ceiling %llu out of order", when, (unsigned long long)s->floor,
               (unsigned long long)s->front, (unsigned long long)s->ceiling);
  FUZZ_REQUIRE(s->growth >= 1 && s->ceiling <= UINT64_MAX / s->growth,
               "%s: spin ceiling %llu times growth %u overflows", when, (unsigned long long)s->ceiling, s->growth);
}

static void check_accepted(const fuzz_input* in, const expectation* e, const df_config* cfg) {
  FUZZ_REQUIRE(cfg->target == e->target, "target %d, expected %d", (int)cfg->target, (int)e->target);
  for (size_t i = 0; i < NINTEGERS; i++) {
    const integer_var* var = &integers[i];
    if (!var->field) continue;
    uint64_t got = var->field(cfg);
    FUZZ_REQUIRE(!e->given[i] || got == e->value[i], "%s=\"%s\" loaded as %llu", var->name, in->integer_text[i],
                 (unsigned long long)got);
    FUZZ_REQUIRE(satisfies(var, got), "%s: %llu loaded (given: %s), outside what it accepts", var->name,
                 (unsigned long long)got, in->integer_text[i] ? in->integer_text[i] : "no");
  }
  FUZZ_REQUIRE(cfg->spin.quit_period_ns % 1000 == 0 && cfg->spin.timeslice_idle_ns % 1000 == 0,
               "microseconds not loaded as whole thousands of ns");
  bool show = e->given[SHOW_TRANSPORT] && e->value[SHOW_TRANSPORT];
  FUZZ_REQUIRE(cfg->show_transport == (show || cfg->debug), "show_transport %d with DFCCL_SHOW_TRANSPORT %d, debug %d",
               cfg->show_transport, show, cfg->debug);
  FUZZ_REQUIRE(cfg->spin.front == e->front && cfg->spin.floor == e->floor && cfg->spin.ceiling == e->ceiling,
               "spin front/floor/ceiling %llu/%llu/%llu, expected %llu/%llu/%llu", (unsigned long long)cfg->spin.front,
               (unsigned long long)cfg->spin.floor, (unsigned long long)cfg->spin.ceiling, (unsigned long long)e->front,
               (unsigned long long)e->floor, (unsigned long long)e->ceiling);
  FUZZ_REQUIRE(cfg->spin_set[0] == e->given[SPIN_FRONT] && cfg->spin_set[1] == e->given[SPIN_FLOOR] &&
                   cfg->spin_set[2] == e->given[SPIN_CEILING],
               "spin_set %d%d%d, but front/floor/ceiling given %d%d%d", cfg->spin_set[0], cfg->spin_set[1],
               cfg->spin_set[2], e->given[SPIN_FRONT], e->given[SPIN_FLOOR], e->given[SPIN_CEILING]);
  check_spin_order(cfg, "loaded");
  const char* dir = in->other_text[REPORT_DIR_VAR];
  FUZZ_REQUIRE(dir ? cfg->report_dir && strcmp(cfg->report_dir, dir) == 0 : cfg->report_dir == NULL,
               "DFCCL_REPORT_DIR=\"%s\" loaded as \"%s\"", dir ? dir : "",
               cfg->report_dir ? cfg->report_dir : "(null)");
  const char* transport = in->other_text[TRANSPORT_VAR];
  uint32_t want = !transport || strcmp(transport, "auto") == 0 ? DF_TRANSPORT_AUTO
                  : strcmp(transport, "p2p") == 0              ? DF_TRANSPORT_P2P
                                                               : DF_TRANSPORT_UCX;
  FUZZ_REQUIRE(cfg->transport == want, "DFCCL_TRANSPORT=\"%s\" loaded as %u", transport ? transport : "",
               cfg->transport);
}

/* Calibration takes any believable cost of a poll (a hundredth of a ns to a second) and nothing
 * else; it replaces only the thresholds not given, and keeps their order. */
static void check_calibration(const fuzz_input* in, const expectation* e, df_config* cfg) {
  double poll_ns = in->has_poll_ns ? in->poll_ns : 1.0;
  df_config before = *cfg;
  bool taken = df_config_calibrate(cfg, poll_ns);
  bool believable = poll_ns >= 0.01 && poll_ns <= 1e9;
  FUZZ_REQUIRE(taken == believable, "a poll of %g ns %s", poll_ns, taken ? "taken" : "refused");
  if (!taken) FUZZ_REQUIRE(memcmp(&before, cfg, sizeof before) == 0, "a refused calibration changed the configuration");
  FUZZ_REQUIRE(!e->given[SPIN_FRONT] || cfg->spin.front == e->value[SPIN_FRONT],
               "calibration changed DFCCL_SPIN_FRONT");
  FUZZ_REQUIRE(!e->given[SPIN_FLOOR] || cfg->spin.floor == e->value[SPIN_FLOOR],
               "calibration changed DFCCL_SPIN_FLOOR");
  FUZZ_REQUIRE(!e->given[SPIN_CEILING] || cfg->spin.ceiling == e->value[SPIN_CEILING],
               "calibration changed DFCCL_SPIN_CEILING");
  check_spin_order(cfg, "calibrated");
}

static void check_load(const fuzz_input* in, dfcclTarget_t requested) {
  expectation e;
  expect_load(in, requested, &e);
  df_config cfg;
  dfcclResult_t r = df_config_load(&cfg, requested);
  const char* message = dfcclGetLastErrorMessage();
  if (e.nbad > 0) {
    FUZZ_REQUIRE(r == dfcclInvalidArgument, "accepted, though %s is wrong", e.bad[0]);
    FUZZ_REQUIRE(names_a_bad_variable(&e, message), "refused with \"%s\", which names none of the wrong variables (%s)",
                 message, e.bad[0]);
  } else if (e.overflow) {
    FUZZ_REQUIRE(r == dfcclInvalidArgument, "accepted a spin ceiling %llu that overflows times growth %llu",
                 (unsigned long long)e.ceiling, (unsigned long long)e.growth);
    FUZZ_REQUIRE(strstr(message, "DFCCL_SPIN_"), "the overflow refused with \"%s\"", message);
  } else {
    FUZZ_REQUIRE(r == dfcclSuccess, "a valid environment refused: %s", message);
    check_accepted(in, &e, &cfg);
    check_calibration(in, &e, &cfg);
  }
}

/* FNV-1a, as the core hashes a host identity. */
static uint64_t fnv1a(const char* s) {
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz_input in;
  read_input(&in, data, size);
  set_environment(&in);
  check_load(&in, dfcclTargetHost);
  check_load(&in, dfcclTargetCuda); /* it only reads the environment: no GPU is touched */
  check_load(&in, dfcclTargetDefault);
  bool stream_order = false;
  uint64_t v;
  const char* so = in.integer_text[STREAM_ORDER];
  bool so_ok = !so || (spec_integer(so, &v) && v <= 1);
  FUZZ_REQUIRE((df_env_stream_order(&stream_order) == dfcclSuccess) == so_ok, "DFCCL_STREAM_ORDER=\"%s\"",
               so ? so : "");
  const char* host = in.other_text[HOST_ID_VAR];
  uint64_t id = df_host_identity();
  FUZZ_REQUIRE(id & 1, "a host identity is never even (0 means an older peer)");
  FUZZ_REQUIRE(!host || id == (fnv1a(host) | 1), "DFCCL_HOST_ID=\"%s\" not hashed as documented", host);
  clear_environment();
  free_input(&in);
  return 0;
}
