#!/bin/sh
# The eight collectives (all-gather-v, reduce-scatter-v and all-to-all too): every data type x op x count x in/out of place x buffer offset x root,
# on 4 ranks (with subsets), its runs gated (the default: published before the host waits for the
# caller, block 1 passing the gate after block 0), and on 3 with only one-channel runs gated
# (DFCCL_GATE_CHANNELS=1: runs of two channels wait for the caller before they are published).
. "${top_srcdir:-.}/test/mpi/common.sh"
# Small channels and slots, so that counts span several channels, iterations and FIFO slots.
export DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=2
run_mpi 4 test/mpi/test_collectives -k allreduce && run_mpi 4 test/mpi/test_collectives -k others &&
  (export DFCCL_GATE_CHANNELS=1 && run_mpi 3 test/mpi/test_collectives -q)
