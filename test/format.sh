#!/bin/sh
# Every C/C++/CUDA source is formatted as .clang-format says: clang-format --dry-run --Werror on each
# tracked *.c, *.h, *.cu and *.cuh (git ls-files; outside a git checkout, those under the source
# directories).  Exit 0 when all are formatted, 1 listing the files that are not, 77 (skip) without
# clang-format 14, the version the style is written for ($CLANG_FORMAT names another binary).
cd "${top_srcdir:-$(dirname "$0")/..}" || exit 1

format=${CLANG_FORMAT:-}
if [ -z "$format" ]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null 2>&1; then
      format=$candidate
      break
    fi
  done
fi
if [ -z "$format" ] || ! command -v "$format" >/dev/null 2>&1; then
  echo "SKIP: clang-format not found (install clang-format 14, or set CLANG_FORMAT)"
  exit 77
fi
version=$("$format" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9][0-9]*\)\..*/\1/p')
if [ "$version" != 14 ]; then
  echo "SKIP: $format is version ${version:-unknown}; .clang-format is written for clang-format 14," \
    "whose output other versions do not reproduce exactly (set CLANG_FORMAT to a clang-format 14)"
  exit 77
fi

# The sources: git's list in a git checkout of this tree, else the files under the source
# directories (a release tarball).
here=$(pwd -P)
if top=$(git rev-parse --show-toplevel 2>/dev/null) && [ "$(cd "$top" && pwd -P)" = "$here" ]; then
  files=$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
else
  files=$(find benchmarks core examples ompi_coll_dfccl sim test -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort)
fi
if [ -z "$files" ]; then
  echo "FAIL: no C/C++/CUDA sources found in $here"
  exit 1
fi

set -f
checked=0
unformatted=""
for f in $files; do
  checked=$((checked + 1))
  "$format" --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted="$unformatted $f"
done
if [ -n "$unformatted" ]; then
  echo "FAIL: not formatted as .clang-format says ($format, version $version):"
  for f in $unformatted; do echo "  $f"; done
  echo "fix: $format -i$unformatted"
  exit 1
fi
echo "PASS: $checked files formatted as .clang-format says ($format, version $version)"
exit 0
