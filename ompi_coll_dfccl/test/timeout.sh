#!/bin/sh
# coll_dfccl_timeout (test_timeout): a rank skips an MPI_Allreduce; the others get MPI_ERR_OTHER
# within twice the timeout, the communicator's later calls fail, a new communicator works.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
unset DFCCL_TIMEOUT_S
status=0
for np in 2 3; do
  out=$(run_dfccl $np test_timeout --mca coll_dfccl_timeout 1 -- 1 2>&1)
  printf '%s\n' "$out" | grep -E "^rank|PASS|FAIL|coll:dfccl:" | head -n 20
  printf '%s\n' "$out" | grep -q '^PASS' || { echo "timeout np=$np: FAILED"; status=1; }
done
exit $status
