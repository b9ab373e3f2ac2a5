#!/usr/bin/env bash
# The OSU micro-benchmarks' collective benchmarks (7.x) on CUDA device buffers through coll/dfccl,
# as a user runs them with a CUDA-aware MPI.  The benchmarks are not part of this repository: build
# them first (test/gpu/osu_build.sh, from a tarball of their release carried in .osu/, git-ignored)
# and point OSU_DIR at the build.
# Usage: OSU_DIR=DIR bash test/gpu/osu.sh      from the build directory (the repository root after
#   ./configure && make, or an extracted dist tarball's build directory).
# For each NP of OSU_NPS (default "1 2"; ranks on GPU local_rank % device_count, so on a machine of
# one GPU both ranks of NP=2 share it, and with two GPUs each has its own):
#   osu_allreduce osu_bcast osu_reduce osu_allgather osu_reduce_scatter and their nonblocking forms
#   osu_i... with -d cuda -c (OSU's validation) -T mpi_float, then -T mpi_int, sizes 1 B .. 64 MiB;
#   then osu_allreduce -d cuda -T mpi_char WITHOUT -c (OSU's MPI_CHAR validation fails at 16 B even
#   with stock Open MPI), which must be routed through DFCCL.
# A run PASSes when it exits 0 and OSU's Validation column says Pass at every size it printed; the
# MPI_CHAR run when it exits 0 and coll/dfccl's per-process lines at MPI_Finalize
# (coll_dfccl_verbose 1: "coll:dfccl: rank R: allreduce: N routed, M fell back, ...") show calls
# routed.  OSU's collective benchmarks refuse one process ("This test requires at least two
# processes"): at NP=1 that is checked once and the runs are N/A.  A benchmark binary missing from
# OSU_DIR is MISSING (a failure).  The routed and fallen-back counts of every run, where those lines
# exist, are in the table (informational: e.g. osu_reduce_scatter's uneven counts fall back).  Last
# lines: a table, then "osu: N PASS, N FAIL, N N/A, N MISSING"; exit status 1 when one failed.
# Without a GPU (nvidia-smi lists none): "osu: SKIP (no GPU)", exit status 0.
# Environment: OSU_DIR (default /tmp/osu-build), OSU_NPS, OSU_BENCHMARKS (default the ten above),
#   OSU_TYPES (default "mpi_float mpi_int"), OSU_SIZES (default 1:67108864), OSU_ITERS (default 5:
#   -i, every size), OSU_WARMUP (default 1: -x), OSU_VWARMUP (default 1: -u, OSU's unchecked calls
#   before each checked one; OSU's own default is 5), OSU_ARGS (more options for every run),
#   OSU_CHAR (default 1; 0 leaves the MPI_CHAR run out), OSU_DEVICE (default cuda; none runs on host
#   buffers, for checking this script without a GPU in coll_dfccl_host_target mode through
#   MPIRUN_ARGS), OSU_TIMEOUT_S (default 300) per run, MPIRUN_ARGS (more mpirun options), LOG_DIR
#   (default a new directory under /tmp), BUILD_DIR, DFCCL_COMPONENT_DIR and CUDA_HOME as
#   examples/uninstalled.sh's; MPIRUN_SH as ompi_coll_dfccl/test/common.sh's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../examples/uninstalled.sh
. "$here/../../examples/uninstalled.sh"
uninstalled_component "$here/../.." || exit 1 # build, sodir, LD_LIBRARY_PATH
export DFCCL_COMPONENT_DIR=$sodir
export MPIRUN_SH=${MPIRUN_SH:-$here/../mpi/mpirun.sh}
# shellcheck source=../../ompi_coll_dfccl/test/common.sh
. "$here/../../ompi_coll_dfccl/test/common.sh" # the component path (Open MPI's kept: SYS_DEFAULT), mpirun_sh
osu_dir=${OSU_DIR:-/tmp/osu-build}
nps=${OSU_NPS:-1 2}
benchmarks=${OSU_BENCHMARKS:-osu_allreduce osu_bcast osu_reduce osu_allgather osu_reduce_scatter \
osu_iallreduce osu_ibcast osu_ireduce osu_iallgather osu_ireduce_scatter}
types=${OSU_TYPES:-mpi_float mpi_int}
device=${OSU_DEVICE:-cuda}
limit=${OSU_TIMEOUT_S:-300}
export DFCCL_TARGET=cuda # mpirun.sh's default is the host target, for DFCCL's own tests
logs=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dfccl-osu.XXXXXX")}
mkdir -p "$logs" || exit 2
for np in $nps; do
  case $np in '' | *[!0-9]*) echo "OSU_NPS: not a list of rank counts: $nps" >&2; exit 2 ;; esac
done
[ -d "$osu_dir" ] || echo "note: no OSU_DIR $osu_dir: every benchmark will be MISSING (build them: test/gpu/osu_build.sh)"
gpus=0
command -v nvidia-smi > /dev/null 2>&1 && gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
# nvidia-smi lists every GPU; the ranks see only CUDA_VISIBLE_DEVICES's (e.g. 4 ranks on 2 of 4).
if [ "$gpus" -gt 0 ] && [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
  visible=$(printf '%s\n' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
  [ "$visible" -lt "$gpus" ] && gpus=$visible
fi
if [ "$device" = cuda ] && [ "$gpus" -eq 0 ]; then
  echo "osu: SKIP (no GPU)"
  exit 0
fi
echo "OSU micro-benchmarks from $osu_dir through coll/dfccl ($DFCCL_COMPONENT_DIR), $gpus GPU(s), -d $device"

table=() # rows of the summary
npass=0 nfail=0 nna=0 nmissing=0

# bin NAME: the benchmark's executable under $osu_dir (the build tree or an installed libexec).
bin() { find "$osu_dir" -type f -name "$1" -perm -u+x 2> /dev/null | head -n 1; }

# counts NAME DIR: "ROUTED FELL" summed over the per-process lines of collective NAME at MPI_Finalize
# (matched loosely: "coll:dfccl: ... rank R: ... NAME: N routed, M fell back"), or "- -" without any.
counts() {
  cat "$2"/1/rank.*/stdout "$2"/1/rank.*/stderr 2> /dev/null |
    sed -nE "s/.*coll:dfccl:.*rank [0-9]+.*[ :]$1: *([0-9]+) routed, *([0-9]+) fell back.*/\1 \2/p" |
    awk '{ r += $1; f += $2; n++ } END { if (n) print r, f; else print "-", "-" }'
}

# note VERDICT BENCHMARK TYPE NP SIZES ROUTED TIME WHY: one row of the table; $last: its verdict.
last=
note() {
  last=$1
  case $1 in PASS) npass=$((npass + 1)) ;; FAIL) nfail=$((nfail + 1)) ;; N/A) nna=$((nna + 1)) ;;
    MISSING) nmissing=$((nmissing + 1)) ;; esac
  table+=("$(printf '%-22s %-10s %3s  %-8s %-18s %-16s %6s  %s' "$2" "$3" "$4" "$1" "$5" "$6" "$7" "$8")")
  echo "$1 $2 -T $3 np=$4: sizes $5, routed/fell back $6, $7${8:+; $8}"
}

# run BENCHMARK TYPE NP CHECKED: one OSU run; CHECKED=1 with -c (OSU's validation), 0 without (then
# it must be routed).  Its full output: $logs/BENCHMARK-TYPE-npNP.log and, per rank, that name's
# directory (mpirun --output-filename: whole lines, unlike mpirun's merged output).
run() {
  b=$1 t=$2 np=$3 checked=$4
  name=$b-$t-np$np
  exe=$(bin "$b")
  if [ -z "$exe" ]; then
    note MISSING "$b" "$t" "$np" - - - "no $b under $osu_dir"
    return
  fi
  dir=$logs/$name
  rm -rf "$dir"
  args=(-m "${OSU_SIZES:-1:67108864}" -i "${OSU_ITERS:-5}" -x "${OSU_WARMUP:-1}" -T "$t")
  [ "$device" = none ] || args+=(-d "$device")
  [ "$checked" = 1 ] && args+=(-c -u "${OSU_VWARMUP:-1}")
  start=$(date +%s)
  # shellcheck disable=SC2086 # MPIRUN_ARGS, OSU_ARGS: separate words on purpose
  timeout "$limit" sh "$mpirun_sh" "$np" --output-filename "$dir" --mca coll_dfccl_priority 90 \
    --mca coll_dfccl_verbose 1 --mca coll_base_verbose 10 ${MPIRUN_ARGS:-} "$exe" "${args[@]}" ${OSU_ARGS:-} \
    > "$dir.log" 2>&1
  rc=$?
  took="$(($(date +%s) - start))s"
  out=$dir/1/rank.0/stdout
  [ -f "$out" ] || out=$dir.log
  rows=$(grep -cE '^[0-9]+ ' "$out")
  largest=$(grep -E '^[0-9]+ ' "$out" | tail -n 1 | awk '{ print $1 }')
  failed_at=$(grep -E '^[0-9]+ ' "$out" | awk '$NF == "Fail" { print $1; exit }')
  passed=$(grep -E '^[0-9]+ ' "$out" | awk '$NF == "Pass"' | wc -l)
  selected=$(ranks_selecting_dfccl "$dir")
  read -r routed fell <<< "$(counts "${b#osu_}" "$dir")"
  sizes="$rows${largest:+ (to $largest)}"
  why=
  [ "$selected" -eq "$np" ] || why="coll/dfccl selected on $selected of $np ranks; "
  if grep -q "requires at least two processes" "$dir.log" "$out" 2> /dev/null; then
    note N/A "$b" "$t" "$np" - - "$took" "OSU: this test requires at least two processes"
  elif [ "$rc" -ne 0 ]; then
    why="${why}exit status $rc"
    [ "$rc" -ne 124 ] || why="no result within $limit s (OSU_TIMEOUT_S)"
    [ -z "$failed_at" ] || why="$why, OSU's validation failed at $failed_at B"
    grep -m 1 -E "DATA VALIDATION ERROR|CUDA call|Error|error" "$dir.log" > /dev/null &&
      why="$why: $(grep -m 1 -E "DATA VALIDATION ERROR|CUDA call|Error|error" "$dir.log" | cut -c1-120)"
    note FAIL "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" "$why"
  elif [ "$rows" -eq 0 ]; then
    note FAIL "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" "${why}no result rows"
  elif [ "$checked" = 1 ] && { [ -n "$failed_at" ] || [ "$passed" -ne "$rows" ]; }; then
    note FAIL "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" "${why}OSU's validation: $passed of $rows sizes Pass${failed_at:+, Fail at $failed_at B}"
  elif [ "$checked" = 0 ] && [ "$routed" = - ]; then
    note FAIL "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" \
      "${why}no 'coll:dfccl: rank R: ${b#osu_}: N routed' line at MPI_Finalize: cannot show the route"
  elif [ "$checked" = 0 ] && [ "$routed" -eq 0 ]; then
    note FAIL "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" "${why}not routed through DFCCL ($fell fell back)"
  elif [ -n "$why" ]; then
    note FAIL "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" "${why%; }"
  else
    note PASS "$b" "$t" "$np" "$sizes" "$routed/$fell" "$took" "$([ "$checked" = 1 ] && echo "validation Pass at every size")"
  fi
}

for np in $nps; do
  if [ "$gpus" -gt 0 ]; then
    if [ "$np" -le "$gpus" ]; then echo "np=$np: one GPU per rank"; else echo "np=$np: ranks share $gpus GPU(s)"; fi
  fi
  if [ "$np" -lt 2 ]; then # OSU's collective benchmarks refuse one process: check that once
    run osu_allreduce mpi_float "$np" 1
    if [ "$last" = N/A ]; then
      for b in $benchmarks; do
        for t in $types; do
          if [ "$b/$t" = osu_allreduce/mpi_float ]; then continue
          elif [ -z "$(bin "$b")" ]; then note MISSING "$b" "$t" "$np" - - - "no $b under $osu_dir"
          else note N/A "$b" "$t" "$np" - - - "as osu_allreduce"; fi
        done
      done
      [ "${OSU_CHAR:-1}" = 0 ] || note N/A osu_allreduce mpi_char "$np" - - - "as osu_allreduce"
      continue
    fi
  fi
  for b in $benchmarks; do
    for t in $types; do
      [ "$np/$b/$t" = 1/osu_allreduce/mpi_float ] || run "$b" "$t" "$np" 1
    done
  done
  [ "${OSU_CHAR:-1}" = 0 ] || run osu_allreduce mpi_char "$np" 0
done

echo
printf '%-22s %-10s %3s  %-8s %-18s %-16s %6s  %s\n' benchmark type np verdict "sizes (to bytes)" "routed/fell back" \
  time note
printf '%s\n' "${table[@]}"
echo "logs: $logs"
echo "osu: $npass PASS, $nfail FAIL, $nna N/A, $nmissing MISSING"
[ $((nfail + nmissing)) -eq 0 ]
