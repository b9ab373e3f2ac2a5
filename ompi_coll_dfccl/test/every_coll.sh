#!/bin/sh
# Runs test_every_coll (every collective of the coll framework that DFCCL does not route: on
# MPI_COMM_WORLD and uneven halves, MPI_COMM_SELF, an intercommunicator and two topologies, in the
# blocking, nonblocking and persistent forms) through coll/dfccl on the host execution target, on
# 2, 3 and 4 ranks (oversubscribed).  Environment: see common.sh.
#   -d device, coll_dfccl_host_target=simulated: the buffers are the host target's device memory
#   (dfcclMemAlloc), which the component must stage through host memory for Open MPI's own
#   components -- what issue 18's crashes were on a GPU machine.
#   -d host: host memory goes to the previous component as it is (the staged counters stay 0).
# The program checks every result exactly (holes, gaps and guards unchanged) and the component's
# MPI_T counters (fallback, staged, never routed) for every (communicator, collective, form); a
# watchdog turns a hang into a failure.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
failed=0
run() { # NP ARGS...
  np=$1
  shift
  log=$(mktemp)
  HOST_TARGET=simulated run_dfccl "$np" test_every_coll -- "$@" >"$log" 2>&1
  rc=$?
  grep -E "^(intra|single|inter|topo):|PASS|FAIL|WATCHDOG|rank [0-9]+:" "$log" | grep -v "coll:dfccl:" | head -n 40
  if [ $rc -ne 0 ] || ! grep -q '^PASS' "$log"; then
    echo "test_every_coll np=$np $*: FAILED (rc $rc)"; tail -n 20 "$log"; failed=1
  fi
  rm -f "$log"
}
for np in 2 3 4; do run "$np" -d device -f all -c all; done
run 2 -d host -f all -c all
exit $failed
