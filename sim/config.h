/*
 * Simulator configuration: the authors' JSON keys plus our `order` and `seed`.
 *
 * Loading validates everything a round relies on, so the simulator itself
 * never meets a malformed topology.  Problems come back as one message that
 * names the offending key; the CLI turns that into exit status 2.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_SIM_CONFIG_H
#define DFCCL_SIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum sim_model { MODEL_SINGLE_QUEUE, MODEL_SYNC };
enum sim_grouping { GROUPING_3D, GROUPING_FREE };
enum sim_order { ORDER_INTERLEAVE, ORDER_CONCAT };

/* Limits that keep the round state compact: a collective's per-member state
 * is one 64-bit mask, and a per-GPU list entry packs (collective, member bit)
 * into 32 bits. */
#define SIM_MAX_GROUP_SIZE 64u
#define SIM_MAX_COLLECTIVES (1u << 26)
/* A collective part is one GPU's share of one collective, an entry of that GPU's list.  The lists
 * take 4 B a part in the topology and again in each thread's round state, so the bound keeps a
 * config from asking for more memory than a machine has (2^28 parts: 1 GiB a copy; the largest
 * Table 1 cell has 4.9 million). */
#define SIM_MAX_PARTS (1u << 28)
/* Round indices are claimed in chunks (runner.c) by an atomic 64-bit counter that must not wrap. */
#define SIM_MAX_ROUNDS (UINT64_MAX >> 1)

struct sim_config {
  enum sim_model model;
  enum sim_grouping grouping;
  enum sim_order order;
  double disorder_prob;
  double sync_prob; /* StreamWithSync only */
  uint64_t rounds;  /* 0: not given in the file */
  uint64_t seed;

  /* 3D ("Megatron") grouping */
  uint32_t tp, dp, pp;
  uint32_t coll_per_tp_group, coll_per_dp_group;

  /* Free ("Arbitrary") grouping: group g's members are
   * members[member_off[g] .. member_off[g + 1]). */
  uint32_t gpu_num, group_num;
  uint32_t* member_off;
  uint32_t* members;
  uint32_t* coll_per_group;
};

/* 0 on success.  On failure returns -1 and writes a message to err. Notes
 * about accepted-but-ignored keys go to stderr. */
int config_load_file(const char* path, struct sim_config* cfg, char* err, size_t errlen);
int config_load_string(const char* text, struct sim_config* cfg, char* err, size_t errlen);
/* `size` bytes of JSON text, not NUL-terminated (a NUL in them is an error). */
int config_load_buffer(const char* data, size_t size, struct sim_config* cfg, char* err, size_t errlen);
void config_free(struct sim_config* cfg);

const char* model_name(enum sim_model m);
const char* order_name(enum sim_order o);
int order_parse(const char* s, enum sim_order* out);

#endif
