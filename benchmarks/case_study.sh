#!/bin/sh
# The case study twice: the naive fixed spin threshold, then the adaptive stickiness policy.
# Usage: case_study.sh NP [case_study options]     (honors DFCCL_TARGET; see test/mpi/mpirun.sh)
np=${1:-4}
shift
here=$(dirname "$0")
fixed=${FIXED_THRESHOLD:-10000}
echo "== naive policy: every collective waits $fixed polls, no growth"
DFCCL_SPIN_GROWTH=1 DFCCL_SPIN_DECAY_SHIFT=0 DFCCL_SPIN_FRONT=$fixed DFCCL_SPIN_FLOOR=$fixed \
  sh "$here/../test/mpi/mpirun.sh" "$np" "$here/case_study" "$@"
echo "== adaptive policy (the defaults)"
sh "$here/../test/mpi/mpirun.sh" "$np" "$here/case_study" "$@"
