#!/usr/bin/env bash
# Sets DFCCL up on a fresh Debian/Ubuntu machine and runs the main demo: the paper's out-of-order
# program -- eight all-reduces that every rank invokes in its own random order -- which deadlocks
# any busy-waiting collective library and completes under DFCCL.  On a machine with NVIDIA GPUs it
# runs on the GPUs (one rank per GPU, at least 2 ranks); otherwise on the host execution target.
set -euo pipefail
cd "$(dirname "$0")"

need=()
for tool in autoreconf libtoolize pkg-config mpicc mpirun; do command -v "$tool" >/dev/null || need+=("$tool"); done
pkg-config --exists jansson 2>/dev/null || need+=(jansson)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing build dependencies (missing: ${need[*]})"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq build-essential autoconf automake libtool pkg-config \
    libopenmpi-dev openmpi-bin libjansson-dev libucx-dev
fi

if [ ! -f Makefile ]; then
  echo "== configuring"
  [ -x configure ] || ./autogen.sh >/dev/null
  ./configure --quiet 2>/dev/null
fi
echo "== building"
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" test/mpi/test_random_order >/dev/null

gpus=0
if command -v nvidia-smi >/dev/null && grep -q "DFCCL_HAVE_CUDA" Makefile; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
if [ "$gpus" -gt 0 ]; then
  ranks=$(( gpus < 2 ? 2 : gpus ))
  export DFCCL_TARGET=cuda
  echo "== demo on $gpus GPU(s): $ranks ranks, 8 all-reduces in a different random order on every rank"
else
  ranks=4
  export DFCCL_TARGET=host
  echo "== no GPU here: demo on the host execution target, $ranks ranks, 8 all-reduces in a different"
  echo "   random order on every rank"
fi
sh test/mpi/mpirun.sh "$ranks" test/mpi/test_random_order -i "${ITERATIONS:-50}"
echo "== the same program with preemption switched off (DFCCL_PREEMPTION=0) hangs: run"
echo "   DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=5 DFCCL_TARGET=$DFCCL_TARGET sh test/mpi/mpirun.sh $ranks test/mpi/test_random_order"
echo "   to watch the watchdog catch the deadlock."
