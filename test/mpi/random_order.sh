#!/bin/sh
# The paper's first deadlock program: 8 all-reduces in a different random order on every rank.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_random_order -i "${ITERATIONS:-200}"
