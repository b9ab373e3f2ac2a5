/*
 * The host execution target: the daemon's blocks are CPU threads, its memory is ordinary memory,
 * and connectors live in POSIX shared memory so that ranks in different processes reach them.
 * Selected explicitly (dfcclTargetHost or DFCCL_TARGET=host), never in place of a GPU.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kernel/daemon_launch.h"

typedef struct host_state {
  struct host_state* next_live; /* in live_states */
  pthread_mutex_t lock;
  pthread_cond_t ended;
  pthread_t threads[DF_MAX_BLOCKS];
  int nthreads;      /* threads of the current launch, to be joined */
  int live;          /* of them, still running                      */
  uint64_t launched; /* launches so far                             */
  uint64_t finished; /* launches whose every block has exited       */
  const df_daemon_args* args;
} host_state;

typedef struct {
  host_state* state;
  int block;
  int nblocks;
} block_start;

typedef struct {
  char name[64];
} shm_handle;

static host_state* state_of(df_ctx* ctx) { return (host_state*)ctx->target_state; }

/* Every host context's state in this process, for dfcclHostSynchronize.  A synchronization holds
 * live_states_lock while it waits, so no state leaves the list (nor is freed) under it. */
static pthread_mutex_t live_states_lock = PTHREAD_MUTEX_INITIALIZER;
static host_state* live_states;

/* A segment is unlinked once every peer has mapped it; a process killed before that (in the middle
 * of a registration's exchange) leaves its segments behind.  Each name starts with its creator's
 * pid: the segments of processes that no longer exist are removed when a host context opens. */
static void sweep_dead_segments(void) {
  DIR* d = opendir("/dev/shm");
  if (d == NULL) return; /* no such directory: shm_open keeps its segments elsewhere */
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    int pid = 0;
    if (sscanf(e->d_name, "dfccl-%d-", &pid) != 1 || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
    char name[300];
    snprintf(name, sizeof name, "/%s", e->d_name);
    shm_unlink(name);
  }
  closedir(d);
}

static dfcclResult_t host_open(df_ctx* ctx, int device) {
  (void)device;
  sweep_dead_segments();
  host_state* s = calloc(1, sizeof *s);
  if (!s) return df_error(dfcclOutOfResources, "out of memory for the host target");
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->ended, NULL);
  pthread_mutex_lock(&live_states_lock);
  s->next_live = live_states;
  live_states = s;
  pthread_mutex_unlock(&live_states_lock);
  ctx->target_state = s;
  return dfcclSuccess;
}

static void join_finished(host_state* s) {
  /* caller holds s->lock and has seen live == 0 */
  for (int i = 0; i < s->nthreads; i++) pthread_join(s->threads[i], NULL);
  s->nthreads = 0;
}

static void host_close(df_ctx* ctx) {
  host_state* s = state_of(ctx);
  if (!s) return;
  pthread_mutex_lock(&live_states_lock);
  for (host_state** p = &live_states; *p != NULL; p = &(*p)->next_live)
    if (*p == s) {
      *p = s->next_live;
      break;
    }
  pthread_mutex_unlock(&live_states_lock);
  pthread_mutex_lock(&s->lock);
  while (s->live > 0) pthread_cond_wait(&s->ended, &s->lock);
  join_finished(s);
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->ended);
  free(s);
  ctx->target_state = NULL;
}

static dfcclResult_t host_alloc(df_ctx* ctx, size_t bytes, void** ptr) {
  (void)ctx;
  size_t rounded = (bytes + 63) & ~(size_t)63;
  *ptr = aligned_alloc(64, rounded ? rounded : 64);
  if (!*ptr) return df_error(dfcclOutOfResources, "out of memory (%zu bytes)", bytes);
  memset(*ptr, 0, rounded);
  return dfcclSuccess;
}

static void host_free(df_ctx* ctx, void* ptr) {
  (void)ctx;
  free(ptr);
}

static dfcclResult_t host_alloc_mapped(df_ctx* ctx, size_t bytes, void** host, void** daemon) {
  DF_CHECK(host_alloc(ctx, bytes, host));
  *daemon = *host;
  return dfcclSuccess;
}

/* Copies to and from the daemon's tables, which its blocks (other threads) may be using: a
 * statistic or a context saved while a report copies it out, a static context that a block reads
 * while the host installs the one of a new registration.  Relaxed atomic words (platform.h), as a
 * GPU's copy engine would move them: no torn word, and no C11 data race for ThreadSanitizer. */
static dfcclResult_t host_copy(df_ctx* ctx, void* dst, const void* src, size_t bytes) {
  (void)ctx;
  df_copy_relaxed(dst, src, bytes);
  return dfcclSuccess;
}

static dfcclResult_t map_fd(int fd, size_t bytes, void** ptr, const char* name) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    return df_error(dfcclSystemError, "mmap of shared memory %s (%zu bytes) failed: %s", name, bytes, strerror(err));
  *ptr = p;
  return dfcclSuccess;
}

/* A token of this process for its segments' names.  The pid alone is not enough: a process killed
 * before its peers mapped a segment leaves the name behind, and a later process may get its pid
 * (seen in CI after the hanging twins were killed); processes in other pid namespaces may share
 * /dev/shm too. */
static unsigned process_token(void) {
  static atomic_uint token;
  unsigned t = atomic_load(&token);
  if (t != 0) return t;
  if (getrandom(&t, sizeof t, GRND_NONBLOCK) != (ssize_t)sizeof t) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    t = (unsigned)now.tv_nsec * 2654435761u ^ (unsigned)now.tv_sec ^ (unsigned)getpid();
  }
  t |= 1u; /* never 0, which means "not drawn yet" */
  unsigned expected = 0;
  return atomic_compare_exchange_strong(&token, &expected, t) ? t : expected;
}

static dfcclResult_t host_alloc_shared(df_ctx* ctx, size_t bytes, void** ptr, df_mem_handle* handle) {
  shm_handle* h = (shm_handle*)handle->bytes;
  memset(handle, 0, sizeof *handle);
  /* Unique within the process too: several contexts (one per communicator, say) may live in it. */
  static atomic_uint shm_counter;
  snprintf(h->name, sizeof h->name, "/dfccl-%d-%08x-%d-%u", (int)getpid(), process_token(), ctx->rank,
           atomic_fetch_add(&shm_counter, 1));
  int fd = shm_open(h->name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return df_error(dfcclSystemError, "shm_open(%s) failed: %s", h->name, strerror(errno));
  if (ftruncate(fd, (off_t)bytes) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(h->name);
    return df_error(dfcclSystemError, "ftruncate of %s to %zu bytes failed: %s", h->name, bytes, strerror(err));
  }
  dfcclResult_t r = map_fd(fd, bytes, ptr, h->name); /* new shared memory reads as zeros */
  if (r != dfcclSuccess) shm_unlink(h->name);
  return r;
}

static void host_free_shared(df_ctx* ctx, void* ptr, size_t bytes) {
  (void)ctx;
  munmap(ptr, bytes);
}

static dfcclResult_t host_map_peer(df_ctx* ctx, const df_mem_handle* handle, size_t bytes, void** ptr) {
  (void)ctx;
  const shm_handle* h = (const shm_handle*)handle->bytes;
  int fd = shm_open(h->name, O_RDWR, 0600);
  if (fd < 0) return df_error(dfcclSystemError, "shm_open(%s) of a peer failed: %s", h->name, strerror(errno));
  return map_fd(fd, bytes, ptr, h->name);
}

static void host_unmap_peer(df_ctx* ctx, void* ptr, size_t bytes) { host_free_shared(ctx, ptr, bytes); }

/* Every peer has mapped it: the name can go, so nothing is left behind in /dev/shm. */
static void host_shared_setup_done(df_ctx* ctx, const df_mem_handle* handle) {
  (void)ctx;
  shm_unlink(((const shm_handle*)handle->bytes)->name);
}

static void* block_thread(void* arg) {
  block_start start = *(block_start*)arg;
  free(arg);
  host_state* s = start.state;
  /* Waiting blocks sleep in tens of microseconds; the default 50 us timer slack would triple that. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  df_host_daemon_block(s->args, start.block, start.nblocks);
  pthread_mutex_lock(&s->lock);
  if (--s->live == 0) {
    s->finished++;
    pthread_cond_broadcast(&s->ended);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static dfcclResult_t host_launch(df_ctx* ctx, const df_daemon_args* args, int grid) {
  host_state* s = state_of(ctx);
  pthread_mutex_lock(&s->lock);
  if (s->live > 0) {
    pthread_mutex_unlock(&s->lock);
    return df_error(dfcclInternalError, "daemon launched while still running");
  }
  join_finished(s);
  s->args = args;
  s->launched++;
  for (int b = 0; b < grid; b++) {
    block_start* start = malloc(sizeof *start);
    int err = start ? 0 : ENOMEM;
    if (start) {
      start->state = s;
      start->block = b;
      start->nblocks = grid;
      s->live++;
      err = pthread_create(&s->threads[b], NULL, block_thread, start);
      if (err) {
        s->live--;
        free(start);
      }
    }
    if (err) {
      /* The blocks already started quit on their own; report the launch as failed. */
      if (s->live == 0) s->finished++;
      pthread_mutex_unlock(&s->lock);
      return df_error(dfcclSystemError, "starting daemon block thread %d failed: %s", b, strerror(err));
    }
    s->nthreads = b + 1;
  }
  pthread_mutex_unlock(&s->lock);
  return dfcclSuccess;
}

static dfcclResult_t host_daemon_running(df_ctx* ctx, bool* running) {
  host_state* s = state_of(ctx);
  pthread_mutex_lock(&s->lock);
  *running = s->live > 0;
  if (!*running && s->nthreads) join_finished(s);
  pthread_mutex_unlock(&s->lock);
  return dfcclSuccess;
}

/* Waits for the launch of s running now (if any) to end. */
static void wait_for_running_launch(host_state* s) {
  pthread_mutex_lock(&s->lock);
  uint64_t target = s->launched;
  while (s->finished < target) pthread_cond_wait(&s->ended, &s->lock);
  pthread_mutex_unlock(&s->lock);
}

/* Like cudaDeviceSynchronize, for one context. */
static dfcclResult_t host_synchronize(df_ctx* ctx) {
  wait_for_running_launch(state_of(ctx));
  return dfcclSuccess;
}

/* Like cudaDeviceSynchronize, for every host context of the process: each one's launch running
 * when it gets there.  (Launches of the contexts not reached yet that start meanwhile are waited
 * for too: a device synchronization may wait for work issued after it from other threads.) */
int df_host_synchronize_all(void) {
  int contexts = 0;
  pthread_mutex_lock(&live_states_lock);
  for (host_state* s = live_states; s != NULL; s = s->next_live, contexts++) wait_for_running_launch(s);
  pthread_mutex_unlock(&live_states_lock);
  return contexts;
}

static dfcclResult_t host_check_buffer(df_ctx* ctx, const void* p, size_t bytes, const char* what) {
  (void)ctx;
  if (bytes > 0 && p == NULL) return df_error(dfcclInvalidArgument, "%s is NULL", what);
  return dfcclSuccess;
}

/* The host target's caller has no streams: its work on the buffers is done when it calls.  A no-op
 * all the same rather than none, so that runs are gated as on a GPU (df_gate_wanted) and CI goes
 * the gate's way: the run published first, the host opening its gate after, the daemon's blocks
 * passing it (df_pass_gate). */
static dfcclResult_t host_wait_caller(df_ctx* ctx) {
  (void)ctx;
  return dfcclSuccess;
}

const df_target_ops df_target_host = {
    .name = "host",
    .open = host_open,
    .close = host_close,
    .alloc = host_alloc,
    .free = host_free,
    .alloc_mapped = host_alloc_mapped,
    .free_mapped = host_free,
    .copy_in = host_copy,
    .copy_out = host_copy,
    .alloc_shared = host_alloc_shared,
    .free_shared = host_free_shared,
    .map_peer = host_map_peer,
    .unmap_peer = host_unmap_peer,
    .shared_setup_done = host_shared_setup_done,
    .launch = host_launch,
    .daemon_running = host_daemon_running,
    .synchronize = host_synchronize,
    .check_buffer = host_check_buffer,
    .wait_caller = host_wait_caller,
};
