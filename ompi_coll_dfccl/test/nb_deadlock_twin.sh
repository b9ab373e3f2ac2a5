#!/bin/sh
# Twins of nb_deadlock.sh's patterns: with DFCCL's preemption off, the runs that reach the ranks'
# daemons in different orders wait for each other forever, and the watchdog fires.  This shows that
# nb_deadlock.sh passes because of preemption, not by luck.  The queue pattern has no twin any more
# (test_nb_deadlock.c says why); its control (-c) must still complete without preemption.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
export DFCCL_PREEMPTION=0
run_dfccl 4 test_nb_deadlock --mca coll_dfccl_concurrent_runs 2 -- -m queue -p 2 -i 5 -c -w 60 2>&1 |
  grep -v "coll:dfccl" | grep "pattern" | grep -q PASS || { echo "FAIL: the control did not complete"; exit 1; }
echo "queue pattern's control (the same order everywhere, no preemption): completes"
# The cross-communicator pattern: the communicators' collectives share the process's one daemon,
# so without preemption the ranks' different interleavings hang too.
expect_hang 4 test_nb_deadlock -- -m cross -i 5 -w "${TWIN_WATCHDOG_S:-5}" || exit 1
# The synchronization pattern: a device synchronization waits for a daemon whose collectives can
# never complete (and which never gives up on them to quit).
expect_hang 4 test_nb_deadlock -- -m sync -i 5 -w "${TWIN_WATCHDOG_S:-5}" || exit 1
# MPI_THREAD_MULTIPLE: two threads' blocking calls on two communicators, in different orders on
# even and odd ranks, share the daemon too.
expect_hang 2 test_threads -- -i 5 -w "${TWIN_WATCHDOG_S:-5}" || exit 1
