/*
 * Collective test cases shared by the MPI tests: a case is one registered collective with its
 * buffers; inputs are small integers whose reductions are exact in every type, and results are
 * checked exactly against a float64 reference.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef DFCCL_TEST_CASES_H
#define DFCCL_TEST_CASES_H

#include <stdbool.h>
#include <stddef.h>

#include "harness.h"

typedef enum {
  ALL_REDUCE,
  ALL_GATHER,
  REDUCE_SCATTER,
  BROADCAST,
  REDUCE,
  ALL_GATHER_V,
  REDUCE_SCATTER_V,
  ALL_TO_ALL,
  NUM_KINDS
} kind;
extern const char* const kind_names[NUM_KINDS];

typedef struct {
  int id;
  kind kind;
  dfcclDataType_t dtype;
  dfcclRedOp_t op;
  size_t count; /* as registered: per rank for all-gather and reduce-scatter; the v kinds: the
                 * blocks are count + 5 x position elements, every third one empty */
  bool packed;  /* all-gather-v: the blocks packed in ring order (displs NULL), not reversed with gaps */
  bool in_place;
  size_t offset_elems; /* buffers start this many elements into their allocation */
  int root;            /* world rank, broadcast and reduce */
  const int* ranks;    /* participants, ascending; NULL: all */
  int nranks;
  int position;  /* this rank's index among them */
  unsigned seed; /* varies the inputs between runs */
  void *send_alloc, *recv_alloc;
  char *send, *recv; /* the buffers passed to dfcclRun* */
} test_case;

/* Groups of ranks whose waits chain into each other, alike on every rank: all ranks (at most 8),
 * then from every second rank a window of 3 consecutive ranks (mod n) and the pair of its first two,
 * each in ascending order; at most max groups.  Returns how many. */
int overlapping_groups(int nranks, int members[][8], int* sizes, int max);
bool reduces(kind k);
bool runs_in_place(kind k); /* all-to-all does not */
void register_case(harness* h, const test_case* c);
/* Allocates and fills the buffers (outputs poisoned). */
void prepare(harness* h, test_case* c);
void run_case(harness* h, test_case* c, harness_counter* done);
/* The case as a descriptor submitted to comm (its ranks: c->ranks, or all). */
void submit_case(harness* h, dfcclComm_t comm, test_case* c, harness_counter* done);
/* The same with the caller's callback (which must count the run done as harness_on_complete does, if
 * harness_wait is to see it). */
void submit_case_with(harness* h, dfcclComm_t comm, test_case* c, dfcclCallback_t callback, void* arg);
/* The same for n cases on one communicator, in one dfcclSubmitBatch. */
void submit_cases_with(harness* h, dfcclComm_t comm, test_case* const* cs, int n, dfcclCallback_t callback, void* arg);
/* The v kinds' blocks: counts[p] and displs[p] for each position p (displs of reduce-scatter-v and
 * of a packed all-gather-v: packed). */
void case_blocks(const test_case* c, size_t* counts, size_t* displs);
/* Checks the output, frees the buffers; returns the wrong elements (the first few are printed). */
long verify(harness* h, test_case* c);

#endif /* DFCCL_TEST_CASES_H */
