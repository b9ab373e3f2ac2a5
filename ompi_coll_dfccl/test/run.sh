#!/bin/sh
# Runs test_allreduce (the blocking collectives) through coll/dfccl (host-target test mode) on 2
# and 4 ranks, oversubscribed.  Environment: see common.sh.
# Proof that dfccl did the work: the program checks the component's MPI_T counters (exact number of
# routed calls), and run_checked checks that coll_base_verbose reports dfccl selected.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
run_checked test_allreduce
