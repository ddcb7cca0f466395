#!/usr/bin/env bash
# Runs every benchmark of a build directory; each prints its numbers beside the
# reference it is measured against in the same run, and the ratio. Where the
# build has the Python package, the Python per-step cost too (Debian's
# interpreter, the one the package is built for).
set -euo pipefail
build=${1:-build}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
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
if [[ -f "$build/runtime/python/lifeboat/__init__.py" ]]; then
  echo "== python_step_bench"
  PYTHONPATH="$build/runtime/python" /usr/bin/python3 "$source_dir/bench/python_step_bench.py"
fi
