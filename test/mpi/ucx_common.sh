# Helpers for the network transport's tests (sourced after common.sh).  Every connector goes over
# UCX's TCP transport (and `self` for a rank's own messages) through the network proxy.
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n

# Exit 77 (SKIP), saying why, when this build has no UCX.
require_ucx() {
  out=$(DFCCL_TRANSPORT=ucx run_mpi 2 test/mpi/test_random_order -i 1 2>&1)
  if printf '%s\n' "$out" | grep -q "has no UCX"; then
    echo "SKIP: this build of DFCCL has no UCX (install libucx-dev and configure again)"
    exit 77
  fi
}
