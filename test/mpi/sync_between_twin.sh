#!/bin/sh
# Twin of sync_between.sh: with preemption off the daemon never quits, the first synchronization
# never returns, and the watchdog fires.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_sync_between -i 5
