#!/bin/sh
# coll/dfccl on GPUs, with device buffers and without the host-target test mode (not part of CI):
# test_device's suite and its persistent collectives, then its cross and sync patterns (see
# test_device.c), then test_threads' MPI_THREAD_MULTIPLE pattern on device buffers.
# Usage: sh device.sh [NP]      NP ranks (default 2), each on GPU local_rank % device_count.
# Environment: ITERATIONS (default 1000) for cross and sync; TEST_TIMEOUT_S (default 600) and
# WATCHDOG_S (default 60) per part; CUDA_HOME (default /usr/local/cuda), whose lib64 goes on the
# loader path; and common.sh's.  Several ranks per GPU without MPS time-slice the GPU between
# their daemons (seconds per iteration): use ITERATIONS=20 or so there.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
np=${1:-2}
iterations=${ITERATIONS:-1000}
cuda_lib=${CUDA_HOME:-/usr/local/cuda}/lib64
[ -d "$cuda_lib" ] && export LD_LIBRARY_PATH="$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DFCCL_TARGET=cuda # mpirun.sh's default is the host target, for DFCCL's own tests

# run_device PART PROGRAM [ARGS...]: $testdir/PROGRAM through coll/dfccl, device buffers only
# (no coll_dfccl_host_target).  Passes when the program prints PASS and coll_base_verbose reports
# dfccl selected (and enabled) on at least NP communicator-ranks; SKIP when it found no GPU.
run_device() {
  part=$1
  prog=$2
  shift 2
  test -x "$testdir/$prog" || { echo "no $testdir/$prog"; return 1; }
  log=$(mktemp)
  timeout "${TEST_TIMEOUT_S:-600}" sh "$mpirun_sh" "$np" --mca coll_dfccl_priority 90 \
    --mca coll_base_verbose 10 --mca coll_dfccl_verbose 1 \
    "$testdir/$prog" -w "${WATCHDOG_S:-60}" "$@" >"$log" 2>&1
  rc=$?
  selected=$(grep -c "selecting *dfccl.*Enabled" "$log")
  grep -E "coll/dfccl:|WATCHDOG|PASS|FAIL|SKIP|^$part|rank [0-9]+:" "$log" | grep -v "coll:dfccl:" | tail -n 40
  if [ $rc -eq 0 ] && grep -q '^SKIP' "$log"; then
    echo "$part np=$np: SKIP (no GPU)"
  elif [ $rc -ne 0 ] || ! grep -qE '^PASS|: PASS$' "$log" || [ "$selected" -lt "$np" ]; then
    echo "$part np=$np: FAIL (rc $rc, dfccl selected $selected times)"
    tail -n 30 "$log"
    rm -f "$log"
    return 1
  else
    echo "$part np=$np: PASS (dfccl selected on $selected communicator-ranks)"
  fi
  rm -f "$log"
  return 0
}

status=0
run_device suite test_device -m suite || status=1
run_device persistent test_device -m persistent || status=1
run_device cross test_device -m cross -i "$iterations" -q || status=1
run_device sync test_device -m sync -i "$iterations" -q || status=1
run_device threads test_threads -g -i "$iterations" || status=1
exit $status
