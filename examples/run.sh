#!/usr/bin/env bash
# Runs the two examples through coll/dfccl on NP ranks (default 2), one GPU per rank:
#   deadlock_free_allreduce  (C, CUDA-aware MPI; compiled here with mpicc when the build has not)
#   cupy_allreduce.py        (mpi4py + CuPy)
# Usage: bash examples/run.sh [NP]      from the build directory: the repository root after
#   ./configure && make, or an extracted dist tarball's build directory.
# An example PASSes when it prints OK, Open MPI selected coll/dfccl on every rank (a line
# "selecting dfccl ... Enabled" of coll_base_verbose), and every one of its calls on its
# communicators "example A" and "example B" ran on DFCCL ("started on DFCCL" of
# coll_dfccl_verbose 10, none "falls back"); SKIP when there is no GPU, no CUDA toolkit (C) or no
# mpi4py/CuPy (Python).  Exit status 1 when one FAILed.
# Environment: BUILD_DIR (default: the current directory when it holds libdfccl.la, else this
#   script's ..); DFCCL_COMPONENT_DIR (default BUILD_DIR/ompi_coll_dfccl/.libs: the directory of
#   mca_coll_dfccl.so, e.g. where it was installed); CUDA_HOME (default: the CUDA that configure
#   found, else /usr/local/cuda); MPIRUN (mpirun), MPICC (mpicc), PYTHON (python3); ITERATIONS
#   (default 20) per example; EXAMPLE_TIMEOUT_S (default 180) per example; MPIRUN_ARGS (more
#   mpirun options); LOG_DIR (default a new temporary directory) for the full outputs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
np=${1:-2}
case $np in '' | *[!0-9]*) echo "usage: bash $0 [NP]" >&2; exit 2 ;; esac
. "$here/uninstalled.sh"
uninstalled_component "$here/.." || exit 1
iterations=${ITERATIONS:-20}
limit=${EXAMPLE_TIMEOUT_S:-180}
failed=0

result() { # result PASS|FAIL|SKIP NAME WHY
  echo "$1 $2${3:+: $3}"
  [ "$1" != FAIL ] || failed=1
}

gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
else
  for dev in /dev/nvidia[0-9]*; do [ -e "$dev" ] && gpus=$((gpus + 1)); done
fi
if [ "$gpus" -eq 0 ]; then
  result SKIP deadlock_free_allreduce "no GPU"
  result SKIP cupy_allreduce.py "no GPU"
  exit 0
fi
[ "$gpus" -ge "$np" ] || echo "note: $np ranks on $gpus GPU(s): ranks share GPUs (slow without MPS, see README.md)"
logs=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dfccl-examples.XXXXXX")}
mkdir -p "$logs" || exit 2

# run_example NAME PROGRAM [ARGS...]: on $np ranks through coll/dfccl; prints its verdict.
run_example() {
  name=$1
  shift
  log=$logs/$name.log
  # shellcheck disable=SC2086 # MPIRUN_ARGS: separate words on purpose
  timeout "$limit" "${MPIRUN:-mpirun}" --allow-run-as-root -np "$np" -x LD_LIBRARY_PATH \
    --mca coll_dfccl_priority 90 --mca coll_base_verbose 10 --mca coll_dfccl_verbose 10 \
    ${MPIRUN_ARGS:-} "$@" > "$log" 2>&1
  rc=$?
  selected=$(grep -c 'selecting *dfccl.*Enabled' "$log")
  # The examples' calls (count 1048576) or their communicators falling back; Open MPI's own small
  # host-memory calls on them (e.g. agreeing on a new communicator's id) fall back, as they should.
  fallback="comm 'example [AB]' (\(count 1048576\) )?falls back"
  fell_back=$(grep -cE "$fallback" "$log")
  routed=$(grep -cE "on comm 'example [AB]' \(count 1048576\) started on DFCCL" "$log")
  want=$((np * 2 * (iterations + 1))) # per rank: one blocking set-up call and ITERATIONS nonblocking on A and B
  grep -E "^(rank [0-9]+:|[0-9]+ ranks|mpi4py |OK$|FAILED$|SKIP)|$fallback" "$log" | sed 's/^/  /'
  if [ "$rc" -eq 0 ] && grep -q '^SKIP' "$log"; then
    result SKIP "$name" "$(grep -m 1 '^SKIP' "$log" | sed 's/^SKIP: *//')"
  elif [ "$rc" -eq 0 ] && grep -q '^OK$' "$log" && [ "$selected" -ge "$np" ] && [ "$routed" -eq "$want" ]; then
    result PASS "$name" "coll/dfccl selected on $selected communicator-ranks; all $routed calls on A and B ran on DFCCL"
  else
    why="exit status $rc"
    [ "$rc" -ne 124 ] || why="no result within $limit s (EXAMPLE_TIMEOUT_S): a hang?"
    [ "$selected" -ge "$np" ] || why="$why; coll/dfccl selected $selected times, expected >= $np (does the program use the Open MPI that coll/dfccl was built for?)"
    [ "$routed" -eq "$want" ] || why="$why; $routed of $want calls on A and B ran on DFCCL, $fell_back fell back"
    grep -vE '^\[[^]]*\] (mca: |coll:|\([0-9]+/)' "$log" | tail -n 20 | sed 's/^/  | /' # less the verbose output
    result FAIL "$name" "$why (log $log)"
  fi
}

# ---- the C example: the build's, or compiled here -------------------------------------------------
c_src=$here/deadlock_free_allreduce.c
c_prog=$build/examples/deadlock_free_allreduce
if [ ! -x "$c_prog" ] || [ "$c_src" -nt "$c_prog" ]; then
  c_prog=
  if [ ! -f "$cuda/include/cuda_runtime.h" ]; then
    result SKIP deadlock_free_allreduce "no CUDA toolkit in $cuda (set CUDA_HOME)"
  else
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/dfccl-example.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    if "${MPICC:-mpicc}" -O2 -Wall -Wextra -I"$cuda/include" "$c_src" -L"$cuda_lib" -Wl,-rpath,"$cuda_lib" \
      -lcudart -o "$tmp/deadlock_free_allreduce" > "$logs/compile.log" 2>&1; then
      c_prog=$tmp/deadlock_free_allreduce
    else
      sed 's/^/  | /' "$logs/compile.log"
      result FAIL deadlock_free_allreduce "could not compile it with ${MPICC:-mpicc}"
    fi
  fi
fi
[ -z "$c_prog" ] || run_example deadlock_free_allreduce "$c_prog" "$iterations"

# ---- the Python example ---------------------------------------------------------------------------
python=${PYTHON:-python3}
missing=$("$python" -c 'import importlib.util as u; print(" ".join(m for m in ("mpi4py", "cupy") if u.find_spec(m) is None))' 2>&1)
if [ -n "$missing" ]; then
  result SKIP cupy_allreduce.py "not installed for $python: $missing (see examples/README.md)"
else
  run_example cupy_allreduce.py "$python" "$here/cupy_allreduce.py" "$iterations"
fi

echo "logs: $logs"
exit $failed
