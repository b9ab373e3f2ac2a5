#!/bin/sh
# Lines of code in C sources: blank and comment lines not counted (issue 13's measure of the
# component).  The compiler strips the comments (-fpreprocessed: no macro expanded, no header read).
#   sh tools/code-lines.sh [FILE...]        default: ompi_coll_dfccl/*.[ch], from the repository root
# Prints each file's count and the total.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- ompi_coll_dfccl/*.[ch]
total=0
for f in "$@"; do
  n=$(${CC:-gcc} -std=c11 -fpreprocessed -dD -E -P -x c "$f" | grep -c '[^[:space:]]') || n=0
  printf '%6d  %s\n' "$n" "$f"
  total=$((total + n))
done
printf '%6d  total\n' "$total"
