/*
 * Error codes, their strings, and the per-thread sentence that says what exactly went wrong.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"
#include "kernel/dtypes.h"

static _Thread_local char last_error[512];

dfcclResult_t df_error(dfcclResult_t result, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return result;
}

void df_debug(const df_ctx* ctx, const char* fmt, ...) {
  if (!ctx || !ctx->cfg.debug) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[dfccl rank %d] %s\n", ctx->rank, line); /* one write: ranks' lines do not mix */
}

const char* dfcclGetLastErrorMessage(void) { return last_error; }

const char* dfcclGetErrorString(dfcclResult_t result) {
  switch (result) {
    case dfcclSuccess: return "success";
    case dfcclInvalidArgument: return "invalid argument";
    case dfcclUnregisteredId: return "collective id not registered";
    case dfcclDuplicateId: return "collective id already registered";
    case dfcclInFlight: return "collective still in flight";
    case dfcclDestroyed: return "context destroyed";
    case dfcclWrongDevice: return "buffer not on the context's device";
    case dfcclTimeout: return "timed out waiting for a full submission queue";
    case dfcclUnsupported: return "execution target not available";
    case dfcclOutOfResources: return "out of resources";
    case dfcclSystemError: return "system call failed";
    case dfcclCudaError: return "CUDA call failed";
    case dfcclBootstrapError: return "bootstrap allgather failed";
    case dfcclInternalError: return "internal error";
    case dfcclTimedOut: return "collective made no progress within the timeout";
    case dfcclMismatch: return "participants disagree on the collective";
    case dfcclRevoked: return "collective revoked by an earlier failure";
    case dfcclInProgress: return "still in progress";
    case dfcclCreationFailed: return "the communicator's creation failed";
    default: return "unknown result code";
  }
}

size_t dfcclTypeSize(dfcclDataType_t dtype) { return df_dtype_bytes(dtype); }
