#!/bin/sh
# The component's out-of-order programs over the network transport: coll_dfccl_transport=ucx puts
# every DFCCL connector on UCX/TCP through the proxy (even between ranks of this machine), and
# coll_dfccl_verbose 1 says so per connection.  The patterns of nb_deadlock.sh, at 2 and 4 ranks,
# all routed, all exact; and the twin: without preemption the cross pattern hangs.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
ucx="--mca coll_dfccl_transport ucx"
out=$(run_dfccl 2 test_nb_deadlock $ucx --mca coll_dfccl_verbose 1 -- -m cross -i 2 2>&1)
if printf '%s\n' "$out" | grep -q "has no UCX"; then
  echo "SKIP: this build of DFCCL has no UCX"
  exit 77
fi
failed=0
printf '%s\n' "$out" | grep -q "rank 0 -> 1: ucx (tcp)" || { echo "FAIL: coll_dfccl_verbose 1 did not say \"rank 0 -> 1: ucx (tcp)\""; printf '%s\n' "$out" | tail -n 20; failed=1; }
for np in 2 4; do
  run_dfccl $np test_nb_deadlock $ucx -- -m cross -i "${ITERATIONS:-10}" || failed=1
  run_dfccl $np test_nb_deadlock $ucx -- -m sync -i "${ITERATIONS:-10}" || failed=1
  run_dfccl $np test_nb_deadlock $ucx --mca coll_dfccl_concurrent_runs 2 -- -m queue -p 2 -i "${ITERATIONS:-10}" || failed=1
done
# An unknown transport is refused by name.
out=$(run_dfccl 2 test_nb_deadlock --mca coll_dfccl_transport carrier-pigeon -- -m cross -i 1 2>&1)
printf '%s\n' "$out" | grep -q "coll_dfccl_transport" || { echo "FAIL: coll_dfccl_transport=carrier-pigeon was not refused by name"; printf '%s\n' "$out" | tail -n 10; failed=1; }
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 2 test_nb_deadlock $ucx -- -m cross -i 20 || failed=1
exit $failed
