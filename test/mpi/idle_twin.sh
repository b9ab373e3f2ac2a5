#!/bin/sh
# Twin of idle.sh: with a quit period of a minute the daemon stays after its run, and test_idle must
# see it and fail -- proof that it can tell a daemon that holds the GPU from one that left.
. "${top_srcdir:-.}/test/mpi/common.sh"
out=$(DFCCL_QUIT_PERIOD_US=60000000 run_mpi 2 test/mpi/test_idle -r 1 -b 1048576 -W 1000 2>&1)
status=$?
printf '%s\n' "$out" | tail -n 8
if [ "$status" -ne 0 ] && printf '%s\n' "$out" | grep -q "still holds"; then
  echo "PASS: a daemon that stays is seen (exit $status)"
  exit 0
fi
echo "FAIL: test_idle did not see the daemon that stayed (exit $status)"
exit 1
