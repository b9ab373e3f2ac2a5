#!/bin/sh
# Deregistration: ids re-registered as other collectives, hundreds of register/run/deregister
# cycles (more collectives than a context holds at once), misuse failing alike on every rank.
. "${top_srcdir:-.}/test/mpi/common.sh"
run_mpi 4 test/mpi/test_deregister
