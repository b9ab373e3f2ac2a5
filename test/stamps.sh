#!/bin/sh
# The per-run stamps build (./configure --enable-stamps; core/kernel/stamps.h, core/stamps.c) on
# the host target: the distribution configured out of tree with the option, test_gather_reduce at
# 2 ranks by gathering, and each rank's report must name the daemon's points from the SQE seen to
# the CQE (the hop's sent and received among them) and the host's from the call to the callback;
# with DFCCL_TRACE_FILE each rank writes block 0's event trace, which benchmarks/trace_report.py reads.
# Keeps the diagnostic build compiling and its report whole; what the numbers mean is
# docs/design.md's "Per-run stamps".  Skipped (77) without MPI.
#
# Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
set -u
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
work="$top_builddir/stamps-build"
log="$work/build.log"
rm -rf "$work"
mkdir -p "$work"
fail() {
  tail -n 40 "$2"
  echo "FAIL: $1 (whole log: $2)"
  exit 1
}
# The recursive makes here are not the jobs of the make running this test.
unset MAKEFLAGS MFLAGS MAKELEVEL
make -C "$top_builddir" distdir distdir=stamps-build/src >"$log" 2>&1 || fail "make distdir" "$log"
mkdir -p "$work/build"
(cd "$work/build" && ../src/configure --quiet --without-cuda --disable-ompi-coll --enable-stamps) >>"$log" 2>&1 ||
  fail "configure --enable-stamps" "$log"
grep -q "^HAVE_MPI_TRUE=''" "$work/build/config.log" || {
  echo "SKIP: no MPI (the stamps build is checked through test_gather_reduce)"
  exit 77
}
make -C "$work/build" -j2 libdfccl.la test/mpi/test_gather_reduce >>"$log" 2>&1 || fail "make of the stamps build" "$log"

out="$work/run.log"
(cd "$work/build" && DFCCL_TARGET=host DFCCL_ALLREDUCE_GATHER_BYTES=65536 DFCCL_TRACE_FILE="$work/trace" \
  sh "$work/src/test/mpi/mpirun.sh" 2 test/mpi/test_gather_reduce -i 2 -g 65536) >"$out" 2>&1 ||
  fail "test_gather_reduce on the stamps build" "$out"
status=0
for rank in 0 1; do
  report=$(grep "^dfccl: rank $rank: " "$out") # every line of a report names its rank
  runs=$(echo "$report" | sed -n 's/.*stamps of \([0-9]*\) runs.*/\1/p')
  if [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
    echo "FAIL: rank $rank printed no stamps report (or one of no runs)"
    status=1
    continue
  fi
  for point in "seen > taken" "sent > received" "received > executed" "complete > cqe" "seen > cqe" "looked > seen" \
    "look before > looked" "call > publish" "completion > callback done" "published > seen + cqe > completion"; do
    case $report in
    *"$point "*) ;;
    *)
      echo "FAIL: rank $rank's report lacks \"$point\""
      status=1
      ;;
    esac
  done
  [ "$status" = 0 ] && echo "rank $rank: $runs runs stamped"
done
# The event trace (DFCCL_TRACE_FILE): each rank's file holds every run's way from taken to CQE.
for rank in 0 1; do
  for event in taken run sent received executed cqe; do
    grep -q "^[0-9]* $event " "$work/trace.$rank" 2>/dev/null || {
      echo "FAIL: rank $rank's event trace ($work/trace.$rank) has no \"$event\" event"
      status=1
    }
  done
done
if [ "$status" = 0 ] && command -v python3 >/dev/null; then
  python3 "$work/src/benchmarks/trace_report.py" "$work/trace" --timeline 0 >"$work/trace.txt" 2>&1 &&
    grep -q "iterations in one order" "$work/trace.txt" || {
    cat "$work/trace.txt"
    echo "FAIL: benchmarks/trace_report.py did not read the traces"
    status=1
  }
fi
[ "$status" = 0 ] || {
  cat "$out"
  exit 1
}
echo "stamps: the report names every point on both ranks; the event traces hold every run's events"
