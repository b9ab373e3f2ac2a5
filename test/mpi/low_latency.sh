#!/bin/sh
# Low-latency slots (core/kernel/low_latency.h, DFCCL_LL_BYTES): all-reduces by gathering whose
# channel shares move as lines that carry their own flags.  Results to the bit as the inputs summed
# in rank order (test_gather_reduce: 2, 3 and 4 ranks, registered and through a communicator, in and
# out of place, shares below and above the limit, one channel and two); the random-order program,
# whose runs are preempted at every step, all of its all-reduces on lines; and a ring of 4 ranks as
# two "hosts", whose links alternate between lines (within a host) and the network (Simple slots),
# so that steps receive one way and send the other.
. "${top_srcdir:-.}/test/mpi/common.sh"
export DFCCL_ALLREDUCE_GATHER_BYTES=65536 DFCCL_LL_BYTES=4096
for np in 2 3 4; do
  run_mpi $np test/mpi/test_gather_reduce -i 3 -g 65536 || exit 1
done
DFCCL_MIN_CHANNEL_BYTES=16384 run_mpi 3 test/mpi/test_gather_reduce -i 2 -g 65536 || exit 1
DFCCL_LL_BYTES=65536 run_mpi 4 test/mpi/test_random_order -i 30 || exit 1
# Ranks that size the lines differently are refused at once, naming the variable: their slots differ.
out=$(timeout 120 sh "$MPIRUN_SH" 2 sh -c \
  "DFCCL_LL_BYTES=\$((OMPI_COMM_WORLD_RANK * 1024)) exec $top_builddir/test/mpi/test_gather_reduce -i 1 -g 65536" 2>&1)
if printf '%s\n' "$out" | grep -q "DFCCL_LL_BYTES=1024: set it alike"; then
  echo "PASS: ranks that disagree on DFCCL_LL_BYTES are refused"
else
  printf '%s\n' "$out" | tail -n 12
  echo "FAIL: ranks that disagree on DFCCL_LL_BYTES were not refused"
  exit 1
fi
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
if DFCCL_TRANSPORT=ucx run_mpi 2 test/mpi/test_random_order -i 1 2>&1 | grep -q "has no UCX"; then
  echo "no UCX in this build: the mixed ring is not run"
  exit 0
fi
DFCCL_SHOW_TRANSPORT=1 timeout "${TEST_TIMEOUT_S:-600}" sh "$MPIRUN_SH" 4 sh -c \
  "DFCCL_HOST_ID=host\$((OMPI_COMM_WORLD_RANK / 2)) exec $top_builddir/test/mpi/test_gather_reduce -i 2 -g 65536"
