#!/bin/sh
# Collectives that cannot complete end with an error on every rank, and the processes go on.
#  - a rank skips a collective, DFCCL_TIMEOUT_S=1: the others' run fails with dfcclTimedOut within
#    2 s, the skipping rank's next run fails too, later runs are refused; the hang report written
#    at the timeout names the skipping rank (tools/dfccl-hang-report);
#  - ranks disagree on a count: every rank's run fails with dfcclMismatch, no timeout needed;
#  - both at 3 ranks, then at 2.
. "${top_srcdir:-.}/test/mpi/common.sh"
tool="${top_srcdir:-.}/tools/dfccl-hang-report"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for np in 3 2; do
  mkdir -p "$dir/$np"
  DFCCL_TIMEOUT_S=1 DFCCL_REPORT_DIR="$dir/$np" run_mpi "$np" test/mpi/test_failures -m skip || {
    echo "FAIL: skip at $np ranks"
    exit 1
  }
  if command -v python3 > /dev/null; then
    out=$("$tool" "$dir/$np")
    echo "$out"
    last=$((np - 1))
    echo "$out" | grep -q "^rank $last .*has not called .*all-reduce" || {
      echo "FAIL: the report written at the timeout does not name rank $last"
      exit 1
    }
    echo "PASS: the hang report written at the timeout names rank $last"
  fi
  run_mpi "$np" test/mpi/test_failures -m mismatch || { echo "FAIL: mismatch at $np ranks"; exit 1; }
done
echo "PASS: timeouts and mismatches end with errors on every rank"
