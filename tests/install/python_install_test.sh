#!/usr/bin/env bash
# Installs lifeboat to a temporary prefix and runs the Python example of
# README.md with the installed module, twice: the second run restores the
# last checkpoint of the first.
set -euo pipefail
build_dir=$1
source_dir=$2
python=$3
work=$(mktemp -d /tmp/lifeboat-python-install-XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The package's folder, beside the extension module inside it.
package_dir=$(dirname "$(find "$work/prefix" -path '*/lifeboat/_lifeboat.cpython-*.so' | head -n 1)")
module_dir=$(dirname "$package_dir")
if [[ "$package_dir" == "." || ! -f "$package_dir/__init__.py" || ! -f "$package_dir/torch.py" ]]; then
  echo "python_install_test: no Python module under $work/prefix" >&2
  exit 1
fi

# The first ```python block of the README is the example a newcomer copies.
awk '/^```python$/ {inside=1; next} /^```$/ && inside {exit} inside {print}' \
  "$source_dir/README.md" >"$work/example.py"
if [[ ! -s "$work/example.py" ]]; then
  echo "python_install_test: README.md has no \`\`\`python block" >&2
  exit 1
fi

# Local mode, and no build tree on the module path: only the installed module.
run_checked() {
  local name=$1 out status=0
  out=$(env -u LIFEBOAT_RANK -u LIFEBOAT_WORLD_SIZE -u LIFEBOAT_COORDINATOR -u TF_CONFIG \
    -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS PYTHONPATH="$module_dir" \
    "$python" "$work/example.py" "$work/checkpoints" 2>"$work/$name.err") || status=$?
  if [[ $status -ne 0 ]] || ! grep -q '^trained 1000 steps$' <<<"$out"; then
    echo "python_install_test: the $name run exited with status $status; it wrote:" >&2
    echo "$out" >&2
    cat "$work/$name.err" >&2
    exit 1
  fi
}
run_checked first
run_checked second
grep -q 'restored checkpoint at step 1000' "$work/second.err" || {
  echo "python_install_test: the second run did not restore step 1000" >&2
  cat "$work/second.err" >&2
  exit 1
}
echo "python_install_test: the installed module runs the README's Python example"
