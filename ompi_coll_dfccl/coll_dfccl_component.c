/*
 * coll/dfccl component: MCA parameters, MPI_T counters, and the per-communicator query.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

static int dfccl_open(void);
static int dfccl_close(void);
static int dfccl_register(void);
static int dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads);

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
    .allreduce_enable = true,
    .host_target = false,
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
               "DFCCL collectives (one per count, datatype and op) registered per communicator at most; "
               "calls that would need more fall back. Each holds shared-memory or device connectors sized to it",
               MCA_BASE_VAR_TYPE_INT, &c->max_colls);
  register_var("allreduce_enable", "Route MPI_Allreduce through DFCCL", MCA_BASE_VAR_TYPE_BOOL,
               &c->allreduce_enable);
  register_var("host_target",
               "Test mode: route host buffers through DFCCL's host execution target (CPU threads, POSIX "
               "shared memory), as device buffers go to the GPU. Must be the same on every rank. This "
               "version has no GPU path yet: without this mode coll/dfccl declines every communicator",
               MCA_BASE_VAR_TYPE_BOOL, &c->host_target);
  register_counter("allreduce_routed", "MPI_Allreduce calls run by DFCCL", &c->allreduce_routed);
  register_counter("allreduce_fallback", "MPI_Allreduce calls handed to the previous component",
                   &c->allreduce_fallback);
  return OMPI_SUCCESS;
}

static int dfccl_open(void) {
  mca_coll_dfccl_component_t* c = &mca_coll_dfccl_component;
  c->output = opal_output_open(NULL);
  opal_output_set_verbosity(c->output, c->verbose);
  return OMPI_SUCCESS;
}

static int dfccl_close(void) {
  if (mca_coll_dfccl_component.output >= 0) opal_output_close(mca_coll_dfccl_component.output);
  mca_coll_dfccl_component.output = -1;
  return OMPI_SUCCESS;
}

static int dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}
