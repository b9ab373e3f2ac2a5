/*
 * Loading the simulator's JSON configuration (config.h): the authors' keys plus our `order` and
 * `seed`, each checked, with one message naming the offending key; notes on stderr for keys that
 * are ignored.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keys of the authors' simulator that do not change our model. */
static const struct {
  const char* key;
  const char* why;
} ignored_keys[] = {
    {"num_process", "rounds are total_rounds (or --rounds); use --threads for parallelism"},
    {"fix_seed", "runs are always reproducible; use \"seed\" or --seed"},
    {"resource_limit", "the synchronization model assumes unlimited resources (paper 2.4.1)"},
};

static const char* const known_keys[] = {
    "model",
    "grouping_policy",
    "disorder_prob",
    "sync_prob",
    "total_rounds",
    "tp_group_size",
    "dp_group_size",
    "pp_group_size",
    "coll_cnt_per_tp_group",
    "coll_cnt_per_dp_group",
    "gpu_num",
    "group_num",
    "gpu_per_group",
    "coll_cnt_per_group",
    "order",
    "seed",
};

static int fail(char* err, size_t errlen, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static json_t* require(json_t* root, const char* key, char* err, size_t errlen) {
  json_t* v = json_object_get(root, key);
  if (!v) fail(err, errlen, "missing key \"%s\"", key);
  return v;
}

static int get_probability(json_t* root, const char* key, double* out, char* err, size_t errlen) {
  json_t* v = require(root, key, err, errlen);
  if (!v) return -1;
  if (!json_is_number(v)) return fail(err, errlen, "\"%s\" must be a number", key);
  double p = json_number_value(v);
  if (!(p >= 0.0 && p <= 1.0)) return fail(err, errlen, "\"%s\" = %g is outside [0, 1]", key, p);
  *out = p;
  return 0;
}

/* A positive integer that fits `max`. */
static int as_count(json_t* v, const char* what, uint64_t max, uint64_t* out, char* err, size_t errlen) {
  if (!json_is_integer(v)) return fail(err, errlen, "%s must be an integer", what);
  json_int_t n = json_integer_value(v);
  if (n <= 0) return fail(err, errlen, "%s = %lld must be > 0", what, (long long)n);
  if ((uint64_t)n > max)
    return fail(err, errlen, "%s = %lld is too large (at most %llu)", what, (long long)n, (unsigned long long)max);
  *out = (uint64_t)n;
  return 0;
}

static int get_count(json_t* root, const char* key, uint64_t max, uint32_t* out, char* err, size_t errlen) {
  json_t* v = require(root, key, err, errlen);
  uint64_t n;
  char what[64];
  if (!v) return -1;
  snprintf(what, sizeof what, "\"%s\"", key);
  if (as_count(v, what, max, &n, err, errlen)) return -1;
  *out = (uint32_t)n;
  return 0;
}

static void note_unused_keys(json_t* root) {
  const char* key;
  json_t* v;
  json_object_foreach(root, key, v) {
    bool known = false;
    for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
      known = known || strcmp(key, known_keys[i]) == 0;
    if (known) continue;
    const char* why = "unknown key";
    for (size_t i = 0; i < sizeof ignored_keys / sizeof ignored_keys[0]; i++)
      if (strcmp(key, ignored_keys[i].key) == 0) why = ignored_keys[i].why;
    fprintf(stderr, "dfccl-sim: note: ignoring \"%s\": %s\n", key, why);
  }
}

static int too_many_parts(uint64_t parts, char* err, size_t errlen) {
  return fail(err, errlen,
              "%llu collective parts (GPUs of a collective, summed over the collectives) is too many (limit %u): "
              "the lists they make take 4 bytes a part in memory",
              (unsigned long long)parts, SIM_MAX_PARTS);
}

static int parse_3d(json_t* root, struct sim_config* cfg, char* err, size_t errlen) {
  if (get_count(root, "tp_group_size", SIM_MAX_GROUP_SIZE, &cfg->tp, err, errlen) ||
      get_count(root, "dp_group_size", SIM_MAX_GROUP_SIZE, &cfg->dp, err, errlen) ||
      get_count(root, "pp_group_size", 1u << 20, &cfg->pp, err, errlen) ||
      get_count(root, "coll_cnt_per_tp_group", SIM_MAX_COLLECTIVES, &cfg->coll_per_tp_group, err, errlen) ||
      get_count(root, "coll_cnt_per_dp_group", SIM_MAX_COLLECTIVES, &cfg->coll_per_dp_group, err, errlen))
    return -1;
  uint64_t gpus = (uint64_t)cfg->tp * cfg->dp * cfg->pp;
  uint64_t colls =
      (uint64_t)cfg->pp * ((uint64_t)cfg->dp * cfg->coll_per_tp_group + (uint64_t)cfg->tp * cfg->coll_per_dp_group);
  if (gpus > (1u << 24)) return fail(err, errlen, "tp*dp*pp = %llu GPUs is too many", (unsigned long long)gpus);
  if (colls >= SIM_MAX_COLLECTIVES)
    return fail(err, errlen, "%llu collectives in total is too many (limit %u)", (unsigned long long)colls,
                SIM_MAX_COLLECTIVES);
  /* Every GPU of a stage is in one TP group and one DP group. */
  uint64_t parts = gpus * ((uint64_t)cfg->coll_per_tp_group + cfg->coll_per_dp_group);
  if (parts > SIM_MAX_PARTS) return too_many_parts(parts, err, errlen);
  json_t* n = json_object_get(root, "gpu_num");
  if (n && (!json_is_integer(n) || (uint64_t)json_integer_value(n) != gpus))
    return fail(err, errlen, "\"gpu_num\" must equal tp_group_size*dp_group_size*pp_group_size = %llu",
                (unsigned long long)gpus);
  cfg->gpu_num = (uint32_t)gpus;
  cfg->group_num = (cfg->tp + cfg->dp) * cfg->pp;
  return 0;
}

static int parse_free(json_t* root, struct sim_config* cfg, char* err, size_t errlen) {
  if (get_count(root, "gpu_num", 1u << 24, &cfg->gpu_num, err, errlen) ||
      get_count(root, "group_num", 1u << 24, &cfg->group_num, err, errlen))
    return -1;
  json_t* lists = require(root, "gpu_per_group", err, errlen);
  if (!lists) return -1;
  json_t* counts = require(root, "coll_cnt_per_group", err, errlen);
  if (!counts) return -1;
  if (!json_is_array(lists) || json_array_size(lists) != cfg->group_num)
    return fail(err, errlen, "\"gpu_per_group\" must be a list of group_num = %u member lists", cfg->group_num);
  if (!json_is_array(counts) || json_array_size(counts) != cfg->group_num)
    return fail(err, errlen, "\"coll_cnt_per_group\" must be a list of group_num = %u counts", cfg->group_num);

  size_t total_members = 0;
  for (size_t g = 0; g < cfg->group_num; g++) {
    json_t* m = json_array_get(lists, g);
    if (!json_is_array(m) || json_array_size(m) == 0)
      return fail(err, errlen, "gpu_per_group[%zu] must be a non-empty list of GPU ids", g);
    if (json_array_size(m) > SIM_MAX_GROUP_SIZE)
      return fail(err, errlen, "gpu_per_group[%zu] has %zu GPUs; at most %u are supported", g, json_array_size(m),
                  SIM_MAX_GROUP_SIZE);
    total_members += json_array_size(m);
  }

  cfg->member_off = calloc(cfg->group_num + 1, sizeof *cfg->member_off);
  cfg->members = calloc(total_members, sizeof *cfg->members);
  cfg->coll_per_group = calloc(cfg->group_num, sizeof *cfg->coll_per_group);
  uint8_t* covered = calloc(cfg->gpu_num, 1);
  if (!cfg->member_off || !cfg->members || !cfg->coll_per_group || !covered) {
    free(covered);
    return fail(err, errlen, "out of memory");
  }

  int rc = 0;
  uint64_t colls = 0, parts = 0;
  size_t at = 0;
  for (size_t g = 0; g < cfg->group_num && rc == 0; g++) {
    json_t* m = json_array_get(lists, g);
    cfg->member_off[g] = (uint32_t)at;
    for (size_t i = 0; i < json_array_size(m) && rc == 0; i++) {
      json_t* id = json_array_get(m, i);
      if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= (json_int_t)cfg->gpu_num) {
        rc = fail(err, errlen, "gpu_per_group[%zu][%zu] is not a GPU id in 0..%u", g, i, cfg->gpu_num - 1);
        break;
      }
      uint32_t gpu = (uint32_t)json_integer_value(id);
      for (size_t j = cfg->member_off[g]; j < at; j++)
        if (cfg->members[j] == gpu) rc = fail(err, errlen, "gpu_per_group[%zu] lists GPU %u twice", g, gpu);
      cfg->members[at++] = gpu;
      covered[gpu] = 1;
    }
    uint64_t n = 0;
    char what[64];
    snprintf(what, sizeof what, "coll_cnt_per_group[%zu]", g);
    if (rc == 0 && as_count(json_array_get(counts, g), what, SIM_MAX_COLLECTIVES, &n, err, errlen)) rc = -1;
    cfg->coll_per_group[g] = (uint32_t)n;
    colls += n;
    parts += n * json_array_size(m);
  }
  cfg->member_off[cfg->group_num] = (uint32_t)at;
  for (uint32_t gpu = 0; gpu < cfg->gpu_num && rc == 0; gpu++)
    if (!covered[gpu]) rc = fail(err, errlen, "the groups do not cover 0..gpu_num-1: GPU %u is in no group", gpu);
  if (rc == 0 && colls >= SIM_MAX_COLLECTIVES)
    rc = fail(err, errlen, "%llu collectives in total is too many (limit %u)", (unsigned long long)colls,
              SIM_MAX_COLLECTIVES);
  if (rc == 0 && parts > SIM_MAX_PARTS) rc = too_many_parts(parts, err, errlen);
  free(covered);
  return rc;
}

static int parse_root(json_t* root, struct sim_config* cfg, char* err, size_t errlen) {
  if (!json_is_object(root)) return fail(err, errlen, "the top level must be a JSON object");

  const char* s;
  json_t* v = require(root, "model", err, errlen);
  if (!v) return -1;
  s = json_string_value(v);
  if (s && strcmp(s, "Single") == 0) cfg->model = MODEL_SINGLE_QUEUE;
  else if (s && strcmp(s, "StreamWithSync") == 0) cfg->model = MODEL_SYNC;
  else return fail(err, errlen, "\"model\" must be \"Single\" or \"StreamWithSync\"");

  v = require(root, "grouping_policy", err, errlen);
  if (!v) return -1;
  s = json_string_value(v);
  if (s && strcmp(s, "Megatron") == 0) cfg->grouping = GROUPING_3D;
  else if (s && strcmp(s, "Arbitrary") == 0) cfg->grouping = GROUPING_FREE;
  else return fail(err, errlen, "\"grouping_policy\" must be \"Megatron\" or \"Arbitrary\"");

  if (get_probability(root, "disorder_prob", &cfg->disorder_prob, err, errlen)) return -1;
  if (cfg->model == MODEL_SYNC || json_object_get(root, "sync_prob")) {
    if (get_probability(root, "sync_prob", &cfg->sync_prob, err, errlen)) return -1;
    /* A GPU that always synchronizes never invokes anything. */
    if (cfg->model == MODEL_SYNC && cfg->sync_prob >= 1.0)
      return fail(err, errlen,
                  "\"sync_prob\" must be < 1: a GPU that always "
                  "synchronizes never invokes a collective");
  }

  v = json_object_get(root, "total_rounds");
  if (v) {
    if (as_count(v, "\"total_rounds\"", SIM_MAX_ROUNDS, &cfg->rounds, err, errlen)) return -1;
  }
  v = json_object_get(root, "seed");
  if (v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0)
      return fail(err, errlen, "\"seed\" must be a non-negative integer");
    cfg->seed = (uint64_t)json_integer_value(v);
  }
  v = json_object_get(root, "order");
  if (v && (!json_is_string(v) || order_parse(json_string_value(v), &cfg->order)))
    return fail(err, errlen, "\"order\" must be \"interleave\" or \"concat\"");

  note_unused_keys(root);
  return cfg->grouping == GROUPING_3D ? parse_3d(root, cfg, err, errlen) : parse_free(root, cfg, err, errlen);
}

static void config_defaults(struct sim_config* cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->order = ORDER_INTERLEAVE;
  cfg->seed = 1;
}

static int finish(json_t* root, struct sim_config* cfg, char* err, size_t errlen) {
  int rc = parse_root(root, cfg, err, errlen);
  json_decref(root);
  if (rc) config_free(cfg);
  return rc;
}

/* A key given twice would be read as its last value without a word (jansson's default): refused. */
#define JSON_FLAGS JSON_REJECT_DUPLICATES

static int not_json(const json_error_t* jerr, char* err, size_t errlen) {
  return fail(err, errlen, "cannot read JSON (line %d, column %d): %s", jerr->line, jerr->column, jerr->text);
}

/* The whole file, in a buffer to free; NULL with errno set when it cannot be read. */
static char* read_file(const char* path, size_t* size) {
  errno = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char* buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char* grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
    if (!grown) free(buf);
    buf = grown;
    cap *= 2;
  }
  if (!buf) {
    errno = ENOMEM;
  } else if (ferror(f)) {
    int read_errno = errno; /* what the failed read said (EISDIR for a directory) */
    free(buf);
    buf = NULL;
    errno = read_errno ? read_errno : EIO;
  }
  fclose(f);
  *size = n;
  return buf;
}

/* The file's bytes go through config_load_buffer, the entry the fuzz target drives. */
int config_load_file(const char* path, struct sim_config* cfg, char* err, size_t errlen) {
  config_defaults(cfg);
  size_t size = 0;
  char* text = read_file(path, &size);
  if (!text) return fail(err, errlen, "cannot read JSON: %s", strerror(errno)); /* main names the file */
  int rc = config_load_buffer(text, size, cfg, err, errlen);
  free(text);
  return rc;
}

int config_load_buffer(const char* data, size_t size, struct sim_config* cfg, char* err, size_t errlen) {
  json_error_t jerr;
  config_defaults(cfg);
  json_t* root = json_loadb(data, size, JSON_FLAGS, &jerr);
  if (!root) return not_json(&jerr, err, errlen);
  return finish(root, cfg, err, errlen);
}

int config_load_string(const char* text, struct sim_config* cfg, char* err, size_t errlen) {
  return config_load_buffer(text, strlen(text), cfg, err, errlen);
}

void config_free(struct sim_config* cfg) {
  free(cfg->member_off);
  free(cfg->members);
  free(cfg->coll_per_group);
  cfg->member_off = NULL;
  cfg->members = NULL;
  cfg->coll_per_group = NULL;
}

const char* model_name(enum sim_model m) { return m == MODEL_SYNC ? "synchronization" : "single-queue"; }

const char* order_name(enum sim_order o) { return o == ORDER_CONCAT ? "concat" : "interleave"; }

int order_parse(const char* s, enum sim_order* out) {
  if (s && strcmp(s, "interleave") == 0) *out = ORDER_INTERLEAVE;
  else if (s && strcmp(s, "concat") == 0) *out = ORDER_CONCAT;
  else return -1;
  return 0;
}
