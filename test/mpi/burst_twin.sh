#!/bin/sh
# Twin of burst.sh: a poller that simply waits when it must submit to a full submission queue
# (DFCCL_POLLER_SET_ASIDE=0) deadlocks with daemon block 0, which waits for the poller to empty its
# completion ring before it forwards new entries: the burst stops (the watchdog fires, or a
# submission times out).  burst.sh passes because the poller takes completions aside while it waits.
. "${top_srcdir:-.}/test/mpi/common.sh"
out=$(DFCCL_POLLER_SET_ASIDE=0 DFCCL_SQ_ENTRIES=4 DFCCL_CQ_SLOTS=1 DFCCL_COMM_SETS=16 \
  TEST_WATCHDOG_S=${TWIN_WATCHDOG_S:-15} run_mpi 3 test/mpi/test_burst -n 1000 2>&1)
status=$?
printf '%s\n' "$out" | grep -v "^\[" | tail -n 8
if [ "$status" -ne 0 ] && printf '%s\n' "$out" | grep -q "WATCHDOG\|submission queue full"; then
  echo "PASS: without setting completions aside the burst deadlocks (exit $status)"
  exit 0
fi
echo "FAIL: the twin did not deadlock (exit $status)"
exit 1
