#!/bin/sh
# All five collectives on overlapping groups, a different random order on every rank.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_random_mix -i "${ITERATIONS_MIX:-200}"
