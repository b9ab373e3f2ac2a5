#!/bin/sh
# Twin of comm_async.sh: each creation waited for where it starts, as a blocking creation would be,
# must hang (the watchdog fires): comm_async.sh passes because the creations do not wait.
. "${top_srcdir:-.}/test/mpi/common.sh"
TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-8} expect_hang 4 test/mpi/test_comm_async -i 2 -b
