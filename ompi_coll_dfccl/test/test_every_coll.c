/*
 * Every collective of Open MPI's coll framework through coll/dfccl on device buffers (issue 18):
 * the component takes over the collectives it does not route through DFCCL too, and stages device
 * buffers through host memory for the previous component, which cannot read them.  Every result is
 * checked exactly, and the component's MPI_T counters must say that each call fell back (staged
 * where this rank passed a significant device buffer) and none was routed.
 *
 *   test_every_coll [-d host|device] [-f blocking|nonblocking|persistent|all]
 *                   [-c intra|single|inter|topo|all] [-w watchdog_s] [-k 0|1]
 *
 *   -d  the memory of the buffers.  device (the main mode): dfcclMemAlloc of DFCCL_TARGET's target (a
 *       GPU's memory, or the host target's device memory, which coll_dfccl_host_target=simulated
 *       takes for device memory).  host: malloc.  Buffers are filled and read only with dfcclCopy.
 *   -f  the forms: blocking, nonblocking (MPI_I..., MPI_Wait), persistent (MPIX_..._init, then
 *       MPI_Start and MPI_Wait twice with different input, MPI_Request_free).
 *   -c  the communicators.  intra: MPI_COMM_WORLD and a split into two uneven halves (3 ranks and
 *       up).  single: MPI_COMM_SELF (MPI_Reduce_local too).  inter: an intercommunicator between two
 *       halves of MPI_COMM_WORLD.  topo: a periodic 1-D Cartesian ring, and a distributed graph
 *       with in-degree 3 and out-degree 2 (rank 0: size + 2), for the neighbourhood collectives.
 *   -k  1 (default): check the counters coll_dfccl_<entry>_{routed,fallback,local,staged}.  0: skip
 *       them, to check this program's expected results on stock Open MPI (--mca coll ^dfccl).
 *
 * The collectives: on intra and single, MPI_Allgatherv, _Alltoall, _Alltoallv, _Alltoallw, _Gather,
 * _Gatherv, _Scatter, _Scatterv, _Scan, _Exscan, _Reduce_scatter (unequal counts), MPI_Barrier, in
 * place wherever MPI allows it, roots 0 and the last rank; on intra also MPI_Allreduce with MAXLOC
 * (never routed).  On inter: every collective MPI defines on intercommunicators, roots in either
 * group.  On topo: the five neighbourhood collectives.  Values are distinct per (rank, block,
 * element, call); datatypes with holes (two MPI_INTs at 1 and 3 of an extent of 5), gaps between the
 * blocks of v/w collectives, and guard elements after every buffer must come back unchanged, and
 * so must send buffers and buffers MPI does not make significant on this rank.
 *
 * MPI_Allgatherv and MPI_Reduce_scatter on an intracommunicator of two ranks or more, on device
 * memory, run on DFCCL's all-gather-v (any layout: a packed copy unpacks it) and reduce-scatter-v:
 * _routed +1, except that a nonblocking call
 * whose signature no blocking call or init set up yet falls back (and stages) instead.  Otherwise,
 * the counters, per call on this rank (a persistent request counts at its initialization, not at its
 * starts): _routed +0; _fallback +1, but MPI_Reduce_scatter on one rank (one of DFCCL's six there)
 * _local +1 instead; _staged +1 with -d device where this rank passes a significant buffer with
 * data: every call except those of an intercommunicator's MPI_PROC_NULL ranks, a zero-size share of
 * MPI_Gatherv or MPI_Scatterv (rank 1 of the leaves when the root is the first rank), and local
 * copies (MPI_Exscan's input on rank 0 counts: MPI only leaves its result undefined).  The blocking
 * rooted collectives on an intercommunicator also count, on the leaf group, Open MPI 4.1 coll/inter's
 * call of the same collective on the group's local communicator: host buffers, so a fallback (or
 * local copy), never staged.  MPI_Barrier has no counters.
 *
 * Run with mpirun.sh through coll/dfccl (see every_coll.sh).  A failing (communicator kind,
 * collective, form) group prints one line; the last line on rank 0 is "PASS: ..." or "FAIL: ...";
 * the exit status is nonzero on failure.  A watchdog turns a hang into WATCHDOG and exit 42.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <limits.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dfccl.h>

#include "cudart.h"      /* the CUDA runtime at run time, on GPU machines; select_node_gpu */
#include "elements.h"    /* CHECK_MPI, the watchdog, find_pvar */
#include "mpi_options.h" /* test/common */

/* Values carry the rank in two decimal digits (and an intercommunicator's group as 50 more). */
enum { MAX_RANKS = 32, MAXP = MAX_RANKS + 2, MAXI = 4096, GUARD = 3 };

static int world_rank, world_size, failed_groups;
static long long calls_made, checks_made;
static bool device_memory, check_counters = true;

#define REPORT(...)                                         \
  do {                                                      \
    if (failed_groups++ < 40) fprintf(stderr, __VA_ARGS__); \
  } while (0)

/* ---- memory ----------------------------------------------------------------------------------------- */

static void* buf_alloc(size_t bytes) {
  if (!device_memory) {
    void* p = malloc(bytes ? bytes : 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
    return p;
  }
  void* p = NULL;
  if (dfcclMemAlloc(dfcclTargetDefault, -1, bytes ? bytes : 1, &p) != dfcclSuccess) {
    fprintf(stderr, "rank %d: dfcclMemAlloc(%zu): %s\n", world_rank, bytes, dfcclGetLastErrorMessage());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

static void buf_free(void* p) {
  if (p == NULL) return;
  if (device_memory) (void)dfcclMemFree(p);
  else free(p);
}

static void put_bytes(void* buf, const void* host, size_t bytes) {
  if (bytes && dfcclCopy(buf, host, bytes) != dfcclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
}

static void get_bytes(void* host, const void* buf, size_t bytes) {
  if (bytes && dfcclCopy(host, buf, bytes) != dfcclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- layouts: where the MPI_INTs of a block sit ----------------------------------------------------- */

/* A datatype made of MPI_INTs: one element carries `ints` of them at at[] within `extent` ints. */
typedef struct {
  MPI_Datatype dt;
  int ints, extent, at[2];
} layout_t;

static layout_t plain = {MPI_INT, 1, 1, {0, 0}};
static layout_t holey; /* two MPI_INTs at 1 and 3 of an extent of 5: holes before, between, after */

static void holey_create(void) {
  MPI_Datatype pair;
  int at[2] = {1, 3};
  CHECK_MPI(MPI_Type_create_indexed_block(2, 1, at, MPI_INT, &pair));
  CHECK_MPI(MPI_Type_create_resized(pair, 0, 5 * (MPI_Aint)sizeof(int), &holey.dt));
  CHECK_MPI(MPI_Type_commit(&holey.dt));
  CHECK_MPI(MPI_Type_free(&pair));
  holey.ints = 2;
  holey.extent = 5;
  holey.at[0] = 1;
  holey.at[1] = 3;
}

/* Blocks always carry an even number of MPI_INTs, so that either layout describes them. */
static int elements(const layout_t* l, int ints) { return ints / l->ints; }
static size_t span(const layout_t* l, int ints) { return (size_t)elements(l, ints) * (size_t)l->extent; }

/* The index of the q-th MPI_INT of a block that starts `base` ints into the buffer. */
static size_t position(const layout_t* l, size_t base, int q) {
  return base + (size_t)(q / l->ints) * (size_t)l->extent + (size_t)l->at[q % l->ints];
}

/* ---- values --------------------------------------------------------------------------------------- */

/* Element q of block `block` that the rank with identity `src` sends in call `salt`: distinct for
 * every (src, block, q, salt), so that a misplaced or stale element shows. */
static int element(int src, int block, int q, int salt) { return 1 + salt * 1000000 + src * 10000 + block * 100 + q; }

#define DONT_CARE INT_MIN                                   /* where MPI leaves a receive buffer undefined */
static int untouched(size_t i) { return -1000 - (int)i; }   /* receive buffers before the call */
static int send_hole(size_t i) { return -500000 - (int)i; } /* never sent: holes and gaps */

static void write_block(int* img, const layout_t* l, size_t base, int ints, int src, int block, int salt) {
  for (int q = 0; q < ints; q++) img[position(l, base, q)] = element(src, block, q, salt);
}

/* Block sizes in MPI_INTs (even, and different from rank to rank): what a rank contributes to a
 * v-collective, what two ranks exchange (symmetric, as MPI_IN_PLACE all-to-alls require), and what
 * a neighbourhood all-to-all sends along an edge. */
static int share_ints(int ident) { return 2 * (1 + ident % 3); }
static int pair_ints(int a, int b) { return 2 * (1 + (a + b) % 3); }
static int edge_ints(int src, int block) { return 2 * (1 + (src + block) % 3); }

/* Displacements (in elements) for blocks of counts[] elements, placed last block first with an
 * element of gap before each: the elements used. */
static size_t place_reversed(int blocks, const int* counts, int* displs) {
  size_t at = 1;
  for (int p = blocks - 1; p >= 0; p--) {
    displs[p] = (int)at;
    at += (size_t)counts[p] + 1;
  }
  return at;
}

/* The same for blocks of different layouts (MPI_Alltoallw): offsets in ints. */
static size_t place_reversed_ints(int blocks, const int* ints, const layout_t* const* l, size_t* at_int) {
  size_t at = 1;
  for (int p = blocks - 1; p >= 0; p--) {
    at_int[p] = at;
    at += span(l[p], ints[p]) + 1;
  }
  return at;
}

/* ---- communicators ---------------------------------------------------------------------------------- */

typedef enum { INTRA, SINGLE, INTER, TOPO, NKINDS } comm_kind_t;
static const char* const kind_names[NKINDS] = {"intra", "single", "inter", "topo"};

typedef struct {
  char name[48];
  MPI_Comm comm;
  bool inter, cart;
  int me, n; /* this rank in its (local) group, and the group's size */
  int peers; /* the ranks it exchanges with: n, or the remote group's size */
  int group; /* intercommunicator: this rank's half (0 or 1) */
  int indegree, outdegree;
  int sources[MAXP];  /* topology: in-neighbour i ... */
  int in_block[MAXP]; /* ... and which of its send blocks arrives here */
} comm_t;

/* Values name ranks by identity: the rank, or on an intercommunicator 50 * group + local rank. */
static int my_ident(const comm_t* c) { return c->inter ? c->group * 50 + c->me : c->me; }
static int peer_ident(const comm_t* c, int p) { return c->inter ? (1 - c->group) * 50 + p : p; }

static void describe(comm_t* c, MPI_Comm comm, const char* name) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  c->comm = comm;
  int inter;
  CHECK_MPI(MPI_Comm_test_inter(comm, &inter));
  c->inter = inter;
  CHECK_MPI(MPI_Comm_rank(comm, &c->me));
  CHECK_MPI(MPI_Comm_size(comm, &c->n));
  c->peers = c->n;
  if (inter) CHECK_MPI(MPI_Comm_remote_size(comm, &c->peers));
}

/* The distributed graph: rank r sends to r+1 and r+2, and rank 0 to every rank once more, so rank 0's
 * out-degree is size + 2 and every in-degree 3 (a rank may appear twice: MPI allows multigraphs,
 * and Open MPI pairs the messages of one pair of ranks in list order). */
static int graph_destinations(int r, int n, int* out) {
  int d = 0;
  out[d++] = (r + 1) % n;
  out[d++] = (r + 2) % n;
  if (r == 0)
    for (int q = 0; q < n; q++) out[d++] = q;
  return d;
}

static int graph_sources(int r, int n, int* out) {
  out[0] = (r - 1 + n) % n;
  out[1] = (r - 2 + 2 * n) % n;
  out[2] = 0;
  return 3;
}

/* Which send block of sources[i] arrives as receive block i: the k-th edge from s to this rank is
 * s's k-th destination entry naming this rank. */
static void graph_in_blocks(comm_t* c) {
  for (int i = 0; i < c->indegree; i++) {
    int s = c->sources[i], seen = 0, dests[MAXP];
    for (int j = 0; j < i; j++) seen += c->sources[j] == s;
    int outdegree = graph_destinations(s, c->n, dests);
    for (int j = 0; j < outdegree; j++)
      if (dests[j] == c->me && seen-- == 0) {
        c->in_block[i] = j;
        break;
      }
  }
}

static void make_graph(comm_t* c) {
  int sources[MAXP], dests[MAXP];
  int indegree = graph_sources(world_rank, world_size, sources);
  int outdegree = graph_destinations(world_rank, world_size, dests);
  /* Equal weights rather than MPI_UNWEIGHTED, which gcc takes for an empty array. */
  int weights[MAXP];
  for (int i = 0; i < MAXP; i++) weights[i] = 1;
  MPI_Comm graph;
  CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indegree, sources, weights, outdegree, dests, weights,
                                           MPI_INFO_NULL, 0, &graph));
  describe(c, graph, "the distributed graph");
  c->indegree = indegree;
  c->outdegree = outdegree;
  memcpy(c->sources, sources, sizeof sources);
  graph_in_blocks(c);
}

/* The periodic ring: neighbours (r-1, r+1) in both directions; MPI pairs a receive from the negative
 * neighbour with that neighbour's send in the positive direction (its block 1), and vice versa. */
static void make_ring(comm_t* c) {
  int dims[1] = {world_size}, periods[1] = {1}, minus, plus;
  MPI_Comm ring;
  CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
  describe(c, ring, "the Cartesian ring");
  CHECK_MPI(MPI_Cart_shift(ring, 0, 1, &minus, &plus));
  c->cart = true;
  c->indegree = c->outdegree = 2;
  c->sources[0] = minus;
  c->sources[1] = plus;
  c->in_block[0] = 1;
  c->in_block[1] = 0;
}

/* The halves of MPI_COMM_WORLD for intercommunicators: the first size/2 ranks, and the rest. */
static void make_inter(comm_t* c) {
  int group = world_rank < world_size / 2 ? 0 : 1;
  MPI_Comm half, inter;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, group, world_rank, &half));
  CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, group == 0 ? world_size / 2 : 0, 18, &inter));
  CHECK_MPI(MPI_Comm_free(&half));
  describe(c, inter, "the intercommunicator");
  c->group = group;
}

/* Two uneven halves of MPI_COMM_WORLD, the second in reverse rank order. */
static void make_half(comm_t* c) {
  int first = (world_size - 1) / 2, color = world_rank < first ? 0 : 1;
  MPI_Comm half;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, color ? -world_rank : world_rank, &half));
  int n;
  CHECK_MPI(MPI_Comm_size(half, &n));
  char name[48];
  snprintf(name, sizeof name, "a half of %d rank%s", n, n > 1 ? "s" : "");
  describe(c, half, name);
}

/* ---- one call ----------------------------------------------------------------------------------------- */

enum { BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
static const char* const form_names[NFORMS] = {"blocking", "nonblocking", "persistent"};

typedef enum {
  ALLGATHERV,
  ALLTOALL,
  ALLTOALLV,
  ALLTOALLW,
  GATHER,
  GATHERV,
  SCATTER,
  SCATTERV,
  SCAN,
  EXSCAN,
  REDUCE_SCATTER,
  ALLREDUCE,
  BCAST,
  REDUCE,
  ALLGATHER,
  REDUCE_SCATTER_BLOCK,
  NEIGHBOR_ALLGATHER,
  NEIGHBOR_ALLGATHERV,
  NEIGHBOR_ALLTOALL,
  NEIGHBOR_ALLTOALLV,
  NEIGHBOR_ALLTOALLW,
  REDUCE_LOCAL,
  BARRIER,
  NCOLLS
} coll_t;

typedef enum { NO_ROOT, ROOT_FIRST, ROOT_LAST } root_choice_t;
enum { NO_BUFFER = -1 };

/* One call: its parameters (set by the caller), its arguments and buffers' images (set by the
 * collective's build function for a given salt), and what the counters should say. */
typedef struct {
  /* parameters */
  const comm_t* c;
  coll_t coll;
  root_choice_t root_choice;
  bool use_holey, use_in_place;
  /* arguments */
  int root_group, root_at; /* the root: its group (intercommunicator) and rank there */
  int root;                /* the root argument: a rank, MPI_ROOT or MPI_PROC_NULL */
  bool is_root, is_leaf;   /* the root; a rank that sends to or receives from the root */
  bool send_in_place, recv_in_place;
  int scount, rcount;
  MPI_Datatype stype, rtype;
  MPI_Op op;
  int scounts[MAXP], sdispls[MAXP], rcounts[MAXP], rdispls[MAXP];
  MPI_Datatype stypes[MAXP], rtypes[MAXP];
  MPI_Aint sdispls_a[MAXP], rdispls_a[MAXP];
  /* buffers: ints, guards included (NO_BUFFER: none), images before the call, expected after */
  long send_n, recv_n;
  int send_img[MAXI], recv_img[MAXI], want[MAXI];
  void *send, *recv;
  /* counters */
  bool significant; /* this rank passes a significant buffer with data: staged on device memory */
  bool local;       /* one of DFCCL's collectives on a communicator of one rank: a local copy */
  bool routable;    /* DFCCL runs it (device memory, intracommunicator): routed, or -- a nonblocking
                     * call whose signature is not set up yet -- fallen back and staged */
  bool nested;      /* blocking, intercommunicator: coll/inter calls the same entry on the local group */
} case_t;

typedef void build_fn(case_t* k, int salt);

static const layout_t* layout_of(const case_t* k) { return k->use_holey ? &holey : &plain; }

static void images_begin(case_t* k, long send_ints, long recv_ints) {
  k->send_n = send_ints == NO_BUFFER ? NO_BUFFER : send_ints + GUARD;
  k->recv_n = recv_ints == NO_BUFFER ? NO_BUFFER : recv_ints + GUARD;
  if (k->send_n > MAXI || k->recv_n > MAXI) {
    fprintf(stderr, "rank %d: a buffer of %ld ints: more than this program's images hold\n", world_rank,
            k->send_n > k->recv_n ? k->send_n : k->recv_n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (long i = 0; i < k->send_n; i++) k->send_img[i] = send_hole((size_t)i);
  for (long i = 0; i < k->recv_n; i++) k->recv_img[i] = k->want[i] = untouched((size_t)i);
}

/* The root's roles, and the root argument MPI asks each rank for.  On an intercommunicator the root
 * group passes MPI_ROOT (the root) or MPI_PROC_NULL (no buffer significant), the other group the
 * root's rank; every rank of the other group is a leaf. */
static void take_roles(case_t* k) {
  const comm_t* c = k->c;
  k->root_group = c->inter && k->root_choice == ROOT_FIRST ? 1 : 0;
  int root_group_size = !c->inter || c->group == k->root_group ? c->n : c->peers;
  k->root_at = k->root_choice == ROOT_LAST ? root_group_size - 1 : 0;
  if (!c->inter) {
    k->is_root = c->me == k->root_at;
    k->is_leaf = true;
    k->root = k->root_at;
    return;
  }
  bool root_group = c->group == k->root_group;
  k->is_root = root_group && c->me == k->root_at;
  k->is_leaf = !root_group;
  k->root = root_group ? (k->is_root ? MPI_ROOT : MPI_PROC_NULL) : k->root_at;
  /* coll/inter (Open MPI 4.1) does its blocking rooted collectives in the leaf group through the
   * local communicator's same collective: MPI_Bcast, _Gather, _Gatherv, _Scatter, _Scatterv, _Reduce. */
  k->nested = k->is_leaf;
}

static int root_ident(const case_t* k) { return k->c->inter ? k->root_group * 50 + k->root_at : k->root_at; }

/* A v-collective's zero-size share: rank 1 of the leaves when the root is the first rank. */
static bool zero_share(const case_t* k, int rank) { return k->root_choice == ROOT_FIRST && rank == 1; }

/* ---- the collectives' buffers and expected results ------------------------------------------------- */

static void build_gather(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 4;
  take_roles(k);
  k->send_in_place = k->use_in_place && k->is_root;
  k->scount = ints;
  k->stype = MPI_INT;
  k->rcount = elements(l, ints);
  k->rtype = l->dt;
  images_begin(k, k->send_in_place ? NO_BUFFER : ints, k->is_root ? (long)(c->peers * span(l, ints)) : 0);
  if (k->is_leaf && !k->send_in_place) write_block(k->send_img, &plain, 0, ints, my_ident(c), 0, salt);
  for (int p = 0; k->is_root && p < c->peers; p++) {
    write_block(k->want, l, p * span(l, ints), ints, peer_ident(c, p), 0, salt);
    if (k->send_in_place && p == c->me) write_block(k->recv_img, l, p * span(l, ints), ints, my_ident(c), 0, salt);
  }
  k->significant = k->is_root || k->is_leaf;
}

static void build_gatherv(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  int ints[MAXP];
  take_roles(k);
  k->send_in_place = k->use_in_place && k->is_root;
  int mine = k->is_leaf && zero_share(k, c->me) ? 0 : share_ints(my_ident(c));
  k->scount = mine;
  k->stype = MPI_INT;
  k->rtype = l->dt;
  for (int p = 0; p < c->peers; p++) {
    ints[p] = zero_share(k, p) ? 0 : share_ints(peer_ident(c, p));
    k->rcounts[p] = elements(l, ints[p]);
  }
  size_t used = place_reversed(c->peers, k->rcounts, k->rdispls);
  images_begin(k, k->send_in_place ? NO_BUFFER : mine, k->is_root ? (long)(used * l->extent) : 0);
  if (k->is_leaf && !k->send_in_place) write_block(k->send_img, &plain, 0, mine, my_ident(c), 0, salt);
  for (int p = 0; k->is_root && p < c->peers; p++) {
    size_t base = (size_t)k->rdispls[p] * l->extent;
    write_block(k->want, l, base, ints[p], peer_ident(c, p), 0, salt);
    if (k->send_in_place && p == c->me) write_block(k->recv_img, l, base, ints[p], my_ident(c), 0, salt);
  }
  k->significant = k->is_root || (k->is_leaf && mine > 0); /* a zero-size share stages nothing */
}

static void build_scatter(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 4;
  take_roles(k);
  k->recv_in_place = k->use_in_place && k->is_root;
  k->scount = elements(l, ints);
  k->stype = l->dt;
  k->rcount = ints;
  k->rtype = MPI_INT;
  images_begin(k, k->is_root ? (long)(c->peers * span(l, ints)) : 0, k->recv_in_place ? NO_BUFFER : ints);
  for (int p = 0; k->is_root && p < c->peers; p++)
    write_block(k->send_img, l, p * span(l, ints), ints, my_ident(c), p, salt);
  if (k->is_leaf && !k->recv_in_place) write_block(k->want, &plain, 0, ints, root_ident(k), c->me, salt);
  k->significant = k->is_root || k->is_leaf;
}

static void build_scatterv(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  int ints[MAXP];
  take_roles(k);
  k->recv_in_place = k->use_in_place && k->is_root;
  for (int p = 0; p < c->peers; p++) {
    ints[p] = zero_share(k, p) ? 0 : share_ints(peer_ident(c, p));
    k->scounts[p] = elements(l, ints[p]);
  }
  size_t used = place_reversed(c->peers, k->scounts, k->sdispls);
  int mine = k->is_leaf && zero_share(k, c->me) ? 0 : share_ints(my_ident(c));
  k->stype = l->dt;
  k->rcount = elements(l, mine);
  k->rtype = l->dt;
  images_begin(k, k->is_root ? (long)(used * l->extent) : 0, k->recv_in_place ? NO_BUFFER : (long)span(l, mine));
  for (int p = 0; k->is_root && p < c->peers; p++)
    write_block(k->send_img, l, (size_t)k->sdispls[p] * l->extent, ints[p], my_ident(c), p, salt);
  if (k->is_leaf && !k->recv_in_place) write_block(k->want, l, 0, mine, root_ident(k), c->me, salt);
  k->significant = k->is_root || (k->is_leaf && mine > 0); /* a zero-size share stages nothing */
}

static void build_allgatherv(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  int ints[MAXP];
  k->send_in_place = k->use_in_place;
  int mine = share_ints(my_ident(c));
  k->scount = mine;
  k->stype = MPI_INT;
  k->rtype = l->dt;
  for (int p = 0; p < c->peers; p++) {
    ints[p] = share_ints(peer_ident(c, p));
    k->rcounts[p] = elements(l, ints[p]);
  }
  size_t used = place_reversed(c->peers, k->rcounts, k->rdispls);
  images_begin(k, k->send_in_place ? NO_BUFFER : mine, (long)(used * l->extent));
  if (!k->send_in_place) write_block(k->send_img, &plain, 0, mine, my_ident(c), 0, salt);
  for (int p = 0; p < c->peers; p++) {
    size_t base = (size_t)k->rdispls[p] * l->extent;
    write_block(k->want, l, base, ints[p], peer_ident(c, p), 0, salt);
    if (k->send_in_place && p == c->me) write_block(k->recv_img, l, base, ints[p], my_ident(c), 0, salt);
  }
  k->significant = true;
  /* Routed to DFCCL's all-gather-v on device memory (any layout: a packed copy unpacks it); on one
   * rank a local copy, unless the receive type has holes and there is something to copy. */
  k->local = !c->inter && c->n == 1 && (k->send_in_place || !k->use_holey);
  k->routable = !c->inter && c->n > 1 && device_memory;
}

static void build_allgather(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 4;
  k->scount = ints;
  k->stype = MPI_INT;
  k->rcount = elements(l, ints);
  k->rtype = l->dt;
  images_begin(k, ints, (long)(c->peers * span(l, ints)));
  write_block(k->send_img, &plain, 0, ints, my_ident(c), 0, salt);
  for (int p = 0; p < c->peers; p++) write_block(k->want, l, p * span(l, ints), ints, peer_ident(c, p), 0, salt);
  k->significant = true;
}

/* In place, an all-to-all sends from the receive buffer: its blocks hold what goes to each rank. */
static void build_alltoall(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 4;
  k->send_in_place = k->use_in_place;
  k->scount = ints;
  k->stype = MPI_INT;
  k->rcount = elements(l, ints);
  k->rtype = l->dt;
  images_begin(k, k->send_in_place ? NO_BUFFER : c->peers * ints, (long)(c->peers * span(l, ints)));
  for (int p = 0; p < c->peers; p++) {
    if (!k->send_in_place) write_block(k->send_img, &plain, (size_t)p * ints, ints, my_ident(c), p, salt);
    else write_block(k->recv_img, l, p * span(l, ints), ints, my_ident(c), p, salt);
    write_block(k->want, l, p * span(l, ints), ints, peer_ident(c, p), c->me, salt);
  }
  k->significant = true;
  /* Routed to DFCCL's all-to-all on device memory unless in place (any receive layout: a packed
   * copy unpacks it); on one rank a local copy, unless the receive type has holes. */
  k->local = !c->inter && c->n == 1 && (k->send_in_place || !k->use_holey);
  k->routable = !c->inter && c->n > 1 && device_memory && !k->send_in_place;
}

static void build_alltoallv(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  int ints[MAXP];
  k->send_in_place = k->use_in_place;
  k->stype = k->rtype = l->dt;
  for (int p = 0; p < c->peers; p++) {
    ints[p] = pair_ints(my_ident(c), peer_ident(c, p));
    k->scounts[p] = k->rcounts[p] = elements(l, ints[p]);
  }
  size_t sent = place_reversed(c->peers, k->scounts, k->sdispls);
  size_t received = place_reversed(c->peers, k->rcounts, k->rdispls);
  images_begin(k, k->send_in_place ? NO_BUFFER : (long)(sent * l->extent), (long)(received * l->extent));
  for (int p = 0; p < c->peers; p++) {
    size_t at = (size_t)k->rdispls[p] * l->extent;
    if (!k->send_in_place)
      write_block(k->send_img, l, (size_t)k->sdispls[p] * l->extent, ints[p], my_ident(c), p, salt);
    else write_block(k->recv_img, l, at, ints[p], my_ident(c), p, salt);
    write_block(k->want, l, at, ints[p], peer_ident(c, p), c->me, salt);
  }
  k->significant = true;
}

/* Each block its own layout: sends alternate plain/holey, receives holey/plain. */
static void build_alltoallw(case_t* k, int salt) {
  const comm_t* c = k->c;
  int ints[MAXP];
  const layout_t *sl[MAXP], *rl[MAXP];
  size_t sat[MAXP], rat[MAXP];
  k->send_in_place = k->use_in_place;
  for (int p = 0; p < c->peers; p++) {
    ints[p] = pair_ints(my_ident(c), peer_ident(c, p));
    sl[p] = p % 2 ? &holey : &plain;
    rl[p] = p % 2 ? &plain : &holey;
    k->scounts[p] = elements(sl[p], ints[p]);
    k->rcounts[p] = elements(rl[p], ints[p]);
    k->stypes[p] = sl[p]->dt;
    k->rtypes[p] = rl[p]->dt;
  }
  size_t sent = place_reversed_ints(c->peers, ints, sl, sat);
  size_t received = place_reversed_ints(c->peers, ints, rl, rat);
  /* Open MPI 4.1's coll/self multiplies MPI_Alltoallw's displacements (bytes) by the extents: on one
   * rank only displacement 0 moves the right bytes. */
  if (!c->inter && c->n == 1) sat[0] = rat[0] = 0;
  for (int p = 0; p < c->peers; p++) { /* MPI_Alltoallw's displacements are in bytes */
    k->sdispls[p] = (int)(sat[p] * sizeof(int));
    k->rdispls[p] = (int)(rat[p] * sizeof(int));
  }
  images_begin(k, k->send_in_place ? NO_BUFFER : (long)sent, (long)received);
  for (int p = 0; p < c->peers; p++) {
    if (!k->send_in_place) write_block(k->send_img, sl[p], sat[p], ints[p], my_ident(c), p, salt);
    else write_block(k->recv_img, rl[p], rat[p], ints[p], my_ident(c), p, salt);
    write_block(k->want, rl[p], rat[p], ints[p], peer_ident(c, p), c->me, salt);
  }
  k->significant = true;
}

/* Scan and exscan of 5 MPI_INTs (MPI_SUM): rank r's input is block 0 of identity r. */
static void build_scan_of(case_t* k, int salt, bool exclusive) {
  const comm_t* c = k->c;
  const int count = 5;
  k->send_in_place = k->use_in_place;
  k->rcount = count;
  k->rtype = MPI_INT;
  k->op = MPI_SUM;
  images_begin(k, k->send_in_place ? NO_BUFFER : count, count);
  write_block(k->send_in_place ? k->recv_img : k->send_img, &plain, 0, count, c->me, 0, salt);
  for (int q = 0; q < count; q++) {
    int sum = 0;
    for (int r = 0; r < (exclusive ? c->me : c->me + 1); r++) sum += element(r, 0, q, salt);
    k->want[q] = exclusive && c->me == 0 ? DONT_CARE : sum; /* MPI leaves rank 0's exscan result undefined */
  }
  k->significant = true; /* exscan: rank 0's input reaches rank 1 */
}

static void build_scan(case_t* k, int salt) { build_scan_of(k, salt, false); }
static void build_exscan(case_t* k, int salt) { build_scan_of(k, salt, true); }

/* The sum over the contributing ranks (the remote group of an intercommunicator) of element
 * `offset` + q of their inputs, q < count. */
static void want_sums(case_t* k, int salt, size_t offset, int count) {
  const comm_t* c = k->c;
  int contributors = c->inter ? c->peers : c->n;
  for (int q = 0; q < count; q++) {
    int sum = 0;
    for (int p = 0; p < contributors; p++) sum += element(peer_ident(c, p), 0, (int)offset + q, salt);
    k->want[q] = sum;
  }
}

/* Rank i gets i + 1 MPI_INTs.  On an intercommunicator both groups reduce vectors of the same length
 * (world size * (world size + 1) / 2), so the last rank of each group takes the rest. */
static void build_reduce_scatter(case_t* k, int salt) {
  const comm_t* c = k->c;
  int total = c->inter ? world_size * (world_size + 1) / 2 : c->n * (c->n + 1) / 2, offset = 0;
  for (int i = 0; i < c->n; i++) k->rcounts[i] = i + 1;
  if (c->inter) k->rcounts[c->n - 1] = total - (c->n - 1) * c->n / 2;
  for (int i = 0; i < c->me; i++) offset += k->rcounts[i];
  int mine = k->rcounts[c->me];
  k->send_in_place = k->use_in_place;
  k->rtype = MPI_INT;
  k->op = MPI_SUM;
  images_begin(k, k->send_in_place ? NO_BUFFER : total, k->send_in_place ? total : mine);
  write_block(k->send_in_place ? k->recv_img : k->send_img, &plain, 0, total, my_ident(c), 0, salt);
  want_sums(k, salt, (size_t)offset, mine);
  for (int q = mine; k->send_in_place && q < total; q++) k->want[q] = DONT_CARE; /* past the result */
  k->significant = true;
  k->local = !c->inter && c->n == 1;                    /* one of DFCCL's collectives: a local copy on one rank */
  k->routable = !c->inter && c->n > 1 && device_memory; /* DFCCL's reduce-scatter-v */
}

/* Intercommunicator: each group's block is as long as the other group is large. */
static void build_reduce_scatter_block(case_t* k, int salt) {
  const comm_t* c = k->c;
  int total = c->n * c->peers;
  k->rcount = c->peers;
  k->rtype = MPI_INT;
  k->op = MPI_SUM;
  images_begin(k, total, k->rcount);
  write_block(k->send_img, &plain, 0, total, my_ident(c), 0, salt);
  want_sums(k, salt, (size_t)c->me * (size_t)c->peers, k->rcount);
  k->significant = true;
}

/* MAXLOC over pairs (value, index): ties are common (values 0..4), and the lowest index wins. */
static void build_allreduce_maxloc(case_t* k, int salt) {
  const comm_t* c = k->c;
  const int pairs = 4;
  k->send_in_place = k->use_in_place;
  k->rcount = pairs;
  k->rtype = MPI_2INT;
  k->op = MPI_MAXLOC;
  images_begin(k, k->send_in_place ? NO_BUFFER : 2 * pairs, 2 * pairs);
  int* in = k->send_in_place ? k->recv_img : k->send_img;
  for (int q = 0; q < pairs; q++) {
    in[2 * q] = (c->me * 7 + q * 3 + salt) % 5;
    in[2 * q + 1] = c->me * 100 + q;
    int best = -1, at = 0;
    for (int r = 0; r < c->n; r++) {
      int v = (r * 7 + q * 3 + salt) % 5;
      if (v > best) best = v, at = r * 100 + q;
    }
    k->want[2 * q] = best;
    k->want[2 * q + 1] = at;
  }
  k->significant = true;
}

static void build_allreduce(case_t* k, int salt) {
  const comm_t* c = k->c;
  const int count = 6;
  if (!c->inter) {
    build_allreduce_maxloc(k, salt);
    return;
  }
  k->rcount = count;
  k->rtype = MPI_INT;
  k->op = MPI_SUM;
  images_begin(k, count, count);
  write_block(k->send_img, &plain, 0, count, my_ident(c), 0, salt);
  want_sums(k, salt, 0, count);
  k->significant = true;
}

static void build_reduce(case_t* k, int salt) {
  const comm_t* c = k->c;
  const int count = 6;
  take_roles(k);
  k->rcount = count;
  k->rtype = MPI_INT;
  k->op = MPI_SUM;
  images_begin(k, count, count); /* the root's send and the leaves' receive buffers are not significant */
  if (k->is_leaf) write_block(k->send_img, &plain, 0, count, my_ident(c), 0, salt);
  if (k->is_root) want_sums(k, salt, 0, count);
  k->significant = k->is_root || k->is_leaf;
}

static void build_bcast(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 6;
  take_roles(k);
  k->rcount = elements(l, ints);
  k->rtype = l->dt;
  images_begin(k, NO_BUFFER, (long)span(l, ints));
  if (k->is_root) write_block(k->recv_img, l, 0, ints, my_ident(c), 0, salt);
  if (k->is_root || k->is_leaf) write_block(k->want, l, 0, ints, root_ident(k), 0, salt);
  k->significant = k->is_root || k->is_leaf;
}

static void build_reduce_local(case_t* k, int salt) {
  const int count = 7;
  k->rcount = count;
  k->rtype = MPI_INT;
  k->op = MPI_SUM;
  images_begin(k, count, count);
  write_block(k->send_img, &plain, 0, count, world_rank, 0, salt);
  write_block(k->recv_img, &plain, 0, count, world_rank, 1, salt);
  for (int q = 0; q < count; q++) k->want[q] = k->send_img[q] + k->recv_img[q];
  k->significant = true;
}

static void build_barrier(case_t* k, int salt) {
  (void)salt;
  images_begin(k, NO_BUFFER, NO_BUFFER);
}

static void build_neighbor_allgather(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 4;
  k->scount = ints;
  k->stype = MPI_INT;
  k->rcount = elements(l, ints);
  k->rtype = l->dt;
  images_begin(k, ints, (long)(c->indegree * span(l, ints)));
  write_block(k->send_img, &plain, 0, ints, c->me, 0, salt);
  for (int i = 0; i < c->indegree; i++) write_block(k->want, l, i * span(l, ints), ints, c->sources[i], 0, salt);
  k->significant = true;
}

static void build_neighbor_allgatherv(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  int ints[MAXP], mine = share_ints(c->me);
  k->scount = mine;
  k->stype = MPI_INT;
  k->rtype = l->dt;
  for (int i = 0; i < c->indegree; i++) {
    ints[i] = share_ints(c->sources[i]);
    k->rcounts[i] = elements(l, ints[i]);
  }
  size_t used = place_reversed(c->indegree, k->rcounts, k->rdispls);
  images_begin(k, mine, (long)(used * l->extent));
  write_block(k->send_img, &plain, 0, mine, c->me, 0, salt);
  for (int i = 0; i < c->indegree; i++)
    write_block(k->want, l, (size_t)k->rdispls[i] * l->extent, ints[i], c->sources[i], 0, salt);
  k->significant = true;
}

static void build_neighbor_alltoall(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  const int ints = 4;
  k->scount = ints;
  k->stype = MPI_INT;
  k->rcount = elements(l, ints);
  k->rtype = l->dt;
  images_begin(k, c->outdegree * ints, (long)(c->indegree * span(l, ints)));
  for (int j = 0; j < c->outdegree; j++) write_block(k->send_img, &plain, (size_t)j * ints, ints, c->me, j, salt);
  for (int i = 0; i < c->indegree; i++)
    write_block(k->want, l, i * span(l, ints), ints, c->sources[i], c->in_block[i], salt);
  k->significant = true;
}

static void build_neighbor_alltoallv(case_t* k, int salt) {
  const comm_t* c = k->c;
  const layout_t* l = layout_of(k);
  int sints[MAXP], rints[MAXP];
  k->stype = k->rtype = l->dt;
  for (int j = 0; j < c->outdegree; j++) {
    sints[j] = edge_ints(c->me, j);
    k->scounts[j] = elements(l, sints[j]);
  }
  for (int i = 0; i < c->indegree; i++) {
    rints[i] = edge_ints(c->sources[i], c->in_block[i]);
    k->rcounts[i] = elements(l, rints[i]);
  }
  size_t sent = place_reversed(c->outdegree, k->scounts, k->sdispls);
  size_t received = place_reversed(c->indegree, k->rcounts, k->rdispls);
  images_begin(k, (long)(sent * l->extent), (long)(received * l->extent));
  for (int j = 0; j < c->outdegree; j++)
    write_block(k->send_img, l, (size_t)k->sdispls[j] * l->extent, sints[j], c->me, j, salt);
  for (int i = 0; i < c->indegree; i++)
    write_block(k->want, l, (size_t)k->rdispls[i] * l->extent, rints[i], c->sources[i], c->in_block[i], salt);
  k->significant = true;
}

static void build_neighbor_alltoallw(case_t* k, int salt) {
  const comm_t* c = k->c;
  int sints[MAXP], rints[MAXP];
  const layout_t *sl[MAXP], *rl[MAXP];
  size_t sat[MAXP], rat[MAXP];
  for (int j = 0; j < c->outdegree; j++) {
    sints[j] = edge_ints(c->me, j);
    sl[j] = j % 2 ? &holey : &plain;
    k->scounts[j] = elements(sl[j], sints[j]);
    k->stypes[j] = sl[j]->dt;
  }
  for (int i = 0; i < c->indegree; i++) {
    rints[i] = edge_ints(c->sources[i], c->in_block[i]);
    rl[i] = i % 2 ? &plain : &holey;
    k->rcounts[i] = elements(rl[i], rints[i]);
    k->rtypes[i] = rl[i]->dt;
  }
  size_t sent = place_reversed_ints(c->outdegree, sints, sl, sat);
  size_t received = place_reversed_ints(c->indegree, rints, rl, rat);
  for (int j = 0; j < c->outdegree; j++) k->sdispls_a[j] = (MPI_Aint)(sat[j] * sizeof(int)); /* bytes */
  for (int i = 0; i < c->indegree; i++) k->rdispls_a[i] = (MPI_Aint)(rat[i] * sizeof(int));
  images_begin(k, (long)sent, (long)received);
  for (int j = 0; j < c->outdegree; j++) write_block(k->send_img, sl[j], sat[j], sints[j], c->me, j, salt);
  for (int i = 0; i < c->indegree; i++)
    write_block(k->want, rl[i], rat[i], rints[i], c->sources[i], c->in_block[i], salt);
  k->significant = true;
}

/* ---- the collectives -------------------------------------------------------------------------------- */

#define K(kind) (1u << (kind))
#define MOST (K(INTRA) | K(SINGLE) | K(INTER)) /* every kind of communicator but topologies */
enum { ROOTS = 1, IN_PLACE = 2, HOLEY = 4 };   /* roots first and last; also in place (intra); also holey */
typedef struct {
  const char* entry; /* the counters' name: coll_dfccl_[i]<entry>[_init]_..., NULL: none */
  const char* mpi;
  build_fn* build;
  unsigned kinds; /* the communicator kinds it runs on */
  unsigned variants;
} coll_info_t;

static const coll_info_t colls[NCOLLS] = {
    [ALLGATHERV] = {"allgatherv", "MPI_Allgatherv", build_allgatherv, MOST, IN_PLACE | HOLEY},
    [ALLTOALL] = {"alltoall", "MPI_Alltoall", build_alltoall, MOST, IN_PLACE | HOLEY},
    [ALLTOALLV] = {"alltoallv", "MPI_Alltoallv", build_alltoallv, MOST, IN_PLACE | HOLEY},
    [ALLTOALLW] = {"alltoallw", "MPI_Alltoallw", build_alltoallw, MOST, IN_PLACE}, /* holey blocks always */
    [GATHER] = {"gather", "MPI_Gather", build_gather, MOST, ROOTS | IN_PLACE | HOLEY},
    [GATHERV] = {"gatherv", "MPI_Gatherv", build_gatherv, MOST, ROOTS | IN_PLACE | HOLEY},
    [SCATTER] = {"scatter", "MPI_Scatter", build_scatter, MOST, ROOTS | IN_PLACE | HOLEY},
    [SCATTERV] = {"scatterv", "MPI_Scatterv", build_scatterv, MOST, ROOTS | IN_PLACE | HOLEY},
    [SCAN] = {"scan", "MPI_Scan", build_scan, K(INTRA) | K(SINGLE), IN_PLACE},
    [EXSCAN] = {"exscan", "MPI_Exscan", build_exscan, K(INTRA) | K(SINGLE), IN_PLACE},
    [REDUCE_SCATTER] = {"reduce_scatter", "MPI_Reduce_scatter", build_reduce_scatter, MOST, IN_PLACE},
    [ALLREDUCE] = {"allreduce", "MPI_Allreduce", build_allreduce, K(INTRA) | K(INTER), IN_PLACE},
    [BCAST] = {"bcast", "MPI_Bcast", build_bcast, K(INTER), ROOTS | HOLEY},
    [REDUCE] = {"reduce", "MPI_Reduce", build_reduce, K(INTER), ROOTS},
    [ALLGATHER] = {"allgather", "MPI_Allgather", build_allgather, K(INTER), HOLEY},
    [REDUCE_SCATTER_BLOCK] = {"reduce_scatter_block", "MPI_Reduce_scatter_block", build_reduce_scatter_block, K(INTER),
                              0},
    [NEIGHBOR_ALLGATHER] = {"neighbor_allgather", "MPI_Neighbor_allgather", build_neighbor_allgather, K(TOPO), HOLEY},
    [NEIGHBOR_ALLGATHERV] = {"neighbor_allgatherv", "MPI_Neighbor_allgatherv", build_neighbor_allgatherv, K(TOPO),
                             HOLEY},
    [NEIGHBOR_ALLTOALL] = {"neighbor_alltoall", "MPI_Neighbor_alltoall", build_neighbor_alltoall, K(TOPO), HOLEY},
    [NEIGHBOR_ALLTOALLV] = {"neighbor_alltoallv", "MPI_Neighbor_alltoallv", build_neighbor_alltoallv, K(TOPO), HOLEY},
    [NEIGHBOR_ALLTOALLW] = {"neighbor_alltoallw", "MPI_Neighbor_alltoallw", build_neighbor_alltoallw, K(TOPO), 0},
    [REDUCE_LOCAL] = {"reduce_local", "MPI_Reduce_local", build_reduce_local, K(SINGLE), 0},
    [BARRIER] = {NULL, "MPI_Barrier", build_barrier, MOST, 0},
};

/* One collective in one form.  The argument lists are the same in the three forms but for the
 * request (and the info of MPIX_..._init). */
#define ISSUE(Upper, lower, ...)                                             \
  do {                                                                       \
    if (form == BLOCKING) CHECK_MPI(MPI_##Upper(__VA_ARGS__));               \
    else if (form == NONBLOCKING) CHECK_MPI(MPI_I##lower(__VA_ARGS__, req)); \
    else CHECK_MPI(MPIX_##Upper##_init(__VA_ARGS__, MPI_INFO_NULL, req));    \
  } while (0)

static void issue(case_t* k, int form, MPI_Request* req) {
  void* s = k->send_in_place ? MPI_IN_PLACE : k->send;
  void* r = k->recv_in_place ? MPI_IN_PLACE : k->recv;
  MPI_Comm comm = k->c->comm;
  switch (k->coll) {
    case ALLGATHERV:
      ISSUE(Allgatherv, allgatherv, s, k->scount, k->stype, r, k->rcounts, k->rdispls, k->rtype, comm);
      break;
    case ALLTOALL: ISSUE(Alltoall, alltoall, s, k->scount, k->stype, r, k->rcount, k->rtype, comm); break;
    case ALLTOALLV:
      ISSUE(Alltoallv, alltoallv, s, k->scounts, k->sdispls, k->stype, r, k->rcounts, k->rdispls, k->rtype, comm);
      break;
    case ALLTOALLW:
      ISSUE(Alltoallw, alltoallw, s, k->scounts, k->sdispls, k->stypes, r, k->rcounts, k->rdispls, k->rtypes, comm);
      break;
    case GATHER: ISSUE(Gather, gather, s, k->scount, k->stype, r, k->rcount, k->rtype, k->root, comm); break;
    case GATHERV:
      ISSUE(Gatherv, gatherv, s, k->scount, k->stype, r, k->rcounts, k->rdispls, k->rtype, k->root, comm);
      break;
    case SCATTER: ISSUE(Scatter, scatter, s, k->scount, k->stype, r, k->rcount, k->rtype, k->root, comm); break;
    case SCATTERV:
      ISSUE(Scatterv, scatterv, s, k->scounts, k->sdispls, k->stype, r, k->rcount, k->rtype, k->root, comm);
      break;
    case SCAN: ISSUE(Scan, scan, s, r, k->rcount, k->rtype, k->op, comm); break;
    case EXSCAN: ISSUE(Exscan, exscan, s, r, k->rcount, k->rtype, k->op, comm); break;
    case REDUCE_SCATTER: ISSUE(Reduce_scatter, reduce_scatter, s, r, k->rcounts, k->rtype, k->op, comm); break;
    case ALLREDUCE: ISSUE(Allreduce, allreduce, s, r, k->rcount, k->rtype, k->op, comm); break;
    case BCAST: ISSUE(Bcast, bcast, r, k->rcount, k->rtype, k->root, comm); break;
    case REDUCE: ISSUE(Reduce, reduce, s, r, k->rcount, k->rtype, k->op, k->root, comm); break;
    case ALLGATHER: ISSUE(Allgather, allgather, s, k->scount, k->stype, r, k->rcount, k->rtype, comm); break;
    case REDUCE_SCATTER_BLOCK:
      ISSUE(Reduce_scatter_block, reduce_scatter_block, s, r, k->rcount, k->rtype, k->op, comm);
      break;
    case NEIGHBOR_ALLGATHER:
      ISSUE(Neighbor_allgather, neighbor_allgather, s, k->scount, k->stype, r, k->rcount, k->rtype, comm);
      break;
    case NEIGHBOR_ALLGATHERV:
      ISSUE(Neighbor_allgatherv, neighbor_allgatherv, s, k->scount, k->stype, r, k->rcounts, k->rdispls, k->rtype,
            comm);
      break;
    case NEIGHBOR_ALLTOALL:
      ISSUE(Neighbor_alltoall, neighbor_alltoall, s, k->scount, k->stype, r, k->rcount, k->rtype, comm);
      break;
    case NEIGHBOR_ALLTOALLV:
      ISSUE(Neighbor_alltoallv, neighbor_alltoallv, s, k->scounts, k->sdispls, k->stype, r, k->rcounts, k->rdispls,
            k->rtype, comm);
      break;
    case NEIGHBOR_ALLTOALLW:
      ISSUE(Neighbor_alltoallw, neighbor_alltoallw, s, k->scounts, k->sdispls_a, k->stypes, r, k->rcounts, k->rdispls_a,
            k->rtypes, comm);
      break;
    case REDUCE_LOCAL: CHECK_MPI(MPI_Reduce_local(k->send, k->recv, k->rcount, k->rtype, k->op)); break;
    case BARRIER: ISSUE(Barrier, barrier, comm); break;
    default: MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

/* ---- groups: one (communicator kind, collective, form), its problems and counters --------------------- */

enum { ROUTED, FALLBACK, LOCAL, STAGED, NCOUNTERS };
static const char* const counter_names[NCOUNTERS] = {"routed", "fallback", "local", "staged"};
static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[NCOLLS][NFORMS][NCOUNTERS];
static signed char opened[NCOLLS][NFORMS]; /* 0: not yet, 1: open, -1: a pvar is missing */

static struct {
  comm_kind_t kind;
  coll_t coll;
  int form;
  int fallback, local, staged, nested; /* expected increments */
  int routable;                        /* calls DFCCL runs, or (nonblocking, first use) falls back for */
  unsigned long long before[NCOUNTERS];
  bool counted;
  int problems;
  char first[320];
} group;

__attribute__((format(printf, 1, 2))) static void problem(const char* fmt, ...) {
  if (group.problems++ > 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(group.first, sizeof group.first, fmt, ap);
  va_end(ap);
}

static void counter_name(char* name, size_t size, coll_t coll, int form, int which) {
  snprintf(name, size, "coll_dfccl_%s%s%s_%s", form == NONBLOCKING ? "i" : "", colls[coll].entry,
           form == PERSISTENT ? "_init" : "", counter_names[which]);
}

/* The entry's four counters; a missing one is this group's failure, named. */
static bool counters_open(coll_t coll, int form) {
  if (opened[coll][form] == 0) {
    opened[coll][form] = 1;
    for (int w = 0; w < NCOUNTERS; w++) {
      char name[96];
      counter_name(name, sizeof name, coll, form, w);
      int index = find_pvar(name), count;
      if (index < 0) {
        problem("MPI_T pvar %s does not exist", name);
        opened[coll][form] = -1;
        break;
      }
      CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &handles[coll][form][w], &count));
    }
  } else if (opened[coll][form] < 0) {
    char name[96];
    counter_name(name, sizeof name, coll, form, ROUTED);
    problem("MPI_T pvars of %s... do not exist", name);
  }
  return opened[coll][form] > 0;
}

static void counters_read(unsigned long long* now) {
  for (int w = 0; w < NCOUNTERS; w++) CHECK_MPI(MPI_T_pvar_read(session, handles[group.coll][group.form][w], &now[w]));
}

static void group_begin(comm_kind_t kind, coll_t coll, int form) {
  memset(&group, 0, sizeof group);
  group.kind = kind;
  group.coll = coll;
  group.form = form;
  group.counted = check_counters && colls[coll].entry != NULL && counters_open(coll, form);
  if (group.counted) counters_read(group.before);
}

/* Every call fell back (or, where expected, was a local copy), staged where it passed significant
 * device memory, and none was routed.  coll/inter's calls on the local group through the same entry
 * (nested) count as fallbacks or local copies, with host buffers: never staged. */
static void counters_check(void) {
  unsigned long long now[NCOUNTERS], d[NCOUNTERS];
  counters_read(now);
  for (int w = 0; w < NCOUNTERS; w++) d[w] = now[w] - group.before[w];
  checks_made++;
  if (group.routable > 0) { /* routed; a nonblocking call may fall back (and stage) once per signature */
    long long extra = (long long)d[FALLBACK] - group.fallback; /* routable calls that fell back */
    bool ok = extra >= 0 && d[ROUTED] + (unsigned long long)extra == (unsigned long long)group.routable &&
              d[LOCAL] == (unsigned long long)group.local && d[STAGED] == (unsigned long long)(group.staged + extra) &&
              (group.form == NONBLOCKING || extra == 0);
    if (!ok)
      problem("counters routed +%llu fallback +%llu local +%llu staged +%llu, expected %d routed (a nonblocking call "
              "before its signature's set-up: fallen back and staged instead) / +%d / +%d / +%d",
              d[ROUTED], d[FALLBACK], d[LOCAL], d[STAGED], group.routable, group.fallback, group.local, group.staged);
    return;
  }
  bool nested_ok = d[FALLBACK] >= (unsigned long long)group.fallback && d[LOCAL] >= (unsigned long long)group.local &&
                   d[FALLBACK] - group.fallback + d[LOCAL] - group.local == (unsigned long long)group.nested;
  if (d[ROUTED] != 0 || d[STAGED] != (unsigned long long)group.staged || !nested_ok)
    problem("counters routed +%llu fallback +%llu local +%llu staged +%llu, expected +0 / +%d / +%d / +%d%s", d[ROUTED],
            d[FALLBACK], d[LOCAL], d[STAGED], group.fallback, group.local, group.staged,
            group.nested ? " (and nested calls as fallbacks or local copies)" : "");
}

static void group_end(void) {
  if (group.counted) counters_check();
  if (group.problems > 0) {
    REPORT("rank %d: %s %s %s: %s%s\n", world_rank, kind_names[group.kind], colls[group.coll].mpi,
           form_names[group.form], group.first, group.problems > 1 ? " (and more)" : "");
  }
  watchdog_reset();
}

/* ---- running a call ------------------------------------------------------------------------------- */

static const char* variant(const case_t* k, char* text, size_t size) {
  const char* root = k->root_choice == NO_ROOT ? "" : k->root_choice == ROOT_FIRST ? ", root first" : ", root last";
  snprintf(text, size, "%s%s%s%s", k->c->name, root, k->use_holey ? ", holey datatype" : "",
           k->use_in_place ? ", in place" : "");
  return text;
}

static void put_images(case_t* k) {
  if (k->send_n != NO_BUFFER) put_bytes(k->send, k->send_img, (size_t)k->send_n * sizeof(int));
  if (k->recv_n != NO_BUFFER) put_bytes(k->recv, k->recv_img, (size_t)k->recv_n * sizeof(int));
}

/* The receive buffer as expected, the send buffer unchanged (holes, gaps and guards included). */
static void verify(case_t* k, int start) {
  static int got[MAXI];
  char text[160];
  const char* when = start ? " (second start)" : "";
  if (k->send_n != NO_BUFFER) {
    get_bytes(got, k->send, (size_t)k->send_n * sizeof(int));
    checks_made++;
    for (long i = 0; i < k->send_n; i++)
      if (got[i] != k->send_img[i]) {
        problem("%s%s: send buffer int %ld changed to %d from %d", variant(k, text, sizeof text), when, i, got[i],
                k->send_img[i]);
        break;
      }
  }
  if (k->recv_n != NO_BUFFER) {
    get_bytes(got, k->recv, (size_t)k->recv_n * sizeof(int));
    checks_made++;
    for (long i = 0; i < k->recv_n; i++)
      if (k->want[i] != DONT_CARE && got[i] != k->want[i]) {
        problem("%s%s: receive buffer int %ld is %d, expected %d", variant(k, text, sizeof text), when, i, got[i],
                k->want[i]);
        break;
      }
  }
}

/* One call in `form`: blocking, or started and waited for, or (persistent) initialized once and
 * started twice with new input.  Each form and start has its own values (salt), so that a result
 * left over from an earlier call shows. */
static void run_call(case_t* k, int form) {
  build_fn* build = colls[k->coll].build;
  int starts = form == PERSISTENT ? 2 : 1, salt = 2 * form;
  build(k, salt);
  k->send = k->send_n == NO_BUFFER ? NULL : buf_alloc((size_t)k->send_n * sizeof(int));
  k->recv = k->recv_n == NO_BUFFER ? NULL : buf_alloc((size_t)k->recv_n * sizeof(int));
  put_images(k);
  MPI_Request req = MPI_REQUEST_NULL;
  issue(k, form, &req);
  for (int start = 0; start < starts; start++) {
    if (start > 0) {
      build(k, salt + start);
      put_images(k);
    }
    if (form == PERSISTENT) CHECK_MPI(MPI_Start(&req));
    if (form != BLOCKING) CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    verify(k, start);
  }
  if (form == PERSISTENT) CHECK_MPI(MPI_Request_free(&req));
  buf_free(k->send);
  buf_free(k->recv);
  calls_made++;
  /* A persistent request counts once, at its initialization. */
  if (k->local) group.local++;
  else if (k->routable) group.routable++;
  else group.fallback++;
  if (device_memory && k->significant && !k->local && !k->routable) group.staged++;
  if (form == BLOCKING && k->nested) group.nested++;
}

/* Where a collective does not run on a communicator of its kind. */
static bool skipped(coll_t coll, const comm_t* c) {
  /* MAXLOC on one rank would be one of DFCCL's six on one rank (a local copy): test_coverage's. */
  if (coll == ALLREDUCE && !c->inter && c->n == 1) return true;
  /* A ring of 2 (or 1) has the same rank on both sides: Open MPI 4.1's coll/basic pairs the two
   * messages by direction (MPI's rule), libnbc by posting order, so their all-to-alls differ. */
  if ((coll == NEIGHBOR_ALLTOALL || coll == NEIGHBOR_ALLTOALLV || coll == NEIGHBOR_ALLTOALLW) && c->cart && c->n <= 2)
    return true;
  return false;
}

static void run_group(comm_kind_t kind, coll_t coll, int form, const comm_t* comms, int ncomms) {
  const coll_info_t* info = &colls[coll];
  static case_t k; /* large: its images */
  group_begin(kind, coll, form);
  for (int i = 0; i < ncomms; i++) {
    if (skipped(coll, &comms[i])) continue;
    bool rooted = info->variants & ROOTS, in_place_too = (info->variants & IN_PLACE) && !comms[i].inter;
    for (int root = rooted ? ROOT_FIRST : NO_ROOT; root <= (rooted ? ROOT_LAST : NO_ROOT); root++)
      for (int h = 0; h <= ((info->variants & HOLEY) ? 1 : 0); h++)
        for (int in_place = 0; in_place <= (in_place_too ? 1 : 0); in_place++) {
          memset(&k, 0, sizeof k);
          k.c = &comms[i];
          k.coll = coll;
          k.root_choice = (root_choice_t)root;
          k.use_holey = h;
          k.use_in_place = in_place;
          run_call(&k, form);
        }
  }
  group_end();
}

static int run_kind(comm_kind_t kind, const comm_t* comms, int ncomms, const bool* forms) {
  long long before = calls_made;
  int groups = 0;
  for (int coll = 0; coll < NCOLLS; coll++) {
    if (!(colls[coll].kinds & K(kind))) continue;
    for (int form = 0; form < NFORMS; form++) {
      if (!forms[form] || (coll == REDUCE_LOCAL && form != BLOCKING)) continue; /* MPI_Reduce_local: blocking only */
      run_group(kind, (coll_t)coll, form, comms, ncomms);
      groups++;
    }
  }
  if (world_rank == 0) {
    printf("%s: %d (collective, form) groups on", kind_names[kind], groups);
    for (int i = 0; i < ncomms; i++) printf("%s %s", i ? "," : "", comms[i].name);
    printf(": %lld calls on rank 0\n", calls_made - before);
    fflush(stdout);
  }
  return groups;
}

/* DFCCL contexts first: setting one up may run Open MPI's own collectives, which would show in the
 * counters of the first group. */
static void warm_up(const comm_t* c) {
  int* one = buf_alloc(sizeof(int));
  put_bytes(one, &world_rank, sizeof(int));
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, one, 1, MPI_INT, MPI_SUM, c->comm));
  buf_free(one);
}

/* ---- main ------------------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
  int provided;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided));
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  static const char* const memories[] = {"host", "device", NULL};
  static const char* const form_choices[] = {"blocking", "nonblocking", "persistent", "all", NULL};
  static const char* const kind_choices[] = {"intra", "single", "inter", "topo", "all", NULL};
  int form_choice = NFORMS, kind_choice = NKINDS;
  unsigned watchdog_s = 120;
  options o = mpi_options("test_every_coll",
                          "usage: test_every_coll [-d host|device] [-f blocking|nonblocking|persistent|all] "
                          "[-c intra|single|inter|topo|all] [-w watchdog_s] [-k 0|1]",
                          argc, argv, "d:f:c:w:k:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'd') device_memory = option_choice(&o, memories) == 1;
    else if (opt == 'f') form_choice = option_choice(&o, form_choices);
    else if (opt == 'c') kind_choice = option_choice(&o, kind_choices);
    else if (opt == 'w') watchdog_s = (unsigned)option_int(&o, 1, 86400);
    else if (opt == 'k') check_counters = option_int(&o, 0, 1) == 1;
  }
  if (world_size > MAX_RANKS)
    options_fail(&o, "%d ranks: at most %d (values carry the rank in two digits)", world_size, MAX_RANKS);
  if (device_memory && option_env_target_is_gpu(&o)) use_node_gpu_or_abort(); /* local rank % GPUs */
  bool forms[NFORMS], kinds[NKINDS];
  for (int f = 0; f < NFORMS; f++) forms[f] = form_choice == NFORMS || form_choice == f;
  for (int c = 0; c < NKINDS; c++) kinds[c] = kind_choice == NKINDS || kind_choice == c;
  if (world_size < 2 && kinds[INTER]) {
    if (world_rank == 0) printf("inter: skipped, an intercommunicator needs 2 ranks\n");
    kinds[INTER] = false;
  }
  watchdog_start(watchdog_s);
  holey_create();

  /* Communicators (and the component's modules on them) before the counters are read. */
  comm_t intra[2], single[1], inter[1], topo[2];
  int nintra = 1;
  describe(&intra[0], MPI_COMM_WORLD, "MPI_COMM_WORLD");
  if (world_size >= 3) make_half(&intra[nintra++]);
  describe(&single[0], MPI_COMM_SELF, "MPI_COMM_SELF");
  if (kinds[INTER]) make_inter(&inter[0]);
  make_ring(&topo[0]);
  make_graph(&topo[1]);
  if (check_counters) {
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_pvar_session_create(&session));
  }
  for (int i = 0; i < nintra; i++) warm_up(&intra[i]);
  warm_up(&single[0]);
  warm_up(&topo[0]);
  warm_up(&topo[1]);
  watchdog_reset();

  int groups = 0;
  if (kinds[INTRA]) groups += run_kind(INTRA, intra, nintra, forms);
  if (kinds[SINGLE]) groups += run_kind(SINGLE, single, 1, forms);
  if (kinds[INTER]) groups += run_kind(INTER, inter, 1, forms);
  if (kinds[TOPO]) groups += run_kind(TOPO, topo, 2, forms);

  long long mine[3] = {failed_groups, calls_made, checks_made}, total[3];
  CHECK_MPI(MPI_Allreduce(mine, total, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  if (check_counters) {
    CHECK_MPI(MPI_T_pvar_session_free(&session)); /* before MPI_Finalize: see entry_counters_close */
    CHECK_MPI(MPI_T_finalize());
  }
  for (int i = 1; i < nintra; i++) CHECK_MPI(MPI_Comm_free(&intra[i].comm));
  if (kinds[INTER]) CHECK_MPI(MPI_Comm_free(&inter[0].comm));
  CHECK_MPI(MPI_Comm_free(&topo[0].comm));
  CHECK_MPI(MPI_Comm_free(&topo[1].comm));
  CHECK_MPI(MPI_Type_free(&holey.dt));
  if (world_rank == 0) {
    printf("%s: test_every_coll -d %s -f %s -c %s%s on %d ranks: %lld calls, %lld checks, %lld failed groups of %d "
           "per rank\n",
           total[0] ? "FAIL" : "PASS", device_memory ? "device" : "host", form_choices[form_choice],
           kind_choices[kind_choice], check_counters ? "" : " -k 0", world_size, total[1], total[2], total[0], groups);
    fflush(stdout);
  }
  MPI_Finalize();
  return total[0] ? 1 : 0;
}
