#!/bin/sh
# Twin of comm.sh: the same communicators' runs in random interleavings with preemption off must
# hang (the watchdog fires): comm.sh passes because of preemption, not by luck.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_comm -i 20
