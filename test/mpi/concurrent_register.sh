#!/bin/sh
# Registrations on different groups from two threads per rank at once, in opposite orders on even
# and odd ranks (needs MPI_THREAD_MULTIPLE; the program says SKIP without it).
. "${top_srcdir:-.}/test/mpi/common.sh"
out=$(run_mpi 4 test/mpi/test_concurrent_register 2>&1)
status=$?
printf '%s\n' "$out"
if printf '%s\n' "$out" | grep -q '^SKIP:'; then exit 77; fi
exit $status
