#!/bin/sh
# Failures over the network transport (every connector over UCX/TCP through the proxy):
#  - ranks that disagree on a count: the run tags travel with the data (each message starts with its
#    slot's tag), so every rank fails with dfcclMismatch, no timeout needed;
#  - a rank skips a collective and only rank 0 has a timeout (DFCCL_TIMEOUT_S=1): the others have
#    none of their own, and fail with dfcclTimedOut within 2 s only because rank 0's revoked
#    connectors are carried across (a revocation message forward, a revoked credit back).
# Twin: the same mismatch with DFCCL_CHECK_RUNS=0 completes "successfully" on every rank.
. "${top_srcdir:-.}/test/mpi/common.sh"
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
require_ucx
export DFCCL_TRANSPORT=ucx
status=0
run_mpi 3 test/mpi/test_failures -m mismatch || { echo "FAIL: mismatch over UCX"; status=1; }
timeout "${TEST_TIMEOUT_S:-600}" sh "$MPIRUN_SH" 3 sh -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then export DFCCL_TIMEOUT_S=1; fi; exec "$0" -m skip -t 1' \
  "$top_builddir/test/mpi/test_failures" || { echo "FAIL: a timeout on rank 0 alone, over UCX"; status=1; }
out=$(DFCCL_CHECK_RUNS=0 run_mpi 3 test/mpi/test_failures -m mismatch 2>&1)
printf '%s\n' "$out" | grep "^rank" | head -n 6
if printf '%s\n' "$out" | grep -q "count 4097: success"; then
  echo "PASS (twin): without the run checks the disagreement goes unnoticed over UCX"
else
  echo "FAIL (twin): with DFCCL_CHECK_RUNS=0 rank 1 did not complete its mismatched run"
  status=1
fi
[ $status -eq 0 ] && echo "PASS: failures over UCX reach every rank"
exit $status
