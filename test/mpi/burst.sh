#!/bin/sh
# A burst of thousands of runs on three communicators, submitted before any is waited for, in a
# different interleaving on every rank: first through a submission queue of 4 entries and
# completion rings of one slot, with 16 connector sets per communicator so that dozens of runs
# compete for those entries (-f: the test fails unless both queues were seen full); then the same
# with a daemon that quits after 0.5 ms without progress (a poller waiting to submit must relaunch
# it: only the poller does); then with the defaults; then in batches of 8 runs (dfcclSubmitBatch),
# through the small queues again, after a batch with a bad run that must be refused whole; then
# through the small queues with the main thread taking completions too (dfcclProgress: callbacks,
# and the queued runs they start, on it as well as on the poller).  Every callback exactly once,
# every result exact.
. "${top_srcdir:-.}/test/mpi/common.sh"
(
  export DFCCL_SQ_ENTRIES=4 DFCCL_CQ_SLOTS=1 DFCCL_COMM_SETS=16
  run_mpi 3 test/mpi/test_burst -n "${BURST_RUNS:-1000}" -f &&
    DFCCL_QUIT_PERIOD_US=500 run_mpi 3 test/mpi/test_burst -n "${BURST_RUNS_QUITTING:-300}" -f &&
    run_mpi 3 test/mpi/test_burst -n "${BURST_RUNS_BATCHED:-600}" -f -b 8 &&
    run_mpi 3 test/mpi/test_burst -n "${BURST_RUNS_PROGRESS:-600}" -f -p
) && run_mpi 3 test/mpi/test_burst -n "${BURST_RUNS_DEFAULTS:-400}"
