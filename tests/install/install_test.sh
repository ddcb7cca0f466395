#!/usr/bin/env bash
# Installs lifeboat to a temporary prefix, then builds the C++ example of
# README.md as a program outside the tree with find_package(lifeboat), runs
# it in local mode, and runs it again to see it restore its last checkpoint;
# then the installed apps: lifeboat-checkpoint verifies what the runs wrote.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d /tmp/lifeboat-install-XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null

# The first ```cpp block of the README is the example a newcomer copies.
mkdir -p "$work/consumer"
awk '/^```cpp$/ {inside=1; next} /^```$/ && inside {exit} inside {print}' \
  "$source_dir/README.md" >"$work/consumer/main.cpp"
if [[ ! -s "$work/consumer/main.cpp" ]]; then
  echo "install_test: README.md has no \`\`\`cpp block" >&2
  exit 1
fi
cat >"$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(lifeboat_consumer CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(lifeboat 0.1 REQUIRED)
add_executable(trainer main.cpp)
target_compile_options(trainer PRIVATE -Wall -Wextra -Werror)
target_link_libraries(trainer PRIVATE lifeboat::lifeboat)
CMAKE
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null

# Local mode: no cluster variables from the test environment.
run() {
  env -u LIFEBOAT_RANK -u LIFEBOAT_WORLD_SIZE -u LIFEBOAT_COORDINATOR -u TF_CONFIG \
    -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS \
    LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64" \
    "$work/consumer/build/trainer" "$work/checkpoints"
}
# Runs the example once as `name`; on any failure says how it ended and shows
# what it wrote (set -e alone would end this script without a word).
run_checked() {
  local name=$1 out status=0
  out=$(run 2>"$work/$name.err") || status=$?
  echo "$out"
  if [[ $status -ne 0 ]] || ! grep -q '^trained 1000 steps$' <<<"$out"; then
    echo "install_test: the $name run exited with status $status; its stderr:" >&2
    cat "$work/$name.err" >&2
    exit 1
  fi
}
run_checked first

# The example saves a backup every 250 steps: a second run restores step 1000.
run_checked second >/dev/null
grep -q 'restored checkpoint at step 1000' "$work/second.err" || {
  echo "install_test: the second run did not restore step 1000" >&2
  cat "$work/second.err" >&2
  exit 1
}

# The installed apps: lifeboat-checkpoint finds the example's checkpoints
# whole (the two retention keeps).
verified=$("$work/prefix/bin/lifeboat-checkpoint" verify "$work/checkpoints") || {
  echo "install_test: the installed lifeboat-checkpoint did not verify the checkpoints" >&2
  echo "$verified" >&2
  exit 1
}
grep -q '^step=1000 verified: 1 shards, ' <<<"$verified" || {
  echo "install_test: lifeboat-checkpoint verify said: $verified" >&2
  exit 1
}
for app in lifeboat-launch lifeboat-coordinator lifeboat-demo lifeboat-status; do
  "$work/prefix/bin/$app" --help >/dev/null || {
    echo "install_test: the installed $app does not run" >&2
    exit 1
  }
done

echo "install_test: the installed package builds and runs the README example"
