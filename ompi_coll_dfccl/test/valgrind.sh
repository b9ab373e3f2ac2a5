#!/bin/sh
# coll/dfccl under valgrind (host-target mode, 2 ranks): the blocking, nonblocking and persistent
# tests, and test_every_coll's staged collectives (their kept host blocks included), must pass with no memory error (Open MPI's and PMIx's own are suppressed) and no block
# definitely lost that DFCCL's code allocated (the component or libdfccl; Open MPI's own leaks at
# finalize are not ours).  SKIP (77) without valgrind.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
command -v valgrind > /dev/null || { echo "SKIP: no valgrind"; exit 77; }
ompi_supp=$(ls /usr/share/openmpi/openmpi-valgrind.supp /usr/share/openmpi/*/openmpi-valgrind.supp 2>/dev/null | head -n 1)
status=0
# test_every_coll stages "device" buffers (the host target's device memory, which
# coll_dfccl_host_target=simulated takes for device memory) for every collective DFCCL does not run.
for prog in test_allreduce test_nonblocking test_persistent test_every_coll; do
  mode=host args=
  [ "$prog" = test_every_coll ] && mode=simulated args="-d device"
  log=$(mktemp)
  # shellcheck disable=SC2086 # args: separate words on purpose
  timeout "${TEST_TIMEOUT_S:-600}" sh "$mpirun_sh" 2 --mca coll_dfccl_host_target $mode --mca coll_dfccl_priority 90 \
    valgrind -q --error-exitcode=9 ${ompi_supp:+--suppressions=$ompi_supp} --suppressions="$here/valgrind.supp" \
    --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=none --num-callers=40 \
    --log-file="$log.vg.%p" "$testdir/$prog" $args > "$log" 2>&1
  rc=$?
  # valgrind's reports, one file per process: two ranks writing to one stream interleave their lines,
  # and a record's stack must not be read from another process's record.
  # The definitely-lost records of blocks that DFCCL's code (the component or libdfccl) allocated:
  # the first frame above the allocator is DFCCL's.  (A fallback's previous component allocates
  # below our frames; what it leaks is its own.)
  leaks=$(awk '/definitely lost in loss record/ {rec = 1; stack = ""; first = ""}
               rec {stack = stack $0 "\n"}
               rec && first == "" && / by 0x/ {first = $0}
               rec && /^==[0-9]+== *$/ {if (first ~ /dfccl/) printf "%s", stack; rec = 0}' "$log".vg.*)
  ours=$(printf '%s\n' "$leaks" | grep -c "definitely lost")
  if [ $rc -ne 0 ] || ! grep -q "PASS" "$log" || [ "$ours" -ne 0 ]; then
    echo "$prog: FAIL (exit $rc, $ours leaks through DFCCL)"
    grep -h -E "^==[0-9]+== (Invalid|Conditional|Syscall|Use of|Mismatched)" -A8 "$log".vg.* | head -n 40
    printf '%s\n' "$leaks" | head -n 60
    status=1
  else
    echo "$prog: PASS under valgrind (no memory errors, no leak through DFCCL)"
  fi
  rm -f "$log" "$log".vg.*
done
exit $status
