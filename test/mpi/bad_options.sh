#!/bin/sh
# Bad options and environment of the test and benchmark programs are refused: exit status 2 and a
# line that names the option (or variable), the value and what is accepted (test/common/options.h).
. "${top_srcdir:-.}/test/mpi/common.sh"
# After a process exits non-zero, mpirun gives the others a second per signal to go: they are
# leaving already.
export OMPI_MCA_odls_base_sigkill_timeout=0
status=0

# refused MESSAGE PROGRAM [ARGS...]: PROGRAM on 2 ranks (in the caller's environment) exits with 2
# and prints MESSAGE.
refused() {
  message=$1
  shift
  out=$(run_mpi 2 "$@" 2>&1)
  rc=$?
  if [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -qF "$message"; then
    echo "ok: $* -> $message"
  else
    echo "FAIL: $*: expected exit status 2 and \"$message\" (rc $rc)"
    printf '%s\n' "$out" | tail -n 12
    status=1
  fi
}

refused "test_random_order: -i: expected an integer in [1, 1000000], got 'abc'" test/mpi/test_random_order -i abc
refused "test_random_order: -i: expected an integer in [1, 1000000], got '-5'" test/mpi/test_random_order -i -5
refused "test_sync_between: -s: expected a non-negative integer (decimal or 0x...), got '7x'" \
  test/mpi/test_sync_between -s 7x
refused "test_random_mix: unknown option -x" test/mpi/test_random_mix -x
refused "test_collectives: -k: expected one of allreduce, others, all, got 'both'" test/mpi/test_collectives -k both
refused "test_bad_input: unexpected argument 'extra'" test/mpi/test_bad_input extra
refused "dfccl_bench: -n: expected an integer in [1, 1073741824], got '10k'" benchmarks/dfccl_bench -t host -n 10k
refused "dfccl_bench: -C: expected one of allreduce allgather reducescatter broadcast reduce alltoall allgatherv, or all, got 'allgatherw'" \
  benchmarks/dfccl_bench -t host -C allgatherw
# Options are read before the GPU is looked for: refused here too, where there is none.
refused "mpi_allreduce_bench: -C: expected one of allreduce allgather reducescatter broadcast reduce alltoall allgatherv, or all, got 'alltoallv'" \
  benchmarks/mpi_allreduce_bench -C alltoallv
refused "out_of_order_bench: -s: expected sizes in bytes, multiples of 4 up to 1G, separated by commas (64K,4M), got '6'" \
  benchmarks/out_of_order_bench -s 64K,6
DFCCL_TARGET=gpu refused "test_random_order: DFCCL_TARGET is 'gpu': expected 'cuda' or 'host' (unset: cuda)" \
  test/mpi/test_random_order -i 1
TEST_WATCHDOG_S=soon refused "test_priority: TEST_WATCHDOG_S is 'soon': expected a number of seconds >= 0.1" \
  test/mpi/test_priority
[ $status -eq 0 ] && echo PASS
exit $status
