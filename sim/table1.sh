#!/bin/sh
# Runs every Table 1 cell (sim/configs/) in both list orders and prints one
# line per run: cell, order, then dfccl-sim's result line.
#   sim/table1.sh [ROUNDS] [THREADS]     (default: the configs' 32000; 2)
# The 3072-GPU cells take minutes each; see docs/simulator.md for timings.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sim=${SIM:-$here/dfccl-sim}
rounds=${1:-}
threads=${2:-2}
for cfg in "$here"/configs/*.json; do
	for order in interleave concat; do
		set -- "$cfg" --order "$order" --threads "$threads"
		[ -n "$rounds" ] && set -- "$@" --rounds "$rounds"
		result=$("$sim" "$@" | tail -n 1)
		echo "$(basename "$cfg" .json) $order $result"
	done
done
