# Helpers for the coll/dfccl test scripts (sourced): where the component, the test programs and
# mpirun.sh are, and the component path that makes Open MPI load coll/dfccl.
#   $DFCCL_COMPONENT_DIR (default ../.libs, libtool's uninstalled .so), $DFCCL_TEST_DIR (default this
#   directory), $MPIRUN_SH (default ../../test/mpi/mpirun.sh), relative to this script.
here=$(cd "$(dirname "$0")" && pwd)
sodir=${DFCCL_COMPONENT_DIR:-$here/../.libs}
testdir=${DFCCL_TEST_DIR:-$here}
mpirun_sh=${MPIRUN_SH:-$here/../../test/mpi/mpirun.sh}
test -f "$sodir/mca_coll_dfccl.so" || { echo "no $sodir/mca_coll_dfccl.so"; exit 1; }
# The component path replaces the default one: keep Open MPI's own components (SYS_DEFAULT).
export OMPI_MCA_mca_base_component_path="$sodir:SYS_DEFAULT"

# run_dfccl NP PROGRAM [MPIRUN OPTIONS...] -- [ARGS...]: $testdir/PROGRAM through coll/dfccl in the
# host-target test mode ($HOST_TARGET: coll_dfccl_host_target, default host), oversubscribed.
run_dfccl() {
  np=$1
  prog=$2
  shift 2
  opts=
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts="$opts $1"; shift; done
  [ $# -gt 0 ] && shift
  test -x "$testdir/$prog" || { echo "no $testdir/$prog"; return 1; }
  # shellcheck disable=SC2086 # opts are separate words on purpose
  timeout "${TEST_TIMEOUT_S:-300}" sh "$mpirun_sh" "$np" --mca coll_dfccl_host_target "${HOST_TARGET:-host}" \
    --mca coll_dfccl_priority 90 $opts "$testdir/$prog" "$@"
}

# run_checked PROGRAM: on 2 and 4 ranks; passes when the program prints PASS and
# coll_base_verbose reports dfccl selected on every rank.
run_checked() {
  status=0
  for np in 2 4; do
    log=$(mktemp)
    run_dfccl "$np" "$1" --mca coll_base_verbose 10 --mca coll_dfccl_verbose 1 >"$log" 2>&1
    rc=$?
    selected=$(grep -c "selecting *dfccl" "$log")
    destroyed=$(grep -c "left DFCCL" "$log")
    grep -E "coll/dfccl:|PASS|FAIL|rank [0-9]+:" "$log" | grep -v "coll:dfccl:"
    if [ $rc -ne 0 ] || ! grep -q '^PASS' "$log" || [ "$selected" -lt "$np" ]; then
      echo "$1 np=$np: FAILED (rc $rc, dfccl selected $selected times)"; tail -n 30 "$log"; status=1
    else
      echo "$1 np=$np: ok (dfccl selected on $selected communicator-ranks, $destroyed left DFCCL at free/finalize)"
    fi
    rm -f "$log"
  done
  return $status
}

# expect_hang NP PROGRAM [MPIRUN OPTIONS...] -- [ARGS...]: passes when the program hangs and its
# watchdog catches it (it prints WATCHDOG and exits with 42).
expect_hang() {
  out=$(run_dfccl "$@" 2>&1)
  status=$?
  printf '%s\n' "$out" | grep -v "^coll:dfccl" | tail -n 8
  if [ "$status" -ne 0 ] && printf '%s\n' "$out" | grep -q "WATCHDOG"; then
    echo "PASS: the program hangs, and the watchdog caught it (exit $status)"
    return 0
  fi
  echo "FAIL: the twin did not hang (exit $status)"
  return 1
}
