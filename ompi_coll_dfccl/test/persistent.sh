#!/bin/sh
# Runs test_persistent (the six persistent collectives, MPIX_..._init + MPI_Start/MPI_Startall)
# through coll/dfccl (host-target test mode) on 2 and 4 ranks, oversubscribed; the program checks
# its routes with MPI_T counters.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
run_checked test_persistent
