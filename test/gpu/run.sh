#!/usr/bin/env bash
# Every GPU test of DFCCL in one go, for a machine with 2 GPUs (the 2x H200 test machine):
#   build from the dist tarball in .dist/ (or this tree if it is configured), the data-path unit
#   test, bad input, the all-reduce matrix, the deadlock programs (one rank per GPU, and 4 ranks
#   per GPU), their preemption-off twins, compute-sanitizer, and the benchmark beside NCCL.
# Usage: [PART=...] [SKIP="step ..."] [MPS=1] bash test/gpu/run.sh
#   Logs go to $OUT (or /tmp/dfccl-gpu); a summary is printed.  PART picks the parts (see below);
#   MPS=1 runs them under MPS, for a machine of one GPU where each test's ranks share it.
set -u
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 DFCCL_TARGET=cuda
out=${OUT:-/tmp/dfccl-gpu}
mkdir -p "$out"
log="$out/gpu-tests.log"
summary="$out/gpu-summary.txt"
: > "$log"
: > "$summary"
repo=$(pwd)

note() { echo "$*" | tee -a "$summary"; }
# After a preemption-off twin: did its watchdog catch the hang?  Under MPS, the server reports the
# GPU "busy or unavailable" for a while after the twin's hung daemons were killed: restart it, so
# that the next step starts on a clean server.
twin_verdict() {
  [ "$ran" = 1 ] || return 0
  if grep -qE "WATCHDOG|Exit code: *42" "$out/step.out"; then note "  twin: watchdog fired (hang shown)"
  else note "  twin: NO HANG SEEN"; fi
  if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then mps_stop && mps_start; fi
}
# After a step that ran: keep its output as $out/FILE; put its lines matching PATTERN (the last N,
# default all) in the summary.
keep_output() { [ "$ran" = 1 ] && cp "$out/step.out" "$out/$1"; return 0; }
summarize() { [ "$ran" = 1 ] && grep -E "$1" "$out/step.out" | tail -n "${2:-100000}" | tee -a "$summary"; return 0; }
# step NAME TIMEOUT COMMAND...: runs it, logs everything, notes PASS/FAIL with the last line.
step() {
  name=$1; limit=$2; shift 2
  ran=0
  case " ${SKIP:-} " in *" $name "*) note "SKIP $name"; return 0 ;; esac
  ran=1
  echo "===== $name: $*" >> "$log"
  # On stdout only: a call cut by its time limit still shows which step was running.
  echo "..... $name started $(date -u +%H:%M:%S) (limit ${limit}s)"
  start=$(date +%s)
  # No stdin: mpirun forwards it to rank 0 and would eat a loop's remaining input (PART=ooo's settings).
  timeout "$limit" "$@" > "$out/step.out" 2>&1 < /dev/null
  status=$?
  cat "$out/step.out" >> "$log"
  took=$(( $(date +%s) - start ))
  last=$(grep -v '^\s*$' "$out/step.out" | tail -n 1 | cut -c1-150)
  if [ "$status" -eq 0 ]; then note "PASS $name (${took}s): $last"; else note "FAIL $name (exit $status, ${took}s): $last"; fi
  return $status
}

note "DFCCL GPU tests, $(date -u +%Y-%m-%dT%H:%MZ), commit $(cat .dist/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 2 | tee -a "$summary"
nvidia-smi topo -m >> "$log" 2>&1

# ---- build ----
# The network transport needs UCX's headers, which the GPU machine lacks (it has the runtime): a
# copy carried in .ucx/include (test/gpu/ucx_headers.sh makes it) builds against the runtime there.
if [ -d "$repo/.ucx/include" ] && ! ls /usr/include/ucp/api/ucp.h >/dev/null 2>&1; then
  mkdir -p "$repo/.ucx/lib"
  for l in ucp ucs; do
    so=$(ldconfig -p | awk -v l="lib$l.so.0" '$1 == l {print $NF; exit}')
    [ -n "$so" ] && ln -sf "$so" "$repo/.ucx/lib/lib$l.so"
  done
  CONFIGURE_ARGS="${CONFIGURE_ARGS:-} --with-ucx=$repo/.ucx"
fi

# A warm machine keeps /tmp between calls: reuse the build of the same commit (PART=2 after PART=1).
tarball=$(ls .dist/dfccl-*.tar.gz 2>/dev/null | head -n 1)
if [ -n "$tarball" ]; then
  commit=$(cat .dist/COMMIT 2>/dev/null || echo unknown)
  if [ "$(cat /tmp/dfccl-build/COMMIT 2>/dev/null)" = "$commit" ]; then
    cd /tmp/dfccl-build/dfccl-*
    note "reusing the build of $commit"
  else
    rm -rf /tmp/dfccl-build && mkdir -p /tmp/dfccl-build && tar xzf "$tarball" -C /tmp/dfccl-build
    cd /tmp/dfccl-build/dfccl-*
    step configure 120 ./configure ${CONFIGURE_ARGS:-} || exit 1
    # If the Open MPI component does not build against this Open MPI, test the rest without it.
    step build 400 make -j16 || { step configure-without-coll 120 ./configure --disable-ompi-coll &&
      step build-without-coll 400 make -j16; } || exit 1
    step build-tests 300 make -j16 check TESTS= || exit 1
    # Only a build that ran is reused: after SKIP="configure build build-tests" there is none.
    [ "$ran" = 1 ] && echo "$commit" > /tmp/dfccl-build/COMMIT
  fi
else
  step build 400 make -j16 || exit 1
  step build-tests 300 make -j16 check TESTS= || exit 1
fi
mpi="sh test/mpi/mpirun.sh"
# NCCL puts one rank on a GPU: a benchmark of more ranks than GPUs runs DFCCL alone (-N 0).
gpu_count=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
nccl_beside() { [ "$1" -gt "$gpu_count" ] && echo "-N 0"; }

# MPS lets several processes' daemons run side by side on one GPU (without it the GPU time-slices
# between their persistent kernels), as long as their blocks fit on it together.
mps_start() {
  command -v nvidia-cuda-mps-control > /dev/null || { note "no nvidia-cuda-mps-control on this machine"; return 1; }
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  if nvidia-cuda-mps-control -d; then
    trap mps_stop EXIT
    note "MPS control daemon started"
    return 0
  fi
  note "MPS could not be started"
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  return 1
}
mps_stop() {
  echo quit | nvidia-cuda-mps-control
  trap - EXIT
  sleep 2
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
# MPS=1: every part under MPS (a machine of one GPU, where each test's ranks share it).
[ "${MPS:-0}" = 1 ] && mps_start

# All-reduces on the ring against by gathering (DFCCL_ALLREDUCE_GATHER_BYTES: 32 KiB by default,
# 8 MiB at 2 ranks on GPUs): NP ranks, 8 B - 16 MiB, the ring (0), what gathers by default and
# everything up to 16 MiB gathering, two rounds alternated in one call, every run checking its
# results (-c 1).  Logs: $out/gather-ab-NPranks.txt.
gather_ab() {
  : > "$out/gather-ab-$1ranks.txt"
  for round in 1 2; do
    for bytes in 0 default 16777216; do
      vars="DFCCL_ALLREDUCE_GATHER_BYTES=$bytes"
      [ "$bytes" = default ] && vars=""
      # shellcheck disable=SC2086 # vars: empty or one word
      step "allreduce-$1ranks-gather-$bytes-round-$round" 120 env $vars $mpi "$1" \
        benchmarks/dfccl_bench -C allreduce -A comm -P 1 -b 8 -e 16M -f 4 -n 100 -w 10 -c 1
      [ "$ran" = 1 ] && { echo "== DFCCL_ALLREDUCE_GATHER_BYTES=$bytes, round $round"; grep -E "^ +[0-9]" "$out/step.out"; } \
        >> "$out/gather-ab-$1ranks.txt"
    done
  done
  cat "$out/gather-ab-$1ranks.txt" >> "$summary"
}

# PART=1: data path and the deadlock programs at one rank per GPU; PART=2: oversubscribed runs,
# the random mix and performance; unset: both (more than one 600 s device call).  PART=oversub
# PART=explore, PART=component, PART=every, PART=a2a, PART=comm, PART=failures, PART=soak, PART=burst,
# PART=sanitizers, PART=ucx, PART=ucx-latency, PART=lanes, PART=ab, PART=ll, PART=gate, PART=stamps, PART=trace, PART=ooo, PART=scale (or scale-deadlock, scale-component, scale-bench,
# scale-case) and PART=users (or users-pageable,
# users-osu, users-cupy) are only run when named; PART may name several ("1 oversub").
part=${PART:-all}
named() { case " $part " in *" $1 "*) return 0 ;; esac; return 1; }
in_part() { [ "$part" = all ] || named "$1"; }

# A run reads its buffers as the caller's default streams leave them (test/gpu/test_stream_gate.c:
# fills that land 20 ms after the call, on the legacy and the per-thread stream; one float and 4 MiB,
# which spans channels): with the gate the streams open on the GPU (DFCCL_STREAM_GATE=1), with the
# host's gate (=0), and the twin without the ordering, which must see stale inputs.
stream_gate_steps() {
  for n in 1 1048576; do
    step "stream-gate-$n" 60 env DFCCL_STREAM_GATE=1 test/gpu/test_stream_gate -n $n
    step "stream-gate-host-$n" 60 env DFCCL_STREAM_GATE=0 test/gpu/test_stream_gate -n $n
  done
  step stream-gate-twin-unordered 60 env DFCCL_STREAM_ORDER=0 sh -c \
    "test/gpu/test_stream_gate -i 4 -n 1048576 > $out/stream-gate-twin.txt 2>&1; tail -n 3 $out/stream-gate-twin.txt; exit 0"
  if [ "$ran" = 1 ]; then
    if grep -q "stale inputs seen" "$out/step.out"; then note "  twin: stale inputs seen without the ordering"
    else note "  twin: NO STALE INPUTS SEEN"; fi
  fi
}

if in_part 1; then
# ---- data path ----
step reduce-unit-gpu 120 sh -c "nvcc -std=c++17 -O3 -arch=sm_90 -I core -I core/kernel -I test/common test/gpu/test_reduce_cuda.cu -o /tmp/test_reduce_cuda && /tmp/test_reduce_cuda"
step cq-host-memory 120 sh -c "nvcc -std=c++17 -O2 -arch=sm_90 -I core -I core/kernel test/gpu/cq_host_memory.cu -o /tmp/cq_host_memory && /tmp/cq_host_memory both 20000"
# Block 0's look at the SQ in one trip (issue 15): the daemon's SASS sends the entry's four loads
# back to back; the twin, the SASS of the look before the thirty-ninth session, must fail.
step sass-look 60 sh test/gpu/sass_look.sh core/kernel/.libs/daemon_cuda.o
step sass-look-twin 60 sh -c "! sh test/gpu/sass_look.sh test/gpu/sass_look_two_trips.txt"

# ---- correctness ----
step bad-input 120 $mpi 2 test/mpi/test_bad_input
stream_gate_steps
# The full matrix registers more than the 2048 collectives one context holds: one kind set per run.
# Small slots and channels first (counts span slots and channels), then the GPU defaults.
step collectives-matrix-2gpu 300 env DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=4 sh -c \
  "$mpi 2 test/mpi/test_collectives -k allreduce && $mpi 2 test/mpi/test_collectives -k others"
step collectives-matrix-2gpu-defaults 300 sh -c \
  "$mpi 2 test/mpi/test_collectives -k allreduce && $mpi 2 test/mpi/test_collectives -k others"
step random-order-2x1 ${RO_LIMIT:-300} $mpi 2 test/mpi/test_random_order -i "${RO_ITERS:-1000}"
step sync-between-2x1 ${SYNC_LIMIT:-300} $mpi 2 test/mpi/test_sync_between -i "${SYNC_ITERS:-200}"
step cudafree-between-2x1 ${SYNC_LIMIT:-300} $mpi 2 test/mpi/test_sync_between -i 50 -f
step random-order-twin-no-preemption 40 env DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
  'sh test/mpi/mpirun.sh 2 test/mpi/test_random_order -i 50 2>&1 | tail -n 5; exit 0'
twin_verdict
step sync-twin-no-preemption 40 env DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
  'sh test/mpi/mpirun.sh 2 test/mpi/test_sync_between -i 5 2>&1 | tail -n 5; exit 0'
twin_verdict
step memcheck 120 sh test/mpi/mpirun.sh 2 ./libtool --mode=execute compute-sanitizer --tool memcheck \
  --error-exitcode 9 test/mpi/test_random_order -i 3
# Priority and FIFO, with the defaults and with waits that end only by their thresholds.
step priority 90 env DFCCL_SPIN_FRONT=2000000 sh test/mpi/priority.sh
# Idle costs nothing (issue 15): after the quit period the daemon of a 32-channel run holds no SM.
step idle 60 $mpi 2 test/mpi/test_idle -r 5 -b 64M
summarize "^idle|^PASS"
fi

if in_part 2; then
step random-order-8ranks ${RO8_LIMIT:-400} $mpi 8 test/mpi/test_random_order -i "${RO8_ITERS:-200}"
# All five collectives in a random mix on overlapping groups, 4 ranks on the 2 GPUs, with
# cudaDeviceSynchronize at random points (issue 3's acceptance), and 8 ranks.
step random-mix-4ranks-sync ${MIX_LIMIT:-300} $mpi 4 test/mpi/test_random_mix -i "${MIX_ITERS:-1000}" -y 5
step random-mix-8ranks-sync ${MIX_LIMIT:-300} $mpi 8 test/mpi/test_random_mix -i "${MIX8_ITERS:-200}" -y 5

# ---- performance ----
step overheads 120 benchmarks/overheads
keep_output overheads.txt
step benchmark ${BENCH_LIMIT:-300} sh test/mpi/mpirun.sh 2 benchmarks/dfccl_bench -C "${BENCH_COLLS:-all}" -b 16 -e 1G -f 4 \
  -n 20 -w 5 -c 1 -S
keep_output bench.txt
step case-study 300 sh benchmarks/case_study.sh 2 -i 20
keep_output case-study.txt
# Large-message sweep of the data-path knobs (BENCH_SWEEP="slot:channels ...").
for knobs in ${BENCH_SWEEP:-}; do
  step "bench slot ${knobs%%:*} channels ${knobs##*:}" 200 env DFCCL_SLOT_BYTES=${knobs%%:*} \
    DFCCL_MAX_CHANNELS=${knobs##*:} sh test/mpi/mpirun.sh 2 benchmarks/dfccl_bench -b 64M -e 1G -f 4 -n 10 -w 3 -N 0
  summarize "^ +[0-9]"
done
fi

# PART=oversub: 4 ranks per GPU.  Without MPS the GPU time-slices between the 4 processes'
# persistent kernels, so every ring step waits for its receiver's time slice (about 2 s per
# iteration of 8 all-reduces); under MPS (started here if the machine has it, stopped at the end)
# the daemons run side by side, as long as their blocks fit on the GPU together (processes per GPU x
# channels <= SMs): OVERSUB_CHANNELS (default 8) channels per daemon.
if named oversub && [ "${MPS:-0}" != 1 ] && mps_start; then
  export DFCCL_MAX_CHANNELS=${OVERSUB_CHANNELS:-8}
  note "DFCCL_MAX_CHANNELS=$DFCCL_MAX_CHANNELS"
  step random-order-8ranks-mps ${RO8_LIMIT:-150} $mpi 8 test/mpi/test_random_order -i "${RO8_ITERS:-200}"
  step random-mix-8ranks-sync-mps ${MIX_LIMIT:-150} $mpi 8 test/mpi/test_random_mix -i "${MIX8_ITERS:-1000}" -y 5
  step random-mix-4ranks-sync-mps ${MIX_LIMIT:-150} $mpi 4 test/mpi/test_random_mix -i "${MIX_ITERS:-1000}" -y 5
  unset DFCCL_MAX_CHANNELS
  mps_stop
fi
if named oversub; then
  step random-order-8ranks-timesliced ${RO8_TS_LIMIT:-420} $mpi 8 test/mpi/test_random_order -i "${RO8_TS_ITERS:-200}"
fi

# PART=component: coll/dfccl on device buffers (test_device: every routed collective, blocking and
# nonblocking, staged fallbacks, and the cross-communicator and synchronization deadlock patterns
# x COMPONENT_ITERS), the synchronization pattern's twin, the examples, issue 4's benchmark, and the
# core's deregistration and concurrent registration on the GPU.
if named component; then
  step deregister-4ranks 120 $mpi 4 test/mpi/test_deregister
  step concurrent-register-4ranks 120 $mpi 4 test/mpi/test_concurrent_register
  step component-device-2ranks ${COMPONENT_LIMIT:-400} env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" \
    ITERATIONS="${COMPONENT_ITERS:-1000}" sh ompi_coll_dfccl/test/device.sh 2
  summarize "np=|PASS|FAIL" 12
  # The examples (C with CUDA-aware MPI, mpi4py + CuPy) through the component.
  step examples-2ranks 200 bash examples/run.sh 2
  # Issue 4's benchmark: MPI_Allreduce through the component beside the core API, NCCL and staging.
  step component-bench ${COMPONENT_BENCH_LIMIT:-300} sh benchmarks/mpi_allreduce_bench.sh ${COMPONENT_BENCH_ARGS:-}
  keep_output component-bench.txt
  summarize "^ *[0-9]|target|routed"
  # The synchronization pattern's twin: without preemption the disordered calls with
  # cudaDeviceSynchronize/cudaFree between them hang, and test_device's watchdog catches it.  Last:
  # under MPS the GPU is "busy or unavailable" for a while after the hung daemons are killed.
  step component-sync-twin-no-preemption 90 env DFCCL_PREEMPTION=0 DFCCL_TARGET=cuda \
    LD_LIBRARY_PATH="$PWD/.libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" \
    sh -c 'cd ompi_coll_dfccl/test && . ./common.sh && expect_hang 2 test_device -- -m sync -i 20 -w 15'
fi

# PART=users: DFCCL as users meet it, through a CUDA-aware MPI: test_pageable (device buffers
# filled without synchronization, each call routed and checked, and its DFCCL_STREAM_ORDER=0 twin,
# which must see stale inputs), the OSU micro-benchmarks' collectives on device buffers (built from
# .osu/ in the repository root: a release tarball, git-ignored, carried separately; built by
# test/gpu/osu_build.sh), and mpi4py + CuPy on 2 and 4 ranks.  On a machine of one GPU once without MPS and,
# with MPS=1, once more under MPS (steps named ...-mps).  PART=users-pageable, users-osu or
# users-cupy runs one of the three (PART=users may not fit one 10-minute slot).  PAGEABLE_NPS
# (default 2): the rank counts of test_pageable.
# The OSU micro-benchmarks, once per call, from the tarball carried in .osu/ (test/gpu/osu_build.sh).
osu_build() {
  [ "${osu_built:-0}" = 0 ] || return 0
  osu_tarball=$(ls "$repo"/.osu/osu-micro-benchmarks-*.tar.gz 2> /dev/null | head -n 1)
  [ -n "$osu_tarball" ] || return 0
  step osu-build 300 sh test/gpu/osu_build.sh "$osu_tarball" /tmp/osu-build && osu_built=1
}
users_named() { named users || named "users-$1"; }
users_pass() { # SUFFIX: the steps of PART=users, their names ending in SUFFIX
  if users_named pageable; then
    for np in ${PAGEABLE_NPS:-2}; do # "2 4" on two GPUs: one and two ranks per GPU
      step "pageable-${np}ranks$1" "${PAGEABLE_LIMIT:-600}" env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" \
        ITERATIONS="${PAGEABLE_ITERS:-1000}" sh ompi_coll_dfccl/test/pageable.sh "$np"
      summarize "np=$np: |^pageable:"
    done
  fi
  if users_named osu; then
    osu_build
    if [ -d /tmp/osu-build ]; then
      step "osu$1" "${OSU_LIMIT:-560}" env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" OSU_DIR=/tmp/osu-build \
        bash test/gpu/osu.sh
      keep_output "osu$1.txt"
      summarize "^(FAIL|MISSING) |^np=|^osu:"
    else
      note "SKIP osu$1: no OSU build (carry .osu/ with an OSU release tarball into the repository root: test/gpu/osu_build.sh)"
    fi
  fi
  if users_named cupy; then
    step "cupy-collectives$1" "${CUPY_LIMIT:-500}" bash test/gpu/cupy_collectives.sh 2 4
    summarize "^(PASS|FAIL|SKIP) cupy"
  fi
}
if users_named pageable || users_named osu || users_named cupy; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
  mps_at_entry=${CUDA_MPS_PIPE_DIRECTORY:+1}
  if [ "$gpus" -eq 1 ]; then
    [ -z "$mps_at_entry" ] || mps_stop
    note "PART=users on one GPU: ranks share it; first without MPS"
    users_pass ""
    if [ "${MPS:-0}" = 1 ] && mps_start; then
      users_pass -mps
      [ -n "$mps_at_entry" ] || mps_stop
    fi
  else
    users_pass ""
  fi
fi

# PART=coverage: coll/dfccl under ordinary programs (issue 12) -- test_coverage on device buffers
# (every datatype and op, layouts, one-rank communicators, host memory on one rank), what ordering
# runs after the caller's default streams costs, and two ranks sharing one GPU: small all-reduce
# latency without MPS with and without the daemons yielding to each other (DFCCL_TIMESLICE_YIELD),
# and under MPS, through the core API (dfccl_bench) and through MPI_Allreduce (mpi_allreduce_bench).
if named coverage; then
  for mode in ${COVERAGE_MODES:-types layouts single mixed}; do
    step "coverage-$mode-2ranks" ${COVERAGE_LIMIT:-200} env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" \
      sh -c "cd ompi_coll_dfccl/test && . ./common.sh && HOST_TARGET=off run_dfccl 2 test_coverage \
        --mca coll_dfccl_max_colls 512 -- -m $mode -d device"
    summarize "^(types|layouts|single|mixed):|PASS|FAIL" 8
  done
  step stream-order-cost 60 benchmarks/stream_order_cost
  summarize "per call|waited"
  mps_was_on=${CUDA_MPS_PIPE_DIRECTORY:+1}
  [ -z "$mps_was_on" ] || mps_stop
  # What handing the GPU from one process's kernel to another's costs without MPS: the limit under
  # the shared-GPU latencies below.
  step timeslice-switch 120 sh -c "benchmarks/timeslice_switch -p 1 -n 2000 && benchmarks/timeslice_switch -p 2 -n 2000"
  summarize "per turn"
  for y in 1 0; do
    step "shared-gpu-latency-yield$y" 120 env CUDA_VISIBLE_DEVICES=0 DFCCL_TIMESLICE_YIELD=$y \
      $mpi 2 benchmarks/dfccl_bench -C allreduce -b 8 -e 64K -f 8 -n ${SHARED_ITERS:-50} -w 5 -c 1 -N 0 -S
    keep_output "shared-gpu-latency-yield$y.txt"
    summarize "^ +[0-9]|^# +[0-9]"
  done
  # The two daemons' launches on the GPU's clock (DFCCL_DEBUG=2), a few small all-reduces: where the
  # time of a shared-GPU collective goes.
  step shared-gpu-timeline 60 env CUDA_VISIBLE_DEVICES=0 DFCCL_DEBUG=2 $mpi 2 benchmarks/dfccl_bench -C allreduce \
    -b 8 -e 8 -n 6 -w 2 -c 1 -N 0
  keep_output shared-gpu-timeline.txt
  # Four ranks on one GPU without MPS: the random-order program still completes (deadlock-free), and
  # how long an iteration takes (8 collectives; 3 s per iteration before the daemons yielded).
  step shared-gpu-4ranks-random-order ${SHARED4_LIMIT:-150} env CUDA_VISIBLE_DEVICES=0 $mpi 4 \
    test/mpi/test_random_order -i "${SHARED4_ITERS:-50}"
  summarize "iterations|PASS|FAIL"
  # How long a daemon whose queue ran dry waits for the next call (TIMESLICE_IDLES="us ...": a sweep).
  for d in ${TIMESLICE_IDLES:-}; do
    step "shared-gpu-latency-idle$d" 60 env CUDA_VISIBLE_DEVICES=0 DFCCL_TIMESLICE_IDLE_US=$d \
      $mpi 2 benchmarks/dfccl_bench -C allreduce -b 8 -e 4K -f 8 -n ${SHARED_ITERS:-50} -w 5 -c 1 -N 0 -S
    summarize "^ +[0-9]|^# +[0-9]"
  done
  # The relaunch delay after a yield (YIELD_DELAYS="us ...": a sweep, for tuning the default).
  for d in ${YIELD_DELAYS:-}; do
    step "shared-gpu-latency-yield-delay$d" 60 env CUDA_VISIBLE_DEVICES=0 DFCCL_YIELD_DELAY_US=$d \
      $mpi 2 benchmarks/dfccl_bench -C allreduce -b 8 -e 4K -f 8 -n ${SHARED_ITERS:-50} -w 5 -c 1 -N 0 -S
    summarize "^ +[0-9]|^# +[0-9]"
  done
  step shared-gpu-mpi-allreduce 200 env CUDA_VISIBLE_DEVICES=0 CORE_BENCH_ARGS="-N 0" sh benchmarks/mpi_allreduce_bench.sh -b 8 -e 64K -f 8 \
    -n ${SHARED_ITERS:-50} -w 5
  keep_output shared-gpu-mpi-allreduce.txt
  summarize "^ *[0-9]"
  if mps_start; then
    step shared-gpu-latency-mps 120 env CUDA_VISIBLE_DEVICES=0 $mpi 2 benchmarks/dfccl_bench -C allreduce -b 8 -e 64K \
      -f 8 -n ${SHARED_ITERS:-50} -w 5 -c 1 -N 0
    keep_output shared-gpu-latency-mps.txt
    summarize "^ +[0-9]"
    [ -n "$mps_was_on" ] || mps_stop
  fi
fi

# PART=every: every MPI collective on device buffers (issue 18) -- test_every_coll on 2, 3 and 4
# ranks (every collective of the coll framework in its three forms, on intra-, size-1, inter- and
# topology communicators, exact results and the component's counters), its twin without coll/dfccl
# (Open MPI's own components get device pointers: it must crash or fail), and the OSU benchmarks of
# the collectives DFCCL does not run (osu.sh; EVERY_OSU_NPS default "2 4", EVERY_OSU_SIZES default
# 1:4194304, EVERY_OSU_BENCHMARKS; logs under /tmp/dfccl-osu-every).
if named every; then
  for np in ${EVERY_NPS:-2 3 4}; do
    step "every-coll-${np}ranks" ${EVERY_LIMIT:-200} env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" \
      sh -c "cd ompi_coll_dfccl/test && . ./common.sh && HOST_TARGET=off run_dfccl $np test_every_coll -- -d device"
    summarize "PASS|FAIL" 6
  done
  step every-coll-twin-without-dfccl 120 sh -c "env LD_LIBRARY_PATH=$PWD/.libs:${LD_LIBRARY_PATH:-} \
    $mpi 2 --mca coll ^dfccl ompi_coll_dfccl/test/test_every_coll -d device -k 0 -w 30 > /tmp/every-twin.out 2>&1;
    rc=\$?; tail -n 5 /tmp/every-twin.out; grep -m 3 -E 'Segmentation|signal|FAIL' /tmp/every-twin.out;
    if [ \$rc -ne 0 ]; then echo \"PASS: without coll/dfccl the program fails (exit \$rc)\"; else
    echo 'FAIL: the twin passed without coll/dfccl'; exit 1; fi"
  summarize "PASS|FAIL" 4
  osu_build
  step osu-every ${OSU_LIMIT:-560} env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" OSU_DIR=/tmp/osu-build \
    OSU_NPS="${EVERY_OSU_NPS:-2 4}" OSU_TYPES=mpi_float OSU_CHAR=0 OSU_SIZES="${EVERY_OSU_SIZES:-1:4194304}" \
    OSU_BENCHMARKS="${EVERY_OSU_BENCHMARKS:-osu_alltoall osu_alltoallv osu_allgatherv osu_gather osu_gatherv \
osu_scatter osu_scatterv osu_ialltoall osu_ialltoallv osu_iallgatherv osu_igather osu_igatherv osu_iscatter osu_iscatterv}" \
    LOG_DIR=/tmp/dfccl-osu-every bash test/gpu/osu.sh
  keep_output osu-every.txt
  summarize "^(FAIL|MISSING) |^np=|^osu:"
fi

# PART=a2a: all-to-all and all-gather-v on DFCCL (issue 18) -- the core's matrix of the eight kinds
# with small slots, the random mix (all-to-all and all-gather-v among its kinds, device
# synchronizations between) x A2A_MIX_ITERS at 3 and 4 ranks and its twin without preemption,
# dfccl_bench all-to-all, all-gather and all-gather-v (NCCL beside when the ranks have a GPU each:
# NCCL refuses two ranks on one GPU), and OSU's all-to-all and all-gather-v through coll/dfccl with
# validation, every call counted (A2A_OSU_NPS default "2 4").
if named a2a; then
  step collectives-matrix-small-slots 300 env DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 \
    DFCCL_MAX_CHANNELS=4 $mpi 2 test/mpi/test_collectives -k others
  summarize "matrix|exact|WRONG"
  for np in 3 4; do # the mix's overlapping groups need 3 ranks at least
    step "random-mix-${np}ranks-sync" ${MIX_LIMIT:-300} $mpi $np test/mpi/test_random_mix -i "${A2A_MIX_ITERS:-1000}" -y 5
  done
  step random-mix-twin-no-preemption 60 env DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
    'sh test/mpi/mpirun.sh 4 test/mpi/test_random_mix -i 50 -y 5 2>&1 | tail -n 5; exit 0'
  twin_verdict
  with_nccl=0
  [ "$(nvidia-smi -L | wc -l)" -ge 2 ] && with_nccl=1
  for coll in alltoall allgather allgatherv; do
    step "bench-$coll" ${BENCH_LIMIT:-200} $mpi 2 benchmarks/dfccl_bench -C $coll -b 16 -e "${A2A_BENCH_MAX:-256M}" -f 4 \
      -n 20 -w 5 -c 1 -N $with_nccl
    keep_output "bench-$coll.txt"
    summarize "^ +[0-9]|Avg|Wrong"
  done
  osu_build
  step osu-a2a ${OSU_LIMIT:-400} env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" OSU_DIR=/tmp/osu-build \
    OSU_NPS="${A2A_OSU_NPS:-2 4}" OSU_TYPES=mpi_float OSU_CHAR=0 OSU_SIZES="${A2A_OSU_SIZES:-1:4194304}" \
    OSU_BENCHMARKS="${A2A_OSU_BENCHMARKS:-osu_alltoall osu_ialltoall osu_allgatherv}" \
    LOG_DIR=/tmp/dfccl-osu-a2a bash test/gpu/osu.sh
  keep_output osu-a2a.txt
  summarize "^(FAIL|MISSING) |^np=|^osu:|routed"
fi

# PART=comm: communicators and descriptors (issue 13) -- test_comm (six kinds on overlapping
# communicators, new shapes every iteration, random interleavings, runs waiting for their connector
# sets, device synchronizations) x COMM_ITERS at 3 and 4 ranks, its twin without preemption,
# test_comm_async (nonblocking creation) at 2 and 4 ranks and its twin, and
# dfccl_bench through registrations and through a communicator in one session each, the same sizes.
if named comm; then
  for np in 3 4; do
    step "comm-${np}ranks-sync" ${COMM_LIMIT:-200} $mpi $np test/mpi/test_comm -i "${COMM_ITERS:-200}" -y 5
  done
  step comm-twin-no-preemption 60 env DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
    'sh test/mpi/mpirun.sh 4 test/mpi/test_comm -i 20 2>&1 | tail -n 5; exit 0'
  twin_verdict
  # Nonblocking communicator creation on the GPU target: started and driven in different orders on
  # every rank; its twin waits for each creation where it starts and must hang.
  for np in 2 4; do
    step "comm-async-${np}ranks" ${COMM_ASYNC_LIMIT:-120} $mpi $np test/mpi/test_comm_async -i "${COMM_ASYNC_ITERS:-20}"
  done
  step comm-async-twin 60 env TEST_WATCHDOG_S=10 sh -c \
    'sh test/mpi/mpirun.sh 4 test/mpi/test_comm_async -i 2 -b 2>&1 | tail -n 5; exit 0'
  twin_verdict
  # Hang reports on the GPU (issue 16): the daemon's tables read while it runs.
  step hang-report 120 sh test/mpi/hang_report.sh
  summarize "^rank|PASS|FAIL"
  for api in register comm; do
    step "bench-$api" ${BENCH_LIMIT:-200} $mpi 2 benchmarks/dfccl_bench -A $api -C "${COMM_BENCH_COLLS:-allreduce}" -b 8 \
      -e "${COMM_BENCH_MAX:-256M}" -f 8 -n 50 -w 10 -c 1 -N 0
    keep_output "bench-$api.txt"
    summarize "^ +[0-9]|Avg|Wrong"
  done
fi

# PART=failures: collectives that cannot complete (issue 16) with the GPU daemon -- a rank that
# skips one (DFCCL_TIMEOUT_S=1: every rank gets dfcclTimedOut, the hang report names the rank), ranks
# that disagree on a count (dfcclMismatch everywhere), at 3 and 2 ranks; the twins (no timeout:
# hang; DFCCL_CHECK_RUNS=0: silent success); the dead peer (forked processes), with host-target
# daemons and with GPU daemons (then no survivor may be left on the GPU).
if named failures; then
  step failures 200 sh test/mpi/failures.sh
  summarize "^rank|PASS|FAIL|dfccl:"
  step failures-twin 120 sh test/mpi/failures_twin.sh
  summarize "PASS|FAIL"
  step dead-peer 60 env DFCCL_TARGET=host test/unit/test_dead_peer
  summarize "^rank|process|test_dead_peer"
  step dead-peer-gpu 90 env DFCCL_TARGET=cuda test/unit/test_dead_peer
  summarize "^rank|process|test_dead_peer|left"
fi

# PART=soak (issue 16): test_soak for SOAK_S seconds (default 480) at 2 ranks -- the five
# collectives on three communicators from two threads, device synchronizations, cudaFrees and
# re-registrations at random points: 0 wrong, no hang, memory flat -- then the burst (3000 runs
# submitted at once through a 4-entry SQ and 1-slot CQ rings: every callback exactly once, exact;
# with the defaults; in batches; with the main thread taking completions too, dfcclProgress) and
# the burst's twin (DFCCL_POLLER_SET_ASIDE=0: deadlock).
if named soak; then
  soak_s=${SOAK_S:-480}
  step soak $((soak_s + 180)) $mpi 2 test/mpi/test_soak -t "$soak_s" -m "${SOAK_MAX:-1048576}" -p 60
  summarize "^soak|^rank"
fi
if named burst; then
  burst_env="DFCCL_SQ_ENTRIES=4 DFCCL_CQ_SLOTS=1 DFCCL_COMM_SETS=16 DFCCL_MAX_CHANNELS=4 DFCCL_COMM_SLOT_BYTES=65536"
  step burst 200 env $burst_env $mpi 2 test/mpi/test_burst -n 1000 -f
  summarize "runs on|^rank"
  step burst-defaults 200 $mpi 2 test/mpi/test_burst -n 1000
  summarize "runs on|^rank"
  step burst-batched 200 env $burst_env $mpi 2 test/mpi/test_burst -n 1000 -f -b 8
  summarize "runs on|^rank"
  step burst-progress 200 env $burst_env $mpi 2 test/mpi/test_burst -n 1000 -f -p
  summarize "runs on|^rank"
  step burst-twin 120 env $burst_env DFCCL_POLLER_SET_ASIDE=0 TEST_WATCHDOG_S=15 sh -c \
    'sh test/mpi/mpirun.sh 2 test/mpi/test_burst -n 1000 2>&1 | tail -n 5; exit 0'
  twin_verdict
fi

# PART=sanitizers (issue 16): compute-sanitizer's racecheck (shared-memory hazards) and synccheck
# (barriers) on the daemon, beside memcheck, with every rank under the tool: the random-order
# program (preemption, context switches) and the random mix of all kinds at 3 ranks.
# compute-sanitizer does not run under MPS: run this part without MPS=1.
if named sanitizers; then
  for tool in racecheck synccheck memcheck; do
    step "$tool-random-order" ${SAN_LIMIT:-200} $mpi 2 ./libtool --mode=execute compute-sanitizer --tool $tool \
      --error-exitcode 9 test/mpi/test_random_order -i "${SAN_ITERS:-3}"
    summarize "ERROR SUMMARY|hazard|error" 6
    step "$tool-random-mix" ${SAN_LIMIT:-200} $mpi 3 ./libtool --mode=execute compute-sanitizer --tool $tool \
      --error-exitcode 9 test/mpi/test_random_mix -i "${SAN_ITERS:-3}"
    summarize "ERROR SUMMARY|hazard|error" 6
  done
fi

# NCCL forced onto its network path (sockets: no peer-to-peer, no shared memory, no InfiniBand), for
# issue 14's comparisons (PART=ucx, ucx-latency, lanes).  Unquoted where used: separate words.
nccl_on_sockets="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_NET=Socket"
# PART=ucx: the network transport (issue 14) with the GPU daemon -- every connector forced onto
# UCX (FIFOs in pinned host memory, the proxy between): the matrix of every collective and the random mix,
# the random-order program x UCX_ITERS and the device-synchronization program x UCX_SYNC_ITERS at 2
# ranks, its twin without preemption, 4 ranks with ranks 0-1 and 2-3 on two "hosts" (auto: CUDA IPC
# within, UCX across, in one ring), UCX alone in the proxy's pattern (benchmarks/ucx_bandwidth),
# dfccl_bench over UCX beside the same run over CUDA IPC, over UCX with fewer channels (UCX_CHANNELS),
# and over UCX beside NCCL on sockets (two GPUs; UCX_BENCH_COLLS, default allreduce; UCX_BENCH_MAX 256M).
if named ucx; then
  export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
  step ucx-random-order-2ranks ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx DFCCL_SHOW_TRANSPORT=1 \
    $mpi 2 test/mpi/test_random_order -i "${UCX_ITERS:-1000}"
  summarize "^dfccl: rank|exact"
  step ucx-sync-2ranks ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx $mpi 2 test/mpi/test_sync_between -i "${UCX_SYNC_ITERS:-200}"
  step ucx-collectives-2ranks ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx $mpi 2 test/mpi/test_collectives -k allreduce -q
  step ucx-others-2ranks ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx $mpi 2 test/mpi/test_collectives -k others -q
  step ucx-random-mix-3ranks ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx $mpi 3 test/mpi/test_random_mix -i 100
  step ucx-twin-no-preemption 60 env DFCCL_TRANSPORT=ucx DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
    'sh test/mpi/mpirun.sh 2 test/mpi/test_random_order -i 20 2>&1 | tail -n 5; exit 0'
  twin_verdict
  step ucx-mixed-4ranks ${UCX_LIMIT:-200} env DFCCL_SHOW_TRANSPORT=1 $mpi 4 sh -c \
    'DFCCL_HOST_ID=host$((OMPI_COMM_WORLD_RANK / 2)) exec test/mpi/test_random_order -i 200'
  summarize "^dfccl: rank|exact"
  # UCX alone in the proxy's pattern (512 KiB messages, 8 in flight each way, both directions): the
  # ceiling under DFCCL over UCX, with the slot's run tag as a message of its own (split, what links
  # of large slots do) and in one iov message (what they did before).
  for form in split iov split-4-connections; do
    args="-p $form"
    [ "$form" = split-4-connections ] && args="-p split -c 4 -k 4"
    # shellcheck disable=SC2086 # args: separate words on purpose
    step "ucx-bandwidth-$form" 120 $mpi 2 benchmarks/ucx_bandwidth -b 64K -e 256M -f 4 -n 10 -w 2 $args
    summarize "^ +[0-9]"
  done
  for transport in p2p ucx; do
    step "bench-$transport" ${BENCH_LIMIT:-200} env DFCCL_TRANSPORT=$transport $mpi 2 benchmarks/dfccl_bench \
      -C allreduce -b 8 -e "${UCX_BENCH_MAX:-64M}" -f 8 -n 30 -w 5 -c 1 -N 0
    keep_output "bench-$transport.txt"
    summarize "^ +[0-9]|Avg|Wrong"
  done
  # Over UCX with fewer channels (UCX_CHANNELS="n ...", default "2 4 8"; the default is 32): the
  # proxy moved 0.7 GB/s at 128 MiB where UCX alone moves 2.1, and its loss grew with the size,
  # that is with the channels (nineteenth session) -- NCCL runs its network path on few channels.
  for ch in ${UCX_CHANNELS-2 4 8}; do
    step "bench-ucx-channels-$ch" ${BENCH_LIMIT:-200} env DFCCL_TRANSPORT=ucx DFCCL_MAX_CHANNELS=$ch $mpi 2 \
      benchmarks/dfccl_bench -C allreduce -b 2M -e "${UCX_BENCH_MAX:-256M}" -f 8 -n 10 -w 3 -c 1 -N 0
    summarize "^ +[0-9]|Wrong"
  done
  # Issue 14's comparison: DFCCL over UCX beside NCCL forced onto its network path (sockets: no
  # peer-to-peer, no shared memory, no InfiniBand), in one run, one rank per GPU (NCCL refuses two
  # ranks on one GPU, so this needs two GPUs).  The NCCL_* variables touch only NCCL.
  # Small sizes (8 B - 4 KiB) with UCX_SMALL_ITERS (default 1000) timed runs: over TCP, 30 runs a
  # size gave 35-56 us for the same tree at 8 B (twenty-second session); the rest with 30.
  if [ "$(nvidia-smi -L | grep -c '^GPU')" -ge 2 ]; then
    step bench-ucx-vs-nccl-socket-small ${BENCH_LIMIT:-200} env DFCCL_TRANSPORT=ucx $nccl_on_sockets $mpi 2 \
      benchmarks/dfccl_bench -C "${UCX_BENCH_COLLS:-allreduce}" -b 8 -e 4K -f 8 -n "${UCX_SMALL_ITERS:-1000}" -w 100 -c 1 -N 1
    keep_output bench-ucx-vs-nccl-socket-small.txt
    summarize "^ +[0-9]|Wrong"
    step bench-ucx-vs-nccl-socket ${BENCH_LIMIT:-200} env DFCCL_TRANSPORT=ucx $nccl_on_sockets $mpi 2 \
      benchmarks/dfccl_bench -C "${UCX_BENCH_COLLS:-allreduce}" -b 32K \
      -e "${UCX_BENCH_MAX:-256M}" -f 8 -n 30 -w 5 -c 1 -N 1
    keep_output bench-ucx-vs-nccl-socket.txt
    summarize "^ +[0-9]|Avg|Wrong"
  else
    note "SKIP bench-ucx-vs-nccl-socket: NCCL needs one GPU per rank"
  fi
fi

# PART=ucx-latency (issue 14): the small all-reduce over UCX beside NCCL on sockets (as
# bench-ucx-vs-nccl-socket-small: 8 - 512 B, 1,000 timed runs) under each setting of
# UCX_LAT_SETTINGS (";"-separated sets of variables; "defaults" is none), for choosing defaults by
# measurement.  Log: $out/ucx-latency.txt, one "== SETTING" block each.  The default alternates the
# default 4 lanes with one (1 lane was 3 us faster at 8 B on 2 x H200 before 0dd55de left lanes
# without links asleep; UCX_PROTO_ENABLE=n and the ring instead of gathering were measured then too:
# docs/performance.md, twenty-third session).
ucx_lat_default_settings="defaults;DFCCL_NET_LANES=1;defaults;DFCCL_NET_LANES=1"
if named ucx-latency; then
  : > "$out/ucx-latency.txt"
  echo "${UCX_LAT_SETTINGS:-$ucx_lat_default_settings}" | tr ';' '\n' | while read -r setting; do
    [ -n "$setting" ] || continue
    vars=$setting
    [ "$vars" = defaults ] && vars=""
    # shellcheck disable=SC2086 # vars: separate words on purpose
    step "ucx-latency $setting" 60 env UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n DFCCL_TRANSPORT=ucx \
      $nccl_on_sockets $vars $mpi 2 benchmarks/dfccl_bench \
      -C allreduce -b 8 -e 512 -f 8 -n "${UCX_SMALL_ITERS:-1000}" -w 100 -c 1 -N 1
    [ "$ran" = 1 ] && { echo "== $setting"; grep -E "^ +[0-9]|Wrong" "$out/step.out"; } >> "$out/ucx-latency.txt"
  done
  cat "$out/ucx-latency.txt" >> "$summary"
fi

# PART=lanes: the network transport over several UCX workers, each with its proxy thread
# (DFCCL_NET_LANES): the all-reduce matrix over small slots and 4 channels, the random-order
# program and its twin on LANES_CHECK lanes (default 4), then DFCCL over UCX beside NCCL on sockets
# on LANES (default "1 2 4") lanes, in one call, two GPUs (LANES_BENCH_MIN/MAX/FACTOR, default 1M/256M/4).
if named lanes; then
  export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
  check=${LANES_CHECK:-4}
  step "lanes-$check-collectives-2ranks" ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx DFCCL_NET_LANES=$check \
    DFCCL_MIN_CHANNEL_BYTES=4096 DFCCL_SLOT_BYTES=4096 DFCCL_MAX_CHANNELS=4 $mpi 2 test/mpi/test_collectives -k allreduce -q
  step "lanes-$check-random-order-2ranks" ${UCX_LIMIT:-200} env DFCCL_TRANSPORT=ucx DFCCL_NET_LANES=$check \
    DFCCL_SHOW_TRANSPORT=1 $mpi 2 test/mpi/test_random_order -i "${UCX_ITERS:-300}"
  summarize "^dfccl: rank|exact"
  step "lanes-$check-twin-no-preemption" 60 env DFCCL_TRANSPORT=ucx DFCCL_NET_LANES=$check DFCCL_PREEMPTION=0 \
    TEST_WATCHDOG_S=10 sh -c 'sh test/mpi/mpirun.sh 2 test/mpi/test_random_order -i 20 2>&1 | tail -n 5; exit 0'
  twin_verdict
  for lanes in ${LANES:-1 2 4}; do
    step "bench-ucx-lanes-$lanes-vs-nccl-socket" ${BENCH_LIMIT:-200} env DFCCL_TRANSPORT=ucx DFCCL_NET_LANES=$lanes \
      $nccl_on_sockets $mpi 2 benchmarks/dfccl_bench \
      -C allreduce -b "${LANES_BENCH_MIN:-1M}" -e "${LANES_BENCH_MAX:-256M}" -f "${LANES_BENCH_FACTOR:-4}" -n 10 -w 3 -c 1 -N 1
    keep_output "bench-ucx-lanes-$lanes.txt"
    summarize "^ +[0-9]|Wrong"
  done
fi

# PART=perf (issues 15 and 18): the seven collectives (issue 15's five, all-to-all and all-gather-v)
# beside NCCL at one rank per GPU -- up to PERF_SMALL_MAX (default 16M) through the core API
# (communicators, the waiting thread taking its completion) and through MPI_* on coll/dfccl (and
# staged), from PERF_LARGE_MIN (default 1M) to 1 GiB through the core API for busbw, all-to-all and
# all-gather-v once more from 16 B to PERF_A2A_MAX (default 64M) in steps of 4 (core API, NCCL,
# component and staged in one joined table each), the small all-reduce once more without the
# ordering after the caller's default streams (what that ordering still costs), the random-order
# program against the same program in one order (out_of_order_bench at PERF_OOO_SIZES, default
# 64K,4M per all-reduce), then benchmarks/targets.py's tables and PASS/MISS lines (targets for the
# five only) and, where matplotlib is installed, benchmarks/plot.py's PNG.  Logs: $out/perf-*.txt.
if named perf; then
  perf_iters=${PERF_ITERS:-100}
  step perf-small-and-component ${PERF_LIMIT:-240} env LOG_DIR="$out/perf-logs" CORE_BENCH_ARGS="-A comm -P 1" \
    sh benchmarks/mpi_allreduce_bench.sh -C all -b 8 -e "${PERF_SMALL_MAX:-16M}" -f 8 -n "$perf_iters" -w 10
  keep_output perf-small.txt
  [ -f "$out/perf-logs/core.txt" ] && cp "$out/perf-logs/core.txt" "$out/perf-core-small.txt"
  [ -f "$out/perf-logs/component.txt" ] && cp "$out/perf-logs/component.txt" "$out/perf-component.txt"
  rm -rf "$out/perf-logs"
  # Seven collectives to 1 GiB, each checked on the host: more than 200 s on 2 x H200 (twenty-fourth
  # session), hence a limit of its own (PERF_LARGE_LIMIT).
  step perf-large ${PERF_LARGE_LIMIT:-360} $mpi 2 benchmarks/dfccl_bench -C all -A comm -P 1 -b "${PERF_LARGE_MIN:-1M}" \
    -e 1G -f 4 -n 20 -w 5
  keep_output perf-core-large.txt
  for coll in alltoall allgatherv; do
    step "perf-$coll" ${PERF_LIMIT:-240} env CORE_BENCH_ARGS="-A comm -P 1" \
      sh benchmarks/mpi_allreduce_bench.sh -C $coll -b 16 -e "${PERF_A2A_MAX:-64M}" -f 4 -n 20 -w 5
    keep_output "perf-$coll.txt"
    summarize "^# routed"
  done
  # One hop of the ring through the primitives, beside the bare flag: the floor under the latencies.
  step perf-hop-latency 60 benchmarks/hop_latency
  summarize "^ +(flag|prim)"
  gather_ab 2
  step perf-no-stream-order 120 env DFCCL_STREAM_ORDER=0 $mpi 2 benchmarks/dfccl_bench -C allreduce -A comm -P 1 \
    -b 8 -e 64K -f 8 -n "$perf_iters" -w 10
  keep_output perf-no-stream-order.txt
  rm -f "$out/perf-ooo.txt" # a warm machine keeps $out: no earlier run's log for targets.py
  step perf-out-of-order ${PERF_OOO_LIMIT:-180} $mpi 2 benchmarks/out_of_order_bench -s "${PERF_OOO_SIZES:-64K,4M}" \
    -n "${PERF_OOO_ITERS:-200}" -w 20 -r "${PERF_OOO_ROUNDS:-3}"
  keep_output perf-ooo.txt
  ooo_log=""
  grep -q "^out-of-order " "$out/perf-ooo.txt" 2> /dev/null && ooo_log="--ooo '$out/perf-ooo.txt'"
  step perf-targets 60 sh -c "cat '$out/perf-core-small.txt' '$out/perf-core-large.txt' > '$out/perf-core.txt' &&
    python3 benchmarks/targets.py '$out/perf-core.txt' --mpi '$out/perf-component.txt' $ooo_log"
  keep_output perf-targets.txt
  summarize "^(PASS|MISS|FAIL|N/A)"
  python3 -c "import matplotlib" 2> /dev/null &&
    python3 benchmarks/plot.py "$out/perf-core.txt" --mpi "$out/perf-component.txt" -o "$out/perf.png" >> "$log" 2>&1
  rm -f "$out/perf-core-small.txt" "$out/perf-core-large.txt"
fi

# PART=ab: this tree against a baseline in one call, on the same machine -- a change to the daemon
# measured against the tree before it.  The baseline is a `make dist` tarball in .dist-base/
# (git-ignored; its commit in .dist-base/COMMIT), built in /tmp/dfccl-base; a second candidate may
# come as a tarball in .dist-alt/ (built in /tmp/dfccl-alt, "alt" in the logs), so that one call
# measures two changes against the same baseline.  Then AB_ROUNDS (default 2) rounds go through the
# builds: hop_latency (one hop through the primitives) and dfccl_bench's small all-reduce (8 B - 64
# KiB, -A comm -P 1, results checked; AB_NP ranks, default 2, and AB_RUNS timed runs a size,
# default 200: one rank on a GPU of its own repeats to a few tenths of a microsecond, where two
# sharing one do not), with AB_ENV's variables for every tree (e.g. AB_ENV=DFCCL_ALLREDUCE_GATHER_BYTES=0:
# the ring on both, where the defaults differ); each round starts with the next tree.  With AB_MPI=1
# and AB_NP >= 2, each tree's MPI_Allreduce through its own coll/dfccl follows (mpi_allreduce_bench,
# the same sizes and runs, component and staged).  Logs: $out/ab-hop.txt, $out/ab-allreduce.txt and
# $out/ab-mpi.txt, each run under a "== base|this|alt, round N" line.
# ab_build NAME TARBALL: the tarball built in /tmp/dfccl-NAME; sets ab_dir.
ab_build() {
  rm -rf "/tmp/dfccl-$1" && mkdir -p "/tmp/dfccl-$1" && tar xzf "$2" -C "/tmp/dfccl-$1"
  ab_dir=$(echo "/tmp/dfccl-$1"/dfccl-*)
  step "ab-$1-build" 600 sh -c "cd '$ab_dir' && ./configure ${CONFIGURE_ARGS:-} > /dev/null &&
    make -j16 > /dev/null && make -j16 check TESTS= > /dev/null"
}
if named ab; then
  base_tarball=$(ls "$repo"/.dist-base/dfccl-*.tar.gz 2> /dev/null | head -n 1)
  alt_tarball=$(ls "$repo"/.dist-alt/dfccl-*.tar.gz 2> /dev/null | head -n 1)
  if [ -z "$base_tarball" ]; then
    note "SKIP ab: no baseline tarball in .dist-base/ (make dist of the baseline commit, carried)"
  else
    note "ab: baseline $(cat "$repo/.dist-base/COMMIT" 2> /dev/null || echo '(commit unknown)')"
    here=$PWD
    ab_build base "$base_tarball"
    base_dir=$ab_dir
    trees="base this"
    if [ -n "$alt_tarball" ]; then
      note "ab: alt $(cat "$repo/.dist-alt/COMMIT" 2> /dev/null || echo '(commit unknown)')"
      ab_build alt "$alt_tarball"
      alt_dir=$ab_dir
      trees="base this alt"
    fi
    : > "$out/ab-hop.txt"
    : > "$out/ab-allreduce.txt"
    : > "$out/ab-mpi.txt"
    gpus=$(nvidia-smi -L | wc -l) # one hop needs two GPUs: on a machine of one it is skipped, saying so
    ab_mpi=${AB_MPI:-0}
    if [ "$ab_mpi" = 1 ] && [ "${AB_NP:-2}" -lt 2 ]; then
      # coll/dfccl copies a one-rank communicator's data itself, never through the daemon, so
      # mpi_allreduce_bench -r would rightly fail (as it did in the thirty-eighth session)
      note "SKIP ab-mpi: coll/dfccl does one rank's collectives by a local copy; AB_MPI needs AB_NP >= 2"
      ab_mpi=0
    fi
    read -ra tree_list <<< "$trees"
    for round in $(seq 1 "${AB_ROUNDS:-2}"); do
      # Each round starts with the next tree (two: odd rounds the baseline first): an effect of
      # going first falls on each (every round ran the baseline first until the twenty-sixth session).
      order=""
      for i in "${!tree_list[@]}"; do order="$order ${tree_list[$(((i + round - 1) % ${#tree_list[@]}))]}"; done
      for tree in $order; do
        case $tree in base) dir=$base_dir ;; alt) dir=$alt_dir ;; *) dir=$here ;; esac
        if [ "$gpus" -ge 2 ]; then
          step "ab-hop-$tree-$round" 60 "$dir/benchmarks/hop_latency"
          [ "$ran" = 1 ] && { echo "== $tree, round $round"; grep -E "^ +(flag|prim)" "$out/step.out"; } >> "$out/ab-hop.txt"
        else
          note "SKIP ab-hop-$tree-$round: hop_latency needs two GPUs, this machine has one"
        fi
        # shellcheck disable=SC2086 # AB_ENV: separate words on purpose
        step "ab-allreduce-$tree-$round" 120 env ${AB_ENV:-} sh -c "cd '$dir' && sh test/mpi/mpirun.sh ${AB_NP:-2} \
          benchmarks/dfccl_bench -C allreduce -A comm -P 1 -b 8 -e 64K -f 8 -n ${AB_RUNS:-200} -w 20 -c 1 $(nccl_beside ${AB_NP:-2})"
        [ "$ran" = 1 ] && { echo "== $tree, round $round"; grep -E "^ +[0-9]" "$out/step.out"; } >> "$out/ab-allreduce.txt"
        [ "$ab_mpi" = 1 ] || continue
        # shellcheck disable=SC2086
        step "ab-mpi-$tree-$round" 120 env ${AB_ENV:-} DFCCL_TARGET=cuda \
          OMPI_MCA_mca_base_component_path="$dir/ompi_coll_dfccl/.libs:SYS_DEFAULT" \
          LD_LIBRARY_PATH="$dir/.libs:${LD_LIBRARY_PATH:-}" sh -c "cd '$dir' && sh test/mpi/mpirun.sh ${AB_NP:-2} \
          --mca coll_dfccl_priority 90 benchmarks/mpi_allreduce_bench -C allreduce -b 8 -e 64K -f 8 -n ${AB_RUNS:-200} -w 20 -c 1 -r"
        [ "$ran" = 1 ] && { echo "== $tree, round $round"; grep -E "^ +[0-9]" "$out/step.out"; } >> "$out/ab-mpi.txt"
      done
    done
    cat "$out/ab-hop.txt" "$out/ab-allreduce.txt" "$out/ab-mpi.txt" >> "$summary"
  fi
fi

# The tarball built once more with --enable-stamps, in /tmp/dfccl-stamps, once per call (PART=stamps
# and PART=trace): sets stamps_dir; true when that build is there, else stamps_status says why not.
build_stamps() {
  if [ -z "${stamps_status:-}" ]; then
    if [ -z "$tarball" ]; then
      stamps_status="no make dist tarball in .dist/"
    else
      rm -rf /tmp/dfccl-stamps && mkdir -p /tmp/dfccl-stamps && tar xzf "$repo/$tarball" -C /tmp/dfccl-stamps
      stamps_dir=$(echo /tmp/dfccl-stamps/dfccl-*)
      stamps_status="the stamps build failed (step stamps-build)"
      step stamps-build 600 sh -c "cd '$stamps_dir' && ./configure --enable-stamps --disable-ompi-coll ${CONFIGURE_ARGS:-} \
        > /dev/null && make -j16 > /dev/null && make -j16 check TESTS= > /dev/null" && stamps_status=ok
      # SKIP=stamps-build (only the microbenchmarks wanted): no build, so no stamped runs either.
      [ "$ran" = 1 ] || stamps_status="step stamps-build skipped (SKIP)"
    fi
  fi
  [ "$stamps_status" = ok ]
}

# PART=stamps (issue 15): where a small run's time goes -- the tree built once more with
# --enable-stamps (/tmp/dfccl-stamps; core/kernel/stamps.h, core/stamps.c) runs dfccl_bench's
# all-reduce (-A comm -P 1, results checked) at each of STAMPS_SIZES (default "8 64K") at 1 rank, 2
# ranks over CUDA IPC and 2 over UCX (STAMPS_RUNS, default "1 2 2-ucx"); each rank prints the
# median time between the points of its runs when it ends.  Log: $out/stamps.txt.  First
# benchmarks/host_read_cost.cu: what block 0's look at the SQ costs, by the form of its loads, and
# benchmarks/fence_cost.cu: what the fence before a CQE costs, by its form,
# benchmarks/local_after_acquire.cu: what a read of local memory costs after an acquire, and
# benchmarks/crossing_cost.cu: a host -> GPU -> host ping-pong, by how the GPU thread comes back to
# the SQ after a CQE.
# micro NAME ARGS: benchmarks/NAME.cu built and run with ARGS (step NAME, dashed), its tables in the summary.
micro() {
  step "$(echo "$1" | tr _ -)" 120 sh -c "nvcc -std=c++17 -O3 -arch=sm_90 benchmarks/$1.cu -o /tmp/$1 && /tmp/$1 $2"
  [ "$ran" = 1 ] && cat "$out/step.out" >> "$summary"
  return 0
}
if named stamps; then
  micro host_read_cost 20000
  micro fence_cost 20000
  micro local_after_acquire 20000
  micro crossing_cost "20000 0 1100 2000"
  if ! build_stamps; then
    note "SKIP stamps: $stamps_status"
  else
    : > "$out/stamps.txt"
    for size in ${STAMPS_SIZES:-8 64K}; do
      for run in ${STAMPS_RUNS:-1 2 2-ucx}; do
        np=${run%%-*}
        transport=p2p
        [ "$run" = "$np-ucx" ] && transport=ucx
        # The same run without stamps first: what the stamps themselves cost.
        for build in plain stamped; do
          dir=$PWD
          [ $build = stamped ] && dir=$stamps_dir
          step "stamps-$size-$run-$build" 120 env DFCCL_TRANSPORT=$transport UCX_TLS="${UCX_TLS:-tcp,self}" sh -c "cd '$dir' &&
            sh test/mpi/mpirun.sh $np benchmarks/dfccl_bench -C allreduce -A comm -P 1 -b $size -e $size -n 3000 -w 300 -c 1 $(nccl_beside $np)"
          [ "$ran" = 1 ] && { echo "== $size B, $np ranks, $transport, $build"; grep -E "^ +[0-9]|^dfccl: rank [0-9]+: (stamps|daemon|looks|host|across)" \
            "$out/step.out"; } >> "$out/stamps.txt"
        done
      done
    done
    # UCX alone at the same sizes, both ranks sending to each other (a round: one message each way,
    # as a hop of the gathering all-reduce), in the proxy's two forms: the floor under a hop over UCX.
    for form in split iov; do
      step "stamps-ucx-alone-$form" 120 env UCX_TLS="${UCX_TLS:-tcp,self}" $mpi 2 benchmarks/ucx_bandwidth -b 8 -e 32K -f 8 \
        -n 3000 -w 300 -p $form
      [ "$ran" = 1 ] && { echo "== UCX alone, $form"; grep -E "^ +[0-9]" "$out/step.out"; } >> "$out/stamps.txt"
    done
    cat "$out/stamps.txt" >> "$summary"
  fi
fi

# PART=trace (issue 15): where the random order's time goes -- the stamps build (above) runs
# out_of_order_bench at each of TRACE_SIZES (default "64K 4M"; -n TRACE_ITERS, default 30, one
# round) with DFCCL_TRACE_FILE, each rank writing daemon block 0's events ($out/trace-SIZE.RANK),
# and benchmarks/trace_report.py splits each iteration's time by what ended each stretch of it,
# fixed order against random ($out/trace-SIZE.txt).  The plain build runs the same first: what the
# trace costs.
if named trace; then
  if ! build_stamps; then
    note "SKIP trace: $stamps_status"
  else
    for size in ${TRACE_SIZES:-64K 4M}; do
      ooo_args="-s $size -n ${TRACE_ITERS:-30} -w 5 -r 1"
      step "trace-$size-plain" 120 $mpi 2 benchmarks/out_of_order_bench $ooo_args
      summarize "^ +[0-9]"
      step "trace-$size" 120 env DFCCL_TRACE_FILE="$out/trace-$size" sh -c "cd '$stamps_dir' &&
        sh test/mpi/mpirun.sh 2 benchmarks/out_of_order_bench $ooo_args"
      summarize "^ +[0-9]"
      [ "$ran" = 1 ] && python3 benchmarks/trace_report.py "$out/trace-$size" --timeline 1 > "$out/trace-$size.txt" 2>&1
      [ "$ran" = 1 ] && grep -vE "^ +[0-9.]+  [a-z]" "$out/trace-$size.txt" >> "$summary"
    done
  fi
fi

# PART=scale (issue 17): the deadlock programs and the benchmark at one rank per GPU on every GPU
# of a larger machine (SCALE_NP ranks, default the GPU count).  Four parts, each about one
# 10-minute slot on 4 GPUs (more on 8: run them one by one):
#   scale-deadlock   test_random_order x1000, test_sync_between x200 and x50 with cudaFree, and
#                    their preemption-off twins (must hang)
#   scale-component  the component's suite and its cross/sync/threads patterns (device.sh,
#                    COMPONENT_ITERS, default 1000; 4 ranks: about 5 minutes)
#   scale-bench      dfccl_bench beside NCCL, one step per collective of SCALE_COLLS (default the
#                    five), 16 B to SCALE_MAX (default 4G) in steps of 4, results checked (the check
#                    of the largest sizes is most of the time: SCALE_COLLS="allreduce allgather"
#                    and then the others in two calls)
#   scale-case       which algorithm and protocol NCCL's tuner picked at each size (rank 0's
#                    NCCL_DEBUG_SUBSYS=TUNING lines, one call per size), small all-reduces on the
#                    ring against by gathering (gather_ab), one hop of the ring (hop_latency), and
#                    the case study with both scheduling policies
# PART=scale runs all four.
scale_named() { named scale || named "scale-$1"; }
if scale_named deadlock || scale_named component || scale_named bench || scale_named case; then
  snp=${SCALE_NP:-$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')}
  note "PART=scale: $snp ranks, one per GPU"
fi
if scale_named deadlock; then
  step "random-order-${snp}x1" ${RO_LIMIT:-400} $mpi "$snp" test/mpi/test_random_order -i "${RO_ITERS:-1000}"
  summarize "^stats" "$snp"
  step "sync-between-${snp}x1" ${SYNC_LIMIT:-300} $mpi "$snp" test/mpi/test_sync_between -i "${SYNC_ITERS:-200}"
  step "cudafree-between-${snp}x1" ${SYNC_LIMIT:-300} $mpi "$snp" test/mpi/test_sync_between -i 50 -f
  step "random-order-${snp}x1-twin-no-preemption" 60 env DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
    "$mpi $snp test/mpi/test_random_order -i 50 2>&1 | tail -n 5; exit 0"
  twin_verdict
  step "sync-between-${snp}x1-twin-no-preemption" 60 env DFCCL_PREEMPTION=0 TEST_WATCHDOG_S=10 sh -c \
    "$mpi $snp test/mpi/test_sync_between -i 5 2>&1 | tail -n 5; exit 0"
  twin_verdict
fi
if scale_named component; then
  step "component-device-${snp}ranks" ${COMPONENT_LIMIT:-500} env LD_LIBRARY_PATH="$PWD/.libs:${LD_LIBRARY_PATH:-}" \
    ITERATIONS="${COMPONENT_ITERS:-1000}" sh ompi_coll_dfccl/test/device.sh "$snp"
  summarize "np=|pattern" 12
fi
if scale_named bench; then
  for coll in ${SCALE_COLLS:-allreduce allgather reducescatter broadcast reduce}; do
    step "bench-$coll-${snp}gpus" ${BENCH_LIMIT:-300} $mpi "$snp" benchmarks/dfccl_bench -C "$coll" -A comm -P 1 \
      -b 16 -e "${SCALE_MAX:-4G}" -f 4 -n 20 -w 5 -c 1
    keep_output "scale-bench-$coll-${snp}gpus.txt"
  done
fi
if scale_named case; then
  # NCCL's choice: one call per size (-n 1 -w 0 -c 0); rank 0 logs its tuner's pick at INFO.
  step "nccl-tuning-${snp}gpus" 120 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING $mpi "$snp" \
    benchmarks/dfccl_bench -C all -A comm -P 1 -b 8 -e 1G -f 4 -n 1 -w 0 -c 0
  [ "$ran" = 1 ] && grep -oE "[A-Za-z]+: [0-9]+ Bytes -> Algo [A-Za-z_]+ proto [A-Za-z0-9_]+" "$out/step.out" |
    sort -u -k1,1 -k2,2n > "$out/scale-nccl-tuning-${snp}gpus.txt"
  gather_ab "$snp"
  step "hop-latency-${snp}gpus" 60 benchmarks/hop_latency -g "$snp"
  summarize "^ +(flag|prim)"
  step "case-study-${snp}gpus" 200 sh benchmarks/case_study.sh "$snp" -i 20
  keep_output "scale-case-study-${snp}gpus.txt"
  summarize "^==|ms per step" 20
fi

# PART=ll (issue 15): low-latency slots (core/kernel/low_latency.h, DFCCL_LL_BYTES).  Exact to the
# bit through them: test_gather_reduce at 2 and 3 ranks, the random order (LL_ITERS, default 300)
# with every all-reduce on lines, and the twin that reads the lines without their flags, which
# must see wrong data.  Then the small all-reduce at LL_NP ranks (default 2) with lines off and on
# (DFCCL_LL_BYTES=0 and 65536), LL_ROUNDS rounds alternated (default 3), LL_RUNS timed runs a size
# (default 500) of the sizes LL_SIZES (dfccl_bench's, default "-b 8 -e 64K -f 8"), every result
# checked; LL_NCCL=1 runs NCCL beside them (a GPU per rank: NCCL refuses two ranks on one GPU).
# Log: $out/ll-ab.txt.
if named ll; then
  ll_on="DFCCL_LL_BYTES=65536 DFCCL_ALLREDUCE_GATHER_BYTES=65536"
  for np in 2 3; do
    # shellcheck disable=SC2086 # ll_on: separate words on purpose
    step "ll-gather-reduce-${np}ranks" 120 env $ll_on $mpi $np test/mpi/test_gather_reduce -i 3 -g 65536
  done
  # shellcheck disable=SC2086
  step ll-random-order-2ranks 200 env $ll_on $mpi 2 test/mpi/test_random_order -i "${LL_ITERS:-300}"
  # shellcheck disable=SC2086
  step ll-twin-unchecked 60 env $ll_on DFCCL_LL_CHECK=0 sh -c \
    "$mpi 2 test/mpi/test_gather_reduce -i 3 -g 65536 > $out/ll-twin.txt 2>&1; grep -m 3 'rank-order' $out/ll-twin.txt; exit 0"
  if [ "$ran" = 1 ]; then
    if grep -q "not the rank-order sum" "$out/step.out"; then note "  twin: wrong data seen without the flags"
    else note "  twin: NO WRONG DATA SEEN"; fi
  fi
  : > "$out/ll-ab.txt"
  for round in $(seq "${LL_ROUNDS:-3}"); do
    for bytes in 0 65536; do
      step "ll-bench-$bytes-round-$round" 120 env DFCCL_LL_BYTES=$bytes $mpi "${LL_NP:-2}" benchmarks/dfccl_bench \
        -C allreduce -A comm -P 1 ${LL_SIZES:--b 8 -e 64K -f 8} -n "${LL_RUNS:-500}" -w 50 -c 1 -N "${LL_NCCL:-0}"
      [ "$ran" = 1 ] && { echo "== DFCCL_LL_BYTES=$bytes, round $round"; grep -E "^ +[0-9]" "$out/step.out"; } \
        >> "$out/ll-ab.txt"
    done
  done
  cat "$out/ll-ab.txt" >> "$summary"
fi

# PART=gate (issue 15): the gate the caller's streams open on the GPU (DFCCL_STREAM_GATE) against the
# host's (two stream queries, then a store the daemon reads over the bus) and against no ordering at
# all (DFCCL_STREAM_ORDER=0: the floor), GATE_ROUNDS rounds alternated (default 3), GATE_NP ranks
# (default 1), GATE_RUNS timed runs a size (default 500), every result checked; first
# benchmarks/gate_cost.cu (each way of opening a gate beside a resident kernel, GATE_COST_ROUNDS
# rounds; which default stream's work a write waits for) and the correctness steps of PART=1.
# Log: $out/gate-ab.txt.
if named gate; then
  step gate-cost 120 sh -c "nvcc -std=c++17 -O2 -arch=sm_90 -I test/common benchmarks/gate_cost.cu -o /tmp/gate_cost -lcuda &&
    /tmp/gate_cost -n ${GATE_COST_ROUNDS:-20000}"
  summarize "^round|^a 20 ms"
  stream_gate_steps
  : > "$out/gate-ab.txt"
  for round in $(seq "${GATE_ROUNDS:-3}"); do
    for vars in DFCCL_STREAM_GATE=1 DFCCL_STREAM_GATE=0 DFCCL_STREAM_ORDER=0; do
      step "gate-bench-$vars-round-$round" 120 env $vars $mpi "${GATE_NP:-1}" benchmarks/dfccl_bench \
        -C allreduce -A comm -P 1 -b 8 -e 64K -f 8 -n "${GATE_RUNS:-500}" -w 50 -c 1 -N 0
      [ "$ran" = 1 ] && { echo "== $vars, round $round"; grep -E "^ +[0-9]" "$out/step.out"; } >> "$out/gate-ab.txt"
    done
  done
  cat "$out/gate-ab.txt" >> "$summary"
fi

# PART=ooo (issue 15): what out-of-order execution costs under each spin setting, for choosing the
# defaults by measurement.  For every setting of OOO_SETTINGS (";"-separated sets of variables;
# "defaults" is none), at 2 ranks (one per GPU): out_of_order_bench (random against fixed order,
# OOO_SIZES, default 64K,4M), the small all-reduce's latency (8 B - 64 KiB: a setting must not cost
# the fixed order), and the case study (161 all-reduces, one late rank).  The calibrated thresholds
# each rank uses are printed first (DFCCL_DEBUG=1's "a poll costs" lines).  Log: $out/ooo.txt, one
# "== SETTING" block each.
# The defaults against no sending ahead (DFCCL_SEND_AHEAD=0, the rule before the twenty-seventh
# session) and against the ring at both sizes (before the twenty-sixth session 64 KiB and 4 MiB ran
# on the ring; at 2 ranks they gather now), waits that leave to take SQ entries instead of taking
# them (the rule before df_take_in_wait), the nineteenth session's share (1/16), no followers, and
# the id order with a tenth of the thresholds (the best random order measured, at a cost to the
# fixed one).
ooo_default_settings="defaults;DFCCL_SEND_AHEAD=0;DFCCL_ALLREDUCE_GATHER_BYTES=32768;DFCCL_TAKE_IN_WAIT=0;DFCCL_LEAVE_FOR_READY=16;\
DFCCL_FOLLOW_READY=0;DFCCL_QUEUE_ORDER=id DFCCL_SPIN_FRONT=200 DFCCL_SPIN_CEILING=2000"
if named ooo; then
  ooo_np=${OOO_NP:-2} # OOO_NP=4: the same at 4 ranks (one per GPU on a 4-GPU machine)
  : > "$out/ooo.txt"
  step ooo-calibration 60 env DFCCL_DEBUG=1 $mpi $ooo_np benchmarks/dfccl_bench -C allreduce -A comm -P 1 -b 8 -e 8 -n 1 -w 0 -c 0
  summarize "a poll costs"
  echo "${OOO_SETTINGS:-$ooo_default_settings}" | tr ';' '\n' | while read -r setting; do
    [ -n "$setting" ] || continue
    vars=$setting
    [ "$vars" = defaults ] && vars=""
    echo "== $setting" >> "$out/ooo.txt"
    # shellcheck disable=SC2086 # vars: separate words on purpose
    step "ooo-bench $setting" 120 env $vars $mpi $ooo_np benchmarks/out_of_order_bench -s "${OOO_SIZES:-64K,4M}" -n 100 -w 10 -r 2
    [ "$ran" = 1 ] && grep -E "^ +[0-9]|^out-of-order|wrong" "$out/step.out" >> "$out/ooo.txt"
    # shellcheck disable=SC2086
    step "ooo-latency $setting" 60 env $vars $mpi $ooo_np benchmarks/dfccl_bench -C allreduce -A comm -P 1 -b 8 -e 64K -f 8 \
      -n 100 -w 10 -c 1 -N 0
    [ "$ran" = 1 ] && grep -E "^ +[0-9]" "$out/step.out" >> "$out/ooo.txt"
    # shellcheck disable=SC2086
    step "ooo-case-study $setting" 60 env $vars $mpi $ooo_np benchmarks/case_study -i 10
    [ "$ran" = 1 ] && grep -E "ms per step" "$out/step.out" >> "$out/ooo.txt"
  done
  cat "$out/ooo.txt" >> "$summary"
fi

# PART=explore: what the knobs do, for tuning the defaults (not part of the acceptance runs).
if named explore; then
step latency-all 200 $mpi 2 benchmarks/dfccl_bench -C all -b 16 -e 16M -f 16 -n 20 -w 5 -c 1 -S
keep_output latency.txt
summarize "^ +[0-9]|^# [a-z]"
# 4 ranks per GPU time-slice the GPU: how much do a short quit period and no relaunch back-off help?
for knobs in ${OVERSUB_KNOBS:-default 200:0 50:0}; do
  if [ "$knobs" = default ]; then set --; else
    set -- env DFCCL_QUIT_PERIOD_US=${knobs%%:*} DFCCL_RELAUNCH_DELAY_US=${knobs##*:}; fi
  step "random-order-8ranks quit:delay $knobs" ${OVERSUB_LIMIT:-45} "$@" $mpi 8 test/mpi/test_random_order -i 200
done
for knobs in ${BENCH_SWEEP:-524288:24 524288:32 524288:48 1048576:32 1048576:48}; do
  step "1GiB slot ${knobs%%:*} channels ${knobs##*:}" 120 env DFCCL_SLOT_BYTES=${knobs%%:*} \
    DFCCL_MAX_CHANNELS=${knobs##*:} $mpi 2 benchmarks/dfccl_bench -b 1G -e 1G -n 10 -w 3 -c 1
  summarize "^ +[0-9]"
done
fi
echo; cat "$summary"
