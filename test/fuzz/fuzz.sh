#!/bin/sh
# Fuzzes every parser with libFuzzer (docs/reliability.md, "Fuzzing"):
#   fuzz_env          the core's DFCCL_* environment variables (core/config.c, core/transport.c)
#   fuzz_mca          coll/dfccl's integer MCA parameters (ompi_coll_dfccl/coll_dfccl_params_parse.c)
#   fuzz_sim_config   the simulator's JSON config, and the topology and rounds built from it (sim/)
#   fuzz_sim_options  the simulator's command line (sim/options.c)
# Each target is built with clang (libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer), replays
# the committed corpus test/fuzz/corpus/TARGET/ (every input once: the regression test), then fuzzes
# for DFCCL_FUZZ_SECONDS (default 20) seconds into a scratch corpus in the build tree,
# test/fuzz-work/TARGET/, seeded from the committed one, which it never modifies.  A crash, a leak,
# undefined behaviour or a broken invariant fails the test, showing the report and the saved input.
#
# Environment: DFCCL_FUZZ_SECONDS (0: replay only), DFCCL_FUZZ_TARGETS (a subset, by name),
# CLANG (the compiler; default clang-14 or clang), top_srcdir and top_builddir (set by make check).
# Exit status: 0 pass, 1 a target failed, 77 (skip) without clang's libFuzzer.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${top_builddir:-$srcdir}
seconds=${DFCCL_FUZZ_SECONDS:-20}
targets=${DFCCL_FUZZ_TARGETS:-fuzz_env fuzz_mca fuzz_sim_config fuzz_sim_options}
work=$builddir/test/fuzz-work
fuzzdir=$srcdir/test/fuzz
case $seconds in '' | *[!0-9]*) echo "FAIL: DFCCL_FUZZ_SECONDS='$seconds': expected a whole number of seconds"; exit 1 ;; esac

# ---- the compiler ----
cc=${CLANG:-}
if [ -z "$cc" ]; then
  for candidate in clang-14 clang; do
    if command -v "$candidate" >/dev/null 2>&1; then
      cc=$candidate
      break
    fi
  done
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIP: clang not found (Debian: apt-get install clang libclang-rt-14-dev; or set CLANG)"
  exit 77
fi
mkdir -p "$work/bin" || exit 1
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=c11
  -D_GNU_SOURCE -pthread -Wall -Wextra -Werror"
echo 'int LLVMFuzzerTestOneInput(const char* d, unsigned long n) { return d && n == 1 && d[0] == 0; }' >"$work/probe.c"
# shellcheck disable=SC2086
if ! "$cc" $flags "$work/probe.c" -o "$work/bin/probe" >"$work/probe.log" 2>&1; then
  echo "SKIP: $cc cannot build a libFuzzer target with AddressSanitizer and UBSan" \
    "(Debian: apt-get install libclang-rt-14-dev):"
  cat "$work/probe.log"
  exit 77
fi
jansson=$(pkg-config --cflags --libs jansson 2>/dev/null || echo -ljansson)

# sources TARGET: what it is built from (the fuzz target first).
sources() {
  case $1 in
    fuzz_env) echo "$fuzzdir/fuzz_env.c $srcdir/core/config.c $srcdir/core/transport.c $srcdir/core/error.c" ;;
    fuzz_mca) echo "$fuzzdir/fuzz_mca.c $srcdir/ompi_coll_dfccl/coll_dfccl_params_parse.c" ;;
    fuzz_sim_config)
      s=$srcdir/sim
      echo "$fuzzdir/fuzz_sim_config.c $s/config.c $s/topology.c $s/cycle.c $s/round.c $s/single_queue.c" \
        "$s/sync_model.c $s/explain.c"
      ;;
    fuzz_sim_options) echo "$fuzzdir/fuzz_sim_options.c $srcdir/sim/options.c $srcdir/sim/config.c" ;;
  esac
}
includes() {
  case $1 in
    fuzz_env) echo "-I$srcdir/core" ;;
    fuzz_mca) echo "-I$srcdir/ompi_coll_dfccl" ;;
    fuzz_sim_*) echo "-I$srcdir/sim" ;;
  esac
}
libs() {
  case $1 in
    fuzz_sim_config) echo "$jansson -lm" ;;
    fuzz_sim_options) echo "$jansson" ;;
  esac
}
# Extra seeds, read-only: the simulator's own configs.
seeds() {
  case $1 in
    fuzz_sim_config) echo "$srcdir/sim/configs" ;;
  esac
}

# build TARGET: unless it is newer than its sources and headers.
build() {
  bin=$work/bin/$1
  if [ -x "$bin" ] && [ -z "$(find $(sources "$1") "$fuzzdir"/*.h "$srcdir"/core/*.h \
    "$srcdir"/core/platform/*.h "$srcdir"/core/kernel/*.h "$srcdir"/sim/*.h "$srcdir"/ompi_coll_dfccl/*.h -newer "$bin" 2>/dev/null | head -n 1)" ]; then
    return 0
  fi
  # shellcheck disable=SC2046,SC2086
  "$cc" $flags -I"$fuzzdir" $(includes "$1") $(sources "$1") $(libs "$1") -o "$bin" >"$work/$1.build.log" 2>&1
}

# What the sanitizers do on a finding: stop, with stacks.  Leaks are findings too, where
# LeakSanitizer can work: it stops the process's threads with ptrace, which some containers forbid.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
if ! "$work/bin/probe" -runs=1 >"$work/probe.log" 2>&1; then
  if grep -q LeakSanitizer "$work/probe.log"; then
    echo "note: LeakSanitizer does not work here (no ptrace?); fuzzing without leak checks"
    ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0
  else
    echo "SKIP: a libFuzzer target built by $cc does not run:"
    cat "$work/probe.log"
    exit 77
  fi
fi
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for candidate in llvm-symbolizer-14 llvm-symbolizer; do
    if path=$(command -v "$candidate" 2>/dev/null); then
      ASAN_SYMBOLIZER_PATH=$path
      export ASAN_SYMBOLIZER_PATH
      break
    fi
  done
fi

# report TARGET LOG WHAT: a failure, with the input (the one libFuzzer saved, or the corpus file it
# was running) and the report.
report() {
  echo "FAIL: $1: $3"
  input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$2" | tail -n 1)
  [ -z "$input" ] && input=$(sed -n 's/^Running: \(.*\)$/\1/p' "$2" | tail -n 1)
  [ -n "$input" ] && echo "  the input: $input (again: $work/bin/$1 $input)"
  echo "  the report ($2):"
  grep -v -e '^#[0-9]' -e '^Running: ' -e '^Executed ' "$2" | tail -n 60 | sed 's/^/  | /'
}

# libFuzzer options: a second per input at most for the small parsers (the simulator's rounds get
# ten), 2 GiB of memory (also the most one allocation may take), and stdout and stderr closed (the
# simulator notes ignored keys each time; reports and broken invariants still come through).
common="-timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1"

failed=0
for t in $targets; do
  if [ -z "$(sources "$t")" ]; then
    echo "FAIL: $t: no such target (DFCCL_FUZZ_TARGETS)"
    failed=1
    continue
  fi
  case $t in
    fuzz_sim_*)
      if ! printf '#include <jansson.h>\nint main(void){return 0;}\n' | "$cc" -x c - $jansson -o "$work/jansson-probe" \
        >/dev/null 2>&1; then
        echo "skip: $t: jansson not found (Debian: libjansson-dev), as for the simulator itself"
        continue
      fi
      ;;
  esac
  if ! build "$t"; then
    echo "FAIL: $t: does not build with $cc:"
    cat "$work/$t.build.log"
    failed=1
    continue
  fi
  dict=""
  [ -f "$fuzzdir/$t.dict" ] && dict="-dict=$fuzzdir/$t.dict"
  mkdir -p "$work/$t/corpus" "$work/$t/crashes"
  corpus=$fuzzdir/corpus/$t
  inputs=$(find "$corpus" -type f | wc -l)

  # The committed corpus, each input once: the inputs of past findings must stay fixed.
  log=$work/$t/replay.log
  if ! "$work/bin/$t" $common "$corpus"/* >"$log" 2>&1; then
    report "$t" "$log" "an input of the committed corpus fails"
    failed=1
    continue
  fi
  [ "$seconds" -eq 0 ] && { echo "ok: $t: $inputs inputs replayed"; continue; }

  # Then new inputs for a bounded time, into the scratch corpus.
  log=$work/$t/fuzz.log
  # shellcheck disable=SC2086
  if ! "$work/bin/$t" $common $dict -max_total_time="$seconds" -artifact_prefix="$work/$t/crashes/" \
    "$work/$t/corpus" "$corpus" $(seeds "$t") >"$log" 2>&1; then
    report "$t" "$log" "fuzzing found a failure"
    failed=1
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -n 1)
  echo "ok: $t: $inputs inputs replayed; fuzzed ${seconds} s: ${runs:-?} runs (${rate:-?}/s), coverage ${cov:-?}" \
    "edges, scratch corpus $(find "$work/$t/corpus" -type f | wc -l) inputs"
done
exit $failed
