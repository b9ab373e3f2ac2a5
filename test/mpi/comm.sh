#!/bin/sh
# Communicators and descriptors: collectives of six kinds on overlapping communicators, a new shape
# every iteration, interleaved in a different random order on every rank, runs waiting for their
# connector sets; then with device synchronizations at random points.  Its twin without
# preemption: comm_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_comm -i "${ITERATIONS_COMM:-40}" &&
  run_mpi 4 test/mpi/test_comm -i "${ITERATIONS_COMM_SYNC:-10}" -y 10
