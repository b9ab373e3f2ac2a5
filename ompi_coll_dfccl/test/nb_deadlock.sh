#!/bin/sh
# MPI-level deadlock patterns of nonblocking collectives (see test_nb_deadlock.c): on several
# communicators in a different order on every rank, the same with a device synchronization
# (dfcclHostSynchronize) at a random point on every rank, and runs that the component queues
# reaching the ranks' daemons in different orders.  All must complete, routed through DFCCL.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
status=0
for np in 2 4; do
  run_dfccl $np test_nb_deadlock -- -m cross -i "${ITERATIONS:-20}" || status=1
  run_dfccl $np test_nb_deadlock -- -m sync -i "${ITERATIONS:-20}" || status=1
  run_dfccl $np test_nb_deadlock --mca coll_dfccl_concurrent_runs 2 -- -m queue -p 2 -i "${ITERATIONS:-20}" || status=1
done
exit $status
