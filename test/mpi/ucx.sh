#!/bin/sh
# The network transport end to end (DFCCL_TRANSPORT=ucx: every connector over UCX/TCP through the
# CPU proxy, even between ranks of this machine): the collectives matrix, the random-order program,
# the eight kinds in random order on overlapping groups, the device-synchronization program and the
# communicators, at 2, 3 and 4 processes -- all exact; a user's TCP segment size left to UCX; and
# benchmarks/ucx_bandwidth's three forms of a slot.  Twin: ucx_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
require_ucx
export DFCCL_TRANSPORT=ucx
status=0
# Each connection says how it goes: over UCX, through TCP.
out=$(DFCCL_SHOW_TRANSPORT=1 run_mpi 2 test/mpi/test_random_order -i "${ITERATIONS:-200}" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 3
if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | grep -q "rank 0 -> 1: ucx (tcp)"; then
  echo "FAIL: 2 ranks over UCX (rc $rc), or no \"rank 0 -> 1: ucx (tcp)\" line"
  status=1
fi
run_mpi 4 test/mpi/test_random_order -i "${ITERATIONS:-200}" || status=1
DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=2 run_mpi 4 test/mpi/test_collectives -k allreduce -q ||
  status=1
DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=2 run_mpi 3 test/mpi/test_collectives -q || status=1
# Slots of exactly SPLIT_SLOT_BYTES (64 KiB: each slot as its run tag, then its bytes) beside the
# smaller slots of the smaller collectives (one iov message each), in one matrix.
DFCCL_SLOT_BYTES=65536 run_mpi 2 test/mpi/test_collectives -k allreduce -q || status=1
run_mpi 3 test/mpi/test_random_mix -i 50 || status=1
run_mpi 4 test/mpi/test_sync_between -i 50 || status=1
run_mpi 4 test/mpi/test_comm -i 20 || status=1
# DFCCL asks UCX for 256 KiB TCP segments unless the user set either segment size: a receive segment
# set smaller than that must leave both to UCX, which refuses a send segment above the receive one
# (ucp_worker_create fails: no run would start).
UCX_TCP_RX_SEG_SIZE=32K run_mpi 2 test/mpi/test_random_order -i 5 > /dev/null ||
  { echo "FAIL: UCX_TCP_RX_SEG_SIZE=32K (the user's segment size) was not left to UCX"; status=1; }
# And the user's setting reaches UCX untouched: a send segment above UCX's 64 KiB receive one is
# refused by UCX itself -- had DFCCL put its own sizes over it, the run would start.
out=$(UCX_TCP_TX_SEG_SIZE=128K run_mpi 2 test/mpi/test_random_order -i 1 2>&1)
printf '%s\n' "$out" | grep -q "ucp_worker_create failed" ||
  { echo "FAIL: UCX_TCP_TX_SEG_SIZE=128K did not reach UCX (no \"ucp_worker_create failed\")"; status=1; }
# UCX alone in the proxy's pattern, each form of a slot: the bytes arrive (the benchmark checks).
for form in bytes iov split; do
  run_mpi 2 benchmarks/ucx_bandwidth -b 1M -e 1M -n 2 -w 1 -p $form > /dev/null ||
    { echo "FAIL: benchmarks/ucx_bandwidth -p $form"; status=1; }
done
exit $status
