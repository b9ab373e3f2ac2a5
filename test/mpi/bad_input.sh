#!/bin/sh
# Bad input gets clear error codes, never a hang or a crash.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 2 test/mpi/test_bad_input
