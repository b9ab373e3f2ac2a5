#!/bin/sh
# MPI_THREAD_MULTIPLE: two threads per rank, blocking collectives on a communicator each, in
# different orders on different ranks (test_threads.c).  2 and 4 ranks; SKIP (77) without
# MPI_THREAD_MULTIPLE.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
status=0
for np in 2 4; do
  out=$(run_dfccl $np test_threads -- -i "${ITERATIONS:-30}" 2>&1)
  rc=$?
  printf '%s\n' "$out" | grep -v "^coll:dfccl" | tail -n 5
  if printf '%s\n' "$out" | grep -q "^SKIP"; then exit 77; fi
  [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q "PASS" || status=1
done
exit $status
