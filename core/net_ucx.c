/*
 * The network transport: connectors between hosts, carried by UCX through a CPU proxy thread.
 *
 * The daemon does not know the network exists.  Over a network link, both ends of a connector are
 * local memory (host memory mapped into the GPU): the sending daemon fills FIFO slots and publishes
 * tails (and slot sizes) in a local copy of its successor's recv region, exactly as it would write
 * the successor's own memory over CUDA IPC; the receiving daemon reads its own recv region and
 * publishes heads into a local copy of its predecessor's send region.  The proxy in between:
 *
 *   sender:   daemon tail > posted  -> tagged send of slot `posted` (only the bytes it holds);
 *             send completed and the receiver's credit back -> head for the daemon;
 *   receiver: receives are posted for the DF_FIFO_STEPS slots the daemon has freed; a landed slot
 *             (in order) -> tail for the daemon, published with release after the data; the
 *             daemon's head -> a credit message (the count consumed) back to the sender.
 *
 * Each slot carries its run tag (kernel/daemon.h): in one message with the bytes (an iov: the tag
 * word, then the bytes) on links of small slots, as a message of its own beside the bytes on links
 * of large ones (SPLIT_SLOT_BYTES says why).  The receive lands the word in the proxy's own memory
 * (UCX copies it a byte at a time), and the proxy stores it whole into the receiver's tags before
 * the tail, as a CUDA IPC peer's daemon would have: the daemon loads it beside the tail (df_look).
 *
 * A failed run's revoked counters (kernel/daemon.h) are carried across as the daemons would have
 * stored them: a revoked tail goes to the receiver as a revocation message (the receiver's proxy
 * stores it as the daemon's tail), a revoked head goes back as a revoked credit (the sender's proxy
 * stores it as the daemon's head).  After that the proxy moves nothing more on that channel.
 *
 * Tags name the collective (its id), the channel, data or credit, and the step, so that every
 * message matches exactly one receive.  Every connector's state lives in its link, which is what
 * preemption needs: a preempted collective's slots already handed to UCX complete in the
 * background, and at most DF_FIFO_STEPS sends, DF_FIFO_STEPS receives and one credit each way are
 * ever outstanding per channel -- a collective that a peer never joins holds its own FIFO and
 * nothing that others need.  Tag matching was chosen over RMA: it needs no memory registration or
 * remote keys, works on every UCX transport (TCP included) with one code path, and the receiver
 * learns of each slot's arrival from the completion itself (docs/design.md).
 *
 * Lanes (DFCCL_NET_LANES): the transport may run several UCX workers, each with its endpoints and
 * its own proxy thread.  Channel c of every link goes over lane c % lanes on both ends (every rank
 * runs as many lanes: the registration card carries one worker address per lane), so that one
 * collective's channels move through as many connections and threads -- as NCCL's socket transport
 * spreads a peer's traffic over several sockets and threads.  A link is one part per lane it uses,
 * each part in its lane's list, holding that lane's channels.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ucp/api/ucp.h>

#include "clock.h"
#include "internal.h"

/* Message types.  A split link's slot comes as its run tag word (TAG_RUN_TAG) and then its bytes
 * (TAG_DATA), or, up to INLINE_BYTES, as one message of both (TAG_RUN_TAG_INLINE): the receive of
 * the word takes either (RUN_TAG_ANY, TAG_INLINE_BIT masked out) and says which came. */
enum {
  TAG_DATA = 0,
  TAG_CREDIT = 1,
  TAG_REVOKE = 2,
  TAG_RUN_TAG = 3,
  TAG_INLINE_BIT = 4,
  TAG_RUN_TAG_INLINE = TAG_RUN_TAG | TAG_INLINE_BIT
};
#define TAG_STEP_BITS 21 /* steps modulo 2^21: at most DF_FIFO_STEPS are ever outstanding */
#define TAG_TYPE_BITS 3  /* between the steps and the channel (bits 24-31) */
#define TAG_EXACT (~(ucp_tag_t)0)
#define RUN_TAG_ANY (TAG_EXACT & ~((ucp_tag_t)TAG_INLINE_BIT << TAG_STEP_BITS))
#define TAG_ANY_STEP (~(ucp_tag_t)0 << TAG_STEP_BITS)
#define CLOSE_TIMEOUT_MS 10000
/* Links whose slots hold at least this many bytes send each slot as two messages, the run tag word
 * and then the bytes alone; smaller ones as one message of both (an iov), one message less per
 * slot.  UCX moves an iov through its fragmenting small-message path at any size: over TCP 0.6 GB/s
 * each way where the same bytes alone move at 2 GB/s (512 KiB messages, benchmarks/ucx_bandwidth),
 * while up to 32 KiB the one message is the quicker (9 against 13 us a round at 64 B).  Both ends of
 * a link have the same slot_bytes, so they agree on the form. */
#define SPLIT_SLOT_BYTES (64u << 10)
/* A split link's slot of at most this many bytes goes as one message all the same, its word inline:
 * a small run's hop is the latency of one message, not two (UCX alone over TCP between two
 * processes, one message each way: 9.2 us a round at 64 B as one iov message, 16.4 as two; a small
 * all-reduce of 2 H100s over UCX took 36.8 us instead of 47.3).  Not more: at 32 KiB the all-reduce
 * took 125 us inline against 51 split (docs/performance.md); between 4 and 32 KiB not measured. */
#define INLINE_BYTES (4u << 10)
/* ucp_worker_progress calls per pass of the proxy, at most: it stops earlier once a call finds
 * nothing to do, and the bound lets tails and credits move between bursts.  Over TCP one call reads
 * each socket about once (~140 KiB, UCX 1.13 on the CI machine), so a proxy that progressed once per
 * pass received at most that much per pass, whatever the time a pass spends polling its links
 * (hundreds of channels once a benchmark has registered every size): benchmarks/ucx_bandwidth
 * -P 1 -s 200 (one call, then 200 us of other work a round) moves 0.6 GB/s each way, -P 16 1.2-1.3,
 * calls until idle 1.3-1.4 (docs/design.md). */
#define PROGRESS_CALLS 16

static unsigned tag_type(ucp_tag_t tag) { return (unsigned)(tag >> TAG_STEP_BITS) & ((1u << TAG_TYPE_BITS) - 1); }

static ucp_tag_t make_tag(int id, uint32_t channel, unsigned type, uint64_t step) {
  return ((ucp_tag_t)(uint32_t)id << 32) | ((ucp_tag_t)(channel & 0xff) << 24) | ((ucp_tag_t)type << TAG_STEP_BITS) |
         (step & ((1u << TAG_STEP_BITS) - 1));
}

/* One channel of a link: a connector's network state. */
typedef struct {
  /* sending link */
  uint64_t posted;                         /* slots handed to UCX                                 */
  uint64_t completed;                      /* of those, sends completed (their slot may be reused) */
  uint64_t credits;                        /* slots the receiver has consumed, as it last told us */
  uint64_t head;                           /* published to the daemon: min(credits, completed)    */
  void* send_req[DF_FIFO_STEPS][2];        /* by slot: the message, or the word and the bytes     */
  ucp_dt_iov_t send_iov[DF_FIFO_STEPS][2]; /* the slot's run tag, then its bytes (one message)   */
  void* credit_recv;                       /* the posted receive of the next credit               */
  uint64_t credit_in;
  uint64_t revoked_head; /* a revoked credit came back (DF_REVOKED): the daemon's head */
  void* revoke_send;     /* the daemon revoked its tail: told to the receiver   */
  uint64_t revoke_out;
  bool revoke_sent;
  /* receiving link */
  uint64_t recv_posted;             /* receives posted for steps < recv_posted             */
  uint64_t arrived;                 /* steps landed, published as the daemon's tail       */
  uint64_t credited;                /* consumed count last sent back                       */
  void* recv_req[DF_FIFO_STEPS][2]; /* by slot, as send_req; NULL: landed (once posted) */
  ucp_dt_iov_t recv_iov[DF_FIFO_STEPS][2];
  ucp_tag_recv_info_t word_info[DF_FIFO_STEPS]; /* split links: how the slot's word came (inline or not) */
  uint32_t word_in[DF_FIFO_STEPS];              /* the slot's tag word as UCX lands it               */
  void* credit_send;
  uint64_t credit_out;
  void* revoke_recv; /* the posted receive of the sender's revocation            */
  uint64_t revoke_in;
  bool revoked_tail; /* it came, and is the daemon's tail now                   */
} net_channel;

typedef struct net_lane net_lane;

/* A link's part on one lane: its channels first, first + stride, ... (stride: the lanes). */
struct df_net_link {
  struct df_net_link* next;    /* in the lane's list */
  struct df_net_link* sibling; /* the link's part on the next lane it uses, or NULL */
  net_lane* lane;
  df_net_link_args a; /* peer_address is not kept */
  uint32_t first, stride;
  ucp_ep_h ep; /* from this lane's worker to the peer's worker of the same lane */
  bool closing, closed;
  bool failed; /* reported once; its runs end with an error */
  uint64_t close_deadline_ms;
  char describe[64];
  net_channel ch[];
};

/* A UCX context and worker, its endpoints and the proxy thread that moves its links' channels.
 * Each lane has a context of its own: workers of one context used by several threads share its
 * memory registration cache, which UCX guards only when asked (mt_workers_shared) -- four lanes
 * on one context without it corrupted the heap at ucp_cleanup (docs/performance.md). */
struct net_lane {
  df_ctx* ctx;
  uint32_t index;
  ucp_context_h context;
  ucp_worker_h worker;
  ucp_address_t* address;
  size_t address_bytes;
  ucp_ep_h* eps; /* [nranks], made on first use */
  char (*ep_describe)[64];
  pthread_mutex_t lock;  /* the worker, the endpoints and the links; the proxy holds it while it works */
  pthread_cond_t wake;   /* the proxy sleeps on it while nothing is outstanding */
  pthread_cond_t closed; /* a closing link has been drained */
  pthread_t proxy;
  bool proxy_started;
  bool stop;
  atomic_bool sleeping;
  atomic_int waiters; /* threads waiting for the lock: the proxy steps aside for them */
  struct df_net_link* links;
};

struct df_net {
  uint32_t nlanes;
  net_lane lane[DF_NET_LANES_MAX];
};

static net_channel* chan(struct df_net_link* l, uint32_t c) { return &l->ch[c / l->stride]; }
static const net_channel* chan_c(const struct df_net_link* l, uint32_t c) { return &l->ch[c / l->stride]; }

static dfcclResult_t ucx_error(ucs_status_t s, const char* what) {
  return df_error(dfcclSystemError, "UCX: %s failed: %s", what, ucs_status_string(s));
}

/* ---- endpoints -------------------------------------------------------------------------------- */

/* The transports an endpoint uses, from UCX's own description of its transport lanes ("lane[0]: ...";
 * not DFCCL's lanes): "tcp", "rc_mlx5,ud_mlx5". */
static void describe_ep(ucp_ep_h ep, char* out, size_t max) {
  snprintf(out, max, "ucx");
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (!f) return;
  ucp_ep_print_info(ep, f);
  fclose(f);
  size_t used = 0;
  out[0] = 0;
  char* rest = NULL;
  for (char* line = strtok_r(text, "\n", &rest); line; line = strtok_r(NULL, "\n", &rest)) {
    char* lane = strstr(line, "lane[");
    char* colon = lane ? strchr(lane, ':') : NULL;
    if (!colon) continue;
    char* tl = colon + 1;
    while (*tl == ' ' || (*tl >= '0' && *tl <= '9')) tl++;
    if (*tl == ':') tl++;
    size_t n = strcspn(tl, "/ ");
    if (n == 0 || n > 24) continue;
    char name[32];
    memcpy(name, tl, n);
    name[n] = 0;
    if (strstr(out, name)) continue;
    int w = snprintf(out + used, max - used, "%s%s", used ? "," : "", name);
    if (w < 0 || (size_t)w >= max - used) break;
    used += (size_t)w;
  }
  if (!out[0]) snprintf(out, max, "ucx");
  free(text);
}

static void peer_failed(void* arg, ucp_ep_h ep, ucs_status_t status) {
  df_ctx* ctx = arg;
  (void)ep;
  /* Its requests fail too, and their links report it; this says why. */
  if (!atomic_load(&ctx->destroying))
    fprintf(stderr, "dfccl: rank %d: the network connection to a peer failed: %s\n", ctx->rank,
            ucs_status_string(status));
}

static dfcclResult_t endpoint_to(net_lane* lane, int peer, const void* address, ucp_ep_h* ep) {
  if (lane->eps[peer]) {
    *ep = lane->eps[peer];
    return dfcclSuccess;
  }
  /* Peer error handling: a peer that dies fails our requests instead of hanging them, and the
   * endpoint may be closed without the peer's confirmation when we are done. */
  ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                     UCP_EP_PARAM_FIELD_ERR_HANDLER,
                       .address = (const ucp_address_t*)address,
                       .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                       .err_handler = {.cb = peer_failed, .arg = lane->ctx}};
  ucs_status_t s = ucp_ep_create(lane->worker, &p, &lane->eps[peer]);
  if (s != UCS_OK) return ucx_error(s, "ucp_ep_create");
  describe_ep(lane->eps[peer], lane->ep_describe[peer], sizeof lane->ep_describe[peer]);
  *ep = lane->eps[peer];
  return dfcclSuccess;
}

/* ---- one link's work, done by the proxy ---------------------------------------------------------- */

/* The request's outcome: 1 done, 0 still in progress, -1 failed (reported).  NULL is done. */
static int finished(void** req, const char* what, const struct df_net_link* l) {
  if (!*req) return 1;
  ucs_status_t s = ucp_request_check_status(*req);
  if (s == UCS_INPROGRESS) return 0;
  ucp_request_free(*req);
  *req = NULL;
  if (s == UCS_OK || s == UCS_ERR_CANCELED) return 1;
  fprintf(stderr, "dfccl: collective %d, rank %d: a network %s failed: %s\n", l->a.id, l->a.peer, what,
          ucs_status_string(s));
  return -1;
}

static void* posted_or_null(ucs_status_ptr_t p) { return UCS_PTR_IS_PTR(p) ? p : NULL; }

/* A slot's one or two requests (send_req, recv_req): 1 both done, 0 not yet, -1 failed. */
static int slot_finished(void* req[2], const char* what, const struct df_net_link* l) {
  int first = finished(&req[0], what, l);
  int second = first < 0 ? -1 : finished(&req[1], what, l);
  return first < 0 || second < 0 ? -1 : first && second;
}

static bool split_slots(const struct df_net_link* l) { return l->a.slot_bytes >= SPLIT_SLOT_BYTES; }

static ucp_request_param_t host_memory_param(void) {
  return (ucp_request_param_t){.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE, .memory_type = UCS_MEMORY_TYPE_HOST};
}

/* A data message: the run tag word, then the slot (iov: UCX reads or fills both in order). */
static ucp_request_param_t iov_param(void) {
  ucp_request_param_t p = host_memory_param();
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_iov();
  return p;
}

static char* slot_of(const struct df_net_link* l, uint32_t c, uint64_t step) {
  char* fifos = (char*)l->a.fifo_region + l->a.nchannels * sizeof(df_recv_ctrl);
  return fifos + ((size_t)c * DF_FIFO_STEPS + step % DF_FIFO_STEPS) * l->a.slot_bytes;
}

static df_recv_ctrl* tails_of(const struct df_net_link* l, uint32_t c) { return (df_recv_ctrl*)l->a.fifo_region + c; }
static df_send_ctrl* heads_of(const struct df_net_link* l, uint32_t c) { return (df_send_ctrl*)l->a.ctrl_region + c; }

/* One send or receive of `count` bytes at `buf` (iov: elements) under `tag` -- a receive under
 * `mask`, and with `info`, what came when it completes at once; *req its request, NULL when it
 * completed at once.  Returns 0, or -1 (reported). */
static int transfer(const struct df_net_link* l, bool sending, void* buf, size_t count, bool iov, ucp_tag_t tag,
                    ucp_tag_t mask, ucp_tag_recv_info_t* info, void** req) {
  ucp_request_param_t p = iov ? iov_param() : host_memory_param();
  if (info) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
    p.recv_info.tag_info = info;
  }
  ucs_status_ptr_t r = sending ? ucp_tag_send_nbx(l->ep, buf, count, tag, &p)
                               : ucp_tag_recv_nbx(l->lane->worker, buf, count, tag, mask, &p);
  if (UCS_PTR_IS_ERR(r)) {
    fprintf(stderr, "dfccl: collective %d: a network %s rank %d failed: %s\n", l->a.id,
            sending ? "send to" : "receive from", l->a.peer, ucs_status_string(UCS_PTR_STATUS(r)));
    return -1;
  }
  *req = posted_or_null(r);
  return 0;
}

/* Sends (or posts the receive of) step `step`'s slot of channel c with its run tag, in the link's
 * form (SPLIT_SLOT_BYTES, INLINE_BYTES): `bytes` of it, or for a receive, room for a whole slot.
 * A split link's receive takes the word -- with the bytes, when they come inline -- and the bytes
 * alone besides, unless the word has come inline already; slot_landed cancels the second receive
 * when the word comes inline later (no message of the sender ever matches it then). */
static int transfer_slot(struct df_net_link* l, uint32_t c, uint64_t step, bool sending, uint32_t bytes) {
  net_channel* ch = chan(l, c);
  uint32_t slot = (uint32_t)(step % DF_FIFO_STEPS);
  void** req = sending ? ch->send_req[slot] : ch->recv_req[slot];
  void* word = sending ? (void*)&tails_of(l, c)->tags[slot] : (void*)&ch->word_in[slot];
  size_t word_bytes = sizeof ch->word_in[slot];
  ucp_dt_iov_t* iov = sending ? ch->send_iov[slot] : ch->recv_iov[slot];
  req[0] = req[1] = NULL;
  iov[0] = (ucp_dt_iov_t){word, word_bytes};
  if (!split_slots(l)) {
    iov[1] = (ucp_dt_iov_t){slot_of(l, c, step), bytes};
    return transfer(l, sending, iov, 2, true, make_tag(l->a.id, c, TAG_DATA, step), TAG_EXACT, NULL, &req[0]);
  }
  ucp_tag_t data_tag = make_tag(l->a.id, c, TAG_DATA, step);
  if (sending && bytes <= INLINE_BYTES) {
    iov[1] = (ucp_dt_iov_t){slot_of(l, c, step), bytes};
    return transfer(l, true, iov, 2, true, make_tag(l->a.id, c, TAG_RUN_TAG_INLINE, step), TAG_EXACT, NULL, &req[0]);
  }
  if (sending) {
    if (transfer(l, true, word, word_bytes, false, make_tag(l->a.id, c, TAG_RUN_TAG, step), TAG_EXACT, NULL, &req[0]))
      return -1;
    return transfer(l, true, slot_of(l, c, step), bytes, false, data_tag, TAG_EXACT, NULL, &req[1]);
  }
  iov[1] = (ucp_dt_iov_t){slot_of(l, c, step), INLINE_BYTES};
  ucp_tag_recv_info_t* info = &ch->word_info[slot];
  info->sender_tag = 0;
  if (transfer(l, false, iov, 2, true, make_tag(l->a.id, c, TAG_RUN_TAG, step), RUN_TAG_ANY, info, &req[0]) != 0)
    return -1;
  if (!req[0] && tag_type(info->sender_tag) == TAG_RUN_TAG_INLINE) return 0;
  return transfer(l, false, slot_of(l, c, step), bytes, false, data_tag, TAG_EXACT, NULL, &req[1]);
}

/* Receiving channel: whether step's slot has landed -- 1, 0 not yet, -1 failed (reported).  On a
 * split link, the word's message says whether the bytes came with it; if they did, the receive
 * posted for them alone is cancelled (finished() counts a cancelled request as done). */
static int slot_landed(struct df_net_link* l, uint32_t c, uint64_t step) {
  net_channel* ch = chan(l, c);
  uint32_t slot = (uint32_t)(step % DF_FIFO_STEPS);
  void** req = ch->recv_req[slot];
  if (!split_slots(l)) return slot_finished(req, "receive", l);
  if (req[0]) {
    ucs_status_t s = ucp_tag_recv_request_test(req[0], &ch->word_info[slot]);
    if (s == UCS_INPROGRESS) return 0;
    ucp_request_free(req[0]);
    req[0] = NULL;
    if (s != UCS_OK) {
      fprintf(stderr, "dfccl: collective %d, rank %d: a network receive failed: %s\n", l->a.id, l->a.peer,
              ucs_status_string(s));
      return -1;
    }
    if (tag_type(ch->word_info[slot].sender_tag) == TAG_RUN_TAG_INLINE && req[1])
      ucp_request_cancel(l->lane->worker, req[1]);
  }
  return finished(&req[1], "receive", l);
}

/* A credit from the receiver: the count it consumed, or its revoked head (the last it sends). */
static void take_credit(net_channel* ch) {
  if (ch->credit_in & DF_REVOKED_BIT) ch->revoked_head = ch->credit_in;
  else if (ch->credit_in > ch->credits) ch->credits = ch->credit_in;
}

/* Posts the receive of the next credit; credits already waiting in UCX are taken at once. */
static int post_credit_recv(struct df_net_link* l, uint32_t c) {
  net_channel* ch = chan(l, c);
  while (!ch->revoked_head) {
    ucp_request_param_t p = host_memory_param();
    ucs_status_ptr_t r = ucp_tag_recv_nbx(l->lane->worker, &ch->credit_in, sizeof ch->credit_in,
                                          make_tag(l->a.id, c, TAG_CREDIT, 0), TAG_ANY_STEP, &p);
    if (UCS_PTR_IS_ERR(r)) return -1;
    ch->credit_recv = posted_or_null(r);
    if (ch->credit_recv) return 0;
    take_credit(ch);
  }
  return 0;
}

/* Sends a small control word (a credit, a revocation) unless the last one is still on its way.
 * Returns 1 sent, 0 not now, -1 failed. */
static int send_word(struct df_net_link* l, uint32_t c, unsigned type, void** req, uint64_t* word, uint64_t value) {
  int f = finished(req, "control message", l);
  if (f <= 0) return f;
  *word = value;
  ucp_request_param_t p = host_memory_param();
  ucs_status_ptr_t r = ucp_tag_send_nbx(l->ep, word, sizeof *word, make_tag(l->a.id, c, type, 0), &p);
  if (UCS_PTR_IS_ERR(r)) return -1;
  *req = posted_or_null(r);
  return 1;
}

/* Sending channel: new slots out, completions and credits in, the head out to the daemon.
 * Returns whether anything moved; *busy: something is still on its way. */
static int poll_sending(struct df_net_link* l, uint32_t c, bool* busy) {
  net_channel* ch = chan(l, c);
  int moved = 0;
  df_recv_ctrl* tails = tails_of(l, c);
  uint64_t tail = __atomic_load_n(&tails->tail, __ATOMIC_ACQUIRE);
  if (tail & DF_REVOKED_BIT) { /* the run failed here: nothing more to send but that */
    if (!ch->revoke_sent) {
      int f = send_word(l, c, TAG_REVOKE, &ch->revoke_send, &ch->revoke_out, tail);
      if (f < 0) return -1;
      ch->revoke_sent = f == 1;
      moved = f;
    }
    tail = ch->posted;
  }
  if (ch->revoked_head) tail = ch->posted; /* the receiver's run failed: it takes nothing more */
  while (ch->posted < tail) {
    uint32_t slot = (uint32_t)(ch->posted % DF_FIFO_STEPS);
    uint32_t bytes = tails->bytes[slot];
    if (bytes > l->a.slot_bytes) bytes = l->a.slot_bytes; /* never more than a slot, whatever is there */
    if (transfer_slot(l, c, ch->posted, true, bytes) != 0) return -1;
    ch->posted++;
    moved = 1;
  }
  while (ch->completed < ch->posted) {
    int f = slot_finished(ch->send_req[ch->completed % DF_FIFO_STEPS], "send", l);
    if (f < 0) return -1;
    if (f == 0) break;
    ch->completed++;
    moved = 1;
  }
  while (ch->credit_recv) {
    int f = finished(&ch->credit_recv, "credit receive", l);
    if (f < 0) return -1;
    if (f == 0) break;
    take_credit(ch);
    moved = 1;
    if (!l->closing && post_credit_recv(l, c) != 0) return -1;
  }
  if (ch->revoked_head && ch->head != ch->revoked_head) { /* as the receiving daemon would store it */
    ch->head = ch->revoked_head;
    __atomic_store_n(&heads_of(l, c)->head, ch->head, __ATOMIC_RELEASE);
    return 1;
  }
  if (ch->revoked_head) return moved;
  uint64_t head = ch->credits < ch->completed ? ch->credits : ch->completed;
  if (head > ch->head) {
    ch->head = head;
    __atomic_store_n(&heads_of(l, c)->head, head, __ATOMIC_RELEASE);
    moved = 1;
  }
  if (ch->completed < ch->posted || ch->credits < ch->posted) *busy = true;
  return moved;
}

/* The receiving link's one receive for the sender's revocation (it comes at most once). */
static int post_revoke_recv(struct df_net_link* l, uint32_t c) {
  net_channel* ch = chan(l, c);
  ucp_request_param_t p = host_memory_param();
  ucs_status_ptr_t r = ucp_tag_recv_nbx(l->lane->worker, &ch->revoke_in, sizeof ch->revoke_in,
                                        make_tag(l->a.id, c, TAG_REVOKE, 0), TAG_ANY_STEP, &p);
  if (UCS_PTR_IS_ERR(r)) return -1;
  ch->revoke_recv = posted_or_null(r);
  return 0;
}

static int post_data_recv(struct df_net_link* l, uint32_t c) {
  net_channel* ch = chan(l, c);
  if (transfer_slot(l, c, ch->recv_posted, false, l->a.slot_bytes) != 0) return -1;
  ch->recv_posted++;
  return 0;
}

/* Receiving channel: landed slots become tails (in order), freed slots get new receives, the
 * daemon's head goes back as a credit. */
static int poll_receiving(struct df_net_link* l, uint32_t c, bool* busy) {
  net_channel* ch = chan(l, c);
  df_recv_ctrl* tails = tails_of(l, c);
  int moved = 0;
  if (!ch->revoked_tail) {
    int f = finished(&ch->revoke_recv, "revocation receive", l);
    if (f < 0) return -1;
    if (f == 1 && ch->revoke_in) { /* the sender's run failed: as its daemon would store the tail */
      ch->revoked_tail = true;
      __atomic_store_n(&tails->tail, ch->revoke_in, __ATOMIC_RELEASE);
      moved = 1;
    }
  }
  while (!ch->revoked_tail && ch->arrived < ch->recv_posted) {
    int f = slot_landed(l, c, ch->arrived);
    if (f < 0) return -1;
    if (f == 0) break;
    uint32_t slot = (uint32_t)(ch->arrived % DF_FIFO_STEPS);
    __atomic_store_n(&tails->tags[slot], ch->word_in[slot], __ATOMIC_RELAXED); /* whole */
    ch->arrived++;
    moved = 1;
  }
  if (moved && !ch->revoked_tail) /* after the data (UCX wrote it) and the tag words */
    __atomic_store_n(&tails->tail, ch->arrived, __ATOMIC_RELEASE);
  uint64_t consumed = __atomic_load_n(&heads_of(l, c)->head, __ATOMIC_ACQUIRE);
  if (consumed & DF_REVOKED_BIT) { /* the run failed here: the revoked head is the last credit */
    if (ch->credited & DF_REVOKED_BIT) return moved;
    int f = send_word(l, c, TAG_CREDIT, &ch->credit_send, &ch->credit_out, consumed);
    if (f < 0) return -1;
    if (f == 1) ch->credited = consumed;
    *busy = true;
    return 1;
  }
  if (ch->revoked_tail) return moved;
  /* A slot the daemon has consumed may take the step DF_FIFO_STEPS later, before the credit that
   * lets the sender send it goes out. */
  while (!l->closing && ch->recv_posted < consumed + DF_FIFO_STEPS) {
    if (post_data_recv(l, c) != 0) return -1;
    moved = 1;
  }
  if (finished(&ch->credit_send, "credit send", l) < 0) return -1;
  if (consumed > ch->credited) {
    int f = send_word(l, c, TAG_CREDIT, &ch->credit_send, &ch->credit_out, consumed);
    if (f < 0) return -1;
    if (f == 1) {
      ch->credited = consumed;
      moved = 1;
    }
  }
  if (ch->credit_send || consumed > ch->credited) *busy = true;
  return moved;
}

/* Has everything of a closing link reached its peer? */
static bool drained(const struct df_net_link* l) {
  for (uint32_t c = l->first; c < l->a.nchannels; c += l->stride) {
    const net_channel* ch = chan_c(l, c);
    if (l->a.sending) {
      uint64_t tail = __atomic_load_n(&tails_of(l, c)->tail, __ATOMIC_ACQUIRE);
      if ((tail & DF_REVOKED_BIT) || ch->revoked_head) continue; /* a failed run: nothing more is taken */
      if (ch->posted < tail || ch->completed < ch->posted || ch->credits < ch->posted) return false;
    } else {
      uint64_t consumed = __atomic_load_n(&heads_of(l, c)->head, __ATOMIC_ACQUIRE);
      if ((consumed & DF_REVOKED_BIT) || ch->revoked_tail) continue;
      if (ch->credit_send || ch->credited < consumed) return false;
    }
  }
  return true;
}

/* Cancels what is still posted (receives for steps that will never come) and waits for UCX to
 * let go of it. */
static void cancel_and_release(ucp_worker_h worker, void** req) {
  if (!*req) return;
  ucp_request_cancel(worker, *req);
  uint64_t start = df_now_ms();
  while (ucp_request_check_status(*req) == UCS_INPROGRESS && df_now_ms() - start < 1000) ucp_worker_progress(worker);
  ucp_request_free(*req);
  *req = NULL;
}

static void release_requests(struct df_net_link* l) {
  ucp_worker_h worker = l->lane->worker;
  for (uint32_t c = l->first; c < l->a.nchannels; c += l->stride) {
    net_channel* ch = chan(l, c);
    cancel_and_release(worker, &ch->credit_recv);
    cancel_and_release(worker, &ch->credit_send);
    cancel_and_release(worker, &ch->revoke_send);
    cancel_and_release(worker, &ch->revoke_recv);
    for (int s = 0; s < DF_FIFO_STEPS; s++) {
      for (int part = 0; part < 2; part++) {
        cancel_and_release(worker, &ch->send_req[s][part]);
        cancel_and_release(worker, &ch->recv_req[s][part]);
      }
    }
  }
}

static int poll_link(struct df_net_link* l, bool* busy) {
  int moved = 0;
  for (uint32_t c = l->first; c < l->a.nchannels; c += l->stride) {
    int m = l->a.sending ? poll_sending(l, c, busy) : poll_receiving(l, c, busy);
    if (m < 0) return -1;
    moved |= m;
  }
  return moved;
}

/* ---- the proxy thread ------------------------------------------------------------------------- */

/* Lets UCX move what the sockets hold (PROGRESS_CALLS); returns whether anything happened. */
static int progress(net_lane* lane) {
  int events = 0;
  for (int i = 0; i < PROGRESS_CALLS && ucp_worker_progress(lane->worker) != 0; i++) events = 1;
  return events;
}

static void* proxy_main(void* arg) {
  net_lane* lane = arg;
  df_ctx* ctx = lane->ctx;
  bool gpu = ctx->cfg.target == dfcclTargetCuda;
  uint64_t idle = 0;
  pthread_mutex_lock(&lane->lock);
  while (!lane->stop) {
    int moved = progress(lane);
    bool busy = false;
    for (struct df_net_link** at = &lane->links; *at;) {
      struct df_net_link* l = *at;
      int m = l->failed ? 0 : poll_link(l, &busy);
      if (m < 0) {
        l->failed = true;
        /* The run cannot complete: end the outstanding runs with the error rather than hang. */
        df_error(dfcclSystemError, "the network link of collective %d with rank %d failed", l->a.id, l->a.peer);
        atomic_store(&ctx->fatal, dfcclSystemError);
        df_poller_notify(ctx);
        m = 0;
      }
      moved |= m;
      if (l->closing && (drained(l) || l->failed || df_now_ms() > l->close_deadline_ms)) {
        if (!drained(l))
          fprintf(stderr,
                  "dfccl: rank %d: collective %d's network link with rank %d closed before its peer "
                  "acknowledged everything (peer gone?)\n",
                  ctx->rank, l->a.id, l->a.peer);
        release_requests(l);
        *at = l->next;
        l->closed = true;
        pthread_cond_broadcast(&lane->closed);
        moved = 1;
        continue;
      }
      if (l->closing) busy = true;
      at = &l->next;
    }
    if (moved) {
      idle = 0;
      if (atomic_load(&lane->waiters) > 0) {
        pthread_mutex_unlock(&lane->lock);
        sched_yield();
        pthread_mutex_lock(&lane->lock);
      }
      continue;
    }
    idle++;
    /* A lane without links has nothing to move, whatever runs over peer mappings (auto within a
     * host: every lane polled beside every run). */
    if (lane->links && (busy || atomic_load(&ctx->outstanding) > 0)) {
      /* Something is on its way: stay close, but give the CPU to the daemon's threads (host target)
       * and to the application.  (Polling on for 200 us after the last outstanding run, instead
       * of sleeping until the next submission wakes us, measured the same on 2 H100s: 8 B - 32 KiB
       * over UCX within 1-4 us either way, docs/performance.md.) */
      pthread_mutex_unlock(&lane->lock);
      if (idle < (gpu ? 4096u : 64u)) {
        sched_yield();
      } else {
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
      }
      pthread_mutex_lock(&lane->lock);
    } else {
      /* Nothing outstanding here: a submission (df_net_notify) or a new link wakes us; a peer's
       * early data waits at most a millisecond in the network.  A lane without links waits for one
       * and is not "sleeping" for submissions: a run moves nothing there (its channels are on
       * other lanes), and waking it on every submission put a futex call per such lane between the
       * SQE and the run's gate, and the lane's own pass over UCX beside the one lane that works.
       * (A one-channel 8-byte all-reduce took 34.8 us over 4 lanes where 1 lane took 31.8 while
       * they were woken; since, 4 lanes take what 1 does, 29.1-29.8 against 28.1-29.5 us: 2 x H200,
       * docs/performance.md, twenty-third and twenty-fourth sessions.) */
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 1000000;
      if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
      }
      atomic_store(&lane->sleeping, lane->links != NULL);
      if (lane->links) pthread_cond_timedwait(&lane->wake, &lane->lock, &until);
      else pthread_cond_wait(&lane->wake, &lane->lock); /* no network links (yet): nothing to progress */
      atomic_store(&lane->sleeping, false);
    }
  }
  pthread_mutex_unlock(&lane->lock);
  return NULL;
}

void df_net_notify(df_ctx* ctx) {
  struct df_net* net = ctx->net;
  for (uint32_t i = 0; net && i < net->nlanes; i++) {
    net_lane* lane = &net->lane[i];
    if (!atomic_load_explicit(&lane->sleeping, memory_order_relaxed)) continue;
    pthread_mutex_lock(&lane->lock);
    pthread_cond_signal(&lane->wake);
    pthread_mutex_unlock(&lane->lock);
  }
}

/* ---- links ------------------------------------------------------------------------------------- */

/* The lock, for a thread other than the proxy, which holds it most of the time. */
static void lock_beside_proxy(net_lane* lane) {
  atomic_fetch_add(&lane->waiters, 1);
  pthread_mutex_lock(&lane->lock);
  atomic_fetch_sub(&lane->waiters, 1);
}

/* A peer's card (df_net_address): a byte with its lane count, then per lane a 4-byte length and
 * the worker's address.  Finds lane `index`'s address; a card of another lane count is an error:
 * channel c goes over lane c % lanes on both ends. */
static dfcclResult_t peer_lane_address(const df_ctx* ctx, const df_net_link_args* args, uint32_t index,
                                       const void** address) {
  const uint8_t* card = args->peer_address;
  size_t bytes = args->peer_address_bytes;
  if (bytes == 0)
    return df_error(dfcclInvalidArgument,
                    "rank %d must reach rank %d over the network, but rank %d has no network transport (a build "
                    "without UCX, or DFCCL_TRANSPORT=p2p there)",
                    ctx->rank, args->peer, args->peer);
  if (card[0] != ctx->net->nlanes)
    return df_error(dfcclInvalidArgument,
                    "rank %d has %u network lane(s) and rank %d has %u: set DFCCL_NET_LANES alike on every rank",
                    ctx->rank, ctx->net->nlanes, args->peer, card[0]);
  size_t at = 1;
  for (uint32_t i = 0;; i++) {
    uint32_t len;
    if (at + sizeof len > bytes) break;
    memcpy(&len, card + at, sizeof len);
    at += sizeof len;
    if (len > bytes - at) break;
    if (i == index) {
      *address = card + at;
      return dfcclSuccess;
    }
    at += len;
  }
  return df_error(dfcclInternalError, "rank %d's network address card is malformed", args->peer);
}

/* The link's part on `lane`: its channels' receives (credits, or data and revocations) posted. */
static dfcclResult_t open_part(net_lane* lane, uint32_t nlanes, const df_net_link_args* args, const void* address,
                               struct df_net_link** out) {
  uint32_t nch = (args->nchannels - lane->index + nlanes - 1) / nlanes;
  struct df_net_link* l = calloc(1, sizeof *l + nch * sizeof(net_channel));
  if (!l) return df_error(dfcclOutOfResources, "out of memory");
  l->a = *args;
  l->a.peer_address = NULL;
  l->lane = lane;
  l->first = lane->index;
  l->stride = nlanes;
  lock_beside_proxy(lane);
  dfcclResult_t r = endpoint_to(lane, args->peer, address, &l->ep);
  if (r == dfcclSuccess && nlanes == 1) snprintf(l->describe, sizeof l->describe, "%s", lane->ep_describe[args->peer]);
  else if (r == dfcclSuccess)
    snprintf(l->describe, sizeof l->describe, "%s, %u lanes", lane->ep_describe[args->peer], nlanes);
  for (uint32_t c = l->first; r == dfcclSuccess && c < args->nchannels; c += l->stride) {
    if (args->sending) {
      if (post_credit_recv(l, c) != 0) r = df_error(dfcclSystemError, "UCX: posting a credit receive failed");
    } else {
      for (int s = 0; r == dfcclSuccess && s < DF_FIFO_STEPS; s++)
        if (post_data_recv(l, c) != 0) r = df_error(dfcclSystemError, "UCX: posting a receive failed");
      if (r == dfcclSuccess && post_revoke_recv(l, c) != 0)
        r = df_error(dfcclSystemError, "UCX: posting a revocation receive failed");
    }
  }
  if (r != dfcclSuccess) {
    release_requests(l);
    pthread_mutex_unlock(&lane->lock);
    free(l);
    return r;
  }
  l->next = lane->links;
  lane->links = l;
  pthread_cond_signal(&lane->wake);
  pthread_mutex_unlock(&lane->lock);
  *out = l;
  return dfcclSuccess;
}

dfcclResult_t df_net_link_open(df_ctx* ctx, const df_net_link_args* args, struct df_net_link** out) {
  struct df_net* net = ctx->net;
  *out = NULL;
  if (!net)
    return df_error(dfcclUnsupported,
                    "rank %d must reach rank %d over the network, but its network transport did not start (see above)",
                    ctx->rank, args->peer);
  struct df_net_link** tail = out;
  for (uint32_t i = 0; i < net->nlanes && i < args->nchannels; i++) {
    const void* address = NULL;
    dfcclResult_t r = peer_lane_address(ctx, args, i, &address);
    if (r == dfcclSuccess) r = open_part(&net->lane[i], net->nlanes, args, address, tail);
    if (r != dfcclSuccess) {
      df_net_link_close(ctx, *out); /* the parts opened so far */
      *out = NULL;
      return r;
    }
    tail = &(*tail)->sibling;
  }
  return dfcclSuccess;
}

void df_net_link_close(df_ctx* ctx, struct df_net_link* l) {
  (void)ctx;
  while (l) {
    net_lane* lane = l->lane;
    lock_beside_proxy(lane);
    l->closing = true;
    l->close_deadline_ms = df_now_ms() + CLOSE_TIMEOUT_MS;
    pthread_cond_signal(&lane->wake);
    while (!l->closed) pthread_cond_wait(&lane->closed, &lane->lock);
    pthread_mutex_unlock(&lane->lock);
    struct df_net_link* sibling = l->sibling;
    free(l);
    l = sibling;
  }
}

const char* df_net_link_describe(const struct df_net_link* l) { return l->describe; }

/* ---- the transport ------------------------------------------------------------------------------ */

/* The card peer_lane_address reads. */
static size_t card_bytes(const struct df_net* net) {
  size_t bytes = 1;
  for (uint32_t i = 0; i < net->nlanes; i++) bytes += sizeof(uint32_t) + net->lane[i].address_bytes;
  return bytes;
}

size_t df_net_address(const df_ctx* ctx, void* buf, size_t max) {
  const struct df_net* net = ctx->net;
  if (!net || card_bytes(net) > max) return 0;
  uint8_t* card = buf;
  card[0] = (uint8_t)net->nlanes;
  size_t at = 1;
  for (uint32_t i = 0; i < net->nlanes; i++) {
    uint32_t len = (uint32_t)net->lane[i].address_bytes;
    memcpy(card + at, &len, sizeof len);
    memcpy(card + at + sizeof len, net->lane[i].address, len);
    at += sizeof len + len;
  }
  return at;
}

/* TCP moves a message in segments of TX_SEG_SIZE (received into RX_SEG_SIZE ones; UCX refuses TX
 * above RX).  At UCX's 8 KiB / 64 KiB, 2 ranks on 2 H100s over the loopback moved 0.56-0.62 GB/s
 * at 128 MiB in the proxy's pattern (DF_FIFO_STEPS slots of up to 512 KiB in flight per channel,
 * both ways); with 256 KiB segments 1.10-1.30 GB/s, small all-reduces unchanged (docs/performance.md,
 * twentieth session).  So both become 256 KiB unless the user set either.  The names are the TCP
 * transport's own: ucp_config_modify hands names it does not know to the transports, and "TCP_..."
 * matched none (UCX 1.13 warned "invalid configurations" and kept its defaults). */
static void set_tcp_segments(df_ctx* ctx, ucp_config_t* config) {
  if (getenv("UCX_TCP_TX_SEG_SIZE") || getenv("UCX_TCP_RX_SEG_SIZE")) return;
  static const char* const names[] = {"RX_SEG_SIZE", "TX_SEG_SIZE"}; /* RX first: TX may not exceed it */
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    ucs_status_t s = ucp_config_modify(config, names[i], "256k");
    /* Not an error: a UCX without the setting runs with its own default, only slower. */
    if (s != UCS_OK) {
      df_debug(ctx, "UCX did not take TCP %s=256k (%s): its defaults stay", names[i], ucs_status_string(s));
      return;
    }
  }
}

static dfcclResult_t open_context(net_lane* lane) {
  ucp_config_t* config;
  ucs_status_t s = ucp_config_read(NULL, NULL, &config);
  if (s != UCS_OK) return ucx_error(s, "ucp_config_read");
  set_tcp_segments(lane->ctx, config);
  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
  s = ucp_init(&params, config, &lane->context);
  ucp_config_release(config);
  return s == UCS_OK ? dfcclSuccess : ucx_error(s, "ucp_init");
}

static dfcclResult_t open_worker(net_lane* lane) {
  DF_CHECK(open_context(lane));
  lane->eps = calloc((size_t)lane->ctx->nranks, sizeof *lane->eps);
  lane->ep_describe = calloc((size_t)lane->ctx->nranks, sizeof *lane->ep_describe);
  if (!lane->eps || !lane->ep_describe) return df_error(dfcclOutOfResources, "out of memory");
  /* One thread at a time (the lane's lock) uses the worker. */
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                            .thread_mode = UCS_THREAD_MODE_SERIALIZED};
  ucs_status_t s = ucp_worker_create(lane->context, &wp, &lane->worker);
  if (s != UCS_OK) return ucx_error(s, "ucp_worker_create");
  /* The network's part of the address only: peers on other hosts reach us through it, and so do
   * peers on this host when DFCCL_TRANSPORT=ucx asks for the network. */
  ucp_worker_attr_t wa = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS,
                          .address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY};
  s = ucp_worker_query(lane->worker, &wa);
  if (s != UCS_OK) return ucx_error(s, "ucp_worker_query");
  lane->address = wa.address;
  lane->address_bytes = wa.address_length;
  return dfcclSuccess;
}

static dfcclResult_t open_lanes(struct df_net* net) {
  for (uint32_t i = 0; i < net->nlanes; i++) DF_CHECK(open_worker(&net->lane[i]));
  if (card_bytes(net) > DF_NET_ADDRESS_MAX)
    return df_error(dfcclUnsupported,
                    "UCX: the worker addresses of %u lanes take %zu bytes, more than the %d a registration carries "
                    "(fewer DFCCL_NET_LANES)",
                    net->nlanes, card_bytes(net), DF_NET_ADDRESS_MAX);
  for (uint32_t i = 0; i < net->nlanes; i++) {
    int e = pthread_create(&net->lane[i].proxy, NULL, proxy_main, &net->lane[i]);
    if (e != 0) return df_error(dfcclSystemError, "starting a network proxy thread failed: %s", strerror(e));
    net->lane[i].proxy_started = true;
  }
  return dfcclSuccess;
}

dfcclResult_t df_net_open(df_ctx* ctx) {
  if (ctx->cfg.transport == DF_TRANSPORT_P2P || ctx->nranks == 1) return dfcclSuccess;
  struct df_net* net = calloc(1, sizeof *net);
  if (!net) return df_error(dfcclOutOfResources, "out of memory");
  net->nlanes = ctx->cfg.net_lanes;
  for (uint32_t i = 0; i < net->nlanes; i++) {
    net_lane* lane = &net->lane[i];
    lane->ctx = ctx;
    lane->index = i;
    pthread_mutex_init(&lane->lock, NULL);
    pthread_cond_init(&lane->wake, NULL);
    pthread_cond_init(&lane->closed, NULL);
  }
  ctx->net = net;
  dfcclResult_t r = open_lanes(net);
  if (r != dfcclSuccess) {
    if (ctx->cfg.transport == DF_TRANSPORT_AUTO) {
      /* auto may go on without the network: a peer on another host will be told why it fails */
      fprintf(stderr, "dfccl: rank %d: %s; going on without the network transport\n", ctx->rank,
              dfcclGetLastErrorMessage());
      df_net_close(ctx);
      return dfcclSuccess;
    }
    char message[512];
    snprintf(message, sizeof message, "%s", dfcclGetLastErrorMessage());
    df_net_close(ctx);
    return df_error(r, "DFCCL_TRANSPORT=ucx: %s", message);
  }
  /* GPU memory could go to the network directly only with a CUDA-capable UCX (and GPUDirect RDMA);
   * the FIFOs stay in pinned host memory either way for now -- say which this UCX is. */
  ucp_context_attr_t attr = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
  bool cuda_memory = ucp_context_query(net->lane[0].context, &attr) == UCS_OK &&
                     (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  df_debug(ctx,
           "network transport: UCX %s (%s CUDA memory), %u lane(s): worker addresses of %zu bytes in all, a proxy "
           "thread each; network FIFOs in pinned host memory",
           ucp_get_version_string(), cuda_memory ? "with" : "without", net->nlanes, card_bytes(net));
  return dfcclSuccess;
}

static void close_endpoints(df_ctx* ctx, net_lane* lane) {
  void** closing = calloc((size_t)ctx->nranks, sizeof *closing);
  for (int p = 0; p < ctx->nranks; p++) {
    if (!lane->eps[p]) continue;
    /* Every link is drained (or given up): nothing is left to flush, and a peer may have gone. */
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = ucp_ep_close_nbx(lane->eps[p], &param);
    if (closing && UCS_PTR_IS_PTR(r)) closing[p] = r;
  }
  uint64_t start = df_now_ms();
  for (int p = 0; closing && p < ctx->nranks; p++) {
    if (!closing[p]) continue;
    while (ucp_request_check_status(closing[p]) == UCS_INPROGRESS && df_now_ms() - start < 2000)
      ucp_worker_progress(lane->worker);
    if (ucp_request_check_status(closing[p]) == UCS_INPROGRESS) ucp_request_cancel(lane->worker, closing[p]);
    ucp_request_free(closing[p]);
  }
  free(closing);
}

static void close_lane(df_ctx* ctx, net_lane* lane) {
  if (lane->proxy_started) {
    pthread_mutex_lock(&lane->lock);
    lane->stop = true;
    pthread_cond_signal(&lane->wake);
    pthread_mutex_unlock(&lane->lock);
    pthread_join(lane->proxy, NULL);
  }
  if (lane->worker) {
    if (lane->eps) close_endpoints(ctx, lane);
    if (lane->address) ucp_worker_release_address(lane->worker, lane->address);
    ucp_worker_destroy(lane->worker);
  }
  if (lane->context) ucp_cleanup(lane->context);
  pthread_cond_destroy(&lane->closed);
  pthread_cond_destroy(&lane->wake);
  pthread_mutex_destroy(&lane->lock);
  free(lane->ep_describe);
  free(lane->eps);
}

void df_net_close(df_ctx* ctx) {
  struct df_net* net = ctx->net;
  if (!net) return;
  for (uint32_t i = 0; i < net->nlanes; i++) close_lane(ctx, &net->lane[i]);
  free(net);
  ctx->net = NULL;
}
