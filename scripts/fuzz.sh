#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD (make fuzz, make test-fuzz) for
# SECONDS each, one after the other, starting from its checked-in corpus
# (tests/fuzz/corpus/<target>: seeds and the regression inputs of crashes
# found before, all run first). New inputs and crash artifacts go under
# BUILD/fuzz-runs/<target>/, never into the checked-in corpus.
# Exits 1 when any target crashed, leaked, timed out or ran out of memory.
set -euo pipefail

build=${1:?usage: fuzz.sh BUILD_DIR SECONDS}
seconds=${2:?usage: fuzz.sh BUILD_DIR SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
runs="$build/fuzz-runs"
# An input running this long is a hang; the metadata targets need the most
# per input (a few loopback HTTP exchanges).
per_input_timeout=30

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for bin in "$build"/tests/fuzz/fuzz_*; do
  [[ -f $bin && -x $bin ]] || continue
  name=$(basename "$bin")
  dir="$runs/$name"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  if "$bin" -max_total_time="$seconds" -timeout="$per_input_timeout" -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/" "$dir/corpus" "$root/tests/fuzz/corpus/$name" \
      >"$dir/log" 2>&1; then
    inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
    echo "fuzz: $name: ${inputs:-?} inputs in $seconds s, no crash"
  else
    echo "fuzz: $name: FAILED (log $dir/log, inputs $dir/artifacts/):"
    tail -n 30 "$dir/log"
    failed+=("$name")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
