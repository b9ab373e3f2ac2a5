#!/bin/sh
# Runs test_coverage (every predefined datatype and op, datatypes with and without gaps,
# communicators of one rank, ranks passing different kinds of memory) through coll/dfccl on the
# host execution target, on 2, 3 and 4 ranks (oversubscribed).  Environment: see common.sh.
#   coll_dfccl_host_target=simulated: "device" buffers are the host target's device memory
#   (dfcclMemAlloc), host buffers go to the previous component -- the decisions of a GPU machine.
#   coll_dfccl_host_target=host: host buffers run on DFCCL's host target (types and single phases).
# The program checks every result exactly and the component's MPI_T counters (routed, fallen
# back, local) for every call; a watchdog turns a hang into a failure.  Last, the mixed-memory
# phase's twin without the agreement on routes: it must hang (the watchdog fires).
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
failed=0
run() { # NP HOST_TARGET ARGS...
  np=$1 mode=$2
  shift 2
  log=$(mktemp)
  HOST_TARGET=$mode run_dfccl "$np" test_coverage --mca coll_dfccl_max_colls 512 -- "$@" >"$log" 2>&1
  rc=$?
  grep -E "^(types|layouts|single|mixed):|PASS|FAIL|rank [0-9]+:" "$log" | grep -v "coll:dfccl:" | head -n 40
  if [ $rc -ne 0 ] || ! grep -q '^PASS' "$log"; then
    echo "test_coverage np=$np host_target=$mode $*: FAILED (rc $rc)"; tail -n 20 "$log"; failed=1
  fi
  rm -f "$log"
}
for np in 2 3 4; do run "$np" simulated -m all -d device; done
run 2 host -m types -d host
run 3 host -m single -d host
# The twin: ranks that decide on their own buffers (coll_dfccl_agree_routes off) take different
# routes when one passes host memory and the others device memory, and wait for each other forever.
echo "twin: the mixed-memory calls with coll_dfccl_agree_routes=0"
HOST_TARGET=simulated TEST_TIMEOUT_S=60 expect_hang 2 test_coverage --mca coll_dfccl_agree_routes 0 -- \
  -m mixed -d device -w 10 || failed=1
exit $failed
