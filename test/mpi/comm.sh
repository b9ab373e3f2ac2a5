#!/bin/sh
# Communicators and descriptors: collectives of six kinds on overlapping communicators, a new shape
# every iteration, interleaved in a different random order on every rank, runs waiting for their
# connector sets; then with device synchronizations at random points, with channels so small that
# one connector set's runs take one or two channels (a daemon block that reads a run's entry late
# must go by that run's channels, not the next run's).  Each run ends with the v kinds as
# descriptors (bad blocks, two tables alternating, more layouts than a communicator keeps, all its
# tables held).  Its twin without preemption: comm_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_comm -i "${ITERATIONS_COMM:-40}" &&
  DFCCL_MIN_CHANNEL_BYTES=2048 DFCCL_MAX_CHANNELS=2 run_mpi 4 test/mpi/test_comm -i "${ITERATIONS_COMM_SYNC:-20}" -y 5
