#!/bin/sh
# The command line: exit status 2 and a clear message for bad input, the
# exact last stdout line, overrides, --explain.
# Needs SIM (the dfccl-sim binary) and CONFIGS (sim/configs) from the harness.
set -u
: "${SIM:?}" "${CONFIGS:?}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect_bad DESCRIPTION WORD-IN-MESSAGE ARGS...
expect_bad() {
	what=$1 word=$2
	shift 2
	"$SIM" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 2 ] || ! grep -q -- "$word" "$tmp/err"; then
		echo "FAIL: $what: status $rc, stderr: $(cat "$tmp/err")"
		fail=1
	fi
}

printf '{"model": "Single",' >"$tmp/malformed.json"
printf '{"model":"Single","grouping_policy":"Megatron","total_rounds":5}' >"$tmp/missing.json"
cat >"$tmp/uncovered.json" <<'JSON'
{"model":"Single","grouping_policy":"Arbitrary","disorder_prob":0.1,"total_rounds":5,
 "gpu_num":3,"group_num":1,"gpu_per_group":[[0,1]],"coll_cnt_per_group":[4]}
JSON
cat >"$tmp/tiny.json" <<'JSON'
{"model":"Single","grouping_policy":"Arbitrary","disorder_prob":0.3,"total_rounds":50,
 "gpu_num":2,"group_num":1,"gpu_per_group":[[0,1]],"coll_cnt_per_group":[2],"num_process":4}
JSON

expect_bad "no arguments" "usage"
expect_bad "missing file" "cannot read JSON" "$tmp/nonexistent.json"
expect_bad "malformed JSON" "JSON" "$tmp/malformed.json"
expect_bad "missing key" "disorder_prob" "$tmp/missing.json"
expect_bad "groups not covering" "GPU 2 is in no group" "$tmp/uncovered.json"
expect_bad "bad order" "--order" "$tmp/tiny.json" --order zigzag
expect_bad "zero rounds" "--rounds" "$tmp/tiny.json" --rounds 0
expect_bad "bad threads" "--threads" "$tmp/tiny.json" --threads x
expect_bad "unknown option" "unknown option" "$tmp/tiny.json" --fast
expect_bad "bad rule" "--rule" "$tmp/tiny.json" --rule maybe
# What fuzz_sim_options found: strtoull took " -5" for 2^64-5, and "+3", " 3".
expect_bad "seed with a space and a minus" "--seed" "$tmp/tiny.json" --seed " -5"
expect_bad "threads with a plus" "--threads" "$tmp/tiny.json" --threads +3
expect_bad "rounds beyond 2^63-1" "--rounds needs an integer in 1..9223372036854775807" "$tmp/tiny.json" \
	--rounds 9223372036854775808
expect_bad "only options" "no config file given" --explain
printf '{"model":"Single","model":"Single"}' >"$tmp/duplicate.json"
expect_bad "a key given twice" "duplicate object key" "$tmp/duplicate.json"
"$SIM" --help >"$tmp/out" 2>&1 && grep -q '^usage: dfccl-sim' "$tmp/out" || { echo "FAIL: --help"; fail=1; }

# The last stdout line, exactly; --rounds overrides total_rounds.
"$SIM" "$tmp/tiny.json" --rounds 1000 --seed 3 >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: tiny run"; fail=1; }
last=$(tail -n 1 "$tmp/out")
if ! echo "$last" | grep -Eq '^deadlock_ratio=[0-9]+\.[0-9]+ deadlocks=[0-9]+ rounds=1000 ci95_low=[0-9]+\.[0-9]+ ci95_high=[0-9]+\.[0-9]+$'; then
	echo "FAIL: last line: $last"
	fail=1
fi
grep -q 'note: ignoring "num_process"' "$tmp/err" || { echo "FAIL: no note for num_process"; fail=1; }

# --explain shows the cycle of the first deadlocked round.
"$SIM" "$tmp/tiny.json" --explain >"$tmp/out" 2>/dev/null
grep -q "cycle through 2 GPUs" "$tmp/out" || { echo "FAIL: --explain: $(cat "$tmp/out")"; fail=1; }
tail -n 1 "$tmp/out" | grep -Eq '^deadlock_ratio=' || { echo "FAIL: --explain moved the result line"; fail=1; }

exit $fail
