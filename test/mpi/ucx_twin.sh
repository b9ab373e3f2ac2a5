#!/bin/sh
# Twin of ucx.sh: over the network transport too, the random-order program hangs without
# preemption (the watchdog fires) -- ucx.sh passes because of preemption, not because the proxy
# happened to order things.
. "${top_srcdir:-.}/test/mpi/common.sh"
. "${top_srcdir:-.}/test/mpi/ucx_common.sh"
require_ucx
DFCCL_TRANSPORT=ucx DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_random_order -i 20
