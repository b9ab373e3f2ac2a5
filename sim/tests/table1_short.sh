#!/bin/sh
# A short reproduction of two Table 1 cells (the paper ran 32,000 rounds;
# fewer here, with bounds wide enough for that):
#   single-queue, free grouping, 1 group of 8 GPUs, 161 collectives, p = 1e-5:
#     paper 1.21 %; exact model 1-(1-p)^1280 = 1.27 % (every skip is a
#     same-group swap, which deadlocks);
#   single-queue, 3D (4,4,4), 400/1200 collectives, p = 1e-6, concat order:
#     paper 9.97 %; exact model about 9.7 %.
# Also checks that the thread count does not change the result.
set -u
: "${SIM:?}" "${CONFIGS:?}"
fail=0

# ratio_in CONFIG LOW HIGH ARGS...: the ratio lies in [LOW, HIGH].
ratio_in() {
	cfg=$1 low=$2 high=$3
	shift 3
	last=$("$SIM" "$CONFIGS/$cfg.json" "$@" 2>/dev/null | tail -n 1)
	echo "$cfg $*: $last"
	ratio=$(echo "$last" | sed -n 's/^deadlock_ratio=\([0-9.]*\) .*/\1/p')
	if [ -z "$ratio" ] || ! awk -v r="$ratio" -v lo="$low" -v hi="$high" 'BEGIN { exit !(r >= lo && r <= hi) }'; then
		echo "FAIL: $cfg: ratio '$ratio' outside [$low, $high]"
		fail=1
	fi
}

ratio_in single-free-1group-8gpu-161-p1e-5 0.0095 0.0160 --rounds 20000 --threads 2
ratio_in single-3d-4x4x4-400x1200-p1e-6 0.065 0.135 --rounds 800 --threads 2 --order concat

one=$("$SIM" "$CONFIGS/single-free-1group-8gpu-161-p1e-5.json" --rounds 3000 --threads 1 2>/dev/null | tail -n 1)
two=$("$SIM" "$CONFIGS/single-free-1group-8gpu-161-p1e-5.json" --rounds 3000 --threads 2 2>/dev/null | tail -n 1)
[ "$one" = "$two" ] || { echo "FAIL: 1 thread: $one; 2 threads: $two"; fail=1; }

exit $fail
