#!/bin/sh
# All-reduces by gathering (DFCCL_ALLREDUCE_GATHER_BYTES): results to the bit as the inputs summed
# in rank order, on 2, 3 and 4 ranks, registered and through a communicator, in and out of place,
# beside ring-sized ones, on one channel and on two; then the random-order program with the
# gathering on (its runs preempted at every step of the new algorithm).
. "${top_srcdir:-.}/test/mpi/common.sh"
export DFCCL_ALLREDUCE_GATHER_BYTES=65536
for np in 2 3 4; do
  run_mpi $np test/mpi/test_gather_reduce -i 3 -g 65536 || exit 1
done
# Runs of two channels, each gathering its share (the host target's channels begin at 1 MiB).
for np in 2 3; do
  DFCCL_MIN_CHANNEL_BYTES=16384 run_mpi $np test/mpi/test_gather_reduce -i 2 -g 65536 || exit 1
done
# Its 64 KiB all-reduce on two channels, the smaller ones on one.
DFCCL_MIN_CHANNEL_BYTES=16384 run_mpi 4 test/mpi/test_random_order -i 30 || exit 1
# Over the network transport too (its proxy returns credits as the kept slots are freed at once).
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
if DFCCL_TRANSPORT=ucx run_mpi 2 test/mpi/test_random_order -i 1 2>&1 | grep -q "has no UCX"; then
  echo "no UCX in this build: the network part is not run"
else
  DFCCL_TRANSPORT=ucx run_mpi 3 test/mpi/test_gather_reduce -i 2 -g 65536 || exit 1
  DFCCL_TRANSPORT=ucx DFCCL_MIN_CHANNEL_BYTES=16384 run_mpi 2 test/mpi/test_gather_reduce -i 2 -g 65536
fi
