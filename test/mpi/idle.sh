#!/bin/sh
# Idle costs nothing: after each run the daemon leaves within the quit period and holds no block;
# the next run relaunches it, exact.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 2 test/mpi/test_idle -r 5 -b 1048576
