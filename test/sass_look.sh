#!/bin/sh
# test/gpu/sass_look.sh, which run.sh's sass-look step runs on the GPU build's daemon (this machine
# may have no CUDA binary tools), on two fixtures of the daemon's SASS: the look at the SQ as it is
# since the thirty-ninth session (its four loads back to back: PASS) and as it was before (lines
# 0-2 compared before the last line's load: FAIL).  Keeps the checker able to fail.
#
# Copyright (c) 2026 The DFCCL authors.  SPDX-License-Identifier: BSD-3-Clause
set -u
dir="${top_srcdir:-.}/test/gpu"
sh "$dir/sass_look.sh" "$dir/sass_look_one_trip.txt" || { echo "FAIL: the one-trip look was not recognized"; exit 1; }
if out=$(sh "$dir/sass_look.sh" "$dir/sass_look_two_trips.txt"); then
  echo "$out"
  echo "FAIL: the two-trip look passed"
  exit 1
fi
echo "$out" | head -n 1
echo "PASS: the checker tells one trip from two"
