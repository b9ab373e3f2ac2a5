/*
 * coll/dfccl component: MCA parameters, MPI_T counters, and the per-communicator query.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int dfccl_open(void);
static int dfccl_close(void);
static int dfccl_register(void);
static int dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads);

int mca_coll_dfccl_world_rank = -1;

mca_coll_dfccl_component_t mca_coll_dfccl_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "dfccl",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
            .mca_open_component = dfccl_open,
            .mca_close_component = dfccl_close,
            .mca_register_component_params = dfccl_register,
        },
        .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
        .collm_init_query = dfccl_init_query,
        .collm_comm_query = mca_coll_dfccl_comm_query,
    },
    .priority = 90,
    .verbose = 0,
    .output = -1,
    .max_colls = 128,
    .concurrent_runs = 2,
    .host_target = DFCCL_HOST_TARGET_OFF,
#define DFCCL_ENABLE_DEFAULT(name, mpi) .name##_enable = true,
    DFCCL_COLLS(DFCCL_ENABLE_DEFAULT)
};

static void register_var(const char* name, const char* help, mca_base_var_type_t type, void* storage) {
  (void)mca_base_component_var_register(&mca_coll_dfccl_component.super.collm_version, name, help, type,
                                        NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void register_counter(const char* name, const char* help, unsigned long long* counter) {
  (void)mca_base_component_pvar_register(&mca_coll_dfccl_component.super.collm_version, name, help,
                                         OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
                                         MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                         MCA_BASE_VAR_BIND_NO_OBJECT,
                                         MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                         NULL, NULL, NULL, counter);
}

static int dfccl_register(void) {
  mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  register_var("priority",
               "Priority of coll/dfccl (must exceed tuned's 30 and any other component that takes over "
               "the same collectives)",
               MCA_BASE_VAR_TYPE_INT, &c->priority);
  register_var("verbose", "Verbosity of coll/dfccl: 1 setup and teardown, 10 every routed or fallen-back call",
               MCA_BASE_VAR_TYPE_INT, &c->verbose);
  register_var("max_colls",
               "Signatures (collective, count, datatype, op and root) registered per communicator at most; calls "
               "that would need more fall back. Each holds one DFCCL collective (coll_dfccl_concurrent_runs once a "
               "nonblocking call or a persistent init used it), each with shared-memory or device connectors sized "
               "to it",
               MCA_BASE_VAR_TYPE_INT, &c->max_colls);
  register_var("concurrent_runs",
               "DFCCL collectives registered per signature once a nonblocking call or a persistent init used it "
               "(1..16; the same on every rank): that many calls or starts of one signature on a communicator run "
               "at once, later ones queue",
               MCA_BASE_VAR_TYPE_INT, &c->concurrent_runs);
  register_var("host_target",
               "Test mode: route host buffers through DFCCL's host execution target (CPU threads, POSIX "
               "shared memory), as device buffers go to the GPU. Must be the same on every rank. Without "
               "this mode, host buffers go to the previous component, and coll/dfccl declines every "
               "communicator on a machine without a GPU",
               MCA_BASE_VAR_TYPE_INT, &c->host_target); /* interim: the enumerated parameter is coming */
  const struct {
    const char* name; /* the parameters' and counters' prefix */
    const char* mpi;
    bool* enable;
    unsigned long long *routed, *fallback, *local;
  } colls[] = {
#define DFCCL_COLL_ROW(name, mpi) \
  {#name, mpi, &c->name##_enable, &c->name##_routed, &c->name##_fallback, &c->name##_local},
      DFCCL_COLLS(DFCCL_COLL_ROW)};
  enum { NCOLLS = sizeof colls / sizeof colls[0] };
  /* Names and help strings in static storage: valid for as long as the MCA base may look at them. */
  static char names[NCOLLS][4][64], helps[NCOLLS][4][200];
  for (size_t i = 0; i < NCOLLS; i++) {
    char(*n)[64] = names[i], (*h)[200] = helps[i];
    const char* mpi = colls[i].mpi;
    bool nonblocking = strncmp(mpi, "MPI_I", 5) == 0;
    bool persistent = strstr(mpi, "_init") != NULL; /* "MPIX_..._init" */
    const char* form =
        nonblocking  ? " (once its signature is set up by a blocking collective on the communicator)"
        : persistent ? " (the init is a set-up point: it registers the signature; each MPI_Start runs it)"
                     : "";
    snprintf(n[0], sizeof n[0], "%s_enable", colls[i].name);
    snprintf(h[0], sizeof h[0], "Route %s through DFCCL%s%s", mpi,
             strstr(mpi, "_scatter") && !strstr(mpi, "_block") ? " (when all recvcounts are equal)" : "", form);
    register_var(n[0], h[0], MCA_BASE_VAR_TYPE_BOOL, colls[i].enable);
    snprintf(n[1], sizeof n[1], "%s_routed", colls[i].name);
    snprintf(h[1], sizeof h[1], persistent ? "%s calls whose request runs on DFCCL" : "%s calls run by DFCCL", mpi);
    register_counter(n[1], h[1], colls[i].routed);
    snprintf(n[2], sizeof n[2], "%s_fallback", colls[i].name);
    snprintf(h[2], sizeof h[2], "%s calls handed to the previous component", mpi);
    register_counter(n[2], h[2], colls[i].fallback);
    snprintf(n[3], sizeof n[3], "%s_local", colls[i].name);
    snprintf(h[3], sizeof h[3], "%s calls on communicators of one rank, done by a local copy", mpi);
    register_counter(n[3], h[3], colls[i].local);
  }
  return OMPI_SUCCESS;
}

/* Keeps this .so (and libdfccl) mapped after Open MPI's dlclose at finalize: DFCCL's threads are
 * gone by then, but tools that report at exit (valgrind's leak check, sanitizers) need the code
 * still mapped to name its frames. */
static void stay_loaded(void) {
  Dl_info self;
  if (dladdr((void*)&mca_coll_dfccl_component, &self) && self.dli_fname != NULL)
    (void)dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static int dfccl_open(void) {
  mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  stay_loaded();
  c->output = opal_output_open(NULL);
  opal_output_set_verbosity(c->output, c->verbose);
  return OMPI_SUCCESS;
}

/* At verbosity 1, what every entry point did in this process: the proof users (and the GPU test
 * scripts) read that a program's calls ran on DFCCL. */
static void report_counters(void) {
  const mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  const struct {
    const char* name;
    unsigned long long routed, fallback, local;
  } rows[] = {
#define DFCCL_COUNTER_ROW(name, mpi) {#name, c->name##_routed, c->name##_fallback, c->name##_local},
      DFCCL_COLLS(DFCCL_COUNTER_ROW)};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].routed + rows[i].fallback + rows[i].local > 0)
      DFCCL_VERBOSE(1, "rank %d: %s: %llu routed, %llu fell back, %llu local", mca_coll_dfccl_world_rank,
                    rows[i].name, rows[i].routed, rows[i].fallback, rows[i].local);
}

static int dfccl_close(void) {
  report_counters();
  mca_coll_dfccl_progress_unregister(); /* after MPI_Finalize destroyed every context */
  if (mca_coll_dfccl_component.output >= 0) opal_output_close(mca_coll_dfccl_component.output);
  mca_coll_dfccl_component.output = -1;
  return OMPI_SUCCESS;
}

static int dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}
