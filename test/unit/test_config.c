/*
 * The DFCCL_* environment variables (core/config.c): what fuzz_env found, kept fixed.  An integer
 * is decimal, or hexadecimal after 0x, and nothing else; a spin threshold given is used as is, and
 * the ones not given follow it; calibration takes only a believable cost of a poll.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/unit_check.h"
#include "internal.h"

static const char* const spin_names[] = {"DFCCL_SPIN_FRONT",   "DFCCL_SPIN_FLOOR",  "DFCCL_SPIN_CEILING",
                                         "DFCCL_SPIN_GROWTH",  "DFCCL_SLOT_BYTES",  "DFCCL_SUBMIT_TIMEOUT_MS",
                                         "DFCCL_MAX_CHANNELS", "DFCCL_QUEUE_ORDER", "DFCCL_FOLLOW_READY",
                                         "DFCCL_TAKE_IN_WAIT", "DFCCL_SEND_AHEAD",  "DFCCL_NET_LANES"};

static void clear(void) {
  for (size_t i = 0; i < sizeof spin_names / sizeof spin_names[0]; i++) unsetenv(spin_names[i]);
}

/* NAME=VALUE is refused, and the message names both. */
static void refused(const char* name, const char* value) {
  clear();
  setenv(name, value, 1);
  df_config cfg;
  dfcclResult_t r = df_config_load(&cfg, dfcclTargetHost);
  const char* message = dfcclGetLastErrorMessage();
  if (r != dfcclInvalidArgument) FAIL("%s=\"%s\" accepted", name, value);
  else if (!strstr(message, name) || !strstr(message, value))
    FAIL("%s=\"%s\": the message \"%s\" does not name both", name, value, message);
}

/* The environment `setting` (NAME=VALUE;NAME=VALUE) loads, on the host target. */
static bool load(const char* setting, df_config* cfg) {
  clear();
  char copy[256];
  snprintf(copy, sizeof copy, "%s", setting);
  for (char *save = NULL, *pair = strtok_r(copy, ";", &save); pair; pair = strtok_r(NULL, ";", &save)) {
    char* eq = strchr(pair, '=');
    *eq = '\0';
    setenv(pair, eq + 1, 1);
  }
  dfcclResult_t r = df_config_load(cfg, dfcclTargetHost);
  if (r != dfcclSuccess) FAIL("%s refused: %s", setting, dfcclGetLastErrorMessage());
  return r == dfcclSuccess;
}

static void test_integers(void) {
  refused("DFCCL_SUBMIT_TIMEOUT_MS", " -1"); /* strtoull made it 2^64-1 */
  refused("DFCCL_SUBMIT_TIMEOUT_MS", "-1");
  refused("DFCCL_MAX_CHANNELS", "+2");
  refused("DFCCL_MAX_CHANNELS", " 2");
  refused("DFCCL_MAX_CHANNELS", "\r2");
  refused("DFCCL_MAX_CHANNELS", "2 ");
  refused("DFCCL_MAX_CHANNELS", "010"); /* octal 8 to strtoull */
  refused("DFCCL_SLOT_BYTES", "0x0x100");
  refused("DFCCL_SLOT_BYTES", "0x");
  refused("DFCCL_SUBMIT_TIMEOUT_MS", "18446744073709551616");
  df_config cfg;
  if (load("DFCCL_SLOT_BYTES=0x1000;DFCCL_MAX_CHANNELS=8;DFCCL_SUBMIT_TIMEOUT_MS=18446744073709551615", &cfg) &&
      (cfg.slot_bytes != 4096 || cfg.max_channels != 8 || cfg.submit_timeout_ms != UINT64_MAX))
    FAIL("0x1000, 8, 2^64-1 loaded as %u, %u, %llu", cfg.slot_bytes, cfg.max_channels,
         (unsigned long long)cfg.submit_timeout_ms);
  if (load("DFCCL_SUBMIT_TIMEOUT_MS=0", &cfg) && cfg.submit_timeout_ms != 0) FAIL("0 not loaded as 0");
}

static void expect_spin(const df_config* cfg, uint64_t front, uint64_t floor, uint64_t ceiling, const char* what) {
  if (cfg->spin.front != front || cfg->spin.floor != floor || cfg->spin.ceiling != ceiling)
    FAIL("%s: front/floor/ceiling %llu/%llu/%llu, expected %llu/%llu/%llu", what, (unsigned long long)cfg->spin.front,
         (unsigned long long)cfg->spin.floor, (unsigned long long)cfg->spin.ceiling, (unsigned long long)front,
         (unsigned long long)floor, (unsigned long long)ceiling);
}

static void test_spin_thresholds(void) {
  df_config cfg;
  /* Host defaults: front 64, floor 16, ceiling 512.  A floor above the front was lowered to it. */
  if (load("DFCCL_SPIN_FLOOR=600", &cfg)) expect_spin(&cfg, 600, 600, 600, "floor 600");
  /* A ceiling below the front was raised to it. */
  if (load("DFCCL_SPIN_CEILING=5", &cfg)) expect_spin(&cfg, 5, 5, 5, "ceiling 5");
  if (load("DFCCL_SPIN_FRONT=20000", &cfg)) expect_spin(&cfg, 20000, 16, 20000, "front 20000");
  /* Given out of order: an error that names both, never a silent fix. */
  clear();
  setenv("DFCCL_SPIN_FLOOR", "100", 1);
  setenv("DFCCL_SPIN_FRONT", "10", 1);
  if (df_config_load(&cfg, dfcclTargetHost) != dfcclInvalidArgument ||
      !strstr(dfcclGetLastErrorMessage(), "DFCCL_SPIN_FLOOR=100") ||
      !strstr(dfcclGetLastErrorMessage(), "DFCCL_SPIN_FRONT=10"))
    FAIL("floor 100 above front 10: \"%s\"", dfcclGetLastErrorMessage());
  /* A threshold x growth wrapped around 64 bits into a short wait. */
  refused("DFCCL_SPIN_CEILING", "18446744073709551615");
  refused("DFCCL_SPIN_FRONT", "1000000000000000000");
  if (load("DFCCL_SPIN_CEILING=922337203685477580", &cfg)) /* (2^64-1) / 20 */
    expect_spin(&cfg, 64, 16, 922337203685477580ull, "the largest ceiling for growth 20");
  /* An empty value is unset: calibration replaces the default. */
  if (load("DFCCL_SPIN_FRONT=", &cfg) && cfg.spin_set[0]) FAIL("an empty DFCCL_SPIN_FRONT counts as given");
}

static void test_scheduling(void) {
  df_config cfg;
  if (load("DFCCL_SPIN_GROWTH=20", &cfg) && (cfg.spin.queue_by_id || !cfg.spin.follow))
    FAIL("defaults: queue by arrival and followers on, got queue_by_id %u follow %u", cfg.spin.queue_by_id,
         cfg.spin.follow);
  if (load("DFCCL_QUEUE_ORDER=id;DFCCL_FOLLOW_READY=0", &cfg) && (!cfg.spin.queue_by_id || cfg.spin.follow))
    FAIL("DFCCL_QUEUE_ORDER=id DFCCL_FOLLOW_READY=0 not loaded");
  if (load("DFCCL_QUEUE_ORDER=arrival", &cfg) && cfg.spin.queue_by_id) FAIL("DFCCL_QUEUE_ORDER=arrival not loaded");
  refused("DFCCL_QUEUE_ORDER", "fifo");
  refused("DFCCL_FOLLOW_READY", "2");
  if (load("DFCCL_SPIN_GROWTH=20", &cfg) && !cfg.spin.take_in_wait) FAIL("default: waits take SQEs (take_in_wait 0)");
  if (load("DFCCL_TAKE_IN_WAIT=0", &cfg) && cfg.spin.take_in_wait) FAIL("DFCCL_TAKE_IN_WAIT=0 not loaded");
  if (load("DFCCL_TAKE_IN_WAIT=2", &cfg) && cfg.spin.take_in_wait != 2) FAIL("DFCCL_TAKE_IN_WAIT=2 not loaded");
  refused("DFCCL_TAKE_IN_WAIT", "3");
  if (load("DFCCL_SPIN_GROWTH=20", &cfg) && cfg.spin.send_ahead != 1)
    FAIL("default: waits send ahead after a preemption");
  if (load("DFCCL_SEND_AHEAD=0", &cfg) && cfg.spin.send_ahead) FAIL("DFCCL_SEND_AHEAD=0 not loaded");
  refused("DFCCL_SEND_AHEAD", "2");
  if (load("DFCCL_NET_LANES=3", &cfg) && cfg.net_lanes != 3) FAIL("DFCCL_NET_LANES=3 not loaded");
  if (load("DFCCL_SPIN_GROWTH=20", &cfg) && cfg.net_lanes != 1) FAIL("the host target runs 1 lane (%u)", cfg.net_lanes);
  refused("DFCCL_NET_LANES", "0");
  refused("DFCCL_NET_LANES", "9");
  refused("DFCCL_TAKE_IN_WAIT", "on");
}

static void test_calibration(void) {
  df_config cfg, before;
  if (!load("DFCCL_SPIN_CEILING=20000", &cfg)) return;
  before = cfg;
  const double unbelievable[] = {NAN, INFINITY, -1.0, 0.0, 1e-300, 1e10};
  for (size_t i = 0; i < sizeof unbelievable / sizeof unbelievable[0]; i++) {
    if (df_config_calibrate(&cfg, unbelievable[i])) FAIL("a poll of %g ns taken", unbelievable[i]);
    if (memcmp(&cfg, &before, sizeof cfg) != 0) FAIL("a poll of %g ns changed the thresholds", unbelievable[i]);
  }
  /* 0.05 ns a poll: a front of 10^7 polls, above the given ceiling, which stays; the front follows it. */
  if (!df_config_calibrate(&cfg, 0.05)) FAIL("a poll of 0.05 ns refused");
  expect_spin(&cfg, 20000, 20000, 20000, "calibrated at 0.05 ns under a ceiling of 20000");
  /* An H100's bare poll: 500 us, 2 us and 5 ms worth of polls. */
  if (!load("DFCCL_SPIN_GROWTH=20", &cfg)) return;
  if (!df_config_calibrate(&cfg, 160.0)) FAIL("a poll of 160 ns refused");
  expect_spin(&cfg, 3125, 16, 31250, "calibrated at 160 ns");
}

int main(void) {
  test_integers();
  test_spin_thresholds();
  test_scheduling();
  test_calibration();
  clear();
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  else printf("PASS: test_config\n");
  return failures ? 1 : 0;
}
