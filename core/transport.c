/*
 * Which transport a connector takes: a peer mapping (CUDA IPC, or POSIX shared memory on the host
 * target) between processes of one host, the network (UCX, through a CPU proxy) between hosts.
 * A "host" is what the processes can tell apart without asking anyone: the kernel's boot id, the
 * host name and the network namespace -- processes in two namespaces of one machine are as far
 * apart as two machines for the network, which is how CI tests the network path honestly.
 * DFCCL_HOST_ID overrides it (a test may place ranks of one machine on different "hosts").
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

const char* df_transport_name(uint32_t transport) {
  switch (transport) {
    case DF_TRANSPORT_AUTO: return "auto";
    case DF_TRANSPORT_P2P: return "p2p";
    case DF_TRANSPORT_UCX: return "ucx";
    default: return "unknown";
  }
}

dfcclResult_t df_config_transport(uint32_t* transport) {
  const char* env = getenv("DFCCL_TRANSPORT");
  if (!env || !*env || strcmp(env, "auto") == 0) *transport = DF_TRANSPORT_AUTO;
  else if (strcmp(env, "p2p") == 0) *transport = DF_TRANSPORT_P2P;
  else if (strcmp(env, "ucx") == 0) *transport = DF_TRANSPORT_UCX;
  else return df_error(dfcclInvalidArgument, "DFCCL_TRANSPORT=\"%s\": expected \"auto\", \"p2p\" or \"ucx\"", env);
  return dfcclSuccess;
}

/* FNV-1a, 64 bits: enough to tell a handful of hosts apart. */
static uint64_t hash_bytes(uint64_t h, const void* p, size_t n) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t df_host_identity(void) {
  uint64_t h = 14695981039346656037ull;
  const char* forced = getenv("DFCCL_HOST_ID");
  if (forced && *forced) return hash_bytes(h, forced, strlen(forced)) | 1;
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  h = hash_bytes(h, name, strlen(name));
  char boot[64] = {0};
  FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
    fclose(f);
  }
  h = hash_bytes(h, boot, strlen(boot));
  struct stat ns;
  if (stat("/proc/thread-self/ns/net", &ns) == 0 || stat("/proc/self/ns/net", &ns) == 0) {
    h = hash_bytes(h, &ns.st_dev, sizeof ns.st_dev);
    h = hash_bytes(h, &ns.st_ino, sizeof ns.st_ino);
  }
  return h | 1; /* never 0, which a card of an older peer would carry */
}
