/*
 * ucx_bandwidth: what UCX itself moves between two processes in the pattern of DFCCL's network
 * transport (core/net_ucx.c) -- the ceiling under `DFCCL_TRANSPORT=ucx`, measured with the same UCX
 * and the same UCX_* environment, without a daemon or a proxy loop around it.
 *
 * Both ranks send to each other at once, as every rank of a ring does: each iteration moves SIZE
 * bytes each way, cut into messages of at most -m bytes (default 512 KiB, DFCCL's GPU slot), dealt
 * round-robin to -c channels (default 1) over -k endpoints (default 1; each is a connection of its
 * own), each channel with at most -d messages in flight each way (default 8, DF_FIFO_STEPS) under
 * tags of its own, as the proxy's channels are.  Receives are posted ahead, up to the same depth.
 * -p says how a message carries a run tag word (8 bytes here; the proxy's is 4) beside its bytes:
 * `bytes` (none: the bytes alone), `iov` (one message, a two-element iov: the word, then the bytes)
 * or `split` (two messages: the word, then the bytes).  Each round posts what the depth allows,
 * calls ucp_worker_progress until it finds nothing to do (-P N: at most N times), then, with -s,
 * spins that many microseconds -- the time DFCCL's proxy spends polling its other links.  MPI only
 * exchanges the worker addresses.
 *
 *   mpirun -np 2 -x UCX_TLS=tcp,self ucx_bandwidth -b 64K -e 256M -f 4 [-m 512K] [-d 8] [-c 1] [-k 1]
 *                                                  [-p split] [-P 0] [-s 0]
 *
 * Prints, per size, microseconds per iteration and GB/s each way (SIZE / time).
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "mpi_options.h"

#define MAX_CHANNELS 64
#define MAX_DEPTH 64
#define MAX_EPS 16

static void fail_ucx(ucs_status_t s, const char* what) {
  fprintf(stderr, "ucx_bandwidth: %s failed: %s\n", what, ucs_status_string(s));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One direction of one channel: messages posted and completed, in order. */
typedef struct {
  uint64_t posted, done, total;
  void* req[MAX_DEPTH][2]; /* the message (split: the word, then the bytes) */
  uint64_t tag_word[MAX_DEPTH];
  ucp_dt_iov_t iov[MAX_DEPTH][2];
} stream;

typedef struct {
  ucp_worker_h worker;
  ucp_ep_h ep[MAX_EPS]; /* channel c sends on ep[c % neps] */
  uint32_t neps;
  size_t slot, depth;
  uint32_t channels;
  int pattern;
  int progress_calls; /* -P: at most this many ucp_worker_progress calls a round (0: until idle) */
  double spin_us;     /* -s: busy time per round beside UCX (the proxy polling other links) */
} setup;

enum { BYTES, IOV, SPLIT };
static const char* const patterns[] = {"bytes", "iov", "split", NULL};

#define TAG_WORD ((ucp_tag_t)1 << 63) /* split: the message of the tag word */
static ucp_tag_t tag_of(uint32_t channel, uint64_t seq) { return ((ucp_tag_t)channel << 40) | (seq & 0xffffffffffull); }

/* Message `seq` of channel c: its place in the iteration's buffer and its length. */
static void message(const setup* s, size_t size, uint32_t c, uint64_t seq, size_t* offset, size_t* bytes) {
  size_t index = (size_t)seq * s->channels + c; /* round-robin over the channels */
  *offset = index * s->slot;
  *bytes = size - *offset < s->slot ? size - *offset : s->slot;
}

static uint64_t messages_of(const setup* s, size_t size, uint32_t c) {
  size_t all = (size + s->slot - 1) / s->slot;
  return all / s->channels + (c < all % s->channels ? 1 : 0);
}

/* A send or a receive of `count` bytes (iov: elements) under `tag`; NULL when it completed at once. */
static void* transfer(const setup* s, uint32_t c, bool sending, void* data, size_t count, bool iov, ucp_tag_t tag) {
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE, .memory_type = UCS_MEMORY_TYPE_HOST};
  if (iov) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_iov();
  }
  ucs_status_ptr_t r = sending ? ucp_tag_send_nbx(s->ep[c % s->neps], data, count, tag, &p)
                               : ucp_tag_recv_nbx(s->worker, data, count, tag, ~(ucp_tag_t)0, &p);
  if (UCS_PTR_IS_ERR(r)) fail_ucx(UCS_PTR_STATUS(r), sending ? "ucp_tag_send_nbx" : "ucp_tag_recv_nbx");
  return UCS_PTR_IS_PTR(r) ? r : NULL;
}

/* Posts what the depth allows on one stream; returns whether anything was posted. */
static bool post(const setup* s, stream* st, bool sending, char* buf, size_t size, uint32_t c) {
  bool any = false;
  while (st->posted < st->total && st->posted - st->done < s->depth) {
    size_t offset, bytes;
    message(s, size, c, st->posted, &offset, &bytes);
    size_t k = st->posted % s->depth;
    st->tag_word[k] = st->posted;
    if (s->pattern == SPLIT) {
      st->req[k][0] =
          transfer(s, c, sending, &st->tag_word[k], sizeof st->tag_word[k], false, tag_of(c, st->posted) | TAG_WORD);
      st->req[k][1] = transfer(s, c, sending, buf + offset, bytes, false, tag_of(c, st->posted));
    } else if (s->pattern == IOV) {
      st->iov[k][0] = (ucp_dt_iov_t){&st->tag_word[k], sizeof st->tag_word[k]};
      st->iov[k][1] = (ucp_dt_iov_t){buf + offset, bytes};
      st->req[k][0] = transfer(s, c, sending, st->iov[k], 2, true, tag_of(c, st->posted));
    } else {
      st->req[k][0] = transfer(s, c, sending, buf + offset, bytes, false, tag_of(c, st->posted));
    }
    st->posted++;
    any = true;
  }
  return any;
}

/* Retires the stream's completed messages, in order. */
static void retire(const setup* s, stream* st) {
  while (st->done < st->posted) {
    for (int part = 0; part < 2; part++) {
      void** req = &st->req[st->done % s->depth][part];
      if (!*req) continue;
      ucs_status_t status = ucp_request_check_status(*req);
      if (status == UCS_INPROGRESS) return;
      if (status != UCS_OK) fail_ucx(status, "a transfer");
      ucp_request_free(*req);
      *req = NULL;
    }
    st->done++;
  }
}

/* One iteration: SIZE bytes each way, over every channel, both directions at once. */
static void exchange(const setup* s, char* out, char* in, size_t size) {
  static stream sends[MAX_CHANNELS], recvs[MAX_CHANNELS];
  for (uint32_t c = 0; c < s->channels; c++) {
    sends[c] = (stream){.total = messages_of(s, size, c)};
    recvs[c] = (stream){.total = sends[c].total};
  }
  for (bool pending = true; pending;) {
    pending = false;
    for (uint32_t c = 0; c < s->channels; c++) {
      post(s, &recvs[c], false, in, size, c);
      post(s, &sends[c], true, out, size, c);
    }
    for (int i = 0; (s->progress_calls == 0 || i < s->progress_calls) && ucp_worker_progress(s->worker) != 0; i++) {
    }
    if (s->spin_us > 0)
      for (double until = MPI_Wtime() + s->spin_us * 1e-6; MPI_Wtime() < until;) {
      }
    for (uint32_t c = 0; c < s->channels; c++) {
      retire(s, &recvs[c]);
      retire(s, &sends[c]);
      pending |= recvs[c].done < recvs[c].total || sends[c].done < sends[c].total;
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t min = 64 << 10, max = 64 << 20, factor = 4, slot = 512 << 10;
  int iters = 20, warmup = 5, depth = 8, channels = 1, neps = 1, pattern = BYTES;
  int progress_calls = 0;
  double spin_us = 0;
  options o =
      mpi_options("ucx_bandwidth",
                  "usage: ucx_bandwidth [-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-m message_bytes] "
                  "[-d depth] [-c channels] [-k endpoints] [-p bytes|iov|split] [-P progress_calls] [-s spin_us]",
                  argc, argv, "b:e:f:n:w:m:d:c:k:p:P:s:");
  for (int opt; (opt = options_next(&o)) != -1;) {
    if (opt == 'b') min = option_bytes(&o);
    else if (opt == 'e') max = option_bytes(&o);
    else if (opt == 'f') factor = (size_t)option_int(&o, 2, 1024);
    else if (opt == 'n') iters = option_int(&o, 1, 1000000);
    else if (opt == 'w') warmup = option_int(&o, 0, 1000000);
    else if (opt == 'm') slot = option_bytes(&o);
    else if (opt == 'd') depth = option_int(&o, 1, MAX_DEPTH);
    else if (opt == 'c') channels = option_int(&o, 1, MAX_CHANNELS);
    else if (opt == 'k') neps = option_int(&o, 1, MAX_EPS);
    else if (opt == 'p') pattern = option_choice(&o, patterns);
    else if (opt == 'P') progress_calls = option_int(&o, 0, 1000000);
    else if (opt == 's') spin_us = option_int(&o, 0, 1000000);
  }
  options_none(o);
  if (nranks != 2 || min == 0 || min > max || slot == 0) {
    if (rank == 0)
      fprintf(stderr, "ucx_bandwidth: needs exactly 2 ranks (got %d), 0 < min <= max and -m > 0\n", nranks);
    MPI_Finalize();
    return 2;
  }

  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
  ucp_context_h context;
  ucs_status_t s = ucp_init(&params, NULL, &context);
  if (s != UCS_OK) fail_ucx(s, "ucp_init");
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
  ucp_worker_h worker;
  if ((s = ucp_worker_create(context, &wp, &worker)) != UCS_OK) fail_ucx(s, "ucp_worker_create");
  ucp_address_t* address;
  size_t address_bytes;
  if ((s = ucp_worker_get_address(worker, &address, &address_bytes)) != UCS_OK) fail_ucx(s, "ucp_worker_get_address");
  /* The peer's address: lengths first, then the bytes. */
  uint64_t mine = address_bytes, theirs = 0;
  MPI_Sendrecv(&mine, 1, MPI_UINT64_T, 1 - rank, 0, &theirs, 1, MPI_UINT64_T, 1 - rank, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  char* peer_address = malloc(theirs);
  if (!peer_address) fail_ucx(UCS_ERR_NO_MEMORY, "malloc");
  MPI_Sendrecv(address, (int)mine, MPI_BYTE, 1 - rank, 1, peer_address, (int)theirs, MPI_BYTE, 1 - rank, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                               .address = (const ucp_address_t*)peer_address};
  setup st = {.worker = worker,
              .neps = (uint32_t)neps,
              .slot = slot,
              .depth = (size_t)depth,
              .channels = (uint32_t)channels,
              .pattern = pattern,
              .progress_calls = progress_calls,
              .spin_us = spin_us};
  for (int e = 0; e < neps; e++) /* each its own connection: several TCP streams, as NCCL's sockets */
    if ((s = ucp_ep_create(worker, &ep_params, &st.ep[e])) != UCS_OK) fail_ucx(s, "ucp_ep_create");

  char* out = malloc(max);
  char* in = malloc(max);
  if (!out || !in) fail_ucx(UCS_ERR_NO_MEMORY, "malloc of the buffers");
  memset(out, rank + 1, max);
  memset(in, 0, max);
  if (rank == 0) {
    printf("# ucx_bandwidth: 2 ranks, both directions at once; messages of %zu B, %d in flight per channel and "
           "direction, %d channel(s) on %d endpoint(s), tag word: %s; progress calls a round: %d (0: until idle), "
           "then %.0f us of spinning; UCX %s\n",
           slot, depth, channels, neps, patterns[pattern], progress_calls, spin_us, ucp_get_version_string());
    printf("# %12s %12s %12s\n", "bytes", "us", "GB/s each way");
  }
  for (size_t size = min; size <= max; size *= factor) {
    for (int i = 0; i < warmup; i++) exchange(&st, out, in, size);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iters; i++) exchange(&st, out, in, size);
    double local = (MPI_Wtime() - start) / iters, worst = 0;
    MPI_Reduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (in[size - 1] != (char)(2 - rank)) { /* the peer's fill, as a check that the bytes came */
      fprintf(stderr, "ucx_bandwidth: rank %d: byte %zu is %d, not the peer's %d\n", rank, size - 1, in[size - 1],
              2 - rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) printf("  %12zu %12.1f %12.3f\n", size, worst * 1e6, (double)size / worst / 1e9);
    if (size > max / factor) break;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int e = 0; e < neps; e++) ucp_ep_destroy(st.ep[e]);
  ucp_worker_release_address(worker, address);
  ucp_worker_destroy(worker);
  ucp_cleanup(context);
  free(peer_address);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
