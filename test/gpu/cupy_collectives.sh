#!/usr/bin/env bash
# Runs test/gpu/cupy_collectives.py (mpi4py on CuPy arrays: every collective coll/dfccl routes,
# blocking and nonblocking, MPI_IN_PLACE, roots 0 and last, inputs never synchronized) through
# coll/dfccl on each NP given (default: 2 and 4 ranks), ranks on GPU local_rank % device_count.
# Usage: bash test/gpu/cupy_collectives.sh [NP ...]     from the build directory (the repository
#   root after ./configure && make, or an extracted dist tarball's build directory).
# A run PASSes when the script prints PASS, Open MPI selected coll/dfccl on every rank
# (coll_base_verbose: "selecting dfccl ... Enabled"), and every one of its calls started on DFCCL
# (coll_dfccl_verbose 10: "... on comm 'cupy collectives' (count N) started on DFCCL", exactly the
# script's "calls: N per rank" times NP); SKIP without a GPU, mpi4py or CuPy.  Exit status 1 when a
# run FAILed.
# Environment: PER_THREAD=1 (default) runs the first NP once more with
#   CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 (CuPy's kernels on the per-thread default stream), 0 not;
#   CUPY_ARGS (more options of the script, e.g. "--counts 1,1000 --passes 2"); CUPY_TIMEOUT_S
#   (default 600) per run; ARRAYS=numpy runs the script on NumPy arrays in coll/dfccl's host-target
#   test mode (checks the script and this wrapper where there is no GPU); BUILD_DIR,
#   DFCCL_COMPONENT_DIR, CUDA_HOME, PYTHON, MPIRUN, MPIRUN_ARGS and LOG_DIR as examples/run.sh's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nps=${*:-2 4}
for np in $nps; do
  case $np in '' | *[!0-9]*) echo "usage: bash $0 [NP ...]" >&2; exit 2 ;; esac
done
python=${PYTHON:-python3}
limit=${CUPY_TIMEOUT_S:-600}
numpy=0
[ "${ARRAYS:-cupy}" = numpy ] && numpy=1
failed=0

. "$here/../../examples/uninstalled.sh"
uninstalled_component "$here/../.." || exit 1
if [ $numpy -eq 0 ]; then
  gpus=0
  if command -v nvidia-smi > /dev/null 2>&1; then gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU'); fi
  [ "$gpus" -gt 0 ] || { echo "SKIP cupy_collectives.py: no GPU"; exit 0; }
  missing=$("$python" -c 'import importlib.util as u; print(" ".join(m for m in ("mpi4py", "cupy") if u.find_spec(m) is None))' 2>&1)
  [ -z "$missing" ] || { echo "SKIP cupy_collectives.py: not installed for $python: $missing (see examples/README.md)"; exit 0; }
fi
logs=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dfccl-cupy.XXXXXX")}
mkdir -p "$logs" || exit 2
mode_args=() script_args=()
[ $numpy -eq 1 ] && mode_args=(--mca coll_dfccl_host_target host) script_args=(--host)

# run NAME NP [VAR=VALUE]: the script on NP ranks through coll/dfccl; prints its verdict.
run() {
  name=$1 np=$2
  log=$logs/$name.log # mpirun's output; each rank's, whole lines, under $logs/$name/1/rank.N/
  ranks=$logs/$name.ranks
  rm -rf "${logs:?}/$name"
  start=$(date +%s)
  env_args=() export_args=()
  [ -n "${3:-}" ] && env_args=("$3") export_args=(-x "${3%%=*}")
  # shellcheck disable=SC2086 # MPIRUN_ARGS, CUPY_ARGS: separate words on purpose
  timeout "$limit" env "${env_args[@]}" "${MPIRUN:-mpirun}" --allow-run-as-root -np "$np" -x LD_LIBRARY_PATH \
    "${export_args[@]}" --output-filename "$logs/$name" --mca coll_dfccl_priority 90 --mca coll_base_verbose 10 --mca coll_dfccl_verbose 10 \
    "${mode_args[@]}" ${MPIRUN_ARGS:-} "$python" "$here/cupy_collectives.py" "${script_args[@]}" ${CUPY_ARGS:-} \
    > "$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  # Counted in the ranks' own files: in mpirun's merged output, lines of two ranks can interleave.
  cat "$logs/$name"/1/rank.*/stdout "$logs/$name"/1/rank.*/stderr > "$ranks" 2> /dev/null
  [ -s "$ranks" ] || cp "$log" "$ranks"
  selected=$(ranks_selecting_dfccl "$logs/$name")
  calls=$(sed -n "s/^calls: \([0-9]*\) per rank.*/\1/p" "$ranks" | head -n 1)
  started=$(grep -c "on comm 'cupy collectives' (count [0-9]*) started on DFCCL" "$ranks")
  fell_back=$(grep "on comm 'cupy collectives' (count [0-9]*\(, root [0-9]*\)\?) falls back" "$ranks" |
    grep -vc "DFCCL's set-up is running") # Open MPI's own calls while the component sets the communicator up
  want=$((np * ${calls:-0}))
  grep -E "^(rank [0-9]+:|mpi4py |calls: |PASS|FAIL|SKIP)|Traceback|Error" "$ranks" | head -n 20 | sed 's/^/  /'
  if [ "$rc" -eq 0 ] && grep -q '^SKIP' "$ranks"; then
    echo "SKIP $name: $(grep -m 1 '^SKIP' "$ranks" | sed 's/^SKIP: *//')"
  elif [ "$rc" -eq 0 ] && grep -q '^PASS' "$ranks" && [ "$selected" -eq "$np" ] && [ "$want" -gt 0 ] &&
    [ "$started" -eq "$want" ]; then
    echo "PASS $name (${took}s): $(grep -m 1 '^PASS' "$ranks" | sed 's/^PASS: //'); all $started calls started on DFCCL"
  else
    why="exit status $rc"
    [ "$rc" -ne 124 ] || why="no result within $limit s (CUPY_TIMEOUT_S): a hang?"
    [ "$selected" -eq "$np" ] || why="$why; coll/dfccl selected on $selected of $np ranks"
    [ "$started" -eq "$want" ] || why="$why; $started of $want calls started on DFCCL, $fell_back of ours fell back"
    grep -vE '^\[[^]]*\] (mca: |coll:|\([0-9]+/)' "$log" | tail -n 20 | sed 's/^/  | /'
    echo "FAIL $name (${took}s): $why (log $log)"
    failed=1
  fi
}

first=1
for np in $nps; do
  run "cupy_collectives-np$np" "$np"
  if [ $first -eq 1 ] && [ "${PER_THREAD:-1}" = 1 ] && [ $numpy -eq 0 ]; then
    run "cupy_collectives-np$np-per-thread-stream" "$np" CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1
  fi
  first=0
done
echo "logs: $logs"
exit $failed
