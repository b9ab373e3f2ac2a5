#!/bin/sh
# Runs test_allreduce through coll/dfccl (host-target test mode) on 2 and 4 ranks, oversubscribed.
# Usage: run.sh [DIR_OF_mca_coll_dfccl.so [TEST_PROGRAM]]
#   defaults: $DFCCL_COMPONENT_DIR or ../.libs (libtool's uninstalled .so), $DFCCL_TEST_PROGRAM or
#   ./test_allreduce, relative to this script; $MPIRUN_SH or ../../test/mpi/mpirun.sh.
# Proof that dfccl did the work: the program checks the component's MPI_T counters (exact number of
# routed calls), and this script checks that coll_base_verbose reports dfccl selected.
here=$(cd "$(dirname "$0")" && pwd)
sodir=${1:-${DFCCL_COMPONENT_DIR:-$here/../.libs}}
prog=${2:-${DFCCL_TEST_PROGRAM:-$here/test_allreduce}}
mpirun_sh=${MPIRUN_SH:-$here/../../test/mpi/mpirun.sh}
test -f "$sodir/mca_coll_dfccl.so" || { echo "no $sodir/mca_coll_dfccl.so"; exit 1; }
test -x "$prog" || { echo "no $prog"; exit 1; }
# The component path replaces the default one: keep Open MPI's own components (SYS_DEFAULT).
export OMPI_MCA_mca_base_component_path="$sodir:SYS_DEFAULT"
status=0
for np in 2 4; do
  log=$(mktemp)
  timeout "${TEST_TIMEOUT_S:-300}" sh "$mpirun_sh" "$np" --mca coll_dfccl_host_target 1 --mca coll_dfccl_priority 90 \
    --mca coll_base_verbose 10 --mca coll_dfccl_verbose 1 "$prog" >"$log" 2>&1
  rc=$?
  selected=$(grep -c "selecting *dfccl" "$log")
  destroyed=$(grep -c "context of comm .* destroyed" "$log")
  grep -E "coll/dfccl:|PASS|FAIL|rank [0-9]+:" "$log"
  if [ $rc -ne 0 ] || ! grep -q '^PASS' "$log" || [ "$selected" -lt "$np" ]; then
    echo "np=$np: FAILED (rc $rc, dfccl selected $selected times)"; tail -n 30 "$log"; status=1
  else
    echo "np=$np: ok (dfccl selected on $selected communicator-ranks, $destroyed contexts destroyed)"
  fi
  rm -f "$log"
done
exit $status
