#!/bin/sh
# Smoke test of benchmarks/out_of_order_bench (issue 15's out-of-order target) on 2 ranks, tiny
# sizes: it must exit 0, find every result exact and print its verdict line for each size.  Whether
# a line says PASS or MISS is not checked: timings of the host target on a CI machine mean nothing.
. "${top_srcdir:-.}/test/mpi/common.sh"
out=$(run_mpi 2 benchmarks/out_of_order_bench -s 4K,16K -k 4 -n 10 -w 2 -r 2 2>&1)
status=$?
printf '%s\n' "$out"
fail() {
  echo "FAIL: $*"
  exit 1
}
[ "$status" -eq 0 ] || fail "out_of_order_bench exited with $status"
for size in "4 KiB" "16 KiB"; do
  printf '%s\n' "$out" | grep -Eq "^out-of-order $size: random/fixed = [0-9]+\.[0-9]{2} \(target <= 1\.10\): (PASS|MISS)$" ||
    fail "no verdict line for $size"
done
printf '%s\n' "$out" | grep -q "^wrong elements: 0 (all results exact)$" || fail "no 'wrong elements: 0' line"
echo "PASS: exact results and a verdict line per size"
