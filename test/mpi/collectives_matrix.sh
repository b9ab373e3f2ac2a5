#!/bin/sh
# The eight collectives (all-gather-v, reduce-scatter-v and all-to-all too): every data type x op x count x in/out of place x buffer offset x root,
# on 4 ranks (with subsets) and on 3 -- there with runs of both channels gated (DFCCL_GATE_CHANNELS=2:
# published before the host waits for the caller, block 1 passing the gate after block 0).
. "${top_srcdir:-.}/test/mpi/common.sh"
# Small channels and slots, so that counts span several channels, iterations and FIFO slots.
export DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=2
run_mpi 4 test/mpi/test_collectives -k allreduce && run_mpi 4 test/mpi/test_collectives -k others &&
  (export DFCCL_GATE_CHANNELS=2 && run_mpi 3 test/mpi/test_collectives -q)
