/*
 * A build without UCX: no network transport.  DFCCL_TRANSPORT=auto connects peers of one host as
 * usual and tells a peer on another host why it cannot; DFCCL_TRANSPORT=ucx is an error at once.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "internal.h"

dfcclResult_t df_net_open(df_ctx* ctx) {
  if (ctx->cfg.transport == DF_TRANSPORT_UCX)
    return df_error(dfcclUnsupported, "DFCCL_TRANSPORT=ucx: this build of DFCCL has no UCX (configure --with-ucx)");
  return dfcclSuccess;
}

void df_net_close(df_ctx* ctx) { (void)ctx; }

size_t df_net_address(const df_ctx* ctx, void* buf, size_t max) {
  (void)ctx, (void)buf, (void)max;
  return 0;
}

void df_net_notify(df_ctx* ctx) { (void)ctx; }

dfcclResult_t df_net_link_open(df_ctx* ctx, const df_net_link_args* args, struct df_net_link** out) {
  *out = NULL;
  return df_error(dfcclUnsupported,
                  "rank %d must reach rank %d over the network (another host), but this build of DFCCL has no UCX "
                  "(configure --with-ucx)",
                  ctx->rank, args->peer);
}

void df_net_link_close(df_ctx* ctx, struct df_net_link* link) { (void)ctx, (void)link; }

const char* df_net_link_describe(const struct df_net_link* link) {
  (void)link;
  return "none";
}
