#!/usr/bin/env bash
# Runs every benchmark of a build directory; each prints its numbers beside the
# reference it is measured against in the same run, and the ratio.
set -euo pipefail
build=${1:-build}
shopt -s nullglob
benches=("$build"/bench/*_bench)
if [[ ${#benches[@]} -eq 0 ]]; then
  echo "bench: no benchmarks built in $build/bench" >&2
  exit 1
fi
for b in "${benches[@]}"; do
  echo "== $(basename "$b")"
  "$b"
done
