#!/bin/sh
# Issue 4's benchmark in one go, on a machine with 2 GPUs (one rank per GPU), for MPI_Allreduce (the
# default) or any of the collectives that coll/dfccl routes to DFCCL: the MPI collective on device
# buffers through coll/dfccl beside (a) DFCCL's core API and (b) NCCL, both from dfccl_bench -C, and
# (c) staging through host memory (cudaMemcpy, the host MPI call, cudaMemcpy), from
# mpi_allreduce_bench -C; then, for each collective, one line per size with the four times, and for
# all-reduce the two targets: the component within 10 % of the core API at >= 1 MiB, and >= 10x
# faster than staging at 16 MiB.
#
# Usage: sh benchmarks/mpi_allreduce_bench.sh [-C COLL] [-R ROOT] [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP]
#   -C: allreduce allgather reducescatter broadcast reduce alltoall allgatherv, or all (the seven,
#   one table each; default allreduce), passed to both programs (NCCL's all-to-all is a group of
#   sends and receives, its all-gather-v a group of broadcasts, one per rank; all-gather-v's rank r
#   sends (r + 1) x count floats); -R: root of broadcast and reduce (default 0; dfccl_bench -r,
#   mpi_allreduce_bench -R).
#   Sizes as dfccl_bench counts them (benchmarks/README.md, "Sizes"), so the rows line up.
#   Defaults -b 1K -e 256M -f 4 -n 20 -w 5 (meant to take well under 2 minutes on 2 H200s for one
#   collective), the same for both programs, float (sum for the reductions), out of place, every
#   result checked (-c 1).  Times are per call on the slowest rank; (a) is dfccl_bench's DFCCL
#   out-of-place time (submit -> callback), (b) NCCL's out-of-place time ("-" when dfccl_bench was
#   built without NCCL).  Both programs run under test/mpi/mpirun.sh, so (c)'s host collective uses
#   Open MPI's shared-memory transport as configured there (vader, single-copy mechanism off).
# Environment: NP (default 2) ranks; CUDA_HOME (default /usr/local/cuda), whose lib64 goes on the
#   loader path with the build's .libs (libdfccl); DFCCL_COMPONENT_DIR (default
#   ompi_coll_dfccl/.libs, where mca_coll_dfccl.so is); BUILD_DIR (default this script's ..: where
#   benchmarks/dfccl_bench and benchmarks/mpi_allreduce_bench were built); MPIRUN (see
#   test/mpi/mpirun.sh); CORE_BENCH_ARGS, more options for dfccl_bench (e.g. "-N 0": no NCCL, which
#   refuses two ranks on one GPU); BENCH_TIMEOUT_S (default 300) per program; LOG_DIR (default a new
#   temporary directory) for the two programs' outputs.
# Exit status: 0 when both programs ran and every result was right, whether or not the targets
#   were met, and when there is no GPU ("no GPU: nothing to measure"); 1 on any error (a program
#   failed, a wrong element, a component call that coll/dfccl did not route); 2 on bad arguments.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${BUILD_DIR:-$here/..}" && pwd) || exit 1
mpirun_sh=$here/../test/mpi/mpirun.sh
sodir=${DFCCL_COMPONENT_DIR:-$build/ompi_coll_dfccl/.libs}
np=${NP:-2}
limit=${BENCH_TIMEOUT_S:-300}

fail() {
  echo "mpi_allreduce_bench.sh: $*" >&2
  exit 1
}

bad_argument() {
  echo "mpi_allreduce_bench.sh: $*" >&2
  exit 2
}

usage="usage: sh $0 [-C COLL] [-R ROOT] [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP]"
coll=allreduce root=0 min=1K max=256M factor=4 iters=20 warmup=5
while getopts C:R:b:e:f:n:w:h opt; do
  case $opt in
    C) coll=$OPTARG ;;
    R) root=$OPTARG ;;
    b) min=$OPTARG ;;
    e) max=$OPTARG ;;
    f) factor=$OPTARG ;;
    n) iters=$OPTARG ;;
    w) warmup=$OPTARG ;;
    h) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || bad_argument "unexpected argument '$1'"
colls="allreduce allgather reducescatter broadcast reduce alltoall allgatherv"
case " $colls all " in
  *" $coll "*) ;;
  *) bad_argument "-C: expected one of $colls, or all, got '$coll'" ;;
esac
case $root in
  '' | *[!0-9]*) bad_argument "-R: expected a rank in [0, $((np - 1))], got '$root'" ;;
esac
[ "$root" -lt "$np" ] || bad_argument "-R: expected a rank in [0, $((np - 1))], got '$root'"
sizes="-b $min -e $max -f $factor -n $iters -w $warmup -c 1"

# GPUs: as nvidia-smi lists them, or as /dev shows them where there is no nvidia-smi.
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
else
  for dev in /dev/nvidia[0-9]*; do [ -e "$dev" ] && gpus=$((gpus + 1)); done
fi
if [ "$gpus" -eq 0 ]; then
  echo "no GPU: nothing to measure"
  exit 0
fi
[ "$gpus" -ge "$np" ] || echo "note: $np ranks on $gpus GPU(s): several ranks share a GPU (time-sliced, see README.md)"

core_bench=$build/benchmarks/dfccl_bench
mpi_bench=$build/benchmarks/mpi_allreduce_bench
for prog in "$core_bench" "$mpi_bench"; do
  [ -x "$prog" ] || fail "no $prog: build it first (make && make benchmarks/mpi_allreduce_bench)"
done
[ -f "$sodir/mca_coll_dfccl.so" ] ||
  fail "no $sodir/mca_coll_dfccl.so: coll/dfccl is not built (configure found no Open MPI headers?)"
logs=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mpi_allreduce_bench.XXXXXX")}
mkdir -p "$logs" || fail "cannot create $logs"
export DFCCL_TARGET=cuda # mpirun.sh's default is the host target, for DFCCL's own tests

# run NAME PROGRAM...: under mpirun.sh on $np ranks, output to $logs/NAME.txt and here.
run() {
  name=$1
  shift
  timeout "$limit" sh "$mpirun_sh" "$np" "$@" > "$logs/$name.txt" 2>&1
  status=$?
  cat "$logs/$name.txt"
  [ "$status" -ne 124 ] || fail "$name: no result within $limit s (BENCH_TIMEOUT_S), log $logs/$name.txt"
  [ "$status" -eq 0 ] || fail "$name: exit status $status, log $logs/$name.txt"
}

echo "== (i) core API (a) and NCCL (b): dfccl_bench -C $coll -r $root $sizes"
# shellcheck disable=SC2086 # $sizes: separate words on purpose
run core "$core_bench" -C "$coll" -r "$root" $sizes ${CORE_BENCH_ARGS:-}

echo "== (ii) through coll/dfccl, and staged through host memory (c): mpi_allreduce_bench -C $coll -R $root $sizes -r"
cuda_lib=${CUDA_HOME:-/usr/local/cuda}/lib64
libs=$build/.libs
[ -d "$cuda_lib" ] && libs="$libs:$cuda_lib"
# The component path replaces the default one: keep Open MPI's own components (SYS_DEFAULT).
export OMPI_MCA_mca_base_component_path="$sodir:SYS_DEFAULT"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# shellcheck disable=SC2086
run component --mca coll_dfccl_priority 90 "$mpi_bench" -C "$coll" -R "$root" $sizes -r

# Both programs print one table per collective, under a title line naming it as dfccl_bench does
# ("# all-gather", "# broadcast, root 0"), which also holds its column labels ("DFCCL out-of-place",
# "component: device buffers").  dfccl_bench rows: size count type redop, then time algbw busbw
# #wrong for DFCCL out of place, DFCCL in place, and (when built with NCCL) NCCL out of place, NCCL
# in place.  mpi_allreduce_bench rows: size count, time algbw busbw #wrong for component and staged,
# then staged/component.  Rows are joined by collective and size.
awk -v np="$np" -v mib=1048576 -v big=16777216 '
  BEGIN {
    mpi["all-reduce"] = "MPI_Allreduce"; mpi["all-gather"] = "MPI_Allgather"
    mpi["reduce-scatter"] = "MPI_Reduce_scatter_block"; mpi["broadcast"] = "MPI_Bcast"; mpi["reduce"] = "MPI_Reduce"
    mpi["all-to-all"] = "MPI_Alltoall"; mpi["all-gather-v"] = "MPI_Allgatherv"
  }
  # The collective of a title line (a measured one, else ""), and its title ("broadcast, root 0").
  function collective(   name) { name = $2; sub(/,$/, "", name); return (name in mpi) ? name : "" }
  function title(   t) { t = $0; sub(/^# /, "", t); sub(/  .*/, "", t); return t }
  FILENAME == ARGV[1] && /^# .*out-of-place/ { coll = collective(); next }
  FILENAME == ARGV[1] && /^ *[0-9]/ && coll != "" {
    core[coll, $1] = $5; nccl[coll, $1] = NF >= 20 ? $13 : "-"; next
  }
  FILENAME == ARGV[2] && /^# .*component: device buffers/ {
    coll = collective()
    if (coll == "") next
    printf "\n== %s: %s on device buffers, float%s, %s ranks; us per call on the slowest rank\n", title(), mpi[coll],
           (coll ~ /reduce/ ? " sum" : ""), np
    printf "#%11s %10s %10s %10s %11s %15s %17s\n", "size (B)", "core (a)", "NCCL (b)", "component", "staged (c)",
           "component/core", "staged/component"
    next
  }
  FILENAME == ARGV[2] && /^ *[0-9]/ && coll != "" {
    size = $1; comp = $3; staged = $7; rows++
    has = ((coll, size) in core)
    ratio = has && core[coll, size] > 0 ? comp / core[coll, size] : -1
    speedup = comp > 0 ? staged / comp : -1
    printf "%12s %10s %10s %10.2f %11.2f %15s %17s\n", size, (has ? core[coll, size] : "-"),
           (has ? nccl[coll, size] : "-"), comp, staged, (ratio < 0 ? "-" : sprintf("%.2f", ratio)),
           (speedup < 0 ? "-" : sprintf("%.1fx", speedup))
    if (coll != "all-reduce") next
    allreduce++
    if (size + 0 >= mib && ratio >= 0) {
      measured++
      if (ratio > worst) { worst = ratio; worst_size = size }
    }
    if (size + 0 == big) big_speedup = speedup
  }
  END {
    if (rows == 0) { print "mpi_allreduce_bench.sh: no rows in the component output" > "/dev/stderr"; exit 1 }
    if (allreduce == 0) exit 0 # the targets: all-reduce only
    print ""
    if (measured == 0) print "target within 10% of core at >= 1 MiB: not measured (no size >= 1 MiB in both runs)"
    else printf "target within 10%% of core at >= 1 MiB: %s (worst ratio %.2f at size %s)\n",
                (worst <= 1.10 ? "met" : "missed"), worst, worst_size
    if (big_speedup == "")
      print "target >= 10x faster than staging at 16 MiB: not measured (16 MiB not among the sizes)"
    else printf "target >= 10x faster than staging at 16 MiB: %s (%.1fx)\n", (big_speedup >= 10 ? "met" : "missed"),
                big_speedup
  }
' "$logs/core.txt" "$logs/component.txt" || fail "could not read the two programs' outputs in $logs"
echo
grep '^# routed' "$logs/component.txt"
echo "logs: $logs"
