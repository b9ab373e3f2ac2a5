# Helpers for the MPI test scripts (sourced).
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
MPIRUN_SH="$top_srcdir/test/mpi/mpirun.sh"

run_mpi() {
  np=$1
  prog=$2
  shift 2
  timeout "${TEST_TIMEOUT_S:-600}" sh "$MPIRUN_SH" "$np" "$top_builddir/$prog" "$@"
}

# Passes when the program hangs and its watchdog catches it.
expect_hang() {
  out=$(run_mpi "$@" 2>&1)
  status=$?
  printf '%s\n' "$out" | tail -n 20
  if [ "$status" -ne 0 ] && printf '%s\n' "$out" | grep -q "WATCHDOG"; then
    echo "PASS: without preemption the program hangs, and the watchdog caught it (exit $status)"
    return 0
  fi
  echo "FAIL: the twin without preemption did not hang (exit $status)"
  return 1
}
