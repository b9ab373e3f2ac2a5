#!/bin/sh
# Disordered all-reduces with a device synchronization after each: completes through voluntary
# quit and relaunch.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_sync_between -i "${ITERATIONS_SYNC:-40}"
