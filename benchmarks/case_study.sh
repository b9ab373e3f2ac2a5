#!/bin/sh
# The case study twice: the naive fixed spin threshold, then the adaptive stickiness policy.
# Usage: case_study.sh NP [case_study options]     (honors DFCCL_TARGET; see test/mpi/mpirun.sh)
# The naive policy gives every collective the same short wait (FIXED_THRESHOLD polls, default 64,
# as a fixed try count does) and never raises it; the adaptive one is the library's default, whose
# calibrated thresholds are printed (the "a poll costs" lines).
np=${1:-4}
shift
here=$(dirname "$0")
fixed=${FIXED_THRESHOLD:-64}
echo "== naive policy: every collective waits $fixed polls, no growth"
DFCCL_SPIN_GROWTH=1 DFCCL_SPIN_DECAY_SHIFT=0 DFCCL_SPIN_FRONT=$fixed DFCCL_SPIN_FLOOR=$fixed \
  sh "$here/../test/mpi/mpirun.sh" "$np" "$here/case_study" "$@"
status=$?
echo "== adaptive policy (the defaults)"
out=$(DFCCL_DEBUG=1 sh "$here/../test/mpi/mpirun.sh" "$np" "$here/case_study" "$@" 2>&1)
adaptive=$?
printf '%s\n' "$out" | grep -v -e "registered collective" -e "daemon launched" -e "initialised:"
[ "$status" -eq 0 ] && [ "$adaptive" -eq 0 ]
