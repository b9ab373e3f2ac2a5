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

# expect_failure PATTERN PASSED FAILED NP PROGRAM ARGS...: passes when the program fails and its
# output says PATTERN -- a twin that shows what the mechanism it lacks prevents.  PASSED and FAILED:
# the sentences of the verdict.
expect_failure() {
  ef_pattern=$1 # sh has no local variables: names no caller uses (ucx_netns.sh counts in "failed")
  ef_passed=$2
  ef_failed=$3
  shift 3
  out=$(run_mpi "$@" 2>&1)
  status=$?
  printf '%s\n' "$out" | tail -n 20
  if [ "$status" -ne 0 ] && printf '%s\n' "$out" | grep -q "$ef_pattern"; then
    echo "PASS: $ef_passed (exit $status)"
    return 0
  fi
  echo "FAIL: $ef_failed (exit $status)"
  return 1
}

# Passes when the program hangs and its watchdog catches it.
expect_hang() {
  expect_failure WATCHDOG "without preemption the program hangs, and the watchdog caught it" \
    "the twin without preemption did not hang" "$@"
}
