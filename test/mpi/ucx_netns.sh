#!/bin/sh
# Two "hosts" on one machine: ranks 0-1 in one network namespace, ranks 2-3 in another, the two
# joined by a veth pair and nothing else (test/common/harness.c moves each rank in after MPI has
# started).  DFCCL_TRANSPORT=auto decides from the ranks' host identities, which include the
# network namespace: shared memory within a namespace, UCX over TCP across the veth pair -- both
# transports inside one ring.  Needs root and `ip`; without them it says so and is skipped.
. "${top_srcdir:-.}/test/mpi/common.sh"
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
require_ucx
ns_a=dfccl-a-$$
ns_b=dfccl-b-$$
cleanup() { ip netns del "$ns_a" 2>/dev/null; ip netns del "$ns_b" 2>/dev/null; }
trap cleanup EXIT INT TERM
# Addresses inside namespaces this test makes and removes; nothing leaves them.
if ! { ip netns add "$ns_a" && ip netns add "$ns_b" &&
  ip link add "dfa$$" type veth peer name "dfb$$" &&
  ip link set "dfa$$" netns "$ns_a" && ip link set "dfb$$" netns "$ns_b" &&
  ip -n "$ns_a" addr add 10.213.0.1/24 dev "dfa$$" && ip -n "$ns_b" addr add 10.213.0.2/24 dev "dfb$$" &&
  ip -n "$ns_a" link set "dfa$$" up && ip -n "$ns_b" link set "dfb$$" up &&
  ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up; } 2>/tmp/ucx_netns.$$; then
  echo "SKIP: network namespaces are not available here ($(head -n 1 /tmp/ucx_netns.$$)): the two-host test did not run"
  rm -f /tmp/ucx_netns.$$
  exit 77
fi
rm -f /tmp/ucx_netns.$$
export TEST_NETNS_SPLIT=2 TEST_NETNS_A=$ns_a TEST_NETNS_B=$ns_b DFCCL_TRANSPORT=auto
failed=0
out=$(DFCCL_SHOW_TRANSPORT=1 run_mpi 4 test/mpi/test_random_order -i "${ITERATIONS:-200}" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v "^dfccl: rank" | tail -n 3
printf '%s\n' "$out" | grep "^dfccl: rank" | sort
for link in "rank 1 -> 2: ucx (tcp)" "rank 3 -> 0: ucx (tcp)" "rank 0 -> 1: p2p (shared memory)" \
  "rank 2 -> 3: p2p (shared memory)"; do
  printf '%s\n' "$out" | grep -qF "$link" || { echo "FAIL: no \"$link\" line"; failed=1; }
done
[ $rc -eq 0 ] || { echo "FAIL: random order across two namespaces (rc $rc)"; failed=1; }
DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=2 run_mpi 4 test/mpi/test_collectives -k allreduce -q ||
  failed=1
run_mpi 4 test/mpi/test_sync_between -i 50 || failed=1
# Preemption off: the same program hangs across the namespaces too.
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_random_order -i 20 || failed=1
exit $failed
