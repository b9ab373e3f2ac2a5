#!/bin/sh
# coll_dfccl_hang_report, the MCA twin of DFCCL_HANG_REPORT_S: a program that hangs (the cross
# pattern with preemption off) writes hang reports on every rank after that many seconds, naming
# the pending collectives; without the parameter it writes none.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
export DFCCL_PREEMPTION=0
unset DFCCL_HANG_REPORT_S
failed=0
for np in 2; do
  out=$(run_dfccl $np test_nb_deadlock --mca coll_dfccl_hang_report 1 -- -m cross -i 5 -w 6 2>&1)
  ranks=$(printf '%s\n' "$out" | sed -n 's/^dfccl-hang rank \([0-9]*\):.*/\1/p' | sort -u | tr '\n' ' ')
  printf '%s\n' "$out" | grep "^dfccl-hang rank" | head -n 4
  if [ "$ranks" = "0 1 " ] && printf '%s\n' "$out" | grep -q WATCHDOG; then
    echo "ok: --mca coll_dfccl_hang_report 1: ranks $ranks reported their pending collectives"
  else
    echo "FAIL: --mca coll_dfccl_hang_report 1: reports from ranks '$ranks' (expected 0 and 1)"; failed=1
  fi
done
out=$(run_dfccl 2 test_nb_deadlock -- -m cross -i 5 -w 4 2>&1)
if printf '%s\n' "$out" | grep -q "^dfccl-hang rank"; then
  echo "FAIL: hang reports without coll_dfccl_hang_report"; failed=1
else
  echo "ok: no parameter, no report"
fi
exit $failed
