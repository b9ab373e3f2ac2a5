#!/bin/sh
# Hang reports name the rank the others wait for: with DFCCL_HANG_REPORT_S=1 the waiting ranks write
# reports while the last rank is 3 s late, and tools/dfccl-hang-report names that rank and the
# collective; then with reports asked for by SIGUSR1 on every rank, the late one's included, and
# rank 0's channel shows that nothing came from rank 2.
. "${top_srcdir:-.}/test/mpi/common.sh"
tool="${top_srcdir:-.}/tools/dfccl-hang-report"
command -v python3 > /dev/null || { echo "SKIP: no python3 for tools/dfccl-hang-report"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
check() { # DIR PATTERN WHAT: the tool's verdict on DIR names rank 2 and collective 5 (PATTERN)
  out=$("$tool" "$1")
  echo "$out"
  echo "$out" | grep -q "$2" || { echo "FAIL: $3: the tool did not name rank 2 and collective 5"; return 1; }
  echo "PASS: $3: the tool names the late rank"
}
what="all-reduce 1024 x int32 sum #1 (collective id 5) on ranks 0,1,2"
# Periodic reports come from the ranks that wait: the late one wrote none.
mkdir -p "$dir/periodic" &&
  DFCCL_HANG_REPORT_S=1 DFCCL_REPORT_DIR="$dir/periodic" run_mpi 3 test/mpi/test_hang_report -s 3 &&
  ls "$dir/periodic" &&
  check "$dir/periodic" "^rank 2 wrote no report: if it is not waiting in DFCCL, it has not called $what" \
    "DFCCL_HANG_REPORT_S=1" || exit 1
# SIGUSR1 on every rank: the late one's report shows that it has not submitted the run.
mkdir -p "$dir/signal" &&
  DFCCL_REPORT_DIR="$dir/signal" run_mpi 3 test/mpi/test_hang_report -s 2 -u &&
  ls "$dir/signal" &&
  check "$dir/signal" "^rank 2 has not called $what: ranks 0,1 wait for it .*rank 2 has submitted 0 runs of it" "SIGUSR1" || exit 1
# Each waiting channel says how far its connectors got: rank 0 (ring successor of the late rank 2)
# has nothing from rank 2 to take (the signal's reports come while rank 2 is still 2 s away).
grep -q "from rank 2: 0 posted, 0 taken, none waiting" "$dir/signal/dfccl-hang-rank0.txt" || {
  cat "$dir/signal/dfccl-hang-rank0.txt"
  echo "FAIL: rank 0's report does not show that nothing came from rank 2"
  exit 1
}
echo "PASS: rank 0's report shows that nothing came from rank 2"
"$tool" "$dir/signal" | grep -q "^  rank 0 channel 0: nothing from rank 2 left to take (0 posted, 0 taken)" || {
  "$tool" "$dir/signal"
  echo "FAIL: the tool does not say that rank 0 has nothing from rank 2 to take"
  exit 1
}
echo "PASS: the tool says that rank 0 has nothing from rank 2 to take"
