#!/bin/sh
# Builds DFCCL if needed and runs its test suite (host execution target; no GPU needed).
# The last line is "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
if [ ! -f Makefile ]; then
  { [ -x configure ] || ./autogen.sh; } && ./configure --quiet || { echo "0 passed, 1 failed"; exit 1; }
fi
make -j2 >/dev/null 2>make-build.log || { cat make-build.log; echo "0 passed, 1 failed"; exit 1; }
# Tests run one at a time: each MPI test already oversubscribes the machine.
make -j1 check
status=$?
passed=0
failed=0
for trs in $(find . -name '*.trs'); do
  result=$(sed -n 's/^:test-result: //p' "$trs")
  case $result in
    PASS|XFAIL|SKIP) passed=$((passed + 1)) ;;
    *) failed=$((failed + 1)); echo "failed: ${trs%.trs}" ;;
  esac
done
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
