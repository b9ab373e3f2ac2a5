#!/bin/sh
# Twin of idle.sh: with a quit period of a minute the daemon stays after its run, and test_idle must
# see it and fail -- proof that it can tell a daemon that holds the GPU from one that left.
. "${top_srcdir:-.}/test/mpi/common.sh"
DFCCL_QUIT_PERIOD_US=60000000 expect_failure "still holds" "a daemon that stays is seen" \
  "test_idle did not see the daemon that stayed" 2 test/mpi/test_idle -r 1 -b 1048576 -W 1000
