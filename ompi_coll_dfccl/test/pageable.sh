#!/bin/sh
# coll/dfccl on GPUs: device buffers filled without synchronization (test_pageable.c), not part of
# CI.  Each fill mode must give exact results, every call routed through DFCCL; then the TWIN, the
# same program with DFCCL_STREAM_ORDER=0 (the component's ordering after the calling thread's
# default streams turned off), must see stale inputs in at least one fill mode: that proves the test
# can see the defect.
# Usage: sh pageable.sh [NP]      NP ranks (default 2), each on GPU local_rank % device_count.
# Environment: MODES (default "legacy per-thread kernel"), ITERATIONS (default 1000) and
# MODE_TIME_S (default 100: fewer calls where they are slow, e.g. ranks time-slicing one GPU without
# MPS; 0 for no limit) for the runs that must pass; TWIN_MODES (default "legacy kernel"; "" for
# none), TWIN_ITERATIONS (default 3000), TWIN_MAX_BYTES (default 67108864), TWIN_TIME_S (default 60)
# and TWIN_ATTEMPTS (default 2: another seed while no stale input was seen) for the twin, which
# ends once it saw a wrong call; TEST_TIMEOUT_S (default 600) per run, WATCHDOG_S (default 120);
# MPIRUN_ARGS (more mpirun options); CUDA_HOME (default /usr/local/cuda), whose lib64 goes on the
# loader path; and common.sh's.  Last line: "pageable: PASS ...", "pageable: FAIL ..." or SKIP.
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
np=${1:-2}
case $np in '' | *[!0-9]*) echo "usage: sh $0 [NP]" >&2; exit 2 ;; esac
cuda_lib=${CUDA_HOME:-/usr/local/cuda}/lib64
[ -d "$cuda_lib" ] && export LD_LIBRARY_PATH="$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DFCCL_TARGET=cuda # mpirun.sh's default is the host target, for DFCCL's own tests
unset DFCCL_STREAM_ORDER # the ordering on, except in the twin
prog=$testdir/test_pageable
test -x "$prog" || { echo "no $prog (make check TESTS= builds it)"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run ARGS...: test_pageable on $np ranks through coll/dfccl, output in $log; sets rc.  $run_env:
# variables for this run only (the twin's).
run_env=
run() {
  # shellcheck disable=SC2086 # run_env, MPIRUN_ARGS: separate words on purpose
  timeout "${TEST_TIMEOUT_S:-600}" env $run_env sh "$mpirun_sh" "$np" --mca coll_dfccl_priority 90 --mca coll_dfccl_verbose 1 \
    ${MPIRUN_ARGS:-} "$prog" -w "${WATCHDOG_S:-120}" "$@" >"$log" 2>&1
  rc=$?
}

# The program's own lines (its summary, its first mismatches), the component's per-process counts.
show() {
  grep -E "^(pageable|PASS|FAIL|SKIP)|^rank [0-9]+:|WATCHDOG|coll:dfccl: rank [0-9]+: [a-z_]+: [0-9]+ routed" "$log" |
    head -n 40 | sed 's/^/  /'
}

status=0
skipped=0
for mode in ${MODES:-legacy per-thread kernel}; do
  run -s "$mode" -i "${ITERATIONS:-1000}" -t "${MODE_TIME_S:-100}"
  show
  if [ $rc -eq 0 ] && grep -q '^SKIP' "$log"; then
    echo "$mode np=$np: SKIP (no GPU)"
    skipped=1
  elif [ $rc -eq 0 ] && grep -qE '^PASS: [0-9]+ calls, 0 wrong' "$log"; then
    ended=$(sed -n 's/^pageable [a-z-]*: ended after \(.*\)/; ended after \1/p' "$log")
    echo "$mode np=$np: PASS ($(grep -m 1 '^PASS' "$log" | sed 's/^PASS: //')$ended)"
  else
    why="exit status $rc"
    [ $rc -ne 124 ] || why="no result within ${TEST_TIMEOUT_S:-600} s"
    grep -q WATCHDOG "$log" && why="$why, the watchdog fired (a hang)"
    echo "$mode np=$np: FAIL ($why; $(grep -m 1 -E '^FAIL' "$log" || echo 'no verdict line'))"
    tail -n 20 "$log" | sed 's/^/  | /'
    status=1
  fi
done

# The twin: without the ordering, the same program must see stale data (FAIL with K > 0 wrong) in
# at least one fill mode -- proof that the test can see the defect.  A mode whose race does not show
# on this machine is reported, not failed: e.g. pageable copies with one rank per H100 landed before
# the daemon read them in 2 x 3,000 calls, while kernel fills showed stale inputs at once.
twins=0
twins_seen=0
for mode in ${TWIN_MODES-legacy kernel}; do
  [ $skipped -eq 0 ] || break
  seen=0
  attempt=1
  while [ $attempt -le "${TWIN_ATTEMPTS:-2}" ]; do
    run_env=DFCCL_STREAM_ORDER=0
    run -s "$mode" -i "${TWIN_ITERATIONS:-3000}" -m "${TWIN_MAX_BYTES:-67108864}" -S "$attempt" -e 1 \
      -t "${TWIN_TIME_S:-60}"
    run_env=
    show
    verdict=$(grep -m 1 -E '^FAIL: [0-9]+ wrong of [0-9]+' "$log")
    wrong=$(printf '%s\n' "$verdict" | sed -n 's/^FAIL: \([0-9]*\) wrong of \([0-9]*\).*/\1/p')
    calls=$(printf '%s\n' "$verdict" | sed -n 's/^FAIL: \([0-9]*\) wrong of \([0-9]*\).*/\2/p')
    elements=$(sed -n 's/.* \([0-9]*\) wrong elements.*/\1/p' "$log" | head -n 1)
    if [ $rc -eq 1 ] && [ "${wrong:-0}" -gt 0 ]; then
      echo "twin ($mode, DFCCL_STREAM_ORDER=0) np=$np: PASS: stale inputs seen without the ordering: $wrong wrong" \
        "of $calls calls (${elements:-?} wrong elements), attempt $attempt"
      seen=1
      break
    elif [ $rc -eq 0 ] && grep -qE '^PASS' "$log"; then
      echo "twin ($mode) attempt $attempt: no stale input seen in $(grep -m 1 '^PASS' "$log" | sed 's/^PASS: //')"
    else
      echo "twin ($mode) attempt $attempt: exit status $rc without a verdict (${verdict:-no FAIL line})"
      tail -n 20 "$log" | sed 's/^/  | /'
      status=1 # stale inputs give wrong numbers, never a crash or a hang
    fi
    attempt=$((attempt + 1))
  done
  twins=$((twins + 1))
  twins_seen=$((twins_seen + seen))
  [ $seen -eq 1 ] || echo "twin ($mode, DFCCL_STREAM_ORDER=0) np=$np: not seen: no stale input without the" \
    "ordering in ${TWIN_ATTEMPTS:-2} attempt(s)"
done
if [ $twins -gt 0 ] && [ $twins_seen -eq 0 ]; then
  echo "twins np=$np: FAIL: no fill mode showed stale inputs without the ordering (does this build read" \
    "DFCCL_STREAM_ORDER?)"
  status=1
elif [ $twins -gt 0 ]; then
  echo "twins np=$np: PASS: $twins_seen of $twins fill modes showed stale inputs without the ordering"
fi

if [ $skipped -eq 1 ]; then echo "pageable: SKIP (no GPU)"
elif [ $status -eq 0 ]; then echo "pageable: PASS (np=$np)"
else echo "pageable: FAIL (np=$np)"; fi
exit $status
