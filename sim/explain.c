/*
 * --explain: replays one deadlocked round and prints the cycle that ended it, each wait-for edge
 * unfolded into two collective parts: the executing one and the one waiting for it.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "explain.h"

static void print_part(const struct round_state* st, FILE* out, uint32_t gpu, uint32_t coll, const char* state) {
  char name[128];
  topology_name_coll(st->t, coll, name, sizeof name);
  fprintf(out, "  GPU %-5u %-45s %s\n", gpu, name, state);
}

/* Edge u -> v with witness c unfolds into two parts: c executing on u, and
 * c waiting on v, where v's own executing part (the next edge) blocks it. */
void explain_cycle(const struct round_state* st, FILE* out) {
  const struct cycle* c = &st->finder.found;
  const char* waiting = st->model == MODEL_SINGLE_QUEUE ? "invoked, queued behind the executing head"
                                                        : "not invoked yet: the GPU is suspended by a synchronization";
  if (c->len == 0) {
    fprintf(out, "no cycle: the authors' intersection rule declared this deadlock\n");
    return;
  }
  fprintf(out, "cycle through %u GPUs (%u collective parts):\n", c->len, 2 * c->len);
  for (uint32_t i = 0; i < c->len; i++) {
    uint32_t v = c->node[(i + 1) % c->len];
    print_part(st, out, c->node[i], c->via[i], "executing");
    print_part(st, out, v, c->via[i], waiting);
  }
  fprintf(out, "  (the last part waits for the first)\n");
}

int explain_round(const struct topology* t, const struct sim_params* p, uint64_t seed, uint64_t round, FILE* out) {
  struct round_state st;
  if (round_state_init(&st, t, p)) return -1;
  if (round_run(&st, seed, round)) {
    fprintf(out, "first deadlocked round: %llu, after %llu steps\n", (unsigned long long)round,
            (unsigned long long)st.steps);
    explain_cycle(&st, out);
  }
  round_state_free(&st);
  return 0;
}
