#!/bin/sh
# Soak on the host target: for SOAK_SECONDS (default 150), the five collectives in random mixes on
# three communicators from two threads, with device synchronizations, frees and re-registrations at
# random points (test_soak.c): 0 wrong, no hang (the watchdog), memory flat.  The GPU machine runs
# it for 8 minutes (test/gpu/run.sh PART=soak).  Its twin without preemption: soak_twin.sh.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 3 test/mpi/test_soak -t "${SOAK_SECONDS:-150}" -m 4096 -p 30
