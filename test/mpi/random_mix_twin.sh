#!/bin/sh
# Twin of random_mix.sh: the same mix of the eight collectives (the v ones, all-to-all) in random
# orders with preemption off must hang (the watchdog fires): random_mix.sh passes because of
# preemption, not by luck.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_random_mix -i 20
