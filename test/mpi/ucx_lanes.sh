#!/bin/sh
# The network transport over several lanes (DFCCL_NET_LANES: UCX workers, each with its endpoints
# and proxy thread; channel c over lane c % lanes on both ends): the all-reduce matrix on 4 channels
# over 3 lanes (a lane with two channels, lanes with one), the random-order program and the
# device-synchronization program on 2 lanes, every connection saying its lanes -- all exact; ranks
# that run different lane counts, and a count out of range, get an error naming DFCCL_NET_LANES.
# (A receiver posting on the wrong lane's worker fails the matrix: seen with that mutation, whose
# runs never complete -- with DFCCL_TIMEOUT_S=20 they time out and the matrix reports wrong elements.)  The preemption-off twin of the transport is ucx_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
require_ucx
export DFCCL_TRANSPORT=ucx
status=0
DFCCL_NET_LANES=3 DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=4 \
  run_mpi 4 test/mpi/test_collectives -k allreduce -q || status=1
out=$(DFCCL_NET_LANES=2 DFCCL_SHOW_TRANSPORT=1 run_mpi 2 test/mpi/test_random_order -i "${ITERATIONS:-100}" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 3
if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | grep -q "rank 0 -> 1: ucx (tcp, 2 lanes)"; then
  echo "FAIL: 2 ranks over 2 lanes (rc $rc), or no \"rank 0 -> 1: ucx (tcp, 2 lanes)\" line"
  status=1
fi
DFCCL_NET_LANES=2 run_mpi 3 test/mpi/test_sync_between -i 20 || status=1
# Rank r runs r + 1 lanes: each side names the other's count, and nothing hangs.
out=$(timeout 120 sh "$MPIRUN_SH" 2 sh -c 'DFCCL_NET_LANES=$((OMPI_COMM_WORLD_RANK + 1)) exec "$0" "$@"' \
  "$top_builddir/test/mpi/test_random_order" -i 2 2>&1)
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! printf '%s\n' "$out" | grep -q "set DFCCL_NET_LANES alike on every rank"; then
  printf '%s\n' "$out" | tail -n 5
  echo "FAIL: ranks of 1 and 2 lanes (rc $rc) did not fail with an error naming DFCCL_NET_LANES"
  status=1
fi
for bad in 0 9 two; do
  out=$(DFCCL_NET_LANES=$bad run_mpi 2 test/mpi/test_random_order -i 1 2>&1)
  rc=$?
  if [ $rc -eq 0 ] || ! printf '%s\n' "$out" | grep -q "DFCCL_NET_LANES=\"$bad\""; then
    echo "FAIL: DFCCL_NET_LANES=$bad (rc $rc) did not fail naming the variable"
    status=1
  fi
done
[ $status -eq 0 ] && echo "PASS: lanes"
exit $status
