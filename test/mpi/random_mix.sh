#!/bin/sh
# All eight collectives (all-gather-v, reduce-scatter-v and all-to-all too) on overlapping groups, a different random order on every
# rank; then with device synchronizations at random points between the invocations.  Its twin
# without preemption: random_mix_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_random_mix -i "${ITERATIONS_MIX:-200}" &&
  run_mpi 4 test/mpi/test_random_mix -i "${ITERATIONS_MIX_SYNC:-30}" -y 10
