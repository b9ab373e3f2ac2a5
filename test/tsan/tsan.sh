#!/bin/sh
# ThreadSanitizer on the host runtime and the Open MPI component: a separate build with
# -fsanitize=thread (out of tree, in $top_builddir/tsan-build, from this tree's distribution files:
# `make distdir`), then, each process under TSan:
#   - the unit tests that start daemons and pollers (test_queues, test_registry, test_scheduler,
#     test_dead_peer);
#   - MPI tests of the core on the host target (sync_between, random_mix, comm, comm_async, failures,
#     hang_report, deregister, gather_reduce (all-reduce by gathering) and low_latency (the same
#     through low-latency slots), a burst whose main thread takes completions beside the poller,
#     concurrent_register -- two threads per rank --, and random_order over the network
#     transport), fewer iterations than make check;
#   - coll/dfccl's tests on the host target (run, nonblocking, persistent, threads -- two threads
#     per rank in MPI_THREAD_MULTIPLE --, timeout).
# Passes when no report concerns DFCCL's code (reports.awk says which do not); prints the reports
# and fails otherwise.  SKIP (77) when the compiler has no ThreadSanitizer runtime.
# Environment: TSAN_CC (default: cc), TSAN_JOBS (make -j, default 2), TSAN_KEEP=1 keeps the logs,
# TSAN_ONLY="NAME..." runs only those checks (the names it prints).
# Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
set -u
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
top_srcdir=$(cd "$top_srcdir" && pwd)
here="$top_srcdir/test/tsan"
work="$top_builddir/tsan-build"
cc=${TSAN_CC:-cc}
jobs=${TSAN_JOBS:-2}
flags='-fsanitize=thread -g -O1'
start=$(date +%s)
mkdir -p "$work"

# ---- the runtime ---------------------------------------------------------------------------------
probe="$work/probe"
cat >"$probe.c" <<'EOF'
#include <pthread.h>
static int shared;
static void* touch(void* arg) { __atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED); return arg; }
int main(void) { pthread_t t; pthread_create(&t, 0, touch, 0); touch(0); pthread_join(t, 0); return shared == 2 ? 0 : 1; }
EOF
# shellcheck disable=SC2086 # $flags are separate words on purpose
if ! $cc $flags -pthread "$probe.c" -o "$probe" >"$probe.log" 2>&1; then
  cat "$probe.log"
  echo "SKIP: $cc cannot link -fsanitize=thread (install gcc's libtsan2, or clang with its runtime)"
  exit 77
fi
# TSan's shadow memory needs the address space laid out as it expects; kernels with more mmap
# randomization than the runtime knows make it abort ("unexpected memory mapping").  Without
# address randomization (inherited by every process started below) it runs.
norand=
if ! "$probe" >"$probe.log" 2>&1; then
  if command -v setarch >/dev/null && setarch "$(uname -m)" -R "$probe" >/dev/null 2>&1; then
    norand="setarch $(uname -m) -R"
  else
    cat "$probe.log"
    echo "FAIL: a program built with $cc -fsanitize=thread does not run"
    exit 1
  fi
fi

# ---- the build -----------------------------------------------------------------------------------
# The distribution's files, copied over the last copy only where they changed (so a second run
# rebuilds only what changed), configured out of tree with TSan and without CUDA.
log="$work/build.log"
: >"$log"
fail_build() {
  tail -n 60 "$log"
  echo "FAIL: $1 (whole log: $log)"
  exit 1
}
# The recursive makes here are not the jobs of the make running this test.
unset MAKEFLAGS MFLAGS MAKELEVEL
rm -rf "$work/dist"
make -C "$top_builddir" distdir distdir=tsan-build/dist >>"$log" 2>&1 || fail_build "make distdir"
(cd "$work/dist" && find . -type f) | while read -r f; do
  cmp -s "$work/dist/$f" "$work/src/$f" 2>/dev/null && continue
  mkdir -p "$(dirname "$work/src/$f")" && cp -p "$work/dist/$f" "$work/src/$f"
done
rm -rf "$work/dist"
build="$work/build"
mkdir -p "$build"
if [ ! -f "$build/config.status" ] || [ -n "$(find "$work/src/configure" -newer "$build/config.status")" ]; then
  (cd "$build" && "$work/src/configure" --quiet --without-cuda CC="$cc" CFLAGS="$flags" LDFLAGS=-fsanitize=thread) \
    >>"$log" 2>&1 || fail_build "configure of the TSan build"
fi
have() { grep -q "^$1_TRUE=''" "$build/config.log"; }
unit="test/unit/test_queues test/unit/test_registry test/unit/test_scheduler test/unit/test_dead_peer"
core_mpi="test/mpi/test_sync_between test/mpi/test_random_mix test/mpi/test_comm test/mpi/test_failures \
test/mpi/test_hang_report test/mpi/test_random_order test/mpi/test_concurrent_register test/mpi/test_deregister \
test/mpi/test_burst test/mpi/test_gather_reduce test/mpi/test_comm_async"
component="mca_coll_dfccl.la test/test_allreduce test/test_nonblocking test/test_persistent test/test_threads \
test/test_timeout"
targets="libdfccl.la $unit"
have HAVE_MPI && targets="$targets $core_mpi"
# shellcheck disable=SC2086 # the lists are separate words on purpose
make -C "$build" -j"$jobs" $targets >>"$log" 2>&1 || fail_build "make of the TSan build"
if have HAVE_OMPI_COLL; then
  # shellcheck disable=SC2086
  make -C "$build/ompi_coll_dfccl" -j"$jobs" $component >>"$log" 2>&1 || fail_build "make of the TSan component"
fi
built=$(date +%s)
echo "TSan build ($cc $flags): $((built - start)) s"

# ---- the runs ------------------------------------------------------------------------------------
logs="$work/logs"
rm -rf "$logs"
# UCX (linked by libdfccl for the network transport, and by Open MPI) hooks mmap and madvise for
# its registration cache, which the host target never uses; glibc calls madvise on a thread's stack
# after TSan has let go of the exiting thread, and the hook crashes inside TSan's interceptor.
export UCX_MEM_MMAP_HOOK_MODE=none
export top_builddir="$build" top_srcdir="$work/src"
status=0
has_logs() {
  for f in "$1"/tsan.*; do [ -e "$f" ] && return 0; done
  return 1
}
# check NAME MODE COMMAND...: runs COMMAND with every process under TSan (log files in
# $logs/NAME); fails on a report about DFCCL's code, or when COMMAND fails.  MODE:
#   own          only DFCCL's threads meet (MPI on one thread): the first report ends the process
#                (exit 66);
#   mpi          Open MPI's code runs on a DFCCL thread (the component's progress callback): the
#                process goes on and exits as it would, and reports.awk judges the logs;
#   mpi_threads  as mpi, with two threads of a rank inside Open MPI at once (MPI_THREAD_MULTIPLE).
#                Open MPI's progress engine then copies a message on one thread into the buffer of
#                the MPI call that the other thread made, which reads it once the call returns --
#                ordered by a request completion inside Open MPI, which TSan cannot see, and which
#                it may not even be able to name (an access whose stack it cannot restore).  So
#                TSan ignores the memory accesses of libc calls (memcpy, free ...) in these runs
#                (ignore_interceptors_accesses; their synchronization still counts); every load and
#                store of DFCCL's code is still checked, and its libc calls are in the other runs.
check() {
  name=$1
  mode=$2
  shift 2
  case " ${TSAN_ONLY:-$name} " in *" $name "*) ;; *) return 0 ;; esac
  mkdir -p "$logs/$name"
  t0=$(date +%s)
  case $mode in
    own) opts="halt_on_error=1 exitcode=66" ;;
    mpi) opts="halt_on_error=0 exitcode=0" ;;
    *) opts="halt_on_error=0 exitcode=0 ignore_interceptors_accesses=1" ;;
  esac
  TSAN_OPTIONS="$opts second_deadlock_stack=1 history_size=7 log_path=$logs/$name/tsan" \
    $norand "$@" >"$logs/$name/output" 2>&1
  rc=$?
  verdict="tsan: no reports" # a process writes its log file only when it has something to say
  arc=0
  if has_logs "$logs/$name"; then
    verdict=$(awk -f "$here/reports.awk" "$logs/$name"/tsan.*)
    arc=$?
  fi
  t1=$(date +%s)
  if [ $rc -eq 77 ] && [ $arc -eq 0 ]; then
    echo "$name: skipped ($(tail -n 1 "$logs/$name/output"))"
  elif [ $rc -eq 0 ] && [ $arc -eq 0 ]; then
    echo "$name: ok ($((t1 - t0)) s; $(printf '%s\n' "$verdict" | tail -n 1))"
  else
    status=1
    [ $arc -eq 0 ] || printf '%s\n' "$verdict"
    echo "--- $name: output (last lines)"
    tail -n 25 "$logs/$name/output"
    echo "$name: FAILED (exit $rc; $(printf '%s\n' "$verdict" | tail -n 1))"
  fi
}

for t in $unit; do
  check "${t##*/}" own "$build/$t"
done
if have HAVE_MPI; then
  mpi="$top_srcdir/test/mpi"
  check sync_between own env ITERATIONS_SYNC=10 sh "$mpi/sync_between.sh"
  check random_mix own env ITERATIONS_MIX=30 ITERATIONS_MIX_SYNC=10 sh "$mpi/random_mix.sh"
  check comm own env ITERATIONS_COMM=6 ITERATIONS_COMM_SYNC=4 sh "$mpi/comm.sh"
  # Nonblocking creations tested by the main thread while DFCCL's threads make them; runs held.
  check comm_async own env ITERATIONS_COMM_ASYNC=4 sh "$mpi/comm_async.sh"
  check failures own sh "$mpi/failures.sh"
  check hang_report own sh "$mpi/hang_report.sh"
  check deregister own sh "$mpi/deregister.sh"
  # All-reduce by gathering: slots kept past their receive and freed at once (over UCX too).
  check gather_reduce own sh "$mpi/gather_reduce.sh"
  # The same through low-latency slots: lines stored and polled whole, the Simple slot unpacked into.
  check low_latency own sh "$mpi/low_latency.sh"
  # The main thread takes completions (dfcclProgress) beside the poller, through full queues.
  # shellcheck disable=SC2016 # expanded by that sh, from the exported top_srcdir
  check burst_progress own env DFCCL_SQ_ENTRIES=4 DFCCL_CQ_SLOTS=1 DFCCL_COMM_SETS=16 sh -c \
    '. "$top_srcdir/test/mpi/common.sh" && run_mpi 3 test/mpi/test_burst -n 200 -p'
  # Two threads per rank registering at once: the MPI bootstrap runs on both (MPI_THREAD_MULTIPLE).
  check concurrent_register mpi_threads sh "$mpi/concurrent_register.sh"
  if have HAVE_UCX; then # the network proxy's thread beside the daemon's
    # shellcheck disable=SC2016 # expanded by that sh, from the exported top_srcdir
    check random_order_ucx own env DFCCL_TRANSPORT=ucx sh -c \
      '. "$top_srcdir/test/mpi/common.sh" && run_mpi 3 test/mpi/test_random_order -i 30'
    # Two lanes: two proxy threads, each with its UCX worker, moving the channels of one link.
    # shellcheck disable=SC2016
    check random_order_ucx_lanes own env DFCCL_TRANSPORT=ucx DFCCL_NET_LANES=2 DFCCL_MAX_CHANNELS=4 \
      DFCCL_MIN_CHANNEL_BYTES=65536 sh -c \
      '. "$top_srcdir/test/mpi/common.sh" && run_mpi 2 test/mpi/test_random_order -i 20'
  fi
fi
if have HAVE_OMPI_COLL; then
  export DFCCL_COMPONENT_DIR="$build/ompi_coll_dfccl/.libs" DFCCL_TEST_DIR="$build/ompi_coll_dfccl/test"
  export MPIRUN_SH="$top_srcdir/test/mpi/mpirun.sh" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  comp="$top_srcdir/ompi_coll_dfccl/test"
  for t in run nonblocking persistent timeout; do
    check "coll_dfccl_$t" mpi sh "$comp/$t.sh"
  done
  check coll_dfccl_threads mpi_threads env ITERATIONS=10 sh "$comp/threads.sh"
fi
end=$(date +%s)
echo "ThreadSanitizer: build $((built - start)) s, runs $((end - built)) s"
[ "${TSAN_KEEP:-0}" = 1 ] || [ $status -ne 0 ] || rm -rf "$logs"
exit $status
