/*
 * A collective's connectors, made when it is registered.  Each participant allocates, in memory
 * its peers can map:
 *   recv region: per channel a df_recv_ctrl, then the FIFOs -- written by the ring predecessor;
 *   send region: per channel a df_send_ctrl -- written by the ring successor;
 * then all participants exchange the handles (with the collective's signature, so that a rank
 * that registered something else is told so) and each maps its successor's recv region and its
 * predecessor's send region.  A neighbour on another host (or any, with DFCCL_TRANSPORT=ucx) is
 * reached over the network instead: the regions on both ends are local mapped memory, and the
 * network proxy (net_ucx.c) carries slots one way and credits the other.  At deregistration the participants meet once more (df_links_close)
 * before anyone frees what the others write into.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What a rank tells the other participants of a collective it registers. */
typedef struct {
  df_mem_handle recv, send;
  uint64_t recv_bytes, send_bytes;
  /* the signature: every participant must register the same collective */
  int32_t id;
  uint32_t kind, dtype, op;
  int32_t root;
  uint32_t nchannels, slot_bytes, target;
  uint32_t ll_bytes; /* DFCCL_LL_BYTES: sizes the low-latency slots that peers write */
  uint64_t count;
  uint64_t layout_hash; /* all-gather-v: its blocks table, hashed (0 for the others) */
  uint32_t failed;      /* this rank cannot register it: everyone gives up together */
  df_daemon_gpu gpu;    /* its daemon's GPU, and whether it time-slices between processes */
  /* how to reach it: peers of another host (or all, with DFCCL_TRANSPORT=ucx) over the network */
  uint64_t host_id;
  uint32_t transport;     /* df_transport */
  uint32_t address_bytes; /* of its network worker's address (0: no network transport) */
  uint8_t address[DF_NET_ADDRESS_MAX];
} registration_card;

static dfcclResult_t allgather(df_ctx* ctx, const df_group* g, const void* send, void* recv, size_t bytes) {
  return df_exchange_allgather(ctx, g->ranks, g->nranks, send, recv, bytes);
}

static dfcclResult_t check_card(const df_ctx* ctx, const df_group* g, int i, const registration_card* mine,
                                const registration_card* c) {
  if (c->failed)
    return df_error(dfcclInvalidArgument, "rank %d failed to register collective %d (its own error says why)",
                    g->ranks[i], mine->id);
  if (c->id != mine->id || c->kind != mine->kind || c->dtype != mine->dtype || c->op != mine->op ||
      c->root != mine->root || c->count != mine->count)
    return df_error(dfcclInvalidArgument,
                    "rank %d registered collective %d (kind %u, %llu elements, type %u, op %u, root %d) while "
                    "rank %d registered collective %d (kind %u, %llu elements, type %u, op %u, root %d): "
                    "participants must register the same collectives in the same order",
                    ctx->rank, mine->id, mine->kind, (unsigned long long)mine->count, mine->dtype, mine->op, mine->root,
                    g->ranks[i], c->id, c->kind, (unsigned long long)c->count, c->dtype, c->op, c->root);
  if (c->layout_hash != mine->layout_hash)
    return df_error(dfcclInvalidArgument,
                    "rank %d and rank %d registered v collective %d with different counts or displacements: every "
                    "participant must pass the same arrays",
                    ctx->rank, g->ranks[i], mine->id);
  if (c->nchannels != mine->nchannels || c->slot_bytes != mine->slot_bytes || c->target != mine->target)
    return df_error(dfcclInvalidArgument,
                    "rank %d and rank %d disagree on channels (%u/%u), slot bytes (%u/%u) or target (%u/%u): "
                    "set DFCCL_* alike on all ranks",
                    ctx->rank, g->ranks[i], mine->nchannels, c->nchannels, mine->slot_bytes, c->slot_bytes,
                    mine->target, c->target);
  if (c->ll_bytes != mine->ll_bytes)
    return df_error(dfcclInvalidArgument,
                    "rank %d has DFCCL_LL_BYTES=%u and rank %d has DFCCL_LL_BYTES=%u: set it alike", ctx->rank,
                    mine->ll_bytes, g->ranks[i], c->ll_bytes);
  if (c->transport != mine->transport)
    return df_error(dfcclInvalidArgument,
                    "rank %d has DFCCL_TRANSPORT=%s and rank %d has DFCCL_TRANSPORT=%s: set it alike", ctx->rank,
                    df_transport_name(mine->transport), g->ranks[i], df_transport_name(c->transport));
  return dfcclSuccess;
}

/* Any participant, not only a ring neighbour: with 4 ranks on 2 GPUs (ranks 0 and 2 on one, 1 and 3
 * on the other) rank 0's neighbours are both on the other GPU, yet what it waits for passes through
 * rank 2, which cannot run while rank 0's daemon holds their GPU -- every step then waited out a
 * time slice (8 ms for a small all-reduce through OSU, against 0.45 ms for 2 ranks on one GPU, whose
 * neighbours share it).  Peers reached over the network are left out: their counters move through
 * our CPU proxy while we hold the GPU, so the brief waits of a flagged collective would not do. */
bool df_gpu_timesliced_with(const df_daemon_gpu* gpus, int n, int me) {
  static const uint8_t none[16];
  const df_daemon_gpu* mine = &gpus[me];
  if (!mine->timesliced || memcmp(mine->uuid, none, sizeof none) == 0) return false;
  for (int i = 0; i < n; i++)
    if (i != me && gpus[i].timesliced && !gpus[i].networked && memcmp(gpus[i].uuid, mine->uuid, sizeof none) == 0)
      return true;
  return false;
}

/* Over the network or through a peer mapping: both ends decide alike from the same two cards. */
static bool over_network(const registration_card* a, const registration_card* b) {
  return a->transport == DF_TRANSPORT_UCX || a->host_id != b->host_id;
}

/* df_gpu_timesliced_with on the participants' cards (ours at `me`).  Without memory for the copy:
 * false, which only costs time (the collective waits like any other). */
static bool timesliced_participant(const registration_card* cards, int n, int me) {
  df_daemon_gpu* gpus = malloc((size_t)n * sizeof *gpus);
  if (!gpus) return false;
  for (int i = 0; i < n; i++) {
    gpus[i] = cards[i].gpu;
    gpus[i].networked = i != me && over_network(&cards[me], &cards[i]);
  }
  bool shared = df_gpu_timesliced_with(gpus, n, me);
  free(gpus);
  return shared;
}

/* Memory for a region: local and mapped for a network proxy, else shared with peers -- our own
 * (its name goes to `handle`) or, given `peer`, a peer's mapped.  On failure r stays empty, so
 * that region_free never frees what r held before (the caller may still hold it elsewhere). */
static dfcclResult_t region_get(df_ctx* ctx, size_t bytes, bool network, df_mem_handle* handle,
                                const df_mem_handle* peer, df_region* r) {
  memset(r, 0, sizeof *r);
  dfcclResult_t result;
  if (network) result = ctx->target->alloc_mapped(ctx, bytes, &r->host, &r->daemon);
  else if (peer) result = ctx->target->map_peer(ctx, peer, bytes, &r->host);
  else result = ctx->target->alloc_shared(ctx, bytes, &r->host, handle);
  if (result != dfcclSuccess) {
    memset(r, 0, sizeof *r);
    return result;
  }
  r->mapped = network;
  if (!network) r->daemon = r->host;
  return dfcclSuccess;
}

static void region_free(df_ctx* ctx, df_region* r, size_t bytes, bool own) {
  const df_target_ops* t = ctx->target;
  if (!r->host) return;
  if (r->mapped) t->free_mapped(ctx, r->host);
  else if (own) t->free_shared(ctx, r->host, bytes);
  else t->unmap_peer(ctx, r->host, bytes);
  memset(r, 0, sizeof *r);
}

/* Bytes of a channel's low-latency slots (0: none).  An all-reduce that may gather small shares has
 * them -- a communicator's connector set, which any all-reduce may use, or a registered all-reduce
 * that df_choose_all_reduce flagged -- in the receiver's memory beside its FIFO: a region of its
 * own, never written by the Simple protocol's slots, so that no data of theirs can pass for a
 * line's flags. */
static size_t ll_fifo_bytes(const df_ctx* ctx, int id, const df_coll_static* st) {
  bool may_use = st->kind == DF_COLL_ALL_REDUCE && (id < 0 || (st->flags & DF_COLL_LL));
  return ctx->cfg.ll_bytes > 0 && may_use ? (size_t)DF_FIFO_STEPS * DF_LL_SLOT_BYTES(ctx->cfg.ll_bytes) : 0;
}

/* Connector tables as this rank's daemon sees them, copied to daemon memory, and the view of them
 * that a static context holds (cl->view).  A network link has no low-latency slots: its proxy copies
 * bytes, not whole words. */
static dfcclResult_t build_device_view(df_ctx* ctx, df_coll_links* cl, uint32_t nchannels, uint32_t slot_bytes,
                                       size_t ll_fifo) {
  size_t table = nchannels * sizeof(df_connector);
  size_t counters = nchannels * sizeof(uint64_t);
  void* mem;
  DF_CHECK(ctx->target->alloc(ctx, 2 * table + 2 * counters, &mem));
  cl->tables = mem; /* zeroed: step counters start at 0 */
  df_connector* conns = calloc(2 * nchannels, sizeof *conns);
  if (!conns) return df_error(dfcclOutOfResources, "out of memory");
  char* fifo_mine = (char*)cl->recv.daemon + nchannels * sizeof(df_recv_ctrl);
  char* fifo_next = (char*)cl->next_recv.daemon + nchannels * sizeof(df_recv_ctrl);
  size_t fifo_bytes = (size_t)DF_FIFO_STEPS * slot_bytes;
  char* ll_mine = fifo_mine + nchannels * fifo_bytes;
  char* ll_next = fifo_next + nchannels * fifo_bytes;
  for (uint32_t c = 0; c < nchannels; c++) {
    conns[c].recv_ctrl = (df_recv_ctrl*)cl->next_recv.daemon + c;
    conns[c].send_ctrl = (df_send_ctrl*)cl->send.daemon + c;
    conns[c].fifo = fifo_next + c * fifo_bytes;
    conns[c].ll = ll_fifo && !cl->to_next ? ll_next + c * ll_fifo : NULL;
    conns[nchannels + c].recv_ctrl = (df_recv_ctrl*)cl->recv.daemon + c;
    conns[nchannels + c].send_ctrl = (df_send_ctrl*)cl->prev_send.daemon + c;
    conns[nchannels + c].fifo = fifo_mine + c * fifo_bytes;
    conns[nchannels + c].ll = ll_fifo && !cl->from_prev ? ll_mine + c * ll_fifo : NULL;
  }
  char* base = mem;
  cl->view = (df_links){.nchannels = nchannels,
                        .slot_bytes = slot_bytes,
                        .slot_sizes = cl->to_next != NULL,
                        .prev_tagged = ctx->cfg.check_runs,
                        .ll_slot_bytes = ll_fifo ? DF_LL_SLOT_BYTES(ctx->cfg.ll_bytes) : 0,
                        .ll_unchecked = !ctx->cfg.ll_check,
                        .to_next = (df_connector*)base,
                        .from_prev = (df_connector*)(base + table),
                        .sent = (uint64_t*)(base + 2 * table),
                        .consumed = (uint64_t*)(base + 2 * table + counters)};
  dfcclResult_t r = ctx->target->copy_in(ctx, base, conns, 2 * table);
  free(conns);
  return r;
}

/* The first connection to and from each peer says how it goes (DFCCL_SHOW_TRANSPORT, DFCCL_DEBUG,
 * coll_dfccl_verbose): "rank 0 -> 1: ucx (tcp)". */
static void announce(df_ctx* ctx, int peer, bool to, const struct df_net_link* net) {
  if (!ctx->cfg.show_transport) return;
  pthread_mutex_lock(&ctx->lock);
  bool first = ctx->announced && !(ctx->announced[peer] & (to ? 1 : 2));
  if (first) ctx->announced[peer] |= to ? 1 : 2;
  pthread_mutex_unlock(&ctx->lock);
  if (!first) return;
  char how[96];
  if (net) snprintf(how, sizeof how, "ucx (%s)%s", df_net_link_describe(net), to ? ", FIFOs in host memory" : "");
  else snprintf(how, sizeof how, "p2p (%s)", ctx->cfg.target == dfcclTargetCuda ? "CUDA IPC" : "shared memory");
  fprintf(stderr, "dfccl: rank %d %s %d: %s\n", ctx->rank, to ? "->" : "<-", peer, how);
}

static dfcclResult_t open_net_link(df_ctx* ctx, bool sending, int peer, const registration_card* card, int id,
                                   uint32_t nchannels, uint32_t slot_bytes, void* fifo_region, void* ctrl_region,
                                   struct df_net_link** out) {
  df_net_link_args a = {.sending = sending,
                        .peer = peer,
                        .peer_address = card->address,
                        .peer_address_bytes = card->address_bytes,
                        .id = id,
                        .nchannels = nchannels,
                        .slot_bytes = slot_bytes,
                        .fifo_region = fifo_region,
                        .ctrl_region = ctrl_region};
  return df_net_link_open(ctx, &a, out);
}

dfcclResult_t df_links_create(df_ctx* ctx, const df_group* g, int id, const df_coll_static* st, uint64_t layout_hash,
                              uint32_t slot_bytes, dfcclResult_t prior, df_coll_links* cl) {
  memset(cl, 0, sizeof *cl);
  if (g->nranks == 1) return prior; /* nothing to connect */
  char prior_message[512];
  snprintf(prior_message, sizeof prior_message, "%s", dfcclGetLastErrorMessage());
  uint32_t nch = st->nchannels;
  size_t ll_fifo = ll_fifo_bytes(ctx, id, st);
  cl->recv_bytes = nch * (sizeof(df_recv_ctrl) + (size_t)DF_FIFO_STEPS * slot_bytes + ll_fifo);
  cl->send_bytes = nch * sizeof(df_send_ctrl);

  registration_card* mine = calloc(1, sizeof *mine);
  registration_card* cards = calloc((size_t)g->nranks, sizeof *cards);
  if (!mine || !cards) {
    free(mine);
    free(cards);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  /* Regions that peers map; with DFCCL_TRANSPORT=ucx every link goes over the network and they are
   * local from the start.  A rank that cannot register (bad arguments, no memory) still takes part
   * in the exchanges, so that no peer waits for it forever and every participant returns an error. */
  bool all_network = ctx->cfg.transport == DF_TRANSPORT_UCX;
  dfcclResult_t local = prior;
  if (local == dfcclSuccess) local = region_get(ctx, cl->recv_bytes, all_network, &mine->recv, NULL, &cl->recv);
  if (local == dfcclSuccess) local = region_get(ctx, cl->send_bytes, all_network, &mine->send, NULL, &cl->send);
  mine->failed = local != dfcclSuccess;
  mine->recv_bytes = cl->recv_bytes;
  mine->send_bytes = cl->send_bytes;
  mine->id = id;
  mine->kind = st->kind;
  mine->dtype = st->dtype;
  mine->op = st->op;
  /* An all-reduce's root word is its gathering share (daemon.h): not a root to show in a mismatch. */
  mine->root = st->kind == DF_COLL_BROADCAST || st->kind == DF_COLL_REDUCE ? st->root : 0;
  mine->count = st->count;
  mine->layout_hash = layout_hash;
  mine->nchannels = nch;
  mine->slot_bytes = slot_bytes;
  mine->ll_bytes = ctx->cfg.ll_bytes;
  mine->target = (uint32_t)ctx->cfg.target;
  mine->gpu.timesliced = ctx->timesliced;
  memcpy(mine->gpu.uuid, ctx->device_uuid, sizeof mine->gpu.uuid);
  mine->host_id = ctx->host_id;
  mine->transport = ctx->cfg.transport;
  mine->address_bytes = (uint32_t)df_net_address(ctx, mine->address, sizeof mine->address);

  dfcclResult_t r = allgather(ctx, g, mine, cards, sizeof *mine);
  if (r == dfcclSuccess && local != dfcclSuccess) r = local;
  for (int i = 0; r == dfcclSuccess && i < g->nranks; i++) r = check_card(ctx, g, i, mine, &cards[i]);
  int next = (g->position + 1) % g->nranks, prev = (g->position + g->nranks - 1) % g->nranks;
  bool next_net = r == dfcclSuccess && over_network(mine, &cards[next]);
  bool prev_net = r == dfcclSuccess && over_network(mine, &cards[prev]);
  /* A neighbour across the network never maps what we made for it: local memory instead. */
  df_region unused_recv = {0}, unused_send = {0};
  if (r == dfcclSuccess && prev_net && !cl->recv.mapped) {
    unused_recv = cl->recv;
    r = region_get(ctx, cl->recv_bytes, true, NULL, NULL, &cl->recv);
  }
  if (r == dfcclSuccess && next_net && !cl->send.mapped) {
    unused_send = cl->send;
    r = region_get(ctx, cl->send_bytes, true, NULL, NULL, &cl->send);
  }
  if (r == dfcclSuccess) {
    cl->timesliced_peer = timesliced_participant(cards, g->nranks, g->position);
    r = region_get(ctx, cards[next].recv_bytes, next_net, NULL, &cards[next].recv, &cl->next_recv);
  }
  if (r == dfcclSuccess) r = region_get(ctx, cards[prev].send_bytes, prev_net, NULL, &cards[prev].send, &cl->prev_send);
  if (r == dfcclSuccess && next_net)
    r = open_net_link(ctx, true, g->ranks[next], &cards[next], id, nch, slot_bytes, cl->next_recv.host, cl->send.host,
                      &cl->to_next);
  if (r == dfcclSuccess && prev_net)
    r = open_net_link(ctx, false, g->ranks[prev], &cards[prev], id, nch, slot_bytes, cl->recv.host, cl->prev_send.host,
                      &cl->from_prev);
  if (r == dfcclSuccess) {
    announce(ctx, g->ranks[next], true, cl->to_next);
    announce(ctx, g->ranks[prev], false, cl->from_prev);
  }
  free(cards);
  /* Everyone has mapped what it needs before the memory's names may go away. */
  int token = r != dfcclSuccess, *tokens = calloc((size_t)g->nranks, sizeof(int));
  if (!tokens) {
    free(mine);
    return df_error(dfcclOutOfResources, "out of memory");
  }
  dfcclResult_t rb = allgather(ctx, g, &token, tokens, sizeof token);
  for (int i = 0; rb == dfcclSuccess && r == dfcclSuccess && i < g->nranks; i++)
    if (tokens[i]) r = df_error(dfcclSystemError, "rank %d could not map its peers' connectors", g->ranks[i]);
  free(tokens);
  if (cl->recv.host && !cl->recv.mapped) ctx->target->shared_setup_done(ctx, &mine->recv);
  if (cl->send.host && !cl->send.mapped) ctx->target->shared_setup_done(ctx, &mine->send);
  if (unused_recv.host) {
    ctx->target->shared_setup_done(ctx, &mine->recv);
    region_free(ctx, &unused_recv, cl->recv_bytes, true);
  }
  if (unused_send.host) {
    ctx->target->shared_setup_done(ctx, &mine->send);
    region_free(ctx, &unused_send, cl->send_bytes, true);
  }
  free(mine);
  if (r == dfcclSuccess) r = rb;
  if (r == dfcclSuccess) r = build_device_view(ctx, cl, nch, slot_bytes, ll_fifo);
  if (prior != dfcclSuccess) return df_error(prior, "%s", prior_message);
  return r;
}

/* What a rank tells the other participants of a deregistration, before the ids themselves. */
typedef struct {
  int32_t n;       /* collectives it releases                                              */
  uint32_t failed; /* dfcclSuccess, or why it cannot release them (e.g. a run in flight) */
} closing_card;

/* The second exchange: the id lists themselves, compared in order. */
static dfcclResult_t compare_id_lists(df_ctx* ctx, const df_group* g, const int* ids, int n) {
  int* all = calloc((size_t)n * (size_t)g->nranks, sizeof *all);
  if (!all) return df_error(dfcclOutOfResources, "out of memory");
  dfcclResult_t r = allgather(ctx, g, ids, all, sizeof(int) * (size_t)n);
  for (int i = 0; r == dfcclSuccess && i < g->nranks; i++)
    for (int j = 0; r == dfcclSuccess && j < n; j++)
      if (all[(size_t)i * (size_t)n + (size_t)j] != ids[j])
        r = df_error(dfcclInvalidArgument,
                     "rank %d deregisters collective %d where rank %d deregisters collective %d (entry %d of %d): "
                     "participants must deregister the same collectives in the same order",
                     ctx->rank, ids[j], g->ranks[i], all[(size_t)i * (size_t)n + (size_t)j], j, n);
  free(all);
  return r;
}

/* Two exchanges, the second only when every list has the same length (as every rank sees alike),
 * so that the allgathers' sizes agree.  The lengths come first for that reason. */
dfcclResult_t df_links_close(df_ctx* ctx, const df_group* g, const int* ids, int n, dfcclResult_t prior) {
  if (g->nranks == 1) return prior; /* nobody to meet */
  char prior_message[512];
  snprintf(prior_message, sizeof prior_message, "%s", dfcclGetLastErrorMessage());
  closing_card mine = {.n = n, .failed = (uint32_t)prior};
  closing_card* cards = calloc((size_t)g->nranks, sizeof *cards);
  if (!cards) return df_error(dfcclOutOfResources, "out of memory");
  dfcclResult_t r = allgather(ctx, g, &mine, cards, sizeof mine);
  if (r != dfcclSuccess) {
    free(cards);
    return r;
  }
  int other_n = -1, failed_rank = -1;
  dfcclResult_t failed = dfcclSuccess;
  for (int i = 0; i < g->nranks; i++) {
    if (cards[i].n != n && other_n < 0) other_n = i;
    if (cards[i].failed != dfcclSuccess && failed == dfcclSuccess) {
      failed = cards[i].failed < dfcclNumResults ? (dfcclResult_t)cards[i].failed : dfcclInternalError;
      failed_rank = g->ranks[i];
    }
  }
  int other_count = other_n >= 0 ? cards[other_n].n : n;
  int other_rank = other_n >= 0 ? g->ranks[other_n] : -1;
  free(cards);
  if (other_n < 0) r = compare_id_lists(ctx, g, ids, n);
  if (prior != dfcclSuccess) return df_error(prior, "%s", prior_message);
  if (other_n >= 0)
    return df_error(dfcclInvalidArgument,
                    "rank %d deregisters %d collectives while rank %d deregisters %d: participants must "
                    "deregister the same collectives in the same order",
                    ctx->rank, n, other_rank, other_count);
  if (failed != dfcclSuccess)
    return df_error(failed,
                    "rank %d could not deregister these collectives (its own error says why); none was "
                    "deregistered",
                    failed_rank);
  return r;
}

void df_links_unmap_peers(df_ctx* ctx, df_coll_links* cl) {
  /* Network links first: their proxy reads and writes the local copies until it lets go. */
  df_net_link_close(ctx, cl->to_next);
  df_net_link_close(ctx, cl->from_prev);
  cl->to_next = cl->from_prev = NULL;
  region_free(ctx, &cl->next_recv, cl->recv_bytes, false);
  region_free(ctx, &cl->prev_send, cl->send_bytes, false);
}

dfcclResult_t df_links_allgather(df_ctx* ctx, const df_group* g, const void* send, void* recv, size_t bytes) {
  return allgather(ctx, g, send, recv, bytes);
}

dfcclResult_t df_links_barrier(df_ctx* ctx, const df_group* g) {
  if (g->nranks == 1) return dfcclSuccess;
  int token = 0, *tokens = calloc((size_t)g->nranks, sizeof(int));
  if (!tokens) return df_error(dfcclOutOfResources, "out of memory");
  dfcclResult_t r = allgather(ctx, g, &token, tokens, sizeof token);
  free(tokens);
  return r;
}

void df_links_free(df_ctx* ctx, df_coll_links* cl) {
  df_links_unmap_peers(ctx, cl);
  region_free(ctx, &cl->recv, cl->recv_bytes, true);
  region_free(ctx, &cl->send, cl->send_bytes, true);
  if (cl->tables) ctx->target->free(ctx, cl->tables);
  memset(cl, 0, sizeof *cl);
}
