#!/bin/sh
# Twin of soak.sh: the same mix with preemption off must hang (the watchdog fires): the soak passes
# because of preemption, not by luck.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-10} expect_hang 3 test/mpi/test_soak -t 120 -m 4096
