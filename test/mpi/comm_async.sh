#!/bin/sh
# Nonblocking communicator creation: four communicators started in a different order on every
# rank, with a blocking neighbour exchange between two starts, driven in yet another order; then
# exact runs on each, and their destruction.  At 2 and 4 processes.  Its twin: comm_async_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 2 test/mpi/test_comm_async -i "${ITERATIONS_COMM_ASYNC:-10}" &&
  run_mpi 4 test/mpi/test_comm_async -i "${ITERATIONS_COMM_ASYNC:-10}"
