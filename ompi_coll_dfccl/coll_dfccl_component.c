/*
 * coll/dfccl component: MCA parameters (checked), MPI_T counters, open and close.
 *
 * Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
 */
#include "coll_dfccl.h"
#include "coll_dfccl_params_parse.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static int dfccl_open(void);
static int dfccl_close(void);
static int dfccl_register(void);
static int dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads);

int mca_coll_dfccl_world_rank = -1;

/* clang-format off */
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
    .concurrent_runs = 1,
    .host_target = DFCCL_HOST_TARGET_OFF,
    .transport = DFCCL_TRANSPORT_ENV,
    .agree_routes = true,
#define DFCCL_ENABLE_DEFAULT(name, mpi, fn) .name##_enable = true,
    DFCCL_ENTRIES(DFCCL_ENABLE_DEFAULT)
};
/* clang-format on */

/* ---- parameters ----------------------------------------------------------------------------------
 *
 * A bad value is refused, never taken for something else: one line names the parameter, the value
 * and what it accepts, and the registration fails.  Open MPI then leaves coll/dfccl out of the
 * process, so the job runs without it; where `--mca coll` lists dfccl, MPI_Init fails instead, as
 * it does for any listed component that cannot be opened (README: "Parameters").
 *
 * Open MPI's own integer parsing takes "abc" as 0 and "12abc" as 12 without a word, so the integer
 * parameters are registered as strings, which keeps the user's text, and parsed here.  The booleans
 * and coll_dfccl_host_target go through Open MPI's enumerators, which refuse a bad value themselves
 * (with a message that shows it and the accepted ones) and fail its registration.
 */

/* Signatures cost DFCCL nothing (each run is a descriptor); the bound keeps the communicator's
 * list, which every call searches, short. */
#define DFCCL_MAX_COLLS_PER_COMM 2048

static const char* const without_dfccl =
    "coll/dfccl stays out of this process (MPI_Init fails if --mca coll names dfccl)";

typedef struct {
  const char* name; /* coll_dfccl_<name> */
  const char* help;
  int* value; /* the component's field: its initialiser is the default */
  int min, max;
  const char* max_why; /* what makes max the most (NULL: nothing to say) */
  char* text;          /* Open MPI's string storage: the value as given */
} int_param_t;

static int register_var(const char* name, const char* help, mca_base_var_type_t type, mca_base_var_enum_t* values,
                        void* storage) {
  return mca_base_component_var_register(&mca_coll_dfccl_component.super.collm_version, name, help, type, values, 0, 0,
                                         OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* Registers p (its default shown as text) and parses what it was given into *p->value. */
static bool register_int(int_param_t* p) {
  char default_text[16];
  snprintf(default_text, sizeof default_text, "%d", *p->value);
  p->text = default_text; /* Open MPI registers a copy, then replaces it with the value given */
  int rc = register_var(p->name, p->help, MCA_BASE_VAR_TYPE_STRING, NULL, &p->text);
  if (rc >= 0 && mca_coll_dfccl_parse_int(p->text, p->min, p->max, p->value)) return true;
  if (rc < 0) {
    opal_output(0, "coll:dfccl: coll_dfccl_%s could not be registered (%d): %s", p->name, rc, without_dfccl);
    return false;
  }
  char range[48]; /* "an integer in [-2147483648, 2147483647]" fits */
  mca_coll_dfccl_describe_int_range(p->min, p->max, range, sizeof range);
  opal_output(0, "coll:dfccl: coll_dfccl_%s: expected %s (default %s%s%s), got '%s': %s", p->name, range, default_text,
              p->max_why != NULL ? "; " : "", p->max_why != NULL ? p->max_why : "", p->text != NULL ? p->text : "",
              without_dfccl);
  return false;
}

/* A boolean or enumerated parameter: Open MPI has refused a bad value already, with a message
 * that shows it; this line says what follows. */
static bool register_checked(const char* name, const char* help, mca_base_var_type_t type, mca_base_var_enum_t* values,
                             const char* accepted, void* storage) {
  int rc = register_var(name, help, type, values, storage);
  if (rc >= 0) return true;
  if (rc == OPAL_ERR_VALUE_OUT_OF_BOUNDS)
    opal_output(0, "coll:dfccl: coll_dfccl_%s: the value given is not %s (Open MPI's message shows it): %s", name,
                accepted, without_dfccl);
  else opal_output(0, "coll:dfccl: coll_dfccl_%s could not be registered (%d): %s", name, rc, without_dfccl);
  return false;
}

/* An integer parameter whose values are names (Open MPI's enumerator refuses any other). */
static bool register_enum(const char* name, const mca_base_var_enum_value_t* values, const char* help,
                          const char* accepted, int* storage) {
  char full[64];
  snprintf(full, sizeof full, "coll_dfccl_%s", name);
  mca_base_var_enum_t* e = NULL;
  if (mca_base_var_enum_create(full, values, &e) != OPAL_SUCCESS) {
    opal_output(0, "coll:dfccl: %s could not be registered: %s", full, without_dfccl);
    return false;
  }
  bool ok = register_checked(name, help, MCA_BASE_VAR_TYPE_INT, e, accepted, storage);
  OBJ_RELEASE(e); /* the variable holds its own reference */
  return ok;
}

static bool register_host_target(void) {
  static const mca_base_var_enum_value_t modes[] = {{DFCCL_HOST_TARGET_OFF, "off"},
                                                    {DFCCL_HOST_TARGET_HOST, "host"},
                                                    {DFCCL_HOST_TARGET_SIMULATED, "simulated"},
                                                    {0, NULL}};
  return register_enum(
      "host_target", modes,
      "Test modes (the same on every rank). 0|off (default): host buffers go to the previous component, and "
      "coll/dfccl declines every communicator on a machine without a GPU. 1|host: host buffers run on DFCCL's host "
      "execution target (CPU threads, POSIX shared memory), as device buffers run on the GPU. 2|simulated: only "
      "the host target's device memory (dfcclMemAlloc) runs on the host target, and other host memory goes to the "
      "previous component, as on a GPU machine",
      "0|off, 1|host or 2|simulated", &mca_coll_dfccl_component.host_target);
}

/* coll_dfccl_transport, the twin of DFCCL_TRANSPORT: "environment" (the default) leaves the core to
 * read DFCCL_TRANSPORT; another value is handed to it through that variable before dfcclInit. */
static bool register_transport(void) {
  static const mca_base_var_enum_value_t modes[] = {{DFCCL_TRANSPORT_ENV, "environment"},
                                                    {DFCCL_TRANSPORT_AUTO, "auto"},
                                                    {DFCCL_TRANSPORT_P2P, "p2p"},
                                                    {DFCCL_TRANSPORT_UCX, "ucx"},
                                                    {0, NULL}};
  return register_enum(
      "transport", modes,
      "How DFCCL connects ranks (the same on every rank). environment (default): as DFCCL_TRANSPORT says (unset: "
      "auto). auto: CUDA IPC (shared memory on the host target) within a host, UCX across hosts. p2p: never the "
      "network. ucx: always UCX, even within a host. With coll_dfccl_verbose >= 1 each rank says which transport "
      "each connection uses",
      "environment, auto, p2p or ucx", &mca_coll_dfccl_component.transport);
}

static bool register_ints(void) {
  /* Static: Open MPI keeps the address of each text until the component is unloaded. */
  static int_param_t params[] = {
      {"priority",
       "Priority of coll/dfccl: an integer in [0, 100] (default 90). It must exceed tuned's 30 and that of any "
       "other component that takes over the same collectives",
       &mca_coll_dfccl_component.priority, 0, 100, "Open MPI uses 100 at most"},
      {"verbose",
       "Verbosity of coll/dfccl: an integer >= 0 (default 0); 1 setup and teardown, and at MPI_Finalize "
       "each entry point's routed, fallen-back and local calls; 10 every call (and why it fell back)",
       &mca_coll_dfccl_component.verbose, 0, INT_MAX, NULL},
      {"max_colls",
       "Signatures (collective, count, datatype, op and root) routed through DFCCL per communicator at most: an "
       "integer in [1, 2048] (default 128); calls of later new ones fall back",
       &mca_coll_dfccl_component.max_colls, 1, DFCCL_MAX_COLLS_PER_COMM, "the list stays short"},
      {"hang_report",
       "Seconds a DFCCL collective may stay pending before each rank writes a hang report (every pending "
       "collective, what it waits for; docs/reliability.md), and again every as many while one is: an integer in "
       "[0, 31536000] (default 0: never, unless DFCCL_HANG_REPORT_S is set). Reports go to stderr, or to "
       "DFCCL_REPORT_DIR, which dfccl-hang-report reads",
       &mca_coll_dfccl_component.hang_report, 0, 31536000, "a year"},
      {"timeout",
       "Seconds a DFCCL collective may go without progress before it fails on every rank of its communicator "
       "(DFCCL_TIMEOUT_S; docs/reliability.md): an integer in [0, 31536000] (default 0: never). The call returns "
       "MPI_ERR_OTHER through the communicator's error handler, and the communicator's later collectives on DFCCL "
       "fail too; other communicators go on",
       &mca_coll_dfccl_component.timeout, 0, 31536000, "a year"},
      {"concurrent_runs",
       "Connector sets of each communicator's DFCCL communicator (DFCCL_COMM_SETS): an integer in [1, 16] "
       "(default 1; the same on every rank): that many calls or starts on a communicator run at once, later ones "
       "queue behind them. Each set holds 128 MiB of FIFOs on a GPU; and alternating between sets costs blocking calls "
       "of 8-32 MiB up to 10-45 percent (their FIFOs stay less in L2)",
       &mca_coll_dfccl_component.concurrent_runs, 1, DFCCL_MAX_CONCURRENT_RUNS, NULL},
  };
  bool ok = true;
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) ok = register_int(&params[i]) && ok;
  return ok;
}

/* ---- the per-collective switches and MPI_T counters ------------------------------------------------ */

/* A collective's counters, in the order of `counters` below. */
enum { ROUTED, FALLBACK, LOCAL, STAGED, NCOUNTERS };

typedef struct {
  const char* name; /* the prefix of its parameter and counters */
  const char* mpi;
  bool staged_only; /* never runs on DFCCL: taken over to stage device buffers */
  bool* enable;
  unsigned long long* counter[NCOUNTERS];
} coll_row_t;

static const coll_row_t colls[] = {
#define DFCCL_COLL_ROW(name, mpi, staged_only)                                          \
  {#name,                                                                               \
   mpi,                                                                                 \
   staged_only,                                                                         \
   &mca_coll_dfccl_component.name##_enable,                                             \
   {&mca_coll_dfccl_component.name##_routed, &mca_coll_dfccl_component.name##_fallback, \
    &mca_coll_dfccl_component.name##_local, &mca_coll_dfccl_component.name##_staged}},
#define DFCCL_ROUTED_ROW(name, mpi, fn) DFCCL_COLL_ROW(name, mpi, false)
#define DFCCL_STAGED_ROW(name, mpi, fn) DFCCL_COLL_ROW(name, mpi, true)
    DFCCL_COLLS(DFCCL_ROUTED_ROW) DFCCL_STAGED_COLLS(DFCCL_STAGED_ROW)};
enum { NCOLLS = sizeof colls / sizeof colls[0] };

/* coll_dfccl_<coll>_enable of each collective. */
static bool register_enables(void) {
  /* Names and help strings in static storage: valid for as long as the MCA base may look at them. */
  static char names[NCOLLS][64], helps[NCOLLS][240];
  bool ok = true;
  for (size_t i = 0; i < NCOLLS; i++) {
    const char* mpi = colls[i].mpi;
    bool nonblocking = strncmp(mpi, "MPI_I", 5) == 0;
    bool persistent = strstr(mpi, "_init") != NULL; /* "MPIX_..._init" */
    const char* form = nonblocking  ? " (from its first call on)"
                       : persistent ? " (the init decides the signature's route; each MPI_Start runs it)"
                                    : "";
    snprintf(names[i], sizeof names[i], "%s_enable", colls[i].name);
    if (colls[i].staged_only)
      snprintf(helps[i], sizeof helps[i],
               "Take %s over, so that its device buffers reach the previous component as host copies: a boolean "
               "(default true; false leaves it to the previous component, which is not CUDA-aware)",
               mpi);
    else snprintf(helps[i], sizeof helps[i], "Route %s through DFCCL%s: a boolean (default true)", mpi, form);
    ok = register_checked(names[i], helps[i], MCA_BASE_VAR_TYPE_BOOL, NULL, "a boolean", colls[i].enable) && ok;
  }
  return ok;
}

static void register_counter(const char* name, const char* help, unsigned long long* counter) {
  (void)mca_base_component_pvar_register(
      &mca_coll_dfccl_component.super.collm_version, name, help, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
      MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
      MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL, counter);
}

/* coll_dfccl_<coll>_routed, _fallback, _local and _staged of each collective (%s: its MPI name). */
static void register_counters(void) {
  static const struct {
    const char *suffix, *help;
  } counters[NCOUNTERS] = {
      [ROUTED] = {"routed", "%s calls run by DFCCL"},
      [FALLBACK] = {"fallback", "%s calls handed to the previous component"},
      [LOCAL] = {"local", "%s calls on communicators of one rank, done by a local copy"},
      [STAGED] = {"staged",
                  "%s calls handed to the previous component with device buffers, copied through host memory"}};
  static char names[NCOLLS][NCOUNTERS][64], helps[NCOLLS][NCOUNTERS][200];
  for (size_t i = 0; i < NCOLLS; i++)
    for (int k = 0; k < NCOUNTERS; k++) {
      bool persistent = strstr(colls[i].mpi, "_init") != NULL; /* counts inits */
      const char* help = k == ROUTED && persistent ? "%s calls whose request runs on DFCCL" : counters[k].help;
      snprintf(names[i][k], sizeof names[i][k], "%s_%s", colls[i].name, counters[k].suffix);
      snprintf(helps[i][k], sizeof helps[i][k], help, colls[i].mpi);
      register_counter(names[i][k], helps[i][k], colls[i].counter[k]);
    }
}

/* At verbosity 1, what every entry point did in this process: the proof users (and the GPU test
 * scripts) read that a program's calls ran on DFCCL. */
static void report_counters(void) {
  for (size_t i = 0; i < NCOLLS; i++) {
    unsigned long long routed = *colls[i].counter[ROUTED], fallback = *colls[i].counter[FALLBACK],
                       local = *colls[i].counter[LOCAL];
    if (routed + fallback + local > 0)
      DFCCL_VERBOSE(1, "rank %d: %s: %llu routed, %llu fell back (%llu staged), %llu local", mca_coll_dfccl_world_rank,
                    colls[i].name, routed, fallback, *colls[i].counter[STAGED], local);
  }
}

/* Every parameter is registered, and every bad one reported, before the verdict.  The counters
 * exist only where the component takes part. */
static int dfccl_register(void) {
  bool ints = register_ints();
  bool host_target = register_host_target();
  bool transport = register_transport();
  bool enables = register_enables();
  bool agree = register_checked(
      "agree_routes",
      "Agree among the ranks on the route of each new signature of a blocking call or persistent init, at its "
      "first call (a boolean, default true). "
      "false decides on each rank's own buffers, which hangs as soon as ranks pass different kinds of memory: only "
      "for the test that shows what the agreement prevents",
      MCA_BASE_VAR_TYPE_BOOL, NULL, "a boolean", &mca_coll_dfccl_component.agree_routes);
  if (!(ints && host_target && transport && enables && agree)) return OMPI_ERR_BAD_PARAM;
  register_counters();
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

static int dfccl_close(void) {
  report_counters();
  mca_coll_dfccl_progress_unregister();          /* after MPI_Finalize destroyed every context */
  if (dfcclHostBlocksFree(NULL) != dfcclSuccess) /* no staged call is left either */
    opal_output(0, "coll:dfccl: freeing the staging blocks: %s", dfcclGetLastErrorMessage());
  if (mca_coll_dfccl_component.output >= 0) opal_output_close(mca_coll_dfccl_component.output);
  mca_coll_dfccl_component.output = -1;
  return OMPI_SUCCESS;
}

static int dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  mca_coll_dfccl_init_classes(); /* inside MPI_Init: before any thread makes a module or a request */
  return OMPI_SUCCESS;
}
