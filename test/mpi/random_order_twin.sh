#!/bin/sh
# Twin of random_order.sh: the same program with preemption off must hang (the watchdog fires),
# which shows that random_order.sh passes because of preemption, not by luck.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_random_order -i 20
